"""The REPL's slash commands and its help text. Each command is a plain function of the session
and its argument that returns what to print (or EXIT, or a Retry to send), so they are tested
without a terminal; COMMANDS is the one table: /help, completion (ui/completion.py) and dispatch
all read it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from agent_cli import events as ev
from agent_cli.safe_text import one_line
from agent_cli.tools.scope import ScopedRegistry
from agent_cli.ui.safe_rich import safe, safe_line
from agent_cli.ui.turns import Retry

if TYPE_CHECKING:
    from agent_cli.session import Session


KEYS = """\
Type a message and press Enter to send it.
  New line inside a message: Alt-Enter (or Esc then Enter), or Ctrl-J.
  Ctrl-G or Ctrl-X Ctrl-E: write the message in $VISUAL / $EDITOR (saved text comes back here).
  Tab (and as you type): complete /commands and @path (files in the workspace).
  Esc or Ctrl-C while the model replies or a tool runs: cancel that turn (every pending call
  is answered "interrupted") and come back here; your message and the answer so far stay in
  the conversation, marked interrupted. Ctrl-C at the prompt clears the line; on an empty line
  twice in a row, it leaves. Ctrl-D or /exit: leave.
  Typed while a turn runs: lines ended with Enter are queued and sent when it ends; the rest
  waits in the next prompt. A question (y/N) drops all of it: type-ahead is never an answer.
  A message that got no answer because of an error is not kept: /retry sends it again.
  Up and Down walk through earlier messages (kept across sessions).
  @path in a message attaches that workspace file (shown as attached); a line that starts
  with ! runs as your own shell command (no panel, no sandbox): its output goes with your next
  message. /init asks the model to draft AGENTS.md (a write panel, as any).
Calls that only read run at once. Calls with effects show a panel: type y (or yes) to run
that one call; Enter, anything else, Ctrl-C or Ctrl-D deny it. Add a reason after n
(`n use ./tmp`), or type it at the `Reason (optional):` prompt, and the model sees it."""

EXIT = object()
"""Returned by a command to end the REPL."""


class TurnState:
    """A sink remembering what /show and /retry need: every tool result (numbered), the kind of
    the last error, and the message that got no answer."""

    def __init__(self) -> None:
        from agent_cli.ui.status import ResultStore

        self.results = ResultStore()
        self.last_error: str | None = None
        self.unsent: str | None = None

    def __call__(self, event: ev.AnyEvent) -> None:
        self.results(event)
        if isinstance(event, ev.ErrorEvent):
            self.last_error = event.kind
        elif isinstance(event, ev.UserMessage):
            self.last_error = None


Command = Callable[["Session", str], "RenderableType | object | None"]


def command_lines() -> list[tuple[str, str]]:
    """(name, summary) for each command; the summary is the first paragraph of its docstring, so
    a command added to COMMANDS shows up in /help without a second list to keep in step."""
    seen: set[int] = set()
    lines: list[tuple[str, str]] = []
    for name, fn in COMMANDS.items():
        if id(fn) in seen:  # an alias (/quit)
            continue
        seen.add(id(fn))
        summary = (fn.__doc__ or "").strip().split("\n\n")[0]
        lines.append((name, " ".join(summary.split()).rstrip(".")))
    return lines


def help_text() -> str:
    width = max(len(name) for name, _ in command_lines()) + 2
    rows = [f"  {name.ljust(width)}{summary}" for name, summary in command_lines()]
    return KEYS + "\nCommands:\n" + "\n".join(rows)


def cmd_help(session: Session, arg: str) -> RenderableType:
    """This text: keys and commands.

    So nobody has to guess how to type a newline or how to deny a call."""
    return safe(help_text())


def cmd_tools(session: Session, arg: str) -> RenderableType:
    """The tools offered to the model, with their effect class.

    Tells the user which calls will run at once and which will ask first."""
    table = Table(show_header=True, header_style="bold", box=None, padding=(0, 2))
    table.add_column("tool", no_wrap=True)
    table.add_column("effect", no_wrap=True)
    table.add_column("description", overflow="fold")
    for tool in session.registry:
        effect = safe_line(tool.effect, 20, "green" if tool.effect == "read" else "red")
        table.add_row(safe(tool.name), effect, safe(one_line(tool.description, 200)))
    hidden = session.registry.hidden() if isinstance(session.registry, ScopedRegistry) else []
    lines: list[RenderableType] = []
    if len(session.registry) == 0:
        lines.append(Text("No tools are offered.", style="yellow"))
    else:
        lines.append(table)
    if hidden:
        lines.append(Text("Not offered:", style="bold"))
        for tool, why in hidden:
            lines.append(Text("  ") + safe(tool.name) + safe(f"  {tool.effect}  ", "dim")
                         + safe(why, "dim"))
    if len(lines) == 1:
        return lines[0]
    return Group(*lines)


def cmd_mode(session: Session, arg: str) -> RenderableType | None:
    """Show the mode, or switch: `/mode read-only` (only read tools, nothing changes) or
    `/mode normal`."""
    word = arg.strip().lower()
    if not word:
        mode = "read-only" if session.read_only else "normal"
        return Text.assemble("Mode: ", (mode, "bold"),
                             (" (/mode read-only or /mode normal switches)", "dim"))
    if word not in ("read-only", "readonly", "ro", "normal"):
        return Text("Usage: /mode read-only | /mode normal", style="yellow")
    session.set_read_only(word != "normal")  # the notice is logged and shown by the renderer
    return None


def cmd_clear(session: Session, arg: str) -> None:
    """Forget the conversation so far (the log keeps it).

    Starts afresh without losing the record."""
    session.clear()  # its notice says so, once (the renderer shows it)
    return None


def turn_state_of(session: Session) -> TurnState | None:
    for sink in session.sinks:
        if isinstance(sink, TurnState):
            return sink
    return None


def cmd_show(session: Session, arg: str) -> RenderableType:
    """Print one tool result whole: /show N (as numbered on screen), /show last, or /show ID.

    The screen shows head and tail of long results; the full text is kept. A call that changed
    files shows the diff of each change after its result."""
    from agent_cli.ui.status import show_result

    state = turn_state_of(session)
    found = state.results.find(arg) if state is not None else None
    if found is None:
        count = len(state.results.results) if state is not None else 0
        return safe(f"No tool result {arg or 'yet'}; this session has {count}. "
                    "Use /show N, /show last or /show ID.", "yellow")
    effects = state.results.effects.get(found.id) if state is not None else None
    if effects is None:
        return show_result(found)
    from agent_cli.ui.effects_view import effects_diff

    return Group(show_result(found), effects_diff(effects))


def cmd_retry(session: Session, arg: str) -> object:
    """Send again the last message that failed or was interrupted before the model answered."""
    state = turn_state_of(session)
    if state is None or state.unsent is None:
        return Text("Nothing to retry: the last message got its answer.", style="yellow")
    return Retry(state.unsent)


def cmd_log(session: Session, arg: str) -> RenderableType:
    """Where this session's log is written.

    For replay, verify and resume afterwards."""
    return Text.assemble("Session log: ", safe(str(session.log_path)))


def cmd_usage(session: Session, arg: str) -> RenderableType:
    """Tokens (and cost, where config `prices` has the model) per model and for the session, and
    how full the context is."""
    b = session.budget
    context = (f"\ncontext: {b.last_sent_chars:,} characters sent at the last request "
               f"(budget {b.budget_chars:,}; {b.last_elided} older tool results sent as stubs"
               + (f", {b.last_dropped} old tool calls left out" if b.last_dropped else "") + ")")
    return safe(session.usage.report() + context)


def cmd_model(session: Session, arg: str) -> RenderableType | None:
    """Show the model, or switch to another one for the rest of the session (logged)."""
    name = arg.strip()
    if not name:
        return Text.assemble("Model: ", safe(f"{session.provider.name}:{session.provider.model}"),
                             (" (/model NAME switches)", "dim"))
    if len(name.split()) != 1 or len(name) > 200:
        return Text("Usage: /model NAME (one word, e.g. /model claude-sonnet-5-5)", style="yellow")
    refused = session.usage.budget_refusal(name, session.loop.limits.max_cost_usd)
    if refused is not None:  # its tokens would not count: the budget could never trip
        return safe(f"Not switched: {refused}", "yellow")
    old = session.provider.model
    session.provider.model = name
    # the notice is logged and shown by the renderer; nothing more to print
    session.emit(ev.Notice(message=f"Model switched from {old} to {name}.", kind="model"))
    return None


def cmd_compact(session: Session, arg: str) -> RenderableType:
    """Replace the conversation by a model-written summary; the log keeps everything."""
    result = session.compact()
    if not result.ok:
        return safe(result.message, "yellow")
    return safe("Summary now in the context:\n" + result.summary, "dim")


def cmd_init(session: Session, arg: str) -> Retry:
    """Ask the model to draft an AGENTS.md from the workspace (you approve it in the panel)."""
    from agent_cli.ui.outgoing import INIT_PROMPT

    return Retry(INIT_PROMPT)


def cmd_mcp(session: Session, arg: str) -> RenderableType | Retry:
    """MCP servers, their state and tools; `/mcp accept NAME` offers a server's changed tools
    again."""
    from agent_cli.ui.mcp_repl import repl_mcp

    return repl_mcp(session, arg)


def cmd_undo(session: Session, arg: str) -> RenderableType | None:
    """Step back one turn: undo every approved call of the last turn that changed files, newest
    first (again: one turn more; `/undo ID`: back to just before that call); shows the diff and
    asks first."""
    from agent_cli.ui.undo_view import repl_undo

    return repl_undo(session, arg)


def cmd_redo(session: Session, arg: str) -> RenderableType | None:
    """Put back what the last /undo took back; shows the diff and asks first."""
    from agent_cli.ui.undo_view import repl_undo

    return repl_undo(session, arg, redo=True)


def cmd_skills(session: Session, arg: str) -> RenderableType:
    """The skills of config skills_dirs: offered (pinned) or held out and why, as loaded when the
    session started."""
    from agent_cli.ui.skills_view import skills_listing

    return skills_listing(session.skills, session.registry.get("load_skill") is not None)


def cmd_exit(session: Session, arg: str) -> object:
    """Leave (same as Ctrl-D)."""
    return EXIT


COMMANDS: dict[str, Command] = {
    "/help": cmd_help,
    "/tools": cmd_tools,
    "/clear": cmd_clear,
    "/retry": cmd_retry,
    "/show": cmd_show,
    "/log": cmd_log,
    "/usage": cmd_usage,
    "/model": cmd_model,
    "/mode": cmd_mode,
    "/compact": cmd_compact,
    "/mcp": cmd_mcp,
    "/skills": cmd_skills,
    "/undo": cmd_undo,
    "/init": cmd_init,
    "/redo": cmd_redo,
    "/exit": cmd_exit,
    "/quit": cmd_exit,
}


def is_command(line: str) -> bool:
    """A line is a command when its first word is `/name`; `/etc/hosts is odd` is a message."""
    words = line.split(maxsplit=1)
    if not words or not words[0].startswith("/"):
        return False
    return words[0].lower() in COMMANDS or "/" not in words[0][1:]


def dispatch(session: Session, line: str) -> RenderableType | object | None:
    """Run one slash command; an unknown one says which exist instead of reaching the model."""
    name, _, arg = line.strip().partition(" ")
    fn = COMMANDS.get(name.lower())
    if fn is None:
        known = " ".join(sorted(k for k in COMMANDS if k != "/quit"))
        return Text.assemble(("Unknown command ", "yellow"), safe(one_line(name, 40), "yellow"),
                             safe(f". Commands: {known}", "yellow"))
    return fn(session, arg.strip())
