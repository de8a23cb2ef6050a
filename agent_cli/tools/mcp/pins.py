"""Pins for MCP tool definitions: what a server's tools looked like when the user first used it.

A server can change a tool's description, schema or annotations between sessions (an update, or
a rug pull). The first time a server is used its definitions are recorded here; later, a tool
whose definition differs (or that is new) is kept away from the model until the user accepts it.
The file is plain JSON under AGENT_CLI_HOME so a user can read it, read and written by
tools/pin_file.py like the plugin pins; no mcp import here.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_cli.tools.base import canonical_json, sha256_json
from agent_cli.tools.pin_file import read_pin_file, write_pin_file

PIN_FIELDS = ("name", "title", "description", "inputSchema", "annotations")
"""`title` counts only when the tool has one, so pins taken before it was pinned still match."""
PINS_VERSION = 1


def _pinned_fields(definition: dict[str, Any]) -> dict[str, Any]:
    return {k: definition.get(k) for k in PIN_FIELDS
            if k != "title" or definition.get("title") is not None}


def definition_hash(definition: dict[str, Any]) -> str:
    """Hash of the pinned fields only (name, title, description, inputSchema, annotations)."""
    return sha256_json(_pinned_fields(definition))


def _json(value: Any) -> str:
    """The whole value, never a cut prefix: a change hidden past a cut is the point of an
    attack on pins."""
    return canonical_json(value)


def text_diff(before: str, after: str) -> list[str]:
    """A unified diff of two texts, line by line, for descriptions and titles."""
    import difflib

    old, new = before.splitlines() or [""], after.splitlines() or [""]
    if len(old) == 1 and len(new) == 1:
        return [f"- {old[0]}", f"+ {new[0]}"]
    return [ln.rstrip("\n") for ln in difflib.unified_diff(old, new, "pinned", "now",
                                                            lineterm="", n=2)]


def json_changes(old: Any, new: Any, path: str = "") -> list[str]:
    """Where two JSON values differ, as `path: old -> new` lines (added / removed keys named)."""
    if isinstance(old, dict) and isinstance(new, dict):
        out: list[str] = []
        for key in sorted(set(old) | set(new), key=str):
            sub = f"{path}.{key}" if path else str(key)
            if key not in old:
                out.append(f"{sub}: added {_json(new[key])}")
            elif key not in new:
                out.append(f"{sub}: removed (was {_json(old[key])})")
            else:
                out.extend(json_changes(old[key], new[key], sub))
        return out
    if old == new:
        return []
    return [f"{path or '(value)'}: {_json(old)} -> {_json(new)}"]


def describe_changes(old: dict[str, Any] | None, new: dict[str, Any]) -> list[str]:
    """Human lines saying what changed in a tool definition since it was pinned."""
    if old is None:
        return ["new tool (not in the pins taken when this server was first used)"]
    lines: list[str] = []
    for fld in PIN_FIELDS:
        before, after = old.get(fld), new.get(fld)
        if before == after:
            continue
        if fld in ("description", "title"):
            lines.append(f"{fld} changed:")
            lines.extend(f"  {ln}" for ln in text_diff(str(before or ""), str(after or "")))
        else:
            lines.extend(f"{fld}.{c}" if not c.startswith("(value)") else f"{fld}: {c[9:]}"
                         for c in json_changes(before, after))
    return lines or ["definition changed"]


@dataclass
class ServerPinCheck:
    """The outcome of comparing a server's current tools with its pins."""

    first_use: bool
    """True when the server had no pins (they were taken now, unless pinning was off)."""
    held: dict[str, list[str]] = field(default_factory=dict)
    """Tool name -> what changed; these stay out of the registry until accepted."""
    gone: list[str] = field(default_factory=list)
    """Pinned tools the server no longer lists (informational)."""


class PinStore:
    """mcp-pins.json: {"version": 1, "servers": {NAME: {"pinned_at": ts, "tools": {TOOL:
    {"hash": ..., "definition": {...}}}}}}. Read-modify-write on every change, so two sessions
    do not erase each other's pins."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def _load(self) -> dict[str, Any]:
        read = read_pin_file(self.path)
        if read.data is None and read.problem is None:
            return {"version": PINS_VERSION, "servers": {}}
        if read.data is None or not isinstance(read.data.get("servers"), dict):
            # A damaged pin file must not unpin everything silently: treat every server as
            # pinned to nothing, so all its tools are held until accepted again.
            return {"version": PINS_VERSION, "servers": {}, "damaged": True}
        return read.data

    def _save(self, data: dict[str, Any]) -> None:
        data.pop("damaged", None)
        write_pin_file(self.path, data)

    def pinned(self, server: str) -> dict[str, dict[str, Any]] | None:
        """The pinned definitions of a server, or None if it was never used."""
        with self._lock:
            data = self._load()
        entry = data["servers"].get(server)
        if not isinstance(entry, dict):
            return {} if data.get("damaged") else None
        tools = entry.get("tools")
        return tools if isinstance(tools, dict) else {}

    def check(self, server: str, definitions: dict[str, dict[str, Any]],
              *, pin_first_use: bool = True) -> ServerPinCheck:
        """Compare current definitions with the pins; on first use, pin them all."""
        with self._lock:
            data = self._load()
            entry = data["servers"].get(server)
            if not isinstance(entry, dict) and not data.get("damaged"):
                if pin_first_use:
                    data["servers"][server] = self._entry(definitions)
                    self._save(data)
                return ServerPinCheck(first_use=True)
        pinned = entry.get("tools", {}) if isinstance(entry, dict) else {}
        result = ServerPinCheck(first_use=False)
        for name, definition in definitions.items():
            old = pinned.get(name) if isinstance(pinned, dict) else None
            if isinstance(old, dict) and old.get("hash") == definition_hash(definition):
                continue
            old_def = old.get("definition") if isinstance(old, dict) else None
            result.held[name] = describe_changes(old_def if isinstance(old_def, dict) else None,
                                                 definition)
        result.gone = sorted(n for n in pinned if n not in definitions)
        return result

    def accept(self, server: str, definitions: dict[str, dict[str, Any]],
               names: list[str] | None = None) -> None:
        """Pin the given tools' current definitions (all of them when `names` is None)."""
        with self._lock:
            data = self._load()
            entry = data["servers"].get(server)
            if not isinstance(entry, dict):
                entry = {"pinned_at": time.time(), "tools": {}}
            tools = entry.setdefault("tools", {})
            for name, definition in definitions.items():
                if names is None or name in names:
                    tools[name] = {"hash": definition_hash(definition), "definition": definition}
            entry["pinned_at"] = time.time()
            data["servers"][server] = entry
            self._save(data)

    @staticmethod
    def _entry(definitions: dict[str, dict[str, Any]]) -> dict[str, Any]:
        return {"pinned_at": time.time(),
                "tools": {n: {"hash": definition_hash(d), "definition": d}
                          for n, d in definitions.items()}}
