"""`agent-cli chat`: the REPL, also `--demo`, `--resume [LOG]` and `--continue`."""

from __future__ import annotations

import sys
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

    from agent_cli.ui.terminal import Terminal


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
    from rich.console import Console

    from agent_cli.config import home
    from agent_cli.ui.render import Renderer
    from agent_cli.ui.repl import as_shown, make_prompt, prompt_text, run_repl
    from agent_cli.ui.status import TerminalView
    from agent_cli.ui.terminal import Terminal

    console = Console(highlight=False)
    term = Terminal.detect()
    if demo:
        _demo_setup(common, console)
    history, continues, notes, said = _resumed_history(common, resume, continue_, console, term)
    keys = term.keys()
    approver = term.approver(console, keys)
    from agent_cli.signals import EndingApprover, Terminated, TerminationSignals

    signals = TerminationSignals(take_interrupt=term.interactive)
    markdown = not plain and common.settings().render != "plain"
    view = TerminalView(Renderer(console), console, markdown=markdown, spinner=markdown)
    session = open_session(common, approver=EndingApprover(approver, signals), sinks=[view],
                           history=history, continues=continues)
    if term.interactive:
        prompt_read = make_prompt(home() / "history", session.log.redactor,
                                  lambda: prompt_text(session))
    else:
        def prompt_read() -> str:
            line = sys.stdin.readline()
            if not line:
                raise EOFError
            return line.rstrip("\n")

    def read() -> str:
        # After SIGTERM/SIGHUP the REPL ends as on Ctrl-D, once the turn was settled.
        if signals.received is not None:
            raise EOFError
        try:
            return prompt_read()
        except Terminated:
            raise EOFError from None

    with signals:
        try:
            session.start()
            attach_instructions(session, instructions, term.confirm(console))
            warm_up = getattr(session.provider, "warm_up", None)
            if callable(warm_up) and term.interactive:
                warm_up()
            for note in notes:
                from agent_cli.events import Notice

                session.emit(Notice(message=note, kind="resume"))
            for thing in said:
                console.print(as_shown(thing))
            run_repl(session, console, read, keys=keys, view=view)
        except Terminated:
            pass  # between the steps that handle it: the session still closes below
        finally:
            view.stop()
            session.close(signals.reason)
    if signals.exit_code is not None:
        raise typer.Exit(signals.exit_code)


def _demo_setup(common: Common, console: Console) -> None:
    """--demo: the shipped demo script on the scripted provider, in a fresh workspace copy."""
    from rich.text import Text

    from agent_cli import demo
    from agent_cli.ui.safe_rich import safe

    if common.provider not in (None, "scripted") or common.script is not None:
        raise fail("--demo brings its own scripted model; leave out --provider and --script.",
                   EXIT_USAGE)
    common.provider = "scripted"
    common.script = demo.demo_script()
    if common.workspace is None:
        common.workspace = demo.fresh_workspace()
    console.print(Text("Demo: a scripted model (no key, no network), workspace ", style="dim")
                  + safe(str(common.workspace), "dim"))
    console.print(Text("Type this request: ", style="dim") + safe(demo.REQUEST, "bold"))


def _resumed_history(common: Common, resume: str | None, continue_: bool, console: Console,
                     term: Terminal
                     ) -> tuple[list[dict[str, Any]] | None, str | None, list[str], list[Any]]:
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
