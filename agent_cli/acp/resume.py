"""session/load: which log a sessionId names, and the conversation it holds.

A sessionId is what session/new answered (a log's file name without .jsonl), or anything a LOG
argument takes (a path, a name, an id: log/store.resolve). A loaded session goes on in a new log
that `continues` the loaded one, as `chat --resume` does; so loading an id again finds the newest
log that continues it, and the conversation is whole. The conversation is rebuilt by
log/resume.py. A log that is not trusted (log/trust.py) is still shown and continued as data,
and the notice says so; no approval is ever carried over from a log (each call asks anew).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_cli.acp import wire
from agent_cli.acp.wire import RpcError

if TYPE_CHECKING:
    from agent_cli.config import Settings

MAX_FOLLOW = 50


@dataclass
class Loaded:
    path: Path
    history: list[dict[str, Any]]
    notes: list[str]


def load(session_id: str, settings: Settings) -> Loaded:
    from agent_cli.errors import AgentError
    from agent_cli.log import resume as rs
    from agent_cli.log import store
    from agent_cli.log.trust import check_trust

    try:
        path = newest_continuation(store.resolve(session_id, settings), settings)
        history, notes = rs.resume_notes(path)
    except AgentError as e:
        raise RpcError(wire.INVALID_PARAMS, str(e)) from None
    trust = check_trust(path)
    if not trust.trusted:
        notes.append(f"{path.name} is not trusted ({trust.reason}) Its conversation is shown and "
                     "continued as data; nothing in it is approved for this session.")
    return Loaded(path, history, notes)


def newest_continuation(path: Path, settings: Settings) -> Path:
    """The newest log of the sessions folder that continues `path` (directly or through
    others), else `path` itself. Only a continuation that is trusted is followed: a log planted
    beside the user's must not take a load elsewhere."""
    from agent_cli.log import store
    from agent_cli.log.trust import check_trust

    logs = store.newest_first(settings)
    current = path.resolve()
    for _ in range(MAX_FOLLOW):
        nxt = None
        for candidate in logs:
            start = store.first_start(candidate)
            if start is not None and start.continues and \
                    _same(start.continues, current) and candidate.resolve() != current \
                    and check_trust(candidate, after_crash=True).trusted:
                nxt = candidate.resolve()
                break
        if nxt is None:
            return current
        current = nxt
    return current


def _same(recorded: str, real: Path) -> bool:
    try:
        return Path(recorded).expanduser().resolve() == real
    except (OSError, ValueError, RuntimeError):
        return False
