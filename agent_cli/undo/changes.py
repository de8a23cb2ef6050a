"""Change sets: the `effects` and `undo` records of a log, and which of them can still be undone.

A change set is undoable until an `undo` names it. An undo is a change set itself, so undoing it
puts the files back the way the call left them (and that can be undone in turn).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from agent_cli import events as ev


@dataclass
class ChangeSet:
    id: str
    name: str
    """The tool's name, or "undo"."""
    ts: float
    workspace: str
    changes: list[ev.PathChange]
    undid: list[str] = field(default_factory=list)
    complete: bool = True
    not_covered: list[str] = field(default_factory=list)
    left_alone: list[str] = field(default_factory=list)

    @property
    def is_undo(self) -> bool:
        return self.name == "undo"

    def counts(self) -> str:
        c = Counter(ch.change for ch in self.changes)
        parts = [f"{c[k]} {k}" for k in ("created", "modified", "deleted", "mode") if c[k]]
        return ", ".join(parts).replace(" mode", " mode change" + ("s" if c["mode"] > 1 else ""))\
            or "no changes"


def from_event(event: ev.Effects | ev.Undo) -> ChangeSet:
    if isinstance(event, ev.Undo):
        return ChangeSet(event.id, "undo", event.ts, event.workspace, list(event.changes),
                         undid=list(event.undid), left_alone=list(event.left_alone))
    return ChangeSet(event.id, event.name, event.ts, event.workspace, list(event.changes),
                     complete=event.complete, not_covered=list(event.not_covered))


def undoable(events: Iterable[ev.Event | ev.AnyEvent]) -> list[ChangeSet]:
    """Change sets not yet undone, oldest first (empty ones left out)."""
    active: list[ChangeSet] = []
    for event in events:
        if isinstance(event, ev.Undo):
            for target in event.undid:
                for i in range(len(active) - 1, -1, -1):
                    if active[i].id == target:
                        del active[i]
                        break
        if isinstance(event, ev.Effects | ev.Undo):
            cs = from_event(event)
            if cs.changes:
                active.append(cs)
    return active


def summary(event: ev.Effects | ev.Undo) -> str:
    cs = from_event(event)
    if isinstance(event, ev.Undo):
        what = f"undo {event.id} of {', '.join(event.undid)}: {cs.counts()}"
        if event.left_alone:
            what += f"; left alone: {', '.join(event.left_alone)}"
        return what
    what = f"effects of {event.id} ({event.name}): {cs.counts()}"
    if not event.complete:
        what += " (taken while the call was still running)"
    return what
