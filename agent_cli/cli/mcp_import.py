"""`agent-cli mcp import`: someone else's `mcpServers` block, shown field by field, imported
only as the user accepted it.

The file was written by someone else (a cloned repository's `.mcp.json`, another client's
config): it is data. Each server is shown with every field that grants something and each risky
value called out on its own line (tools/mcp/review.py decides what); servers that can never be
imported as written are shown as refused. One question imports the servers shown, untrusted and
with none of the file's own grant keys; a second offers the grants their commands need
(cli/mcp.py `_offer_grants`). Nothing is written before the answers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


def run_import(block: dict[str, Any], have: dict[str, Any], source: Path, target: Path, *,
               yes: bool, grant: bool, shape: str = "generic") -> int:
    """Show, ask, append; the exit code (1 when an entry could not be read or was refused)."""
    from rich.console import Console
    from rich.text import Text

    from agent_cli.cli.mcp import _offer_grants, mcp_question
    from agent_cli.tools.mcp.config import append_servers, import_entry
    from agent_cli.tools.mcp.review import GRANTING, Review, review
    from agent_cli.ui.safe_rich import safe

    console = Console(highlight=False, markup=False, stderr=False)
    err = Console(highlight=False, markup=False, stderr=True)
    shown: dict[str, Review] = {}
    problems: list[str] = []
    skipped: list[str] = []
    for name, raw in block.items():
        name = str(name)
        if name in have:
            skipped.append(f"{name}: already configured in {target}; left as it is")
            continue
        try:
            entry, dropped = import_entry(name, raw, shape, GRANTING)
        except ValueError as e:
            problems.append(str(e))
            continue
        shown[name] = review(name, entry, raw, source)
        shown[name].dropped = dropped
    view = Text()
    view.append_text(safe(f"MCP servers in {source} (written by someone else: check every "
                          "line):", "bold"))
    for rv in shown.values():
        view.append_text(Text("\nserver ", style="bold") + safe(rv.name, "bold"))
        for key, value in rv.fields:
            view.append_text(Text("\n  ") + safe(f"{key} = {value}"))
        for line in rv.callouts:
            view.append_text(Text("\n  ! ", style="bold yellow") + safe(line, "yellow"))
        for line in rv.dropped:
            view.append_text(Text("\n  not imported: ", style="dim") + safe(line))
        if rv.refused:
            view.append_text(Text("\n  NOT IMPORTED: ", style="bold red") + safe(rv.refused, "red"))
    for line in skipped:
        err.print(safe(f"not imported: {line}"))
    for line in problems:
        err.print(safe(f"not imported: {line}"))
    importable = {n: rv for n, rv in shown.items() if rv.refused is None}
    refused = len(shown) - len(importable)
    if not importable or yes:
        console.print(view)
    if not importable:
        console.print(safe(f"0 server(s) added to {target}."))
        return EXIT_FAILED if problems or refused else EXIT_OK
    if not yes:
        answer = mcp_question(
            f"Import these {len(importable)} server(s) as shown, untrusted, into {target}?",
            view)
        if answer is None:
            console.print(view)
            err.print(safe("No terminal to confirm on: read the servers above and run again "
                           "with --yes to import them (and --grant for the grants they need); "
                           "nothing was imported."))
            return EXIT_USAGE
        if not answer:
            console.print(safe("Nothing was imported."))
            return EXIT_FAILED
    entries = {n: rv.entry for n, rv in importable.items()}
    _offer_grants(entries, grant)
    append_servers(target, entries)
    for name in entries:
        console.print(safe(f"imported {name} (untrusted)"))
    console.print(safe(f"{len(entries)} server(s) added to {target}."))
    return EXIT_FAILED if problems or refused else EXIT_OK
