"""The prompt-toolkit REPL. Slash commands are plain functions that return what to print, so they
are tested without a terminal; a few pty tests prove the real wiring (tests/ui/test_repl_pty.py).

Keys (KEYS below, shown by /help; README lists them): Enter sends; Alt-Enter, Esc Enter and Ctrl-J
insert a newline; Ctrl-C at the prompt clears the line, twice on an empty one leaves; Ctrl-G and
Ctrl-X Ctrl-E open $EDITOR; Tab completes (ui/completion.py); Ctrl-C or Esc during a turn cancels
the turn (ui/turns.py; the engine answers every pending call, keeps the cut answer marked
interrupted and records the interrupt); what is typed meanwhile is queued (run_repl); Ctrl-D
leaves.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console, ConsoleRenderable, Group, RenderableType, RichCast
from rich.table import Table
from rich.text import Text

from agent_cli import events as ev
from agent_cli.conversation import ends_interrupted
from agent_cli.errors import AgentError
from agent_cli.safe_text import one_line
from agent_cli.tools.scope import ScopedRegistry
from agent_cli.ui.line_editor import EXIT_HINT, PROMPT, EmptyLineInterrupt, prompt_session
from agent_cli.ui.safe_rich import safe, safe_line
from agent_cli.ui.turns import Retry

if TYPE_CHECKING:
    from prompt_toolkit.history import History

    from agent_cli.session import Session
    from agent_cli.ui.status import TerminalView
    from agent_cli.ui.turns import TerminalTurns

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


def _turn_state(session: Session) -> TurnState | None:
    for sink in session.sinks:
        if isinstance(sink, TurnState):
            return sink
    return None


def cmd_show(session: Session, arg: str) -> RenderableType:
    """Print one tool result whole: /show N (as numbered on screen), /show last, or /show ID.

    The screen shows head and tail of long results; the full text is kept. A call that changed
    files shows the diff of each change after its result."""
    from agent_cli.ui.status import show_result

    state = _turn_state(session)
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
    state = _turn_state(session)
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


def as_shown(out: object) -> Text | ConsoleRenderable | RichCast:
    """A command's result for the console: a Rich object (built here, so its text went through
    the sanitiser where it was built) as it is; a bare string or anything else sanitised."""
    if isinstance(out, ConsoleRenderable | RichCast) and not isinstance(out, str):
        return out
    return safe(str(out))


def open_history(history_file: Path, redactor: Any = None) -> History:
    """The prompt history file under AGENT_CLI_HOME, redacted like the log and 0600 (ui/history);
    in memory when it cannot be written (a read-only home must not stop the chat)."""
    from prompt_toolkit.history import InMemoryHistory

    from agent_cli.ui.history import RedactedFileHistory
    from agent_cli.write_faults import WriteFault

    try:
        return RedactedFileHistory(history_file, redactor)
    except (OSError, ValueError, WriteFault):  # not writable, a folder, a FIFO: not kept
        return InMemoryHistory()


def prompt_text(session: Session) -> str:
    """The prompt says the mode when it is not the normal one."""
    return f"read-only {PROMPT}" if session.read_only else PROMPT


def make_prompt(history_file: Path, redactor: Any = None,
                prompt: Callable[[], str] | None = None) -> Callable[..., str]:
    """The real line editor: persistent history, Enter sends, Alt-Enter / Esc Enter / Ctrl-J add
    a newline; `read(default=TEXT)` starts with TEXT in the input line. Its history is the
    reader's `history` attribute, its PromptSession the `editor` one (run_repl adds completion).
    prompt-toolkit is imported here so `agent-cli --help` never pays for it."""
    ps = prompt_session(open_history(history_file, redactor))

    def read(default: str = "") -> str:
        line: str = ps.prompt(prompt() if prompt is not None else PROMPT, default=default)
        return line

    read.history = ps.history  # type: ignore[attr-defined]
    read.editor = ps  # type: ignore[attr-defined]
    return read


def complete_at(editor: Any, session: Session) -> None:
    """Completion as you type at the prompt `editor` (a PromptSession; None: no line editor):
    /commands from COMMANDS, @paths from the session's workspace (ui/completion.py)."""
    if editor is None:
        return
    from agent_cli.ui.completion import ReplCompleter

    editor.completer = ReplCompleter(command_lines, session.workspace)
    editor.complete_in_thread = True  # (a large folder never holds up the keys)


def grouped(lines: list[str]) -> list[str]:
    """Lines typed ahead as what the REPL takes next: consecutive plain lines are one message
    (their lines joined), a /command is its own."""
    out: list[str] = []
    joining = False
    for line in lines:
        if is_command(line):
            out.append(line)
            joining = False
        elif joining:
            out[-1] += "\n" + line
        else:
            out.append(line)
            joining = True
    return out


def banner(session: Session) -> Text:
    return Text.assemble(("agent-cli", "bold"), " · ",
                         safe(f"{session.provider.name}:{session.provider.model}"),
                         " · workspace ", safe(str(session.workspace)), "\n",
                         ("Type /help for keys and commands. Ctrl-D to leave.", "dim"))


def run_repl(session: Session, console: Console, read: Callable[..., str], *,
             turns: TerminalTurns | None = None, state: TurnState | None = None,
             view: TerminalView | None = None, history: Any = None) -> None:
    """Read, send, repeat. `read` raises EOFError to leave and KeyboardInterrupt to drop a line;
    `read(default=TEXT)` puts TEXT back in the input line (a message the log could not take).
    `turns` runs each turn (ui/turns.py: Esc, Ctrl-C and signals cancel it there; without it,
    in-process tests, `Session.send`); `state` is the session's TurnState sink (found among its
    sinks when not given); `view` (spinner, live answer) is stopped whenever the turn leaves.
    `history` (the prompt's) says once when it cannot be written (`take_fault`).

    What was typed during a turn (`turns.take_typed`) is not lost: lines finished with Enter are
    sent next, as one message (a /command among them runs as typed), and the unfinished text is
    the next prompt's text. After a turn that stopped short (an interrupt, an error) nothing is
    sent unasked: all of it goes back into the input line."""
    from agent_cli.write_faults import LogUnwritable

    state = state or _turn_state(session) or TurnState()
    send = turns.run if turns is not None else session.send

    complete_at(getattr(read, "editor", None), session)
    console.print(banner(session))
    put_back: str | None = None
    queued: list[str] = []
    leaving = False
    """Ctrl-C was pressed on an empty prompt: a second one in a row leaves."""
    while True:
        if queued:
            line = queued.pop(0)
            console.print(safe(PROMPT, "bold") + safe(line))  # sent as if typed
        else:
            try:
                line = read(default=put_back) if put_back else read()
            except EmptyLineInterrupt:
                if leaving:
                    break
                leaving = True
                console.print(Text(EXIT_HINT, style="dim"))
                continue
            except KeyboardInterrupt:
                leaving = False
                continue
            except EOFError:
                break
            finally:
                put_back = None
                getattr(history, "flush", lambda: None)()  # (a line equal to the last one is
                # not stored again by prompt-toolkit: what it kept in memory is written here)
                note = getattr(history, "take_fault", lambda: None)()
                if note:
                    console.print(safe(note, "yellow"))
        leaving = False
        if not line.strip():
            continue
        from agent_cli.ui.outgoing import prepare  # `!cmd` runs here, `@path` files attach
        if not (line := prepare(session, console, line)):
            continue  # nothing to send: a `!cmd` ran
        if is_command(line):
            try:
                out = dispatch(session, line)
            except KeyboardInterrupt:
                console.print(Text("Interrupted.", style="yellow"))
                continue
            if out is EXIT:
                break
            if isinstance(out, Retry):
                line = out.text
            else:
                if out is not None:
                    console.print(as_shown(out))
                continue
        state.unsent = None
        reason = "interrupted"
        result = None
        try:
            result = send(line)
            reason = result.reason
        except LogUnwritable as e:
            # The log took nothing of this turn: the message goes back to the input line.
            reason = "log_unwritable"
            put_back = line if e.dropped else None
            console.print(safe(str(e), "bold red"))
            if put_back:
                console.print(Text("Your message is back in the input line.", style="yellow"))
        except AgentError as e:
            reason = "error"
            console.print(safe(str(e), "bold red"))
        finally:
            if view is not None:
                view.stop()
        if reason == "interrupted":
            state.unsent = line  # /retry asks again
            if ends_interrupted(session.history):  # (the engine kept the cut answer)
                console.print(Text("Your message and the answer so far stay in the "
                                   "conversation, marked interrupted.", style="dim"))
        elif reason == "error" and session.retract_unanswered(line):
            state.unsent = line
            hint = ("The API refused the request because of the conversation's content: "
                    "/retry sends your message again, /clear starts afresh (the log keeps "
                    "everything)." if state.last_error == "bad_request" else
                    "Your message got no answer and is not kept in the conversation; /retry "
                    "sends it again.")
            console.print(Text(hint, style="yellow"))
        if session.usage.turn_line():
            console.print(safe(session.usage.turn_line(), "dim"))
        if result is not None and result.reason == "budget":
            break  # the session's budget is spent: the session ends (the notice said why)
        typed, unfinished = turns.take_typed() if turns is not None else ([], "")
        if reason in ("interrupted", "error", "log_unwritable"):
            back = [t for t in [put_back, *queued, *typed, unfinished] if t]
            queued = []
            if back and back != [put_back]:
                console.print(Text("What you typed during the turn is back in the input line.",
                                   style="yellow"))
            put_back = "\n".join(back) or None
        else:
            queued += grouped(typed)
            put_back = "".join(t for t in [put_back, unfinished] if t) or None
    console.print(Text.assemble(("Session log: ", "dim"), safe(str(session.log_path), "dim")))
