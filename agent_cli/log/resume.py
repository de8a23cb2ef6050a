"""Rebuild a conversation from its session log, to resume it (`chat --resume LOG`, `--continue`).

Streams the log through session_log's reader, following `continues` back to the first log. Every
tool_use gets exactly one tool_result; a call that was running when the session died is answered
INTERRUPTED and never run again. Also where saved sessions live (`sessions_dir`), which `log list`
(replay.py) shares.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_cli import events as ev
from agent_cli.errors import LogError
from agent_cli.log.reader import BadLine, read_events
from agent_cli.loop import add_user_text

if TYPE_CHECKING:
    from agent_cli.config import Settings

INTERRUPTED = "interrupted; outcome unknown"
"""The result a resumed conversation gives a call that was running when the session died."""


def _use_id(use: dict[str, Any], index: int) -> str:
    value = use.get("id")
    return value if isinstance(value, str) and value else f"toolu_missing_{index}"


@dataclass
class Rebuilt:
    history: list[dict[str, Any]] = field(default_factory=list)
    interrupted: list[str] = field(default_factory=list)
    """Calls that had no result (the process died mid-call); answered INTERRUPTED, never re-run."""
    warnings: list[str] = field(default_factory=list)


def rebuild(path: Path, _chain: frozenset[Path] = frozenset()) -> Rebuilt:
    """The Messages-API conversation as the model last saw it, following `continues` back to the
    first log. Every tool_use gets exactly one tool_result, in order."""
    real = path.resolve()
    if real in _chain:
        raise LogError(f"{path} is part of a loop of logs that continue each other; resume "
                       "from another log.")
    out = Rebuilt()
    pending: list[dict[str, Any]] | None = None
    results: dict[str, dict[str, Any]] = {}

    def flush() -> None:
        nonlocal pending
        if pending is None:
            return
        blocks: list[dict[str, Any]] = []
        for i, use in enumerate(pending):
            call_id = _use_id(use, i)
            block = results.pop(call_id, None)
            if block is None:
                block = {"type": "tool_result", "tool_use_id": call_id, "content": INTERRUPTED,
                         "is_error": True}
                out.interrupted.append(call_id)
            blocks.append(block)
        out.history.append({"role": "user", "content": blocks})
        pending = None
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
            uses = [b for b in item.content if b.get("type") == "tool_use"]
            pending = uses or None
        elif isinstance(item, ev.ToolResultEvent) and pending is not None:
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": item.id,
                                     "content": item.content}
            if item.is_error:
                block["is_error"] = True
            results[item.id] = block
        elif isinstance(item, ev.Notice) and item.kind == "clear":
            flush()
            out.history = []
    flush()
    return out


def _is_path_of(recorded: str, real: Path) -> bool:
    try:
        return Path(recorded).expanduser().resolve() == real
    except (OSError, ValueError, RuntimeError):
        return False  # not a usable path: reading it fails with a sentence, as a missing log


def history_from_log(path: Path) -> list[dict[str, Any]]:
    return rebuild(path).history


def resume_notes(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The history and the sentences to show (and log) when resuming from `path`."""
    rebuilt = rebuild(path)
    notes = [f"Resumed from {path}: {len(rebuilt.history)} messages."]
    notes += [f"Call {i} was running when that session stopped: its outcome is unknown; it is "
              "not run again (the model is told so)." for i in rebuilt.interrupted]
    notes += [f"Skipped while reading the log: {w}" for w in rebuilt.warnings[:5]]
    return rebuilt.history, notes


def latest_log_for(settings: Settings, workspace: Path) -> Path:
    """The most recently written log in the sessions folder whose session_start names this
    workspace (log_store holds the search)."""
    from agent_cli.log.store import latest_for

    return latest_for(settings, workspace)
