"""`agent-cli trust FILE...`: accept the current version of a plugin file, a SKILL.md or a
project instruction file (AGENTS.md).

The same pin store and the same answer as `agent-cli tools --trust FILE` (tools/trust.py); a
command of its own because skills are not tools, and "trust this file" should be easy to find.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    @app.command()
    def trust(
        files: Annotated[list[Path], typer.Argument(
            metavar="FILE...", help="Plugin, SKILL.md or project instruction files to trust as "
            "they are now.")],
    ) -> None:
        """Trust plugin, skill or project instruction files as they are now (after you changed
        them); shows what changed since each was last trusted."""
        from rich.console import Console

        from agent_cli.cli.common import EXIT_USAGE, fail
        from agent_cli.tools.trust import PluginPins
        from agent_cli.ui.safe_rich import safe

        console = Console(highlight=False)
        pins = PluginPins()
        for file in files:
            if not file.is_file():
                raise fail(f"{file} is not a file; give the path of the plugin, SKILL.md or "
                           "instruction file to trust.", EXIT_USAGE)
            console.print(safe(pins.trust(file)))
