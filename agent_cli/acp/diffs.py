"""ACP `diff` content for what an approved call changed: old and new text from the undo store.

The `effects` record names each changed path's before and after state by the sha256 of its bytes
in the undo store (undo/store.py), which checks the bytes against it on reading. Only UTF-8 text
up to MAX_SIDE bytes a side becomes a diff; anything else (binary, huge, missing from the store)
is left to the result text, which says what ran.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from agent_cli import events as ev

MAX_SIDE = 512 * 1024
MAX_FILES = 20


def diff_blocks(event: ev.Effects, redact: Callable[[str], str]) -> list[dict[str, Any]]:
    """One {type: "diff", path, oldText, newText} per changed text file of the record, each
    side through `redact` (the log's redactor): a file the model never saw whole (a command
    changed it) must not carry a secret out unredacted."""
    from agent_cli.undo.store import Store, StoreError

    store = Store()
    out: list[dict[str, Any]] = []
    for change in event.changes[:MAX_FILES]:
        if change.change == "mode":
            continue
        try:
            old = _text(store, change.before)
            new = _text(store, change.after)
        except (StoreError, OSError, UnicodeDecodeError, _NotText):
            continue
        out.append({"type": "diff", "path": os.path.join(event.workspace, change.path),
                    "oldText": None if old is None else redact(old),
                    "newText": "" if new is None else redact(new)})
    return out


class _NotText(Exception):
    pass


def _text(store: Any, state: ev.EntryState | None) -> str | None:
    if state is None:
        return None
    if state.kind != "file" or state.sha256 is None or state.size > MAX_SIDE:
        raise _NotText
    data: bytes = store.read(state.sha256)
    if b"\x00" in data:
        raise _NotText
    return data.decode("utf-8")
