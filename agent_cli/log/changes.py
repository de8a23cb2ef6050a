"""Change sets: the `effects` and `undo` records of a log, and which of them can still be undone.

Undo steps back; it is not a change set to be undone in turn. A call's change set is undoable
until an `undo` names it, and again once a redo (an `undo` record whose `undid` names an earlier
undo: the form older logs wrote for an undo of an undo) puts it back. So `/undo` twice steps back
two turns, and `--to ID` never re-creates what an earlier undo removed: only calls still in
effect are undone. Turns are counted by the user messages before a call, in log order.

It reads events only, so it lives with the other readers of a log: replay (show.py) and resume
(resume.py) use it as undo/ does, and log/ never imports undo/.
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
    turn: int = 0
    """The turn of the call (1: after the log's first user message); 0 for an undo."""

    @property
    def is_undo(self) -> bool:
        return self.name == "undo"

    def counts(self) -> str:
        c = Counter(ch.change for ch in self.changes)
        parts = [f"{c[k]} {k}" for k in ("created", "modified", "deleted", "mode") if c[k]]
        return ", ".join(parts).replace(" mode", " mode change" + ("s" if c["mode"] > 1 else ""))\
            or "no changes"


def from_event(event: ev.Effects | ev.Undo, turn: int = 0) -> ChangeSet:
    if isinstance(event, ev.Undo):
        return ChangeSet(event.id, "undo", event.ts, event.workspace, list(event.changes),
                         undid=list(event.undid), left_alone=list(event.left_alone))
    return ChangeSet(event.id, event.name, event.ts, event.workspace, list(event.changes),
                     complete=event.complete, not_covered=list(event.not_covered), turn=turn)


@dataclass
class History:
    """A log's calls and undos, in order."""

    calls: list[ChangeSet] = field(default_factory=list)
    """Every call that changed something, oldest first."""
    active: set[str] = field(default_factory=set)
    """Ids of the calls whose changes are in effect (not undone, or redone since)."""
    undos: list[ChangeSet] = field(default_factory=list)
    """Undos not redone yet, oldest first (what a redo takes back, newest first)."""
    undone_by: dict[str, str] = field(default_factory=dict)
    """Call id -> the undo that took it back (for "which calls were undone")."""

    def undoable(self) -> list[ChangeSet]:
        return [cs for cs in self.calls if cs.id in self.active]


def history(events: Iterable[ev.Event | ev.AnyEvent]) -> History:
    out = History()
    turn = 0
    open_undos: dict[str, ChangeSet] = {}
    for event in events:
        if isinstance(event, ev.UserMessage):
            turn += 1
        elif isinstance(event, ev.Effects):
            if event.changes:
                out.calls.append(from_event(event, turn))
                out.active.add(event.id)
        elif isinstance(event, ev.Undo):
            redone = [t for t in event.undid if t in open_undos]
            if redone:  # a redo
                for target in redone:
                    undo = open_undos.pop(target)
                    for call_id in undo.undid:
                        out.active.add(call_id)
                        out.undone_by.pop(call_id, None)
            else:
                cs = from_event(event)
                for call_id in event.undid:
                    out.active.discard(call_id)
                    out.undone_by[call_id] = event.id
                open_undos[event.id] = cs
    out.undos = list(open_undos.values())
    return out


def undoable(events: Iterable[ev.Event | ev.AnyEvent]) -> list[ChangeSet]:
    """Calls' change sets in effect, oldest first (empty ones left out)."""
    return history(events).undoable()


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
