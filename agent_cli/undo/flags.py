"""Which recorded changes will run code later, outside any sandbox: a git hook, `.git/config`
(aliases, `core.hooksPath`, filters), an `.envrc` (direnv), a tools.d/ plugin, a file made
executable. The one list both the line after a command and the undo panel flag from.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from agent_cli.events import PathChange

_EXEC = 0o111


@dataclass(frozen=True)
class Flag:
    path: str
    change: str
    """created / modified / deleted / mode, as recorded."""
    why: str


def why_flagged(ch: PathChange) -> str | None:
    """Why this change runs code later, or None."""
    after = ch.after
    if after is None or after.kind == "dir":
        return None  # a removal runs nothing; a folder by itself neither
    parts = ch.path.split("/")
    if parts[:2] == [".git", "hooks"] and len(parts) > 2:
        if ch.path.endswith(".sample"):
            return None  # what `git init` writes; git never runs a .sample
        return "a git hook: git runs it on your next commit, checkout or push"
    if ch.path == ".git/config":
        return "git's config: aliases, hooksPath and filters run commands"
    if parts[-1] == ".envrc":
        return "direnv runs it when you enter the folder"
    if parts[0] == "tools.d":
        return "a tools.d/ plugin: agent-cli loads it"
    if after.kind == "file" and after.mode & _EXEC:
        before = ch.before
        if before is None or before.kind != "file" or not before.mode & _EXEC:
            return "made executable"
    return None


def runs_later(changes: Iterable[PathChange]) -> list[Flag]:
    out: list[Flag] = []
    for ch in changes:
        why = why_flagged(ch)
        if why is not None:
            out.append(Flag(ch.path, ch.change, why))
    return out


def compact(changes: list[PathChange]) -> tuple[str, list[Flag]]:
    """The line after a command, without its flags ("changed 3 files, deleted 1"), and the
    flags, each to be named with its path ("created .git/hooks/pre-commit")."""
    flags = runs_later(changes)
    flagged = {f.path for f in flags}
    c = Counter(ch.change for ch in changes if ch.path not in flagged
                and (ch.after or ch.before) is not None
                and (ch.after or ch.before).kind != "dir")  # type: ignore[union-attr]
    n = sum(c.values())
    parts: list[str] = []
    if n:
        parts.append(f"changed {n} file{'s' if n != 1 else ''}")
    return ", ".join(parts), flags


def flag_words(flag: Flag) -> str:
    verb = {"created": "created", "modified": "changed", "deleted": "deleted",
            "mode": "made executable"}[flag.change]
    return f"{verb} {flag.path}"
