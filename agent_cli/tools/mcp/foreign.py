"""Other clients' `mcpServers` entries, mapped to agent-cli fields by what they mean there.

The same key means different things in different clients' files: in Gemini CLI's
settings.json `url` is an SSE endpoint and `httpUrl` a streamable HTTP one, while in Claude
Code's or Cursor's `.mcp.json` a `url` is HTTP. Tool lists (`includeTools`/`excludeTools` in
Gemini CLI, `disabledTools` in Windsurf, Kiro and Roo Code) and `"disabled": true` (Cline, Roo
Code, Kiro) narrow what a server offers; dropping them would offer the user more than their
other client did. So `translate` maps each entry by the file's shape (`file_shape`) and names
every key it did not import, one line each, so nothing is lost silently.

Grant-shaped keys (`trust`, `alwaysAllow`, `autoApprove`, ...) are never mapped: only the user
grants (tools/mcp/review.py calls them out).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

GEMINI_ENTRY_KEYS = ("httpUrl", "includeTools", "excludeTools")
"""Entry keys only Gemini CLI's settings.json uses."""
GEMINI_TOP_KEYS = ("selectedAuthType", "contextFileName", "coreTools", "excludeTools",
                   "checkpointing", "mcp")
"""Top-level keys only a Gemini CLI settings.json has besides mcpServers (not `theme` and the
like: Claude Code's ~/.claude.json has a theme too, and its `url` means HTTP)."""
HTTP_TYPES = {"http": "http", "streamable-http": "http", "streamableHttp": "http",
              "streamable_http": "http", "sse": "sse", "stdio": "stdio"}
"""The spellings of a transport in other clients' files."""
COPIED = ("command", "args", "env", "cwd", "headers")
"""Keys that mean the same in every client's file."""
KNOWN_DROPPED = {
    "timeout": "a per-request timeout in that client's unit; set timeout_s yourself",
    "envFile": "a file of environment variables; copy the ones the server needs into env",
    "inputs": "prompts for values at start; put them in env as ${VAR} instead",
    "description": "a note for people; not used",
    "oauth": "that client's sign-in settings; not used",
    "authProviderType": "that client's sign-in settings; not used",
}
"""Why a key of another client is not imported, where there is more to say than 'unknown'."""


def file_shape(path: Path, data: dict[str, Any]) -> str:
    """"gemini" for a Gemini CLI settings.json (its folder, its own top-level keys, or an
    entry with a key only Gemini CLI uses), else "generic"."""
    if path.parent.name == ".gemini":
        return "gemini"
    if any(k in data for k in GEMINI_TOP_KEYS):
        return "gemini"
    block = data.get("mcpServers")
    if isinstance(block, dict):
        for raw in block.values():
            if isinstance(raw, dict) and any(k in raw for k in GEMINI_ENTRY_KEYS):
                return "gemini"
    return "generic"


def translate(raw: dict[str, Any], shape: str, ignored: tuple[str, ...]
              ) -> tuple[dict[str, Any], list[str]]:
    """The agent-cli fields of one foreign entry and one sentence per key that was not
    imported (keys in `ignored` are left to the caller, which says why itself)."""
    entry: dict[str, Any] = {k: raw[k] for k in COPIED if k in raw}
    used = set(COPIED) | set(ignored)
    dropped: list[str] = []
    kind = raw.get("type")
    if kind is not None:
        used.add("type")
        if isinstance(kind, str) and kind in HTTP_TYPES:
            entry["type"] = HTTP_TYPES[kind]
        else:
            entry["type"] = kind  # MCPServer says what is wrong with it
    _map_url(raw, shape, entry, used, dropped)
    _map_tools(raw, entry, used, dropped)
    if "disabled" in raw:
        used.add("disabled")
        if raw["disabled"] is True:
            entry["enabled"] = False
        elif raw["disabled"] is not False:
            dropped.append(f"disabled = {raw['disabled']!r} is not true or false; the server "
                           "is imported enabled")
    for key in raw:
        if key in used:
            continue
        why = KNOWN_DROPPED.get(key, "not a setting agent-cli knows")
        dropped.append(f"{key} ({why})")
    return entry, dropped


def _map_url(raw: dict[str, Any], shape: str, entry: dict[str, Any], used: set[str],
             dropped: list[str]) -> None:
    """httpUrl is streamable HTTP; a Gemini `url` is SSE; Windsurf says serverUrl. Gemini CLI
    takes httpUrl over url, so a `url` beside an httpUrl is not imported."""
    urls = [k for k in ("httpUrl", "url", "serverUrl") if k in raw]
    used.update(urls)
    if not urls:
        return
    first = urls[0]
    entry["url"] = raw[first]
    for other in urls[1:]:
        dropped.append(f"{other} (the file also has {first}, which that client uses first)")
    if "type" in entry:
        return
    if first == "httpUrl":
        entry["type"] = "http"
    elif first == "url" and shape == "gemini":
        entry["type"] = "sse"  # Gemini CLI: url is the SSE endpoint


def _map_tools(raw: dict[str, Any], entry: dict[str, Any], used: set[str],
               dropped: list[str]) -> None:
    """includeTools -> enabled_tools; excludeTools and disabledTools -> disabled_tools (a
    tool in both lists stays off, as in those clients)."""
    for key, target in (("includeTools", "enabled_tools"), ("excludeTools", "disabled_tools"),
                        ("disabledTools", "disabled_tools")):
        if key not in raw:
            continue
        used.add(key)
        names = raw[key]
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            dropped.append(f"{key} is not a list of tool names; not imported")
            continue
        have = entry.setdefault(target, [])
        have.extend(n for n in names if n not in have)
