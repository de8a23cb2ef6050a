"""`agent-cli undo [LOG | --last]`, `undo --list [LOG]`, `undo --turn N`, `undo --to ID`,
`undo --redo`: put back what approved calls changed. Without --turn or --to it steps back one
turn (every call of the last turn still in effect, newest first); a second run steps back one
more; `--redo` takes back the last undo.

There is no `--yes`: an undo writes files, so it asks like a write call. With no terminal it
refuses, unless the answers are given explicitly with `--answers FILE` (one answer a line, as
typed at the prompt; a missing line is a no).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Optional

import typer

if TYPE_CHECKING:
    from rich.console import Console

    from agent_cli.ui.confirm import Asker
    from agent_cli.ui.undo_view import Ask

EXIT_OK = 0
EXIT_NOT_UNDONE = 1


def register(app: typer.Typer) -> None:
    from agent_cli.cli.common import guarded

    @app.command("undo")
    @guarded
    def undo_cmd(
        log: Annotated[Optional[str], typer.Argument(  # noqa: UP045 (typer needs Optional)
            metavar="[LOG]", help="The session log (a path or a name from `log list`); "
            "default: the newest session of this workspace with something to undo.")] = None,
        last: Annotated[bool, typer.Option(
            "--last", help="The newest session of this workspace (the default).")] = False,
        list_: Annotated[bool, typer.Option(
            "--list", help="Show what can be undone, one approved call a line, newest "
            "first.")] = False,
        to: Annotated[Optional[str], typer.Option(  # noqa: UP045
            "--to", metavar="ID", help="Restore the state just before this call: it and every "
            "call after it still in effect, newest first.")] = None,
        turn: Annotated[Optional[int], typer.Option(  # noqa: UP045
            "--turn", metavar="N", min=1, help="Restore the state just before turn N (as "
            "--list numbers them).")] = None,
        redo: Annotated[bool, typer.Option(
            "--redo", help="Put back what the last undo took back.")] = False,
        answers: Annotated[Optional[Path], typer.Option(  # noqa: UP045
            "--answers", metavar="FILE", help="Answers to the prompts, one a line, as typed "
            "(for runs without a terminal).")] = None,
        workspace: Annotated[Optional[Path], typer.Option(  # noqa: UP045
            "--workspace", "-w", metavar="DIR",
            help="Whose sessions --last looks at (default: the current folder).")] = None,
        config: Annotated[Optional[Path], typer.Option(  # noqa: UP045
            "--config", metavar="FILE", help="Settings file (TOML).")] = None,
    ) -> None:
        """Restore what approved calls changed, one turn at a time: shows the diff it would
        apply and asks [y/N]. A file changed since is named and left alone. Exit 0: undone; 1:
        nothing undone."""
        from rich.console import Console

        from agent_cli.config import home, load_settings
        from agent_cli.errors import UsageError
        from agent_cli.ui.safe_rich import safe
        from agent_cli.ui.undo_view import confirm_and_apply, list_view, print_outcome
        from agent_cli.undo import logs
        from agent_cli.undo.restore import make_plan
        from agent_cli.undo.store import Store

        if log is not None and last:
            raise UsageError("Give a LOG or --last, not both.")
        if sum(x is not None and x is not False for x in (to, turn, redo or None)) > 1:
            raise UsageError("Give one of --to ID, --turn N and --redo.")
        if list_ and (to is not None or turn is not None or redo):
            raise UsageError("--list shows what can be undone; use --to, --turn or --redo "
                             "without it.")
        settings = load_settings(config, {})
        console = Console(highlight=False)
        if log is not None:
            path = logs.resolve_log(log, settings)
        else:
            ws = (workspace or Path.cwd()).expanduser().resolve()
            path = logs.latest_with_undo(settings, ws)
        hist, crashed = logs.trusted_history(path)
        sets = hist.undoable()
        live = logs.in_use(path)
        if live:
            console.print(safe("That session is still open in another terminal: this is what "
                               "its log says so far.", "yellow"))
        crash_note = ("That session crashed (its log ends torn or without session_end); "
                      "every record up to there verifies and is signed with your log key."
                      if crashed and not live else "")
        if crash_note and list_:
            console.print(safe(crash_note, "yellow"))
        if list_:
            if not sets:
                console.print(safe(f"Nothing to undo in {path}.", "dim"))
                return
            console.print(safe(f"{path}:", "dim"))
            console.print(list_view(list(reversed(sets))), end="")
            return
        if live:
            raise logs.UndoRefused(f"The session of {path} is still open in another terminal; "
                                   "use /undo there (or quit it first).")
        chosen = [logs.redo_set(hist)] if redo else logs.select(hist, to, turn)
        spaces = {cs.workspace for cs in chosen}
        if len(spaces) != 1:
            raise UsageError("Those calls ran in different workspaces; undo them one at a time.")
        target = Path(spaces.pop())
        if not target.is_dir():
            raise logs.UndoRefused(f"The workspace {target} of those calls is gone; nothing to "
                                   "restore into.")
        store = Store()
        plan = make_plan(chosen, target, store, home())
        ask = _answer_source(answers, console)
        outcome = confirm_and_apply(plan, store, console, ask,
                                    lambda event: logs.append_undo(path, event), redo=redo,
                                    note=crash_note)
        print_outcome(console, outcome)
        raise typer.Exit(EXIT_OK if outcome.undone else EXIT_NOT_UNDONE)


def _answer_source(answers: Path | None, console: Console) -> Ask | Asker | None:
    """The terminal (a fresh prompt, typeahead discarded), the --answers file, or None (no
    terminal: refuse, like a write call)."""
    from agent_cli.errors import UsageError

    if answers is not None:
        try:
            lines = answers.read_text(encoding="utf-8").splitlines()
        except OSError as e:
            raise UsageError(f"--answers {answers}: cannot read it ({e.strerror}).") from None

        def from_file(prompt: str) -> str:
            sys.stdout.write(prompt)
            if not lines:
                sys.stdout.write("(no answer left in the file)\n")
                raise EOFError
            answer = lines.pop(0)
            sys.stdout.write(answer + "\n")
            return answer

        return from_file
    from agent_cli.ui.confirm import terminal_asker

    return terminal_asker(console)
