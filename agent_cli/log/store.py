"""Where saved sessions live, and the one way a LOG argument becomes a file.

Before this module the sessions folder was computed in two places and searched by mtime in two
more; `replay`, `chat --resume`, `log list`, `log verify` and new sessions now all come here, so a
log named by path, by its file name from `log list`, or by its id always means the same file.

A log's id is the short hex tail of its file name (`20261201-101500-3fa9c1.jsonl` has id
`3fa9c1`); the full stem works too.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from agent_cli.errors import LogError, UsageError

if TYPE_CHECKING:
    from agent_cli import events as ev
    from agent_cli.config import Settings

SUFFIX = ".jsonl"


class LogNotFound(LogError):
    """A LOG argument that names no file. Same exit code for every command that takes a LOG."""

    exit_code = 2


def sessions_dir(settings: Settings) -> Path:
    """config.sessions_dir (computed there: the path guard needs it too), imported when a LOG
    is looked up by name, so that a LOG given as a path costs no settings module."""
    from agent_cli.config import sessions_dir as computed

    return computed(settings)


def new_log_path(settings: Settings) -> Path:
    """A fresh, unique file name for a new session: time stamp, then a 6-hex id."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return sessions_dir(settings) / f"{stamp}-{secrets.token_hex(3)}{SUFFIX}"


def log_id(path: Path) -> str:
    """The short id shown by `log list` and accepted wherever a LOG is taken."""
    stem = path.name.removesuffix(SUFFIX)
    return stem.rsplit("-", 1)[-1] if "-" in stem else stem


def newest_first(settings: Settings) -> list[Path]:
    """Every log in the sessions folder, most recently written first."""
    folder = sessions_dir(settings)
    if not folder.is_dir():
        return []

    def mtime(p: Path) -> float:
        try:
            return p.stat().st_mtime
        except OSError:  # removed while listing
            return 0.0

    return sorted(folder.glob("*" + SUFFIX), key=mtime, reverse=True)


def first_start(path: Path) -> ev.SessionStart | None:
    """The session_start record a log opens with, or None (a torn or foreign file)."""
    from agent_cli import events as ev
    from agent_cli.log.reader import BadLine, read_records, to_event

    for lineno, rec in read_records(path):
        if isinstance(rec, BadLine):
            continue
        item = to_event(lineno, rec)
        return item if isinstance(item, ev.SessionStart) else None
    return None


def same_workspace(recorded: str, want: Path) -> bool:
    """Whether a log's recorded workspace (untrusted text: it may hold a NUL, be a loop of
    links) is the folder `want`."""
    if not recorded:
        return False
    try:
        return Path(recorded).resolve() == want.resolve()
    except (OSError, ValueError, RuntimeError):
        return False


def for_workspace(settings: Settings, workspace: Path) -> Iterator[tuple[Path, ev.SessionStart]]:
    """Logs whose session_start names this workspace, newest first."""
    for path in newest_first(settings):
        try:  # one bad log never hides the others
            start = first_start(path)
        except (LogError, OSError, ValueError, RecursionError):
            continue
        if start is not None and same_workspace(start.workspace, workspace):
            yield path, start


def latest_for(settings: Settings, workspace: Path) -> Path:
    """The most recently written log of this workspace (`--last`, `--continue`)."""
    for path, _start in for_workspace(settings, workspace):
        return path
    raise LogNotFound(f"No saved session for workspace {workspace.resolve()} in "
                      f"{sessions_dir(settings)}; start one with `agent-cli chat`, or name a "
                      "log (a path, a file name from `agent-cli log list`, or its id).")


def resolve(arg: str | Path, settings: Settings) -> Path:
    """The file a LOG argument means: an existing path; else a file name (with or without
    .jsonl) in the sessions folder; else a log id (the hex tail of a name, or its stem). Raises
    LogNotFound with a sentence saying what was tried and what to do."""
    text = str(arg)
    given = Path(text).expanduser()
    if given.is_file():
        return given
    if given.exists():
        raise LogNotFound(f"{given} is not a regular file (a folder, FIFO, socket or device); "
                          "give a session log (.jsonl).")
    folder = sessions_dir(settings)
    if "/" not in text and text not in ("", ".", ".."):
        for name in (text, text + SUFFIX):
            candidate = folder / name
            if candidate.is_file():
                return candidate
        key = text.removesuffix(SUFFIX)
        matches = [p for p in newest_first(settings)
                   if log_id(p) == key or p.name.removesuffix(SUFFIX) == key]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            names = ", ".join(p.name for p in matches[:5])
            raise UsageError(f"{text} matches several logs ({names}); give the file name.")
    raise LogNotFound(f"Session log {text} not found: it is not a file, nor a name or id in "
                      f"{folder}. `agent-cli log list` shows the saved sessions.")


def resolve_optional(arg: str | Path | None, last: bool, settings: Settings,
                     workspace: Path) -> Path:
    """LOG or --last (exactly one), as the commands that take a log accept them."""
    if arg is not None and last:
        raise UsageError("Give a LOG or --last, not both.")
    if arg is None and not last:
        raise UsageError("Name a session log (a path, a file name from `agent-cli log list`, or "
                         "its id), or use --last for the newest session of this workspace.")
    if last:
        return latest_for(settings, workspace)
    assert arg is not None
    return resolve(arg, settings)
