"""Turn a capability record into Landlock rules: "all but these" as an allow-list.

Landlock only allows: a rule on a folder grants its rights to everything beneath it. So a
readable root that contains a denied path (`/` contains `~/.ssh`) is carved: the root itself is
granted only the listing of its names, and each of its entries is granted in full, except the
denied one and the ancestors of denied ones, which are carved in turn. The siblings of each
denied path's ancestors are the allow-list. Symbolic links among the entries get no rule of
their own (the kernel checks the real path, which has its rule where it really is), so a link
to a denied folder opens nothing.

A root that lies inside a denied path is granted as it is: it was asked for explicitly (the
workspace, a server's `writable`, `sandbox_read_allow`); except inside agent-cli's own state
(`never`), which no grant reaches.

Entries created later beneath a carved folder have no rule: they are unreadable until the next
session. The plan is built once per session and record (`Sandbox` caches it).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Literal

Grant = Literal["read", "list", "write"]
"""`read`: read and execute beneath; `list`: list this folder's names only; `write`: every
filesystem right beneath."""


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip("/") + "/")


def carve(root: str, grant: Grant, denied: Iterable[str], out: list[tuple[str, Grant]]) -> None:
    """Append to `out` the rules that grant `grant` beneath `root` except beneath `denied`."""
    denied = [d for d in denied if d != root and _inside(d, root)]
    if not denied:
        out.append((root, grant))
        return
    out.append((root, "list"))
    try:
        entries = list(os.scandir(root))
    except OSError:
        return
    for entry in entries:
        try:
            if entry.is_symlink():
                continue
        except OSError:
            continue
        if entry.path in denied:
            continue
        carve(entry.path, grant, denied, out)


def plan(read: Iterable[str], write: Iterable[str], denied: Iterable[str],
         allow: Iterable[str] = (), never: Iterable[str] = ()) -> list[tuple[str, Grant]]:
    """The rules for a record: each readable and writable root carved around `denied` (a root
    inside a denied path is taken as asked, unless it is inside `never`), then `allow`
    (re-allowed reads) as they are, again unless inside `never`."""
    denied = list(denied)
    never = list(never)
    out: list[tuple[str, Grant]] = []
    grants: list[tuple[str, Grant]] = [(r, "read") for r in read] + [(w, "write") for w in write]
    for root, grant in grants:
        if any(_inside(root, n) for n in never):
            continue
        if any(_inside(root, d) for d in denied):
            out.append((root, grant))
        else:
            carve(root, grant, denied, out)
    out.extend((path, "read") for path in allow if not any(_inside(path, n) for n in never))
    return out
