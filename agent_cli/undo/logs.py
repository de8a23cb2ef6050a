"""Undo's view of saved logs: which log, whether it is trusted, what in it can be undone, and how
an undo is appended to it (a short session of its own: session_start, undo, session_end, signed
and chained like any other)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from agent_cli import __version__
from agent_cli import events as ev
from agent_cli.errors import AgentError, LogError, UsageError
from agent_cli.log.reader import BadLine, read_events
from agent_cli.log.writer import SessionLog
from agent_cli.undo.changes import ChangeSet, undoable

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


def trusted_sets(path: Path) -> list[ChangeSet]:
    """The undoable change sets of a log, oldest first, only if the log is trusted."""
    from agent_cli.log.trust import check_trust

    trust = check_trust(path)
    if not trust.trusted:
        reason = trust.reason.rstrip(".")  # the reason ends its own sentence
        raise UndoRefused(f"Not undoing from {path}: {reason}. Undo trusts only logs "
                          "signed with your log key whose chain verifies cleanly "
                          "(`agent-cli log verify LOG` says more).")
    return undoable_in(path)


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


def select(sets_oldest_first: list[ChangeSet], to_id: str | None) -> list[ChangeSet]:
    """Newest first: the last change set, or (`--to ID`) that one and every one after it."""
    if not sets_oldest_first:
        raise UndoRefused("Nothing to undo in this log: no recorded change is left that was not "
                          "undone already.")
    if to_id is None:
        return [sets_oldest_first[-1]]
    for i in range(len(sets_oldest_first) - 1, -1, -1):
        if sets_oldest_first[i].id == to_id:
            return list(reversed(sets_oldest_first[i:]))
    known = ", ".join(cs.id for cs in reversed(sets_oldest_first[-10:]))
    raise UsageError(f"No undoable call {to_id!r} in this log; `agent-cli undo --list` shows "
                     f"them (newest: {known}).")


def append_undo(path: Path, event: ev.Undo) -> None:
    """Log the undo in the same file, as a session of its own, so the next `undo` of this log
    sees it (and can undo it)."""
    log = SessionLog(path)
    try:
        log.write(ev.SessionStart(version=__version__, model="none", provider="undo",
                                  workspace=event.workspace))
        log.write(event)
        log.write(ev.SessionEnd(reason="undo"))
    finally:
        log.close()
