"""Pins for user plugin files: a plugin that changed since it was trusted is not loaded.

A plugin is code that runs with the user's rights. The first time a user plugin file loads, its
sha256 (and, for files up to KEEP_CONTENT_MAX bytes, its text) is recorded in
AGENT_CLI_HOME/plugin-pins.json: trust on first use. When the file later differs, it is not
imported; the loader reports it by name with a short summary of what changed (a unified diff when
the old text was kept, the two hashes otherwise). `agent-cli tools --trust FILE` accepts the new
version. There is deliberately no interactive "trust it? [y/N]" in a session: that prompt would
appear where keys typed ahead or a habit of pressing y could answer it.

Every file a plugin imports from its own folder (a `_helpers.py` beside it, a package below it) is
pinned the same way, by an import hook (tools/pinned_imports.py): an edit to a helper holds the
plugin out until that file is trusted again. The bundled tools are not pinned: they ship with
agent-cli and change with it. The pins file is
plain JSON, readable by the user, read and written by tools/pin_file.py like the MCP pins; stdlib
only, no import cost.
"""

from __future__ import annotations

import difflib
import hashlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_cli.tools.pin_file import read_pin_file, write_pin_file

PINS_NAME = "plugin-pins.json"
PINS_VERSION = 1
KEEP_CONTENT_MAX = 256_000
"""Plugin files up to this many bytes keep their text in the pins, so a change can be shown."""
DIFF_LINES_SHOWN = 24


def pins_path() -> Path:
    from agent_cli.config import home

    return home() / PINS_NAME


def file_key(path: Path) -> str:
    """Pins are keyed by the absolute, resolved path of the plugin file."""
    return str(path.expanduser().resolve())


@dataclass(frozen=True)
class PluginPinCheck:
    """Whether one plugin file (or a file a plugin imports) may be loaded as it is now."""

    ok: bool
    """True when its content is the trusted one, or it was unknown and is now pinned."""
    first_use: bool = False
    """True when it had no pin and was pinned by this check."""
    message: str = ""
    """When not ok: the sentence saying it changed, how to trust it, and what changed."""


def change_summary(shown: str, old_text: str | None, new_text: str | None, old_hash: str,
                   new_hash: str) -> str:
    """What changed, in a few lines: a short unified diff, or the two hashes."""
    if old_text is None or new_text is None:
        return f"sha256 {old_hash[:16]} (trusted) -> {new_hash[:16]} (now); the old text was " \
               "not kept, so no diff can be shown"
    old_lines = old_text.splitlines(keepends=True)
    new_lines = new_text.splitlines(keepends=True)
    diff = list(difflib.unified_diff(old_lines, new_lines, fromfile=f"{shown} (trusted)",
                                     tofile=f"{shown} (now)", n=1))
    added = sum(1 for d in diff if d.startswith("+") and not d.startswith("+++"))
    removed = sum(1 for d in diff if d.startswith("-") and not d.startswith("---"))
    body = [d if d.endswith("\n") else d + "\n" for d in diff[:DIFF_LINES_SHOWN]]
    more = len(diff) - len(body)
    text = f"{added} line(s) added, {removed} removed:\n" + "".join(body)
    if more > 0:
        text += f"(... {more} more diff lines)\n"
    return text.rstrip("\n")


def _decode(data: bytes) -> str | None:
    if len(data) > KEEP_CONTENT_MAX:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


class PluginPins:
    """The pins file: read once, written back atomically on each change."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = path or pins_path()
        self.problem: str | None = None
        """Set when the pins file could not be read (it is then started afresh)."""
        self._files: dict[str, dict[str, Any]] = self._read()

    def _read(self) -> dict[str, dict[str, Any]]:
        read = read_pin_file(self.path)
        if read.problem is not None:
            self.problem = (f"{self.path}: the plugin pins could not be used ({read.problem}); "
                            "every user plugin is trusted afresh as it loads.")
            return {}
        if read.data is None:
            return {}
        files = read.data.get("files")
        if not isinstance(files, dict):
            self.problem = f"{self.path}: not a plugin pins file; starting afresh."
            return {}
        return {k: v for k, v in files.items() if isinstance(v, dict) and "sha256" in v}

    def pinned(self, path: Path) -> dict[str, Any] | None:
        return self._files.get(file_key(path))

    def check(self, path: Path, data: bytes, what: str = "plugin") -> PluginPinCheck:
        """Is this content of `path` the trusted one? An unknown file is pinned now (first use).
        `what` names the file in the message (a plugin, or a file a plugin imports)."""
        digest = hashlib.sha256(data).hexdigest()
        pin = self.pinned(path)
        if pin is None:
            self._pin(path, data, digest)
            return PluginPinCheck(True, first_use=True)
        if pin.get("sha256") == digest:
            return PluginPinCheck(True)
        summary = change_summary(str(path), pin.get("content"), _decode(data),
                                 str(pin.get("sha256")), digest)
        message = (f"{path}: this {what} changed since you trusted it, so it was not loaded. "
                   f"If you made the change, run `agent-cli tools --trust {path}`.\n{summary}")
        return PluginPinCheck(False, message=message)

    def trust(self, path: Path) -> str:
        """Pin the current content of `path`; returns a sentence saying what was accepted."""
        data = path.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        pin = self.pinned(path)
        if pin is None:
            what = "now trusted (it was not pinned before)"
        elif pin.get("sha256") == digest:
            what = "already trusted; nothing changed"
        else:
            what = "new version trusted; the change accepted was:\n" + change_summary(
                str(path), pin.get("content"), _decode(data), str(pin.get("sha256")), digest)
        self._pin(path, data, digest)
        return f"{file_key(path)}: {what}"

    def _pin(self, path: Path, data: bytes, digest: str) -> None:
        entry: dict[str, Any] = {"sha256": digest, "size": len(data), "trusted_at": time.time()}
        text = _decode(data)
        if text is not None:
            entry["content"] = text
        self._files[file_key(path)] = entry
        self._save()

    def _save(self) -> None:
        write_pin_file(self.path, {"version": PINS_VERSION, "files": self._files})
