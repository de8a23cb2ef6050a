"""The one way a pin file is read and written: plugin pins (tools/trust.py) and MCP tool pins
(tools/mcp/pins.py) both keep a JSON object under AGENT_CLI_HOME.

A pin file decides what code and which tool definitions run without a question, so it is agent-
cli's own private state: written 0600 in a folder made 0700, through a temporary file renamed over
the old one (a crash never leaves half a file, and a reader never sees one), as ASCII-only JSON (a
lone surrogate in a server's description cannot make the write fail). Reading is tolerant: a
missing file is no pins yet; a file that cannot be read or is not a JSON object is reported, never
fatal, and each store says what that means for it. Standard library only.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class PinFileRead:
    """What reading a pin file gave."""

    data: dict[str, Any] | None
    """The file's JSON object; None when there is no file or it could not be used."""
    problem: str | None = None
    """Why the file could not be used (unreadable, not JSON, not an object); None when fine or
    absent."""


def read_pin_file(path: Path) -> PinFileRead:
    """The pin file's object, None with no problem when it does not exist, or the problem."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return PinFileRead(None)
    except (OSError, ValueError) as e:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return PinFileRead(None, f"it could not be read ({e})")
    if not isinstance(raw, dict):
        return PinFileRead(None, "it is not a JSON object")
    return PinFileRead(raw)


def write_pin_file(path: Path, data: dict[str, Any]) -> None:
    """Replace the pin file with `data`, atomically, 0600 in a 0700 folder."""
    from agent_cli.private_files import private_dir
    from agent_cli.write_faults import write_atomic, writing

    with writing(path.parent, "agent-cli's folder"):
        private_dir(path.parent)
    body = json.dumps(data, indent=2, sort_keys=True, ensure_ascii=True) + "\n"
    write_atomic(path, body.encode("utf-8"), what="the pin file")  # 0600, no temp file left
