"""`agent-cli log prune --older-than 30d`: remove old logs and the snapshots only they reference.

An object stays while any remaining log references it. Objects no log references (the content of
files no call changed, kept so the next snapshot is a stat walk) go once they are older than the
cut-off too; a later snapshot simply stores them again.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agent_cli.errors import UsageError
from agent_cli.log.reader import BadLine, read_records
from agent_cli.undo.store import Store

if TYPE_CHECKING:
    from agent_cli.config import Settings

_AGE = re.compile(r"^\s*(\d+)\s*([dhm]?)\s*$")
_UNIT = {"d": 86400, "h": 3600, "m": 60, "": 86400}


def parse_age(text: str) -> float:
    """`30d`, `12h`, `90m` (a bare number is days) -> seconds."""
    m = _AGE.match(text)
    if m is None:
        raise UsageError(f"--older-than takes a number of days, hours or minutes such as 30d, "
                         f"12h or 90m, not {text!r}.")
    return int(m.group(1)) * _UNIT[m.group(2)]


def referenced(logs: Iterable[Path]) -> set[str]:
    """Every object named by an `effects` or `undo` record of these logs."""
    out: set[str] = set()
    for path in logs:
        try:
            for _n, rec in read_records(path):
                if isinstance(rec, BadLine) or rec.get("type") not in ("effects", "undo"):
                    continue
                for ch in rec.get("changes") or []:
                    for side in ("before", "after"):
                        state = ch.get(side) if isinstance(ch, dict) else None
                        sha = state.get("sha256") if isinstance(state, dict) else None
                        if isinstance(sha, str):
                            out.add(sha)
        except Exception:  # an unreadable log keeps nothing alive, and stops nothing
            continue
    return out


@dataclass
class Pruned:
    logs: int = 0
    objects: int = 0
    bytes: int = 0


def prune(settings: Settings, older_than_s: float, now: float | None = None,
          store: Store | None = None) -> Pruned:
    from agent_cli.log.store import newest_first

    cutoff = (now if now is not None else time.time()) - older_than_s
    logs = newest_first(settings)
    old = [p for p in logs if p.stat().st_mtime < cutoff]
    kept = [p for p in logs if p not in old]
    keep = referenced(kept)
    gone = referenced(old) - keep
    out = Pruned()
    for path in old:
        path.unlink(missing_ok=True)
        out.logs += 1
    store = store or Store()
    for sha, path in list(store.all_objects()):
        if sha in keep:
            continue
        try:
            st = path.stat()
        except OSError:
            continue
        if sha in gone or st.st_mtime < cutoff:
            path.unlink(missing_ok=True)
            out.objects += 1
            out.bytes += st.st_size
    tmp = store.root / "tmp"
    if tmp.is_dir():
        for entry in tmp.iterdir():
            if entry.stat().st_mtime < time.time() - 86400:
                entry.unlink(missing_ok=True)
    return out


def size_line(store: Store | None = None) -> str:
    count, total = (store or Store()).size()
    return f"undo store: {count:,} objects, {total / (1024 * 1024):,.1f} MB"
