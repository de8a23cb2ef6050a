"""Files only this user may read: session logs, the prompt history, pins, server logs, the log
key. One place decides their modes, so no writer can forget.

Logs and history hold what was typed and what tools returned (redacted by shape, but a password
typed in prose is still there); pins decide which code runs. They are created 0600 in folders made
0700, and a file agent-cli owns that an older version left 0644 is tightened when it is opened
again. Folders that are not agent-cli's own (the folder a `--log FILE` names, say the workspace)
are created 0700 when missing but never changed when they exist.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

FILE_MODE = 0o600
DIR_MODE = 0o700
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def _tighten(fd_or_path: int | Path, mode: int, want: int) -> None:
    """Drop group and other bits from something this user owns (never widen, never touch
    someone else's file)."""
    if mode & 0o077 == 0:
        return
    try:
        if isinstance(fd_or_path, int):
            os.fchmod(fd_or_path, stat.S_IMODE(mode) & want)
        else:
            os.chmod(fd_or_path, stat.S_IMODE(mode) & want)
    except OSError:
        pass  # not ours to change (another owner, a read-only mount): left as it is


def private_dir(path: Path, *, own: bool = True) -> Path:
    """Make `path` (and missing parents) with mode 0700. With `own` (AGENT_CLI_HOME and the
    folders inside it), an existing folder that is open to others is tightened to 0700."""
    missing: list[Path] = []
    p = path
    while not p.exists() and p != p.parent:
        missing.append(p)
        p = p.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(folder, DIR_MODE)
    if own and path.is_dir() and not path.is_symlink():
        st = path.stat()
        if st.st_uid == os.getuid():
            _tighten(path, st.st_mode, DIR_MODE)
    return path


def open_private(path: Path, flags: int) -> int:
    """os.open for a private file: created 0600; an existing one this user owns that is open to
    others is tightened. Never blocks on a FIFO, and refuses anything that is not a regular file
    (the caller gets OSError or ValueError with the reason)."""
    fd = os.open(path, flags | os.O_CREAT | _CLOEXEC | _NONBLOCK, FILE_MODE)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ValueError(f"{path} is not a regular file (a FIFO, socket or device)")
        if st.st_uid == os.getuid():
            _tighten(fd, st.st_mode, FILE_MODE)
        if _NONBLOCK:
            os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def tighten_file(path: Path) -> None:
    """Make an existing private file 0600 if this user owns it (files written by a library that
    creates them with the umask, such as the prompt history)."""
    try:
        st = os.lstat(path)
    except OSError:
        return
    if stat.S_ISREG(st.st_mode) and st.st_uid == os.getuid():
        _tighten(path, st.st_mode, FILE_MODE)
