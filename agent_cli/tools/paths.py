"""The workspace path guard every file tool uses.

Schema-valid is not safe: a path is resolved (symlinks included) and its real location must be
inside the real workspace. Containment is checked on path components, never a string prefix.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from agent_cli.errors import PathRefused


def _check_text(raw: str) -> None:
    if not raw or not raw.strip():
        raise PathRefused("The path is empty; give a path relative to the workspace.")
    if "\x00" in raw:
        raise PathRefused("The path contains a NUL byte; refused.")


def resolve_in_workspace(workspace: Path, raw: str) -> Path:
    """Return the real path for `raw`, or raise PathRefused if it leaves the workspace."""
    _check_text(raw)
    root = Path(os.path.realpath(workspace))
    candidate = Path(raw).expanduser() if raw.startswith("~") else Path(raw)
    joined = candidate if candidate.is_absolute() else root / candidate
    real = Path(os.path.realpath(joined))
    if real != root and root not in real.parents:
        if os.path.realpath(os.path.abspath(joined)) != os.path.abspath(joined):
            raise PathRefused(
                f"{raw!r} leads outside the workspace through a symbolic link; refused."
            )
        raise PathRefused(f"{raw!r} is outside the workspace ({root}); use a path inside it.")
    return real


def display_path(workspace: Path, real: Path) -> str:
    root = Path(os.path.realpath(workspace))
    try:
        rel = real.relative_to(root)
    except ValueError:
        return str(real)
    return str(rel) if str(rel) != "." else "."


def check_regular_file(real: Path, raw: str) -> os.stat_result:
    try:
        st = os.stat(real)
    except FileNotFoundError:
        raise PathRefused(f"{raw!r} does not exist.") from None
    if stat.S_ISDIR(st.st_mode):
        raise PathRefused(f"{raw!r} is a directory; use list_dir for folders.")
    if not stat.S_ISREG(st.st_mode):
        raise PathRefused(f"{raw!r} is not a regular file (device, FIFO or socket); refused.")
    return st


def read_text_capped(real: Path, raw: str, max_bytes: int) -> tuple[str, int, bool]:
    """Read at most `max_bytes` of a regular file without following a final symlink.

    Returns (text, total size, truncated). Bytes that are not UTF-8 are replaced, so binary files
    never crash a tool.
    """
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(real, flags)
    except FileNotFoundError:
        raise PathRefused(f"{raw!r} does not exist.") from None
    except OSError as e:
        raise PathRefused(f"{raw!r} cannot be opened: {e.strerror}.") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise PathRefused(f"{raw!r} is a directory; use list_dir for folders.")
        if not stat.S_ISREG(st.st_mode):
            raise PathRefused(f"{raw!r} is not a regular file (device, FIFO or socket); refused.")
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(max_bytes + 1)
    finally:
        os.close(fd)
    truncated = len(data) > max_bytes
    return data[:max_bytes].decode("utf-8", errors="replace"), st.st_size, truncated
