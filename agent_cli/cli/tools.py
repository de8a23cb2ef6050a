"""`agent-cli tools`: the tools a session would offer, as the model is told about them, and
`tools --trust FILE` to accept a changed plugin."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, Optional

import typer

from agent_cli.cli.common import EXIT_ERROR, Common, guarded, with_options


def register(app: typer.Typer) -> None:
    app.command()(tools)


@with_options("workspace", "tools_dir", "config", "tools", "exclude_tools", "read_only",
              "sandbox")
@guarded
def tools(
    common: Common,
    trust: Annotated[Optional[list[Path]], typer.Option(  # noqa: UP045
        "--trust", metavar="FILE", help="Trust this plugin file as it is now (after you changed "
        "it); repeat for more. Shows what changed since it was last trusted and asks.")] = None,
    yes: Annotated[bool, typer.Option(
        "--yes", help="With --trust: trust without asking on a terminal (the change is "
        "still printed).")] = False,
) -> None:
    """List the tools: name, effect class, source file, schema hash, arguments and full
    description (what the model is told). Exits 1 if a plugin failed to load."""
    from rich.console import Console
    from rich.padding import Padding
    from rich.text import Text

    from agent_cli.session import load_registry
    from agent_cli.ui.safe_rich import safe

    console = Console(highlight=False)
    if trust:
        from agent_cli.cli.trust import trust_files

        raise typer.Exit(trust_files(list(trust), console, yes=yes))
    from agent_cli.session import session_scope

    settings = common.settings()
    loaded, report = load_registry(settings, common.tools_dir)
    registry = session_scope(settings, loaded)
    for tool in registry:
        console.print(Text.assemble(safe(tool.name, "bold"), "  ",
                                    safe(tool.effect, "green" if tool.effect == "read" else "red"),
                                    ("  schema ", "dim"), safe(tool.schema_hash(), "dim")))
        console.print(Text("  source: ", style="dim") + safe(tool.source, "dim"))
        console.print(Text("  args: ", style="dim") + safe(_args_summary(tool.schema())))
        for example in tool.input_examples:
            console.print(Text("  example: ", style="dim")
                          + safe(json.dumps(example, ensure_ascii=False)))
        console.print(Padding(safe(tool.description), (0, 0, 0, 2)))
    for tool, why in registry.hidden():
        console.print(Text("not offered: ", style="yellow") + safe(tool.name, "bold")
                      + safe(f" ({why})", "dim"))

    _print_skills(console, settings.skills_dirs)
    from agent_cli.cli.mcp import print_tools

    mcp_ok = print_tools(console, common.settings(), common.workspace_dir())
    for problem in report.errors:
        console.print(Text("plugin error: ", style="bold red") + safe(problem))
    if report.errors or not mcp_ok:
        raise typer.Exit(EXIT_ERROR)


def _print_skills(console: Any, folders: list[str]) -> None:
    """The skills of config `skills_dirs` with their state (ui/skills_view.py, also `/skills`):
    loading them here pins a new one, as a session would."""
    if not folders:
        return
    from agent_cli.skills import load_skills
    from agent_cli.tools.trust import PluginPins
    from agent_cli.ui.skills_view import skills_listing

    console.print(skills_listing(load_skills([Path(d).expanduser() for d in folders],
                                             PluginPins())))


def _schema_type(prop: dict[str, Any]) -> str:
    if "anyOf" in prop:
        return " | ".join(_schema_type(p) for p in prop["anyOf"])
    kind = str(prop.get("type", "?"))
    if kind == "array" and isinstance(prop.get("items"), dict):
        return f"{kind}[{_schema_type(prop['items'])}]"
    return kind


CONSTRAINT_KEYS = ("enum", "const", "minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum",
                   "minLength", "maxLength", "pattern", "format", "minItems", "maxItems")
"""Schema keywords that narrow what a value may be; `agent-cli tools` shows them, since the
model is held to them and a call that breaks one is rejected."""


def _constraints(prop: dict[str, Any]) -> list[str]:
    found = [f"{key} {json.dumps(prop[key], ensure_ascii=False)}"
             for key in CONSTRAINT_KEYS if key in prop]
    for option in prop.get("anyOf", []):
        if isinstance(option, dict):
            found += _constraints(option)
    if isinstance(prop.get("items"), dict):
        found += [f"items {c}" for c in _constraints(prop["items"])]
    return found


def _args_summary(schema: dict[str, Any]) -> str:
    """`name: type` for each argument, with its constraints (enum, min/max, pattern...);
    optional ones show their default."""
    required = set(schema.get("required", []))
    parts = []
    for name, prop in schema.get("properties", {}).items():
        text = f"{name}: {_schema_type(prop)}"
        if name not in required and "default" in prop:
            text += f" = {json.dumps(prop['default'])}"
        limits = _constraints(prop)
        if limits:
            text += f" [{', '.join(limits)}]"
        parts.append(text)
    return ", ".join(parts) or "(none)"
