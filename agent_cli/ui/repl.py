"""The prompt-toolkit REPL. Slash commands are plain functions that return what to print, so they
are tested without a terminal; a few pty tests prove the real wiring."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console, RenderableType
from rich.table import Table
from rich.text import Text

from agent_cli.safe_text import one_line
from agent_cli.ui.safe_rich import safe

if TYPE_CHECKING:
    from agent_cli.session import Session

HELP = """\
Type a message and press Enter to send it.
  New line inside a message: Alt-Enter (or Esc then Enter), or Ctrl-J.
  Ctrl-C while the model replies or a tool runs: cancel that turn (every pending call is
  answered "interrupted") and come back here. Ctrl-C at the prompt clears the line.
  Ctrl-D or /exit: leave.
Calls that only read run at once. Calls with effects show a panel: type y (or yes) to run
that one call; anything else denies it. Add a reason after n (`n use ./tmp`) and the model
sees it.
Commands:
  /help    this text
  /tools   the tools offered to the model, with their effect class
  /clear   forget the conversation so far (the log keeps it)
  /log     where this session's log is written
  /usage   tokens used in this session
  /exit    leave"""

EXIT = object()
Command = Callable[["Session", str], "RenderableType | object | None"]


def cmd_help(session: Session, arg: str) -> RenderableType:
    return Text(HELP)


def cmd_tools(session: Session, arg: str) -> RenderableType:
    table = Table(show_header=True, header_style="bold", box=None, padding=(0, 2))
    table.add_column("tool")
    table.add_column("effect")
    table.add_column("description", overflow="fold")
    for tool in session.registry:
        table.add_row(safe(tool.name), Text(tool.effect, style="green" if tool.effect == "read"
                                            else "red"),
                      safe(one_line(tool.description, 200)))
    return table


def cmd_clear(session: Session, arg: str) -> RenderableType:
    session.clear()
    return Text("Conversation cleared; the log keeps everything.", style="dim")


def cmd_log(session: Session, arg: str) -> RenderableType:
    return Text(f"Session log: {session.log_path}")


def cmd_usage(session: Session, arg: str) -> RenderableType:
    u = session.loop.usage
    return Text(f"Tokens this session: input {u.get('input_tokens', 0)}, "
                f"output {u.get('output_tokens', 0)}")


def cmd_exit(session: Session, arg: str) -> object:
    return EXIT


COMMANDS: dict[str, Command] = {
    "/help": cmd_help,
    "/tools": cmd_tools,
    "/clear": cmd_clear,
    "/log": cmd_log,
    "/usage": cmd_usage,
    "/exit": cmd_exit,
    "/quit": cmd_exit,
}


def dispatch(session: Session, line: str) -> RenderableType | object | None:
    name, _, arg = line.strip().partition(" ")
    fn = COMMANDS.get(name.lower())
    if fn is None:
        known = " ".join(sorted(k for k in COMMANDS if k != "/quit"))
        return Text(f"Unknown command {one_line(name, 40)}. Commands: {known}", style="yellow")
    return fn(session, arg)


def make_prompt(history_file: Path) -> Callable[[], str]:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory
    from prompt_toolkit.key_binding import KeyBindings

    history_file.parent.mkdir(parents=True, exist_ok=True)
    kb = KeyBindings()

    @kb.add("escape", "enter")
    @kb.add("c-j")
    def _newline(event) -> None:  # type: ignore[no-untyped-def]
        event.current_buffer.insert_text("\n")

    ps: PromptSession[str] = PromptSession(history=FileHistory(str(history_file)),
                                           key_bindings=kb, multiline=False)
    return lambda: ps.prompt("› ")


def run_repl(session: Session, console: Console, read: Callable[[], str]) -> None:
    console.print(Text.assemble(("agent-cli", "bold"), f" · {session.provider.name}:"
                                f"{session.provider.model} · workspace {session.workspace}\n",
                                ("Type /help for keys and commands. Ctrl-D to leave.", "dim")))
    while True:
        try:
            line = read()
        except KeyboardInterrupt:
            continue
        except EOFError:
            break
        if not line.strip():
            continue
        if line.strip().startswith("/"):
            out = dispatch(session, line)
            if out is EXIT:
                break
            if out is not None:
                console.print(out)
            continue
        try:
            session.send(line)
        except KeyboardInterrupt:
            console.print(Text("Interrupted.", style="yellow"))
    console.print(Text(f"Session log: {session.log_path}", style="dim"))
