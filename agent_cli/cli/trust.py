"""`agent-cli trust FILE...`: accept the current version of a plugin file (or any file of a
plugin folder), a SKILL.md or a project instruction file (AGENTS.md).

The same pin store and the same answer as `agent-cli tools --trust FILE` (tools/trust.py); a
command of its own because skills are not tools, and "trust this file" should be easy to find.

Each file is read once, through the gate (trusted_input.py: its name, no link out of its folder,
a regular file); the whole change since it was last trusted is shown (never cut: a terminal pages
it), then the one confirm asks (ui/confirm.py: typeahead dropped, y only after the end was on
screen), and the yes pins exactly the bytes that were shown, not a second read. Without a
terminal (or with `--yes`) the command naming the file is the decision: the whole change is
printed and those bytes are pinned.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from rich.console import Console

MAX_TRUST_BYTES = 64 << 20
"""Largest file `trust` reads (a plugin folder's data files included)."""


def register(app: typer.Typer) -> None:
    @app.command()
    def trust(
        files: Annotated[list[Path], typer.Argument(
            metavar="FILE...", help="Plugin, SKILL.md or project instruction files to trust as "
            "they are now.")],
        yes: Annotated[bool, typer.Option(
            "--yes", help="Trust without asking on a terminal (the change is still printed).")
            ] = False,
    ) -> None:
        """Trust plugin, skill or project instruction files as they are now (after you changed
        them): shows the whole change since each was last trusted and asks."""
        from rich.console import Console

        raise typer.Exit(trust_files(files, Console(highlight=False), yes=yes))


def root_and_name(file: Path) -> tuple[Path, str]:
    """The root a FILE argument is read under: the current folder when it is inside it (so the
    key is the one a workspace-relative name has), else the file's own folder."""
    import os

    full = Path(os.path.normpath(file.expanduser().absolute()))
    here = Path.cwd()
    try:
        return here, str(full.relative_to(here))
    except ValueError:
        return full.parent, full.name


def trust_files(files: list[Path], console: Console, *, yes: bool = False) -> int:
    """Show each file's whole change and pin the bytes shown after a yes (no terminal, or --yes:
    without asking); the exit
    status: 0 when every file is trusted, 1 when one was not, 2 for a file that is refused."""
    from rich.text import Text

    from agent_cli.tools.trust import PluginPins
    from agent_cli.trusted_input import InputRefused, open_trusted_text
    from agent_cli.ui.confirm import terminal_asker
    from agent_cli.ui.panel import DiffView
    from agent_cli.ui.safe_rich import safe

    pins = PluginPins()
    asker = None if yes else terminal_asker(console)
    status = 0
    for file in files:
        root, name = root_and_name(file)
        try:
            item = open_trusted_text(root, name, max_bytes=MAX_TRUST_BYTES)
        except InputRefused as e:
            console.print(safe(f"{e} Give the path of the plugin, SKILL.md or instruction file "
                               "itself.", "red"))
            status = 2
            continue
        change = pins.change_of(item)
        if not change:
            console.print(safe(f"{item.key}: already trusted; nothing changed."))
            continue
        console.print(Text("What you would trust in ", style="bold yellow")
                      + safe(item.shown_name(), "bold") + Text(":", style="bold yellow"))
        if asker is None:
            # No person to ask (or --yes): the command naming the file is the decision, and
            # the whole change it accepts is printed with it.
            console.print(DiffView(change))
        elif not asker.confirm(DiffView(change), f"Trust {item.shown_name()} as shown? [y/N] "):
            console.print(safe(f"{item.key}: not trusted; nothing changed.", "yellow"))
            status = max(status, 1)
            continue
        console.print(safe(pins.trust_input(item) + f" (sha256 {item.sha256[:16]}, as shown)."))
    return status
