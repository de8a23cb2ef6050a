"""Pins for user plugin files: a plugin that changed since it was trusted is not loaded.

A plugin is code that runs with the user's rights. The first time a user plugin file loads, its
sha256 (and, for files up to KEEP_CONTENT_MAX bytes, its text) is recorded in
AGENT_CLI_HOME/plugin-pins.json: trust on first use. When the file later differs, it is not
imported; the loader reports it by name with a short summary of what changed (a unified diff when
the old text was kept, the two hashes otherwise). `agent-cli tools --trust FILE` accepts the new
version. There is deliberately no interactive "trust it? [y/N]" for a plugin in a session: that
prompt would appear where keys typed ahead or a habit of pressing y could answer it.

Pins are keyed by the file's name as configured under its root (trusted_input.pin_key), not by
where a link leads: a pinned name that becomes a link to another file is a change. Every entry
holds the sha256 of exactly the bytes that were checked or shown when it was pinned (`pin`);
nothing is pinned from a second read. Files pinned by an older version (version 1, keyed by the
resolved path) keep working: for a name that is not a link the two keys are the same, and a name
that leads through a link is never trusted on first use (it asks, or is held out), so no old key
can let a swapped link through.

Every file of a plugin's folder is pinned the same way (tools/loader.py pins the whole folder
tree before any plugin of it runs, whatever loads the file: an import, a path, open+exec), and an
import hook (tools/pinned_imports.py) checks again what is imported later: an edit to a helper
holds the folder's plugins out until that file is trusted again. The bundled tools are not
pinned: they ship with agent-cli and change with it. The pins file is plain JSON, readable by
the user, read and written by tools/pin_file.py like the MCP pins; stdlib only, no import cost.
"""

from __future__ import annotations

import difflib
import hashlib
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_cli.tools.pin_file import read_pin_file, write_pin_file

if TYPE_CHECKING:
    from agent_cli.trusted_input import TrustedInput

PINS_NAME = "plugin-pins.json"
PINS_VERSION = 2
KEEP_CONTENT_MAX = 256_000
"""Files up to this many bytes keep their text in the pins, so a change can be shown."""


def pins_path() -> Path:
    from agent_cli.config import home

    return home() / PINS_NAME


def file_key(path: Path) -> str:
    """The key of a file named by an absolute path: its folder's real path and its own name (a
    link as the last component is not followed), as `trusted_input.pin_key` makes it."""
    from agent_cli.trusted_input import pin_key

    p = Path(path).expanduser().absolute()
    return pin_key(p.parent, p.name)


@dataclass(frozen=True)
class PluginPinCheck:
    """Whether one file may be used as it is now."""

    ok: bool
    """True when its content is the trusted one, or it was unknown and is now pinned."""
    first_use: bool = False
    """True when it had no pin and was pinned by this check."""
    message: str = ""
    """When not ok: the sentence saying it changed, how to trust it, and what changed."""
    diff: str = ""
    """When not ok: the whole change (never cut), for a question that shows it."""


def change_summary(shown: str, old_text: str | None, new_text: str | None, old_hash: str,
                   new_hash: str) -> str:
    """The whole change, never cut: a unified diff, or the two hashes when a text is missing."""
    if old_text is None or new_text is None:
        return f"sha256 {old_hash[:16]} (trusted) -> {new_hash[:16]} (now); the old text was " \
               "not kept (or the file is not text), so no diff can be shown"
    old_lines = old_text.splitlines(keepends=True)
    new_lines = new_text.splitlines(keepends=True)
    diff = list(difflib.unified_diff(old_lines, new_lines, fromfile=f"{shown} (trusted)",
                                     tofile=f"{shown} (now)", n=1))
    added = sum(1 for d in diff if d.startswith("+") and not d.startswith("+++"))
    removed = sum(1 for d in diff if d.startswith("-") and not d.startswith("---"))
    body = "".join(d if d.endswith("\n") else d + "\n" for d in diff)
    return (f"{added} line(s) added, {removed} removed:\n" + body).rstrip("\n")


def first_use_text(shown: str, text: str | None, digest: str) -> str:
    """What a first use through a link shows: the whole text as added lines."""
    if text is None:
        return f"sha256 {digest[:16]} (now); not text, so it cannot be shown"
    lines = text.splitlines()
    return (f"{len(lines)} line(s), not trusted before:\n--- (nothing trusted)\n+++ {shown}\n"
            + "".join(f"+{line}\n" for line in lines)).rstrip("\n")


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

    def pinned_key(self, key: str) -> dict[str, Any] | None:
        return self._files.get(key)

    def check(self, path: Path, data: bytes, what: str = "plugin") -> PluginPinCheck:
        """Is this content of `path` the trusted one? An unknown file is pinned now (first use).
        `what` names the file in the message (a plugin, or a file a plugin imports)."""
        return self.check_key(file_key(path), str(path), data, what=what)

    def check_input(self, item: TrustedInput, what: str = "file",
                    how: str = "agent-cli trust") -> PluginPinCheck:
        """`check_key` for a file read through the gate. A name that leads through a link is
        never trusted on first use: the link may have been planted (or swapped in before the pin
        kept its name), so it needs a yes. Its content is then kept out of the message (which
        goes to notices and the log: the link may lead to a secret in the same folder); the
        diff, for a question that shows it, is in `diff`."""
        return self.check_key(item.key, item.shown_name(), item.data, what=what, how=how,
                              first_use_ok=not item.linked, quiet=item.linked)

    def check_key(self, key: str, shown: str, data: bytes, *, what: str = "plugin",
                  how: str = "agent-cli tools --trust", first_use_ok: bool = True,
                  quiet: bool = False) -> PluginPinCheck:
        digest = hashlib.sha256(data).hexdigest()
        pin = self._files.get(key)
        if pin is None and first_use_ok:
            self.pin(key, data)
            return PluginPinCheck(True, first_use=True)
        if pin is not None and pin.get("sha256") == digest:
            return PluginPinCheck(True)
        if pin is None:
            diff = first_use_text(shown, _decode(data), digest)
            said = (f"{shown}: this {what} leads through a symbolic link and was not trusted "
                    "under this name before, so it was not used.")
        else:
            diff = change_summary(shown, pin.get("content"), _decode(data),
                                  str(pin.get("sha256")), digest)
            said = f"{shown}: this {what} changed since you trusted it, so it was not used."
        if quiet:
            return PluginPinCheck(False, diff=diff, message=(
                f"{said} Its content is not repeated here (the name leads through a link); "
                f"`{how} {key}` shows it and asks."))
        return PluginPinCheck(False, diff=diff, message=(
            f"{said} If you made the change, run `{how} {key}`.\n{diff}"))

    def trust(self, path: Path) -> str:
        """Pin `path` as it is now (read once, through the gate; those bytes are pinned);
        returns a sentence saying what was accepted, with the whole change."""
        from agent_cli.trusted_input import open_trusted_text

        p = Path(path).expanduser().absolute()
        item = open_trusted_text(p.parent, p.name, max_bytes=1 << 30)
        change = self.change_of(item)
        said = self.trust_input(item)
        return f"{said}; the change accepted was:\n{change}" if change else said

    def trust_input(self, item: TrustedInput) -> str:
        """Pin exactly the bytes of `item` (the ones shown); a sentence saying what it was."""
        pin = self._files.get(item.key)
        if pin is None:
            what = "now trusted (it was not pinned before)"
        elif pin.get("sha256") == item.sha256:
            what = "already trusted; nothing changed"
        else:
            what = "new version trusted"
        self.pin(item.key, item.data)
        return f"{item.key}: {what}"

    def change_of(self, item: TrustedInput) -> str:
        """The whole change of `item` against its pin (or all of it when unpinned)."""
        pin = self._files.get(item.key)
        if pin is None:
            return first_use_text(item.shown_name(), _decode(item.data), item.sha256)
        if pin.get("sha256") == item.sha256:
            return ""
        return change_summary(item.shown_name(), pin.get("content"), _decode(item.data),
                              str(pin.get("sha256")), item.sha256)

    def pin(self, key: str, data: bytes) -> None:
        """Pin exactly `data` under `key` (the bytes that were checked or shown, never a
        re-read)."""
        digest = hashlib.sha256(data).hexdigest()
        entry: dict[str, Any] = {"sha256": digest, "size": len(data), "trusted_at": time.time()}
        text = _decode(data)
        if text is not None:
            entry["content"] = text
        self._files[key] = entry
        self._save()

    def _save(self) -> None:
        write_pin_file(self.path, {"version": PINS_VERSION, "keyed_by": "configured name",
                                   "files": self._files})
