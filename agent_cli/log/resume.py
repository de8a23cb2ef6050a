"""Rebuild a conversation from its session log, to resume it (`chat --resume LOG`, `--continue`).

Streams the log through log/reader.py, following `continues` back to the first log. Every
tool_use gets exactly one tool_result (conversation.close_dangling); a call that was running when
the session died is answered INTERRUPTED and never run again. Where saved sessions live, and which
log a LOG argument names, is log/store.py's.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from agent_cli import events as ev
from agent_cli.conversation import (
    INTERRUPTED,
    History,
    ToolResultBlock,
    add_user_text,
    close_dangling,
    compacted,
    keep_interrupted,
    tool_result,
    tool_uses,
)
from agent_cli.errors import LogError
from agent_cli.log.reader import BadLine, read_events

if TYPE_CHECKING:
    from agent_cli.config import Settings

@dataclass
class Rebuilt:
    history: History = field(default_factory=list)
    interrupted: list[str] = field(default_factory=list)
    """Calls that had no result (the process died mid-call); answered INTERRUPTED, never re-run."""
    warnings: list[str] = field(default_factory=list)
    undone: dict[str, str] = field(default_factory=dict)
    """Calls of this log whose changes an undo took back (and no redo put back): id -> undo."""


def rebuild(path: Path, _chain: frozenset[Path] = frozenset()) -> Rebuilt:
    """The Messages-API conversation as the model last saw it, following `continues` back to the
    first log. Every tool_use gets exactly one tool_result, in order."""
    real = path.resolve()
    if real in _chain:
        raise LogError(f"{path} is part of a loop of logs that continue each other; resume "
                       "from another log.")
    out = Rebuilt()
    pending = False
    """The last message is a model reply whose calls are not answered yet."""
    results: dict[str, ToolResultBlock] = {}
    undo_events: list[ev.Event] = []
    """The records that say what is undone (effects, undo, user messages for the turns)."""

    def flush() -> None:
        nonlocal pending
        if not pending:
            return
        for _use, call_id, found in close_dangling(out.history, INTERRUPTED, results):
            if found is None:
                out.interrupted.append(call_id)
        pending = False
        results.clear()

    for lineno, item in read_events(path):
        if isinstance(item, BadLine):
            out.warnings.append(f"{path.name} line {lineno}: {item.reason}")
            continue
        if isinstance(item, ev.SessionStart):
            flush()
            if item.continues and not _is_path_of(item.continues, real):
                try:
                    older = rebuild(Path(item.continues).expanduser(), _chain | {real})
                except (LogError, OSError, ValueError, RecursionError) as e:
                    out.warnings.append(f"the conversation before line {lineno} is missing: {e}")
                    out.history = []
                else:  # (its interrupted calls were reported when it was resumed)
                    out.history = older.history
                    out.warnings += older.warnings
            elif not item.continues:
                out.history = []
        elif isinstance(item, ev.UserMessage):
            flush()
            add_user_text(out.history, item.text)
        elif isinstance(item, ev.ModelReply):
            flush()
            out.history.append({"role": "assistant", "content": item.content})
            pending = bool(tool_uses(item.content))
        elif isinstance(item, ev.ToolResultEvent) and pending:
            results[item.id] = tool_result(item.id, item.content, item.is_error)
        elif isinstance(item, ev.Interrupt) and item.reply_so_far is not None:
            flush()  # the live session kept the cut reply so: resume sends the same
            keep_interrupted(out.history, item.reply_so_far)
        elif isinstance(item, ev.Notice) and item.kind == "clear":
            flush()
            out.history = []
        elif isinstance(item, ev.Notice) and (done := item.compaction()) is not None:
            flush()  # the live session compacted from here: send the summary, as it did
            out.history = compacted(out.history, done.summary)
        if isinstance(item, ev.Effects | ev.Undo | ev.UserMessage):
            undo_events.append(item)
    flush()
    if any(isinstance(e, ev.Undo) for e in undo_events):
        from agent_cli.log.changes import history

        out.undone = history(undo_events).undone_by
    return out


def _is_path_of(recorded: str, real: Path) -> bool:
    try:
        return Path(recorded).expanduser().resolve() == real
    except (OSError, ValueError, RuntimeError):
        return False  # not a usable path: reading it fails with a sentence, as a missing log


def resume_notes(path: Path) -> tuple[History, list[str]]:
    """The history and the sentences to show (and log) when resuming from `path`."""
    rebuilt = rebuild(path)
    notes = [f"Resumed from {path}: {len(rebuilt.history)} messages."]
    notes += [f"Call {i} was running when that session stopped: its outcome is unknown; it is "
              "not run again (the model is told so)." for i in rebuilt.interrupted]
    if rebuilt.undone:
        notes.append("Undone since (their changes are no longer in the workspace): "
                     + ", ".join(f"{call} (by {undo})" for call, undo in rebuilt.undone.items())
                     + ".")
    notes += [f"Skipped while reading the log: {w}" for w in rebuilt.warnings[:5]]
    return rebuilt.history, notes


def latest_log_for(settings: Settings, workspace: Path) -> Path:
    """The most recently written log in the sessions folder whose session_start names this
    workspace (log_store holds the search)."""
    from agent_cli.log.store import latest_for

    return latest_for(settings, workspace)
