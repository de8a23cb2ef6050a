"""A tool listed by an MCP server, turned into an agent-cli `Tool`.

Kept apart from the hub (hub.py), which owns the event loop and the servers: this is
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


def local_refs_problem(schema: Any) -> str | None:
    """Why a schema's `$ref`s cannot be used, or None. A `$ref` to another document (a URL or a
    file) is never fetched: that tool is refused. A local one (`#/...`, `#anchor`) must resolve
    inside the schema itself."""
    anchors: set[str] = set()
    refs: list[str] = []

    def walk(node: Any, depth: int) -> None:
        if depth > 200:
            raise RecursionError
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                refs.append(ref)
            for key in ("$anchor", "$dynamicAnchor"):
                if isinstance(node.get(key), str):
                    anchors.add(node[key])
            for value in node.values():
                walk(value, depth + 1)
        elif isinstance(node, list):
            for value in node:
                walk(value, depth + 1)

    try:
        walk(schema, 0)
    except RecursionError:
        return "its input schema is nested too deeply"
    for ref in refs:
        if not ref.startswith("#"):
            return (f"its input schema refers to another document ($ref {ref!r}), which "
                    "agent-cli never fetches")
        if ref in ("#", ""):
            continue
        if not ref.startswith("#/"):
            if ref[1:] not in anchors:
                return f"its input schema has a $ref that does not resolve ({ref!r})"
            continue
        node: Any = schema
        for raw in ref[2:].split("/"):
            part = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return f"its input schema has a $ref that does not resolve ({ref!r})"
    return None


def make_validator(schema: dict[str, Any]) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """A `validate_raw` for the Tool contract: jsonschema, every reason listed, input unchanged.

    The validator gets an empty reference registry, so no `$ref` is ever retrieved from the
    network or disk; a schema jsonschema still cannot apply at call time (a bad `pattern`, say)
    becomes a ValueError with one line, never a traceback."""
    from jsonschema import validators
    from referencing import Registry

    problem = local_refs_problem(schema)
    if problem is not None:
        raise ValueError(problem)
    cls = validators.validator_for(schema)
    cls.check_schema(schema)
    checker = cls(schema, registry=Registry())

    def validate(raw: dict[str, Any]) -> dict[str, Any]:
        try:
            errors = sorted(checker.iter_errors(raw), key=lambda e: [str(p) for p in e.path])
        except Exception as e:  # the server's schema itself is unusable for this input
            raise ValueError(f"- (input): the server's input schema could not be applied "
                             f"({type(e).__name__})") from None
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
    """offered | held (changed since pinned) | refused (bad name, schema, needs tasks, clash) |
    disabled (by enabled_tools / disabled_tools in config)"""
    why: list[str] = field(default_factory=list)
    tool: Tool | None = None
    shown: str = ""
    """The remote name as it may be shown (sanitised, one line)."""
    description: str = ""
    """The full description, sanitised (tokens for hidden characters, padding collapsed)."""
    warning: str = ""
    """Hidden characters or padding found in the title or description, said once."""
    builtin: bool = False
    """agent-cli's own resource tools for this server (not the server's; not pinned)."""


def _hidden(text: str) -> str | None:
    """A summary of what the sanitiser must show as tokens in a one-line string, or None."""
    from agent_cli.safe_text import one_line, scan

    findings = scan(text)
    if findings.any:
        return findings.summary()
    if one_line(text) != text:
        return "line breaks or tabs shown as tokens"
    return None


def tool_entries(server: str, config: MCPServer, listed: list[Any],
                 call: CallFn) -> dict[str, ToolEntry]:
    """An entry per listed tool, keyed by registry name. Refused (kept with the reason, never
    offered): a name holding control characters, line breaks or escapes; a name that clashes
    with an earlier one; a schema jsonschema cannot use or whose `$ref` does not resolve
    locally; a tool that requires MCP tasks (not supported). Disabled: by the server's
    enabled_tools / disabled_tools. A title or description with hidden characters or padding is
    offered sanitised, with a warning."""
    from agent_cli.safe_text import one_line, sanitize, scan

    entries: dict[str, ToolEntry] = {}
    for t in listed:
        definition = t.model_dump(by_alias=True, exclude_none=True, mode="json")
        pinned = {k: definition.get(k) for k in ("name", "title", "description", "inputSchema",
                                                 "annotations") if k in definition
                  or k != "title"}
        annotations = dict(definition.get("annotations") or {})
        remote = str(t.name)
        name = registry_name(server, remote)
        entry = ToolEntry(remote, name, pinned, annotations,
                          effect_of(config.trusted, annotations), shown=one_line(remote, 80),
                          description=sanitize(str(definition.get("description") or "")))
        title = definition.get("title")
        warnings = []
        if isinstance(title, str) and (bad := _hidden(title)):
            warnings.append(f"its title has {bad}: {one_line(title, 120)}")
        findings = scan(str(definition.get("description") or ""))
        if findings.any:
            warnings.append(f"its description has {findings.summary()} (padding can hide text "
                            "from you that the model still reads)")
        entry.warning = "; ".join(warnings)
        execution = definition.get("execution") or {}
        if bad := _hidden(remote):
            entry.status = "refused"
            entry.why = [f"its name has {bad}; a tool name must be plain text"]
            name = f"{name}#{len(entries)}"
        elif name in entries:
            entry.status = "refused"
            entry.why = [f"its name becomes {name}, like {entries[name].shown}"]
            name = f"{name}#{len(entries)}"
        elif isinstance(execution, dict) and execution.get("taskSupport") == "required":
            entry.status = "refused"
            entry.why = ["it requires MCP tasks (taskSupport: required), which agent-cli does "
                         "not support"]
        elif remote in config.disabled_tools or (config.enabled_tools is not None
                                                 and remote not in config.enabled_tools):
            entry.status, entry.why = "disabled", ["disabled in the config"]
        else:
            try:
                entry.tool = make_tool(server, config, entry, t, call)
            except Exception as e:  # a schema jsonschema cannot use: refuse that one tool
                reason = getattr(e, "message", None) or str(e) or type(e).__name__
                entry.status = "refused"
                entry.why = [f"unusable input schema: {one_line(str(reason), 300)}"]
        entries[name] = entry
    return entries


def make_tool(server: str, config: MCPServer, entry: ToolEntry, t: Any, call: CallFn) -> Tool:
    """The agent-cli Tool for one listed MCP tool; its run hands the call to `call`."""
    from agent_cli.safe_text import one_line

    schema = dict(t.input_schema)
    validator = make_validator(schema)
    remote = entry.remote
    trust = "trusted" if config.trusted else "untrusted"

    def run(args: Any, ctx: ToolContext) -> ToolOutput:
        return call(server, remote, dict(args), ctx)

    title = getattr(t, "title", None)
    description = entry.description or (one_line(title) if title else f"{remote} (MCP tool)")
    return Tool(
        name=entry.name, description=description, args=EmptyArgs, run=run,
        effect="read" if entry.effect == "read" else "write",
        timeout_s=config.timeout_s + 2.0, source=f"mcp:{server}", input_schema=schema,
        validate_raw=validator,
        panel_extra={"server": f"{server} ({trust}; calls the MCP tool {remote})",
                     "server says": describe_claims(entry.annotations)},
    )


ResourceFn = Callable[[str, str, str, ToolContext], ToolOutput]
"""How a resource tool reaches its server: (server, "list" | "read", uri, context) -> output."""


def resource_entries(server: str, config: MCPServer, fn: ResourceFn) -> list[ToolEntry]:
    """`SERVER__list_resources` and `SERVER__read_resource(uri)`: a server's resources as two
    tools the model can call. They only read, by the protocol; like any MCP tool they are `read`
    (no panel) only when the server is trusted, since what a server does on a read is its own."""
    effect = "read" if config.trusted else "write"
    trust = "trusted" if config.trusted else "untrusted"
    out: list[ToolEntry] = []
    specs = [
        ("list_resources", "List the resources (files, documents, data) this MCP server offers: "
         "URI, name, MIME type, description.", {"type": "object", "properties": {},
                                                "additionalProperties": False}),
        ("read_resource", "Read one resource of this MCP server by its URI (from "
         "list_resources).", {"type": "object", "properties": {"uri": {"type": "string"}},
                              "required": ["uri"], "additionalProperties": False}),
    ]
    for remote, description, schema in specs:
        what = "list" if remote == "list_resources" else "read"

        def run(args: Any, ctx: ToolContext, what: str = what) -> ToolOutput:
            return fn(server, what, str(dict(args).get("uri", "")), ctx)

        name = registry_name(server, remote)
        entry = ToolEntry(remote, name, {}, {"readOnlyHint": True}, effect, shown=remote,
                          description=description, builtin=True)
        entry.tool = Tool(
            name=name, description=f"{description} (MCP server {server})", args=EmptyArgs,
            run=run, effect="read" if effect == "read" else "write",
            timeout_s=config.timeout_s + 2.0, source=f"mcp:{server}", input_schema=schema,
            validate_raw=make_validator(schema),
            panel_extra={"server": f"{server} ({trust}; reads its MCP resources)",
                         "server says": "resources are read-only by the protocol (unverified)"})
        out.append(entry)
    return out
