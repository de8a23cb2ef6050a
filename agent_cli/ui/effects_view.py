"""What an approved call changed, as the user sees it: one compact line after the command
("changed 3 files, created .git/hooks/pre-commit", what runs code later in bold with its path),
and the diff of each change on `/show`. Paths and file content go through `safe`.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable

from rich.console import Group, RenderableType
from rich.text import Text

from agent_cli import events as ev
from agent_cli.diff_lines import line_kind
from agent_cli.ui.confirm import Asker
from agent_cli.ui.safe_rich import safe
from agent_cli.undo.flags import compact, flag_words, runs_later
from agent_cli.undo.store import Store

DIFF_STYLE = {"add": "green", "del": "red", "hunk": "cyan"}


def effects_line(event: ev.Effects) -> Text | None:
    """The line printed under the command's result; None when it changed nothing."""
    if not event.changes:
        return None
    plain, flags = compact(list(event.changes))
    line = Text("  ")
    if plain:
        line.append_text(safe(plain, "dim"))
    for i, flag in enumerate(flags):
        if plain or i:
            line.append(", ", style="dim")
        line.append_text(safe(flag_words(flag), "bold yellow"))
    if flags:
        line.append("  (runs code later, outside the sandbox; /show has the diff, /undo takes "
                    "it back)", style="yellow")
    if not event.complete:
        line.append("  (recorded while it was still running)", style="dim")
    return line


def _text(store: Store, state: ev.EntryState | None) -> str | None:
    if state is None:
        return ""
    if state.kind != "file" or state.sha256 is None or state.size > 1_000_000:
        return None
    try:
        data = store.read(state.sha256)
    except Exception:  # not in the store (past the cap): said instead of a diff
        return None
    if b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def effects_diff(event: ev.Effects, store: Store | None = None) -> RenderableType:
    """Every change of the call with its diff (before -> after), flagged ones first."""
    store = store or Store()
    flagged = {f.path: f.why for f in runs_later(event.changes)}
    parts: list[RenderableType] = [Text("Changes:", style="bold cyan")]
    order = sorted(event.changes, key=lambda ch: (ch.path not in flagged, ch.path))
    for ch in order:
        head = Text("  ") + safe(f"{ch.change} {ch.path}", "bold yellow" if ch.path in flagged
                                 else "bold")
        if ch.path in flagged:
            head += safe(f"  ({flagged[ch.path]})", "yellow")
        parts.append(head)
        old, new = _text(store, ch.before), _text(store, ch.after)
        if (ch.before or ch.after) is not None and ((ch.before and ch.before.kind == "dir")
                                                    or (ch.after and ch.after.kind == "dir")):
            continue
        if old is None or new is None:
            a = ch.before.size if ch.before else 0
            b = ch.after.size if ch.after else 0
            kind = ch.after.kind if ch.after else "file"
            parts.append(safe(f"    ({kind}, binary or large content: {a:,} -> {b:,} bytes)",
                              "dim"))
            continue
        body = Text()
        for line in difflib.unified_diff(old.splitlines(keepends=True),
                                         new.splitlines(keepends=True),
                                         fromfile=f"before/{ch.path}" if ch.before else "/dev/null",
                                         tofile=f"after/{ch.path}" if ch.after else "/dev/null"):
            if not line.endswith("\n"):
                line += "\n\\ No newline at end of file\n"
            body.append_text(safe("    " + line, DIFF_STYLE.get(line_kind(line), "")))
        body.rstrip()
        if body.plain:
            parts.append(body)
    return Group(*parts)


KEEP = "Keep these changes? [Y/n] "


def reviewer(asker: Asker) -> Callable[[ev.Effects], bool]:
    """Config `review_effects`: show a command's change set with its diff and ask KEEP through
    the one confirm (Enter keeps: the approval already said yes; `n` discards them)."""

    def review(effects: ev.Effects) -> bool:
        return asker.keep(Group(effects_diff(effects)), KEEP)

    return review


def conflict_asker(asker: Asker) -> Callable[[str], bool]:
    """For a path changed in the workspace while the command ran: replace it with the command's
    version only on an explicit yes (the one confirm)."""

    def overwrite(rel: str) -> bool:
        note = safe(f"{rel} was changed in the workspace while the command ran.", "bold yellow")
        return asker.confirm(note, f"Replace your version of {rel} with the command's? [y/N] ")

    return overwrite
