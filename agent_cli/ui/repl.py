"""The prompt-toolkit REPL: read a line, send it (or run its slash command: ui/commands.py, plain
functions tested without a terminal), repeat; a few pty tests prove the real wiring
(tests/ui/test_repl_pty.py).

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

from rich.console import Console, ConsoleRenderable, RichCast
from rich.text import Text

from agent_cli.conversation import ends_interrupted
from agent_cli.errors import AgentError
from agent_cli.ui.commands import (
    EXIT,
    TurnState,
    command_lines,
    dispatch,
    is_command,
    turn_state_of,
)
from agent_cli.ui.line_editor import EXIT_HINT, PROMPT, EmptyLineInterrupt, prompt_session
from agent_cli.ui.safe_rich import safe
from agent_cli.ui.turns import Retry

if TYPE_CHECKING:
    from prompt_toolkit.history import History

    from agent_cli.session import Session
    from agent_cli.ui.status import TerminalView
    from agent_cli.ui.turns import TerminalTurns

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

    state = state or turn_state_of(session) or TurnState()
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
                console.print(safe(EXIT_HINT, "dim"))
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
