"""The MCP servers an ACP client names in session/new and session/load, as `[mcp.servers]`
entries under the same rules as the user's own.

A client's server list is someone else's config: data. It gets exactly what an imported server
gets and nothing more: its command, arguments, environment, url and headers (tools/mcp/config.py
FIELDS), never a grant (`trusted`, `writable`, `network`, `sandbox = "off"`), so every one of its
tools is a write tool that asks per call, it runs confined by the session's sandbox, and its tool
definitions are pinned on first use and held when they change (tools/mcp/pins.py), like any
configured server that was never accepted. A name the user's config already has is refused (the
user's server keeps its name), and so is a `${VAR}` anywhere in it: agent-cli expands its own
environment into configs the user wrote, never into one another program sent.
"""

from __future__ import annotations

from typing import Any

from agent_cli.config import MCPServer

NOTE = ("MCP server {name} comes from the editor ({client}), so it is treated like an imported "
        "server that was never accepted: every one of its tools asks before each call, it runs "
        "confined (no network, writes only in the workspace), and its tool definitions are "
        "pinned now and held if they change (`agent-cli mcp accept {name}`).")


def client_servers(raw: Any, configured: dict[str, Any], client: str
                   ) -> tuple[dict[str, MCPServer], list[str]]:
    """The client's servers that can be used, by name, and one sentence per server (what it is
    held to, or why it is not used)."""
    from agent_cli.tools.mcp.transport import VAR_RE

    servers: dict[str, MCPServer] = {}
    notes: list[str] = []
    if not isinstance(raw, list):
        return servers, notes
    for item in raw:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            notes.append("An MCP server from the editor has no name; it is not started.")
            continue
        name = item["name"]
        if name in configured or name in servers:
            notes.append(f"MCP server {name} from the editor is not started: a server of that "
                         "name is configured already, and it keeps the name.")
            continue
        try:
            entry = _entry(item)
        except ValueError as e:
            notes.append(f"MCP server {name} from the editor is not started: {e}.")
            continue
        texts = [entry.get("command") or "", entry.get("url") or "", *entry.get("args", []),
                 *entry.get("env", {}).values(), *entry.get("headers", {}).values()]
        if any(VAR_RE.search(t) for t in texts):
            notes.append(f"MCP server {name} from the editor is not started: it holds a ${{VAR}}, "
                         "and agent-cli expands its environment only into servers you "
                         "configured yourself (`agent-cli mcp add`).")
            continue
        servers[name] = MCPServer.model_validate(entry)
        notes.append(NOTE.format(name=name, client=client))
    return servers, notes


def _pairs(value: Any, what: str) -> dict[str, str]:
    """ACP's [{name, value}] lists as a table."""
    if value is None:
        return {}
    if not isinstance(value, list):
        raise ValueError(f"{what} must be a list of {{name, value}}")
    out: dict[str, str] = {}
    for pair in value:
        if not isinstance(pair, dict) or not isinstance(pair.get("name"), str) \
                or not isinstance(pair.get("value"), str):
            raise ValueError(f"{what} must be a list of {{name, value}}")
        out[pair["name"]] = pair["value"]
    return out


def _entry(item: dict[str, Any]) -> dict[str, Any]:
    kind = item.get("type")
    if kind in ("http", "sse"):
        if not isinstance(item.get("url"), str):
            raise ValueError(f"a {kind} server needs a url")
        return {"type": kind, "url": item["url"],
                "headers": _pairs(item.get("headers"), "headers")}
    if kind not in (None, "stdio"):
        raise ValueError(f"agent-cli does not start servers of type {kind!s}")
    command = item.get("command")
    args = item.get("args") or []
    if not isinstance(command, str) or not command:
        raise ValueError("a stdio server needs a command")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ValueError("args must be a list of strings")
    return {"type": "stdio", "command": command, "args": list(args),
            "env": _pairs(item.get("env"), "env")}
