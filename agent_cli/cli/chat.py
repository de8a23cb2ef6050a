"""`agent-cli chat`: the REPL, also `--demo`, `--resume [LOG]` and `--continue`."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from agent_cli.cli.common import (
    EXIT_USAGE,
    INSTRUCTIONS_HELP,
    PLAIN,
    Common,
    attach_instructions,
    fail,
    guarded,
    open_session,
    with_common,
)
from agent_cli.cli.help import PlainCommand

if TYPE_CHECKING:
    from rich.console import Console
    from rich.text import Text

    from agent_cli.conversation import History
    from agent_cli.session import Session
    from agent_cli.signals import TerminationSignals
    from agent_cli.ui.commands import TurnState
    from agent_cli.ui.startup import FirstFrame, FirstInput
    from agent_cli.ui.status import TerminalView
    from agent_cli.ui.terminal import Terminal
    from agent_cli.ui.turns import TerminalTurns


class _ChatCommand(PlainCommand):
    bare_options = ("--resume",)


def register(app: typer.Typer) -> None:
    app.command(cls=_ChatCommand)(chat)


@with_common
@guarded
def chat(
    common: Common,
    resume: Annotated[Optional[str], typer.Option(  # noqa: UP045
        "--resume", metavar="LOG",
        help="Continue a saved session: a path, a file name from `agent-cli log list`, or its "
        "id. Alone: pick one of this workspace's recent sessions.")] = None,
    continue_: Annotated[bool, typer.Option(
        "--continue", "--last", help="Continue the latest session of this workspace.")] = False,
    plain: PLAIN = False,
    demo: Annotated[bool, typer.Option(
        "--demo", help="The offline demo: a scripted model (no key, no network) in a fresh "
        "copy of the demo workspace.")] = False,
    instructions: Annotated[Optional[list[Path]], typer.Option(  # noqa: UP045
        "--instructions", metavar="FILE", help=INSTRUCTIONS_HELP)] = None,
) -> None:
    """Chat with the model in a REPL; write calls ask for your yes, one by one."""
    from agent_cli.signals import Terminated, TerminationSignals
    from agent_cli.ui.terminal import Terminal

    term = Terminal.detect()
    signals = TerminationSignals(take_interrupt=term.interactive)
    # One `with` from the first drawn character to the last log line: a signal anywhere in
    # between ends the chat through the same steps (and exits 128 + its number).
    with signals:
        try:
            opened, ps, first, frame, notes, said = _open_chat(
                common, term, signals, plain, resume, continue_, demo)
        except Terminated as e:  # before a session existed: nothing to close
            raise typer.Exit(128 + e.signum) from None
        try:
            session, console, view = opened.session, opened.console, opened.view
            with signals.held():  # the start record lands whole; a signal is looked at after
                session.start()
            if signals.received is None:  # (a signal while the session was built: it ends)
                read = _reader(session, term, signals, ps, first)
                attach_instructions(session, instructions, term.confirm(console),
                                    _offer(console) if term.interactive else None)
                warm_up = getattr(session.provider, "warm_up", None)
                if callable(warm_up) and term.interactive:
                    warm_up()
                for note in notes:
                    from agent_cli.events import Notice

                    session.emit(Notice(message=note, kind="resume"))
                from agent_cli.ui.repl import as_shown, run_repl
                from agent_cli.write_faults import REPL_RETRY

                for thing in said:
                    console.print(as_shown(thing))
                session.log.retry = REPL_RETRY
                run_repl(session, console, read, turns=opened.turns, state=opened.state,
                         view=view, history=getattr(read, "history", None))
        except Terminated:
            pass  # between the steps that handle it: the session still closes below
        finally:
            opened.view.stop()
            opened.session.close(signals.reason)
            if frame is not None:
                frame.restore()  # the terminal as the chat found it
    if signals.exit_code is not None:
        raise typer.Exit(signals.exit_code)


def _open_chat(common: Common, term: Terminal, signals: TerminationSignals, plain: bool,
               resume: str | None, continue_: bool, demo: bool,
               ) -> tuple[_Opened, Any, FirstInput | None, FirstFrame | None, list[str],
                          list[Any]]:
    """The session and what the chat shows before its first prompt: (opened, the first
    prompt's session or None, what was typed at it, its frame, resume notes, lines to print)."""
    if _prompt_first(term, resume, continue_):
        # On a terminal the prompt is drawn first and the session built behind it
        # (ui/startup.py); a resumed chat shows its recap and may ask which log first.
        if demo:
            _demo_prepare(common)
        common.workspace_dir()  # a wrong --workspace is a usage error before anything is drawn
        with signals.held():  # the build runs in a thread meanwhile
            opened, ps, first, frame = _open_behind_prompt(common, term, signals, plain)
            said = [_demo_lines(common)] if demo else []
        return opened, ps, first, frame, [], said
    from agent_cli.ui.startup import give_way

    give_way()  # (a prompt drawn before parsing, where the chat does not start with one)
    from rich.console import Console

    console = Console(highlight=False)
    if demo:
        _demo_setup(common, console)
    history, continues, notes, said = _resumed_history(common, resume, continue_, console, term)
    opened = _open(common, term, signals, plain, console, history, continues)
    return opened, None, None, None, notes, said


def _reader(session: Session, term: Terminal, signals: TerminationSignals, ps: Any,
            first: FirstInput | None) -> Callable[..., str]:
    """The REPL's `read`: the first prompt's session when there is one (what was typed while
    loading comes first), else a new line editor, else plain stdin lines."""
    from agent_cli.signals import Terminated
    from agent_cli.ui.repl import make_prompt, prompt_text

    prompt_read: Callable[..., str]
    history: Any = None
    editor: Any = ps
    if ps is not None:
        history = ps.history

        def prompt_read(default: str = "") -> str:
            sent, eof, text = first.take() if first is not None else (None, False, "")
            if sent is not None:
                return sent
            if eof:
                raise EOFError
            line: str = ps.prompt(prompt_text(session), default=default or text)
            return line
    elif term.interactive:
        from agent_cli.config import home

        prompt_read = make_prompt(home() / "history", session.log.redactor,
                                  lambda: prompt_text(session))
        history = getattr(prompt_read, "history", None)
        editor = getattr(prompt_read, "editor", None)
    else:
        def prompt_read(default: str = "") -> str:
            line = sys.stdin.readline()
            if not line:
                raise EOFError
            return line.rstrip("\n")

    def read(default: str = "") -> str:
        # After SIGTERM/SIGHUP the REPL ends as on Ctrl-D, once the turn was settled.
        if signals.received is not None:
            raise EOFError
        try:
            return prompt_read(default=default) if default else prompt_read()
        except Terminated:
            raise EOFError from None

    read.history = history  # type: ignore[attr-defined]
    read.editor = editor  # type: ignore[attr-defined]  # (run_repl adds completion to it)
    return read


@dataclass
class _Opened:
    """A session and the terminal parts built with it."""

    console: Console
    turns: TerminalTurns
    state: TurnState
    view: TerminalView
    session: Session


def _open(common: Common, term: Terminal, signals: TerminationSignals, plain: bool,
          console: Console | None = None, history: History | None = None,
          continues: str | None = None) -> _Opened:
    """The session with its console, Esc watcher, approver and view. Prints nothing and asks
    nothing, so it can run behind the first prompt (ui/startup.py)."""
    from rich.console import Console

    from agent_cli.ui.commands import TurnState
    from agent_cli.ui.render import Renderer
    from agent_cli.ui.status import TerminalView
    from agent_cli.ui.turns import TerminalTurns

    if console is None:
        console = Console(highlight=False)
    markdown = not plain and common.settings().render != "plain"
    view = TerminalView(Renderer(console, repl=True), console, markdown=markdown, spinner=markdown)
    # The turns run on their own thread; this thread draws them and asks (ui/turns.py). When
    # the session is built behind the first prompt, the outbox is owned by the thread that
    # builds it: `TerminalTurns.attach` hands it to the main thread.
    turns = TerminalTurns(view, term.approver(console), keys=term.keys(), signals=signals)
    view.typing = turns.typing  # what is typed during a turn shows under its spinner
    state = TurnState()
    session = open_session(common, sinks=[state, turns.outbox], history=history,
                           continues=continues)
    turns.attach(session)
    if session.effects is not None:
        from agent_cli.ui.confirm import terminal_asker

        asker = terminal_asker(console)
        if asker is not None:
            from agent_cli.ui.effects_view import conflict_asker, reviewer

            # Asked while a turn applies a command's changes: drawn on the terminal's thread.
            session.effects.overwrite = turns.on_terminal(conflict_asker(asker))
            if common.settings().review_effects:
                session.effects.review = turns.on_terminal(reviewer(asker))
    return _Opened(console, turns, state, view, session)


def _prompt_first(term: Terminal, resume: str | None, continue_: bool) -> bool:
    """Draw the prompt before the session is built: a person at a terminal, in and out, and
    nothing to show or ask before the first prompt (a resumed chat prints its recap first)."""
    if not term.interactive or resume is not None or continue_:
        return False
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def _open_behind_prompt(common: Common, term: Terminal, signals: TerminationSignals,
                        plain: bool) -> tuple[_Opened, Any, FirstInput, FirstFrame]:
    """Draw the prompt, build the session in a thread while it is shown, and return both with
    whatever the person typed, sent or pressed meanwhile (ui/startup.py)."""
    from agent_cli.ui.line_editor import PROMPT
    from agent_cli.ui.startup import FirstFrame, take_early

    message = f"read-only {PROMPT}" if common.read_only else PROMPT
    frame = take_early(message) or FirstFrame.draw(message)
    loading: Any = None
    try:
        from agent_cli.ui.history import DeferredHistory
        from agent_cli.ui.line_editor import prompt_session
        from agent_cli.ui.startup import Loading, read_while_loading, wait_with_status

        history = DeferredHistory()
        ps = prompt_session(history)
        loading = Loading(lambda: _open(common, term, signals, plain))
        text = ""
        while True:
            first = read_while_loading(ps, loading, message, frame, signals, text)
            if first.sent is None and not first.eof:
                break  # the build is done (or failed) before anything was sent
            if wait_with_status(loading, frame):
                break
            # Ctrl-C while waiting: nothing was sent; the line goes back into the prompt.
            text, first.sent = first.sent or "", None
        opened = loading.result()
    except BaseException:
        frame.erase()
        built = loading.value_if_done() if loading is not None else None
        if built is not None and built.session.mcp is not None:
            built.session.mcp.close()  # the prompt failed, not the build: no server left behind
        frame.restore()
        raise
    frame.settle()  # chat() restores the terminal fully once the REPL ends
    from agent_cli.config import home
    from agent_cli.ui.repl import open_history

    history.attach(open_history(home() / "history", opened.session.log.redactor))
    return opened, ps, first, frame


def _demo_prepare(common: Common) -> None:
    """--demo: the shipped demo script on the scripted provider, in a fresh workspace copy."""
    from agent_cli import demo

    if common.provider not in (None, "scripted") or common.script is not None:
        raise fail("--demo brings its own scripted model; leave out --provider and --script.",
                   EXIT_USAGE)
    common.provider = "scripted"
    common.script = demo.demo_script()
    if common.workspace is None:
        common.workspace = demo.fresh_workspace()


def _demo_lines(common: Common) -> Text:
    """What --demo says before the chat: where it runs and what to type."""
    from rich.text import Text

    from agent_cli import demo
    from agent_cli.ui.safe_rich import safe

    return Text("\n").join([
        Text("Demo: a scripted model (no key, no network), workspace ", style="dim")
        + safe(str(common.workspace), "dim"),
        Text("Type this request: ", style="dim") + safe(demo.REQUEST, "bold")])


def _demo_setup(common: Common, console: Console) -> None:
    _demo_prepare(common)
    console.print(_demo_lines(common))


def _resumed_history(common: Common, resume: str | None, continue_: bool, console: Console,
                     term: Terminal
                     ) -> tuple[History | None, str | None, list[str], list[Any]]:
    """The conversation to continue, the notes to log, and what to print (recap, workspace)."""
    if resume is None and not continue_:
        return None, None, [], []
    if resume is not None and continue_:
        raise fail("Use --resume LOG or --continue, not both.", EXIT_USAGE)
    from agent_cli.cli import sessions
    from agent_cli.log import resume as rs
    from agent_cli.log import store as log_store
    from agent_cli.ui.safe_rich import safe

    settings = common.settings()
    here = common.workspace_dir()
    if continue_:
        path = log_store.latest_for(settings, here)
    elif resume == sessions.PICK:
        if not term.interactive:
            raise fail("--resume without a LOG opens a picker, which needs a terminal; name the "
                       "log (`agent-cli log list` shows them) or use --continue.", EXIT_USAGE)
        path = sessions.pick(settings, here, console)
    else:
        assert resume is not None
        path = log_store.resolve(resume, settings)
    history, notes = rs.resume_notes(path)
    said: list[Any] = []
    start = log_store.first_start(path)
    use, sentence = sessions.workspace_note(start.workspace if start else None, common.workspace
                                            and here, Path.cwd())
    if use is not None and common.workspace is None:
        common.workspace = use
    if sentence:
        said.append(safe(sentence, "yellow"))
    said.append(sessions.recap(history))
    return history, str(path.resolve()), notes, said


def _offer(console: Console) -> Callable[..., bool]:
    """The once-only question for an AGENTS.md found in the workspace (instructions.offer_found)."""
    from agent_cli.ui.instructions_prompt import terminal_offer

    return terminal_offer(console)
