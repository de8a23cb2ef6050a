"""A tool listed by an MCP server, turned into an agent-cli `Tool`.

Kept apart from the bridge (mcp_bridge.py), which owns the event loop and the servers: this is
the pure part, testable without a server. The registry name is sanitised to the API's rule,
input is checked with jsonschema against the server's own schema, and the effect class comes
from the user's trust in the server plus the tool's annotations, which are the server's claims
and are shown as such on the approval panel.

`jsonschema` is part of the optional extra: it is imported only when a validator is built.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from agent_cli.tools.base import EmptyArgs, Tool, ToolContext, ToolOutput

if TYPE_CHECKING:
    from agent_cli.config import MCPServer

CallFn = Callable[[str, str, dict[str, Any], ToolContext], ToolOutput]
"""How a tool reaches its server: (server, remote tool name, arguments, context) -> output."""

NAME_OK = re.compile(r"[^a-zA-Z0-9_-]")

# The spec's defaults for missing annotations: not read-only, destructive, not idempotent, open.
HINT_DEFAULTS = {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False,
                 "openWorldHint": True}


def registry_name(server: str, tool: str) -> str:
    """`SERVER__tool`, sanitised to the API's rule ^[a-zA-Z0-9_-]{1,64}$."""
    return NAME_OK.sub("_", f"{server}__{tool}")[:64]


def effect_of(trusted: bool, annotations: dict[str, Any]) -> str:
    """`read` only when the user trusts the server AND the tool claims readOnlyHint true."""
    return "read" if trusted and annotations.get("readOnlyHint") is True else "write"


def describe_claims(annotations: dict[str, Any]) -> str:
    """The annotations as the server's claims, with spec defaults marked, for panels and lists."""
    parts: list[str] = []

    def hint(key: str) -> tuple[bool, bool]:
        value = annotations.get(key)
        return (value if isinstance(value, bool) else HINT_DEFAULTS[key]), isinstance(value, bool)

    ro, ro_set = hint("readOnlyHint")
    parts.append(("read-only" if ro else "may change things") + ("" if ro_set else " (default)"))
    if not ro:
        de, de_set = hint("destructiveHint")
        parts.append(("destructive" if de else "not destructive") + ("" if de_set else
                                                                     " (default)"))
        idem, idem_set = hint("idempotentHint")
        parts.append(("idempotent" if idem else "not idempotent") + ("" if idem_set else
                                                                     " (default)"))
    ow, ow_set = hint("openWorldHint")
    parts.append(("open world" if ow else "closed world") + ("" if ow_set else " (default)"))
    return ", ".join(parts) + " (unverified)"


def make_validator(schema: dict[str, Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A `validate_raw` for the Tool contract: jsonschema, every reason listed, input unchanged."""
    from jsonschema import validators

    cls = validators.validator_for(schema)
    cls.check_schema(schema)
    checker = cls(schema)

    def validate(raw: dict[str, Any]) -> dict[str, Any]:
        errors = sorted(checker.iter_errors(raw), key=lambda e: [str(p) for p in e.path])
        if errors:
            lines = []
            for err in errors:
                where = ".".join(str(p) for p in err.absolute_path) or "(input)"
                lines.append(f"- {where}: {err.message}")
            raise ValueError("\n".join(lines))
        return raw

    return validate


@dataclass
class ToolEntry:
    """One tool a server lists, as the hub sees it."""

    remote: str
    name: str
    definition: dict[str, Any]
    annotations: dict[str, Any]
    effect: str
    status: str = "offered"
    """offered | held (changed since pinned) | refused (bad schema or name clash)"""
    why: list[str] = field(default_factory=list)
    tool: Tool | None = None


def tool_entries(server: str, config: MCPServer, listed: list[Any],
                 call: CallFn) -> dict[str, ToolEntry]:
    """An entry per listed tool, keyed by registry name; a tool whose name clashes with an
    earlier one, or whose schema jsonschema cannot use, is kept as `refused` with the reason."""
    entries: dict[str, ToolEntry] = {}
    for t in listed:
        definition = t.model_dump(by_alias=True, exclude_none=True, mode="json")
        pinned = {k: definition.get(k) for k in ("name", "description", "inputSchema",
                                                 "annotations")}
        annotations = dict(definition.get("annotations") or {})
        name = registry_name(server, t.name)
        entry = ToolEntry(t.name, name, pinned, annotations,
                          effect_of(config.trusted, annotations))
        if name in entries:
            entry.status = "refused"
            entry.why = [f"its name becomes {name}, like {entries[name].remote}"]
            entries[f"{name}#{t.name}"] = entry
            continue
        try:
            entry.tool = make_tool(server, config, entry, t, call)
        except Exception as e:  # a schema jsonschema cannot use: refuse that one tool
            entry.status, entry.why = "refused", [f"unusable input schema: {e}"]
        entries[name] = entry
    return entries


def make_tool(server: str, config: MCPServer, entry: ToolEntry, t: Any, call: CallFn) -> Tool:
    """The agent-cli Tool for one listed MCP tool; its run hands the call to `call`."""
    schema = dict(t.input_schema)
    validator = make_validator(schema)
    remote = entry.remote
    trust = "trusted" if config.trusted else "untrusted"

    def run(args: Any, ctx: ToolContext) -> ToolOutput:
        return call(server, remote, dict(args), ctx)

    description = t.description or getattr(t, "title", None) or f"{remote} (MCP tool)"
    return Tool(
        name=entry.name, description=description, args=EmptyArgs, run=run,
        effect="read" if entry.effect == "read" else "write",
        timeout_s=config.timeout_s + 2.0, source=f"mcp:{server}", input_schema=schema,
        validate_raw=validator,
        extra_panel={"server": f"{server} ({trust}; calls the MCP tool {remote})",
                     "server says": describe_claims(entry.annotations)},
    )
