"""Undo's view of saved logs: which log, whether it is trusted, what in it can be undone, and how
an undo is appended to it: one `undo` record, signed and chained like any other, after the
session it undoes (no session of its own, so resuming the chat afterwards keeps the
conversation). A log whose session crashed is trusted for undo when every record up to the tear
verifies and is signed with this user's key (log/trust.py decides); one a running chat still
writes is read (`--list`), never appended to."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agent_cli import events as ev
from agent_cli.errors import AgentError, LogError, UsageError
from agent_cli.log.changes import ChangeSet, History, history, undoable
from agent_cli.log.reader import BadLine, read_events
from agent_cli.log.writer import SessionLog

if TYPE_CHECKING:
    from agent_cli.config import Settings

SCAN_LOGS = 50
"""How many recent logs `undo --last` looks through for one with something to undo."""


class UndoRefused(AgentError):
    """The log is not trusted, or there is nothing to undo."""


def log_events(path: Path) -> list[ev.Event]:
    return [item for _n, item in read_events(path) if not isinstance(item, BadLine)]


def undoable_in(path: Path) -> list[ChangeSet]:
    return undoable(log_events(path))


def trusted_history(path: Path) -> tuple[History, bool]:
    """The calls and undos of a log, only if the log is trusted for undo; and whether its last
    session crashed (the log ends torn, or without session_end)."""
    events, crashed = trusted_events(path)
    return history(events), crashed


def trusted_events(path: Path) -> tuple[list[ev.Event], bool]:
    """The records of a log trusted for undo, and whether its last session crashed."""
    from agent_cli.log.trust import check_trust

    trust = check_trust(path, after_crash=True)
    if not trust.trusted:
        reason = trust.reason.rstrip(".")  # the reason ends its own sentence
        raise UndoRefused(f"Not undoing from {path}: {reason}. Undo trusts only logs "
                          "signed with your log key whose chain verifies cleanly "
                          "(`agent-cli log verify LOG` says more).")
    return log_events(path), trust.crashed


def trusted_sets(path: Path) -> list[ChangeSet]:
    """The undoable change sets of a log, oldest first, only if the log is trusted."""
    return trusted_history(path)[0].undoable()


def in_use(path: Path) -> bool:
    """A running agent-cli has this log open for writing (its writer holds a shared lock)."""
    import fcntl
    import os

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return False
    finally:
        os.close(fd)  # (closing drops the lock this test took)
    return False


def resolve_log(name: str, settings: Settings) -> Path:
    """The log a LOG argument names: log.store's one resolution (a path, a file name from `log
    list`, or its id), as every command that takes a LOG uses it."""
    from agent_cli.log.store import resolve

    return resolve(name, settings)


def latest_with_undo(settings: Settings, workspace: Path) -> Path:
    """The newest log of this workspace that has something left to undo (among the SCAN_LOGS
    newest logs of this workspace that log.store finds)."""
    from itertools import islice

    from agent_cli.log.store import for_workspace, sessions_dir

    for path, _start in islice(for_workspace(settings, workspace), SCAN_LOGS):
        try:
            events = log_events(path)
        except LogError:
            continue
        if undoable(events):
            return path
    raise UndoRefused(f"Nothing to undo for workspace {workspace.resolve()}: no recent session in "
                      f"{sessions_dir(settings)} recorded a change that is not undone yet. Name a "
                      "log: agent-cli undo LOG.")


NOTHING = ("Nothing to undo in this log: no recorded change is left that was not undone "
           "already (`--redo` puts back what the last undo took back).")


def select(hist: History, to_id: str | None = None, turn: int | None = None
           ) -> list[ChangeSet]:
    """Newest first, the calls still in effect that restore the state just before: the last turn
    that changed something (the default: one step back), call `to_id`, or turn `turn`."""
    active = hist.undoable()
    if not active:
        raise UndoRefused(NOTHING)
    if to_id is not None:
        ids = [cs.id for cs in hist.calls]
        if to_id not in ids:
            known = ", ".join(cs.id for cs in reversed(active[-10:]))
            raise UsageError(f"No call {to_id!r} that changed files in this log; `agent-cli "
                             f"undo --list` shows them (newest: {known}).")
        start = ids.index(to_id)
        chosen = [cs for cs in hist.calls[start:] if cs.id in hist.active]
        if not chosen:
            raise UndoRefused(f"Nothing to undo: {to_id} and every call after it are undone "
                              "already.")
        return list(reversed(chosen))
    if turn is None:
        turn = active[-1].turn
        chosen = [cs for cs in active if cs.turn == turn]
    else:
        chosen = [cs for cs in active if cs.turn >= turn]
        if not chosen:
            raise UndoRefused(f"Nothing to undo from turn {turn} on: no call of it or after it "
                              "changed a file that is not undone already.")
    return list(reversed(chosen))


def redo_set(hist: History) -> ChangeSet:
    """The newest undo not redone yet: a redo puts back what it took back."""
    if not hist.undos:
        raise UndoRefused("Nothing to redo: no undo in this log is left that was not redone "
                          "already.")
    return hist.undos[-1]


def append_undo(path: Path, event: ev.Undo) -> None:
    """Log the undo in the same file, one record after the session it undoes, so the next
    `undo` of this log sees it and resuming keeps the conversation."""
    log = SessionLog(path)
    try:
        log.write(event)
    finally:
        log.close()
