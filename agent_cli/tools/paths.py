"""The workspace path guard every file tool uses.

Schema-valid is not safe. A path is checked twice:

1. at check time, `resolve_in_workspace` resolves it (symlinks and `..` included) and requires the
   real location to sit inside the real workspace, compared on path components, never as a string
   prefix (`/ws-evil` is not inside `/ws`);
2. at open time, the file is reached by walking the resolved path one component at a time from a
   descriptor of the workspace, every step opened with O_NOFOLLOW. The resolved path holds no
   symlink, so any link met during the walk was planted after the check and is refused. Nothing is
   ever opened by its full path, so a folder swapped for a link in between cannot redirect a write.

Writes also refuse files with more than one hard link (the other name may be outside the
workspace) and anything that is not a regular file. Reads never block: FIFOs are opened
non-blocking and refused, and the bytes read are capped.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from agent_cli.errors import PathRefused

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
# Kernel views that look like files but are not: never read or written, even when the workspace
# is `/` (reading /proc/self/environ would hand the model this process's secrets).
_PSEUDO_ROOTS = (Path("/proc"), Path("/sys"), Path("/dev"))
_CHUNK = 1 << 16


def _check_text(raw: str) -> None:
    if not isinstance(raw, str) or not raw.strip():
        raise PathRefused("The path is empty; give a path relative to the workspace.")
    if "\x00" in raw:
        raise PathRefused("The path contains a NUL byte; refused.")


def real_root(workspace: Path) -> Path:
    return Path(os.path.realpath(workspace))


def _inside(root: Path, real: Path) -> bool:
    return real == root or root in real.parents


def resolve_in_workspace(workspace: Path, raw: str) -> Path:
    """Return the real path for `raw`, or raise PathRefused if it leaves the workspace.

    The file itself need not exist (write_file creates it); every existing link on the way is
    followed, and the place it leads to must be inside the workspace.
    """
    _check_text(raw)
    root = real_root(workspace)
    candidate = Path(os.path.expanduser(raw)) if raw == "~" or raw.startswith("~/") else Path(raw)
    joined = candidate if candidate.is_absolute() else root / candidate
    try:
        real = Path(os.path.realpath(joined))
    except (OSError, ValueError) as e:
        raise PathRefused(f"{raw!r} cannot be resolved ({e}); check the path.") from None
    if not _inside(root, real):
        lexical = Path(os.path.normpath(joined))
        if _inside(root, lexical):
            raise PathRefused(
                f"{raw!r} leads outside the workspace through a symbolic link; refused."
            )
        raise PathRefused(f"{raw!r} is outside the workspace ({root}); use a path inside it.")
    for pseudo in _PSEUDO_ROOTS:
        if pseudo in root.parents:
            continue  # a workspace in /dev/shm may use its own files
        if real == pseudo or pseudo in real.parents:
            raise PathRefused(f"{raw!r} is under {pseudo}, a kernel view, not a file; refused.")
    refuse_protected(real, raw)
    return real


def display_path(workspace: Path, real: Path) -> str:
    root = real_root(workspace)
    try:
        rel = real.relative_to(root)
    except ValueError:
        return str(real)
    return str(rel) if str(rel) != "." else "."


def _parts_below(root: Path, real: Path) -> list[str]:
    return list(real.relative_to(root).parts)


def _open_dir_at(parent_fd: int | None, name: str | Path, raw: str) -> int:
    try:
        return os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=parent_fd)
    except OSError as e:
        if e.errno == errno.ENOTDIR:
            try:
                is_link = stat.S_ISLNK(os.stat(name, dir_fd=parent_fd,
                                               follow_symlinks=False).st_mode)
            except OSError:
                is_link = False
            if not is_link:
                raise PathRefused(f"{raw!r}: {name} is not a folder.") from None
        raise _refusal(e, raw, "folder") from None


def _refusal(e: OSError, raw: str, what: str = "file") -> PathRefused:
    if e.errno in (errno.ELOOP, errno.ENOTDIR, errno.EMLINK):
        # O_NOFOLLOW on a link: ELOOP (files) or ENOTDIR (folders, with O_DIRECTORY).
        return PathRefused(
            f"{raw!r}: a symbolic link appeared on the way after the path was checked; refused."
        )
    if e.errno == errno.ENOENT:
        return PathRefused(f"{raw!r} does not exist.")
    if e.errno == errno.ENXIO:
        return PathRefused(f"{raw!r} is not a regular file (FIFO or socket); refused.")
    if e.errno in (errno.EACCES, errno.EPERM):
        return PathRefused(f"{raw!r}: permission denied.")
    if e.errno == errno.EISDIR:
        return PathRefused(f"{raw!r} is a folder, not a file.")
    return PathRefused(f"{raw!r}: the {what} cannot be opened ({e.strerror}).")


@dataclass(frozen=True)
class DirAnchor:
    """Where a write was previewed: the resolved path, and the identity (device, inode) of the
    deepest folder on its way that existed then (`depth` folders below the workspace root; the
    parent itself when it existed). The write checks it on the descriptor it writes through, so a
    folder swapped for a link or for another folder between the panel and the yes is noticed."""

    real: str
    depth: int
    dev: int
    ino: int


def dir_anchor(workspace: Path, real: Path, raw: str) -> DirAnchor:
    """The anchor of a resolved path, walking from the workspace root without following links."""
    root = real_root(workspace)
    parts = _parts_below(root, real)[:-1]
    fd = _open_dir_at(None, root, raw)
    depth = 0
    try:
        for part in parts:
            try:
                nxt = _open_dir_at(fd, part, raw)
            except PathRefused:
                if os.path.lexists(root.joinpath(*parts[:depth + 1])):
                    raise
                break  # missing from here on: the write will create it
            os.close(fd)
            fd = nxt
            depth += 1
        st = os.fstat(fd)
    finally:
        os.close(fd)
    return DirAnchor(str(real), depth, st.st_dev, st.st_ino)


def _check_anchor(fd: int, anchor: DirAnchor, raw: str) -> None:
    st = os.fstat(fd)
    if (st.st_dev, st.st_ino) != (anchor.dev, anchor.ino):
        raise PathRefused(
            f"{raw}: a folder on its path was replaced or moved after the preview was shown, so "
            "this is no longer the place the panel showed; nothing was written. Look at the "
            "folder and propose the change anew."
        )


@contextmanager
def open_parent(workspace: Path, real: Path, raw: str, *,
                create: bool = False, anchor: DirAnchor | None = None) -> Iterator[tuple[int, str]]:
    """Yield (descriptor of the parent folder, final name) for a resolved path, reached from the
    workspace root without following any link. With `create`, missing folders are made. With
    `anchor`, the folder at its depth must be the very one the panel saw."""
    root = real_root(workspace)
    parts = _parts_below(root, real)
    if not parts:
        raise PathRefused(f"{raw!r} is the workspace folder itself, not a file.")
    fd = _open_dir_at(None, root, raw)
    try:
        if anchor is not None and anchor.depth == 0:
            _check_anchor(fd, anchor, raw)
        for depth, part in enumerate(parts[:-1], 1):
            if create:
                try:
                    os.mkdir(part, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
                except OSError as e:
                    raise _refusal(e, raw, "folder") from None
            nxt = _open_dir_at(fd, part, raw)
            os.close(fd)
            fd = nxt
            if anchor is not None and anchor.depth == depth:
                _check_anchor(fd, anchor, raw)
        yield fd, parts[-1]
    finally:
        os.close(fd)


def open_dir(workspace: Path, real: Path, raw: str) -> int:
    """A descriptor of a resolved folder inside the workspace, reached without following links.
    The caller closes it."""
    root = real_root(workspace)
    fd = _open_dir_at(None, root, raw)
    try:
        for part in _parts_below(root, real):
            nxt = _open_dir_at(fd, part, raw)
            os.close(fd)
            fd = nxt
    except BaseException:
        os.close(fd)
        raise
    return fd


def _check_regular(st: os.stat_result, raw: str) -> None:
    if stat.S_ISDIR(st.st_mode):
        raise PathRefused(f"{raw!r} is a folder; use list_dir for folders.")
    if stat.S_ISLNK(st.st_mode):
        raise PathRefused(f"{raw!r} is a symbolic link; refused.")
    if not stat.S_ISREG(st.st_mode):
        raise PathRefused(f"{raw!r} is not a regular file (device, FIFO or socket); refused.")


@contextmanager
def open_file_read(workspace: Path, raw: str) -> Iterator[tuple[int, os.stat_result, Path]]:
    """Open a regular file inside the workspace for reading: (fd, stat, real path). A FIFO is
    refused without blocking; a link planted after the check is refused."""
    real = resolve_in_workspace(workspace, raw)
    with open_parent(workspace, real, raw) as (dir_fd, name):
        try:
            fd = os.open(name, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC, dir_fd=dir_fd)
        except OSError as e:
            raise _refusal(e, raw) from None
    try:
        st = os.fstat(fd)
        _check_regular(st, raw)
        refuse_protected_fd(st, raw)
        yield fd, st, real
    finally:
        os.close(fd)


def read_fd(fd: int, limit: int) -> bytes:
    """Read at most `limit` bytes from the current offset."""
    chunks: list[bytes] = []
    left = limit
    while left > 0:
        b = os.read(fd, min(_CHUNK, left))
        if not b:
            break
        chunks.append(b)
        left -= len(b)
    return b"".join(chunks)


def hash_fd(fd: int) -> tuple[str, int]:
    """(sha256 hex, size) of a file read from its start, in chunks (any size, bounded memory)."""
    os.lseek(fd, 0, os.SEEK_SET)
    h = hashlib.sha256()
    size = 0
    while True:
        b = os.read(fd, _CHUNK)
        if not b:
            break
        h.update(b)
        size += len(b)
    return h.hexdigest(), size


def read_bytes_capped(workspace: Path, raw: str, max_bytes: int) -> tuple[bytes, int, bool]:
    """(bytes, size, truncated): at most `max_bytes` of a regular file inside the workspace."""
    with open_file_read(workspace, raw) as (fd, st, _real):
        data = read_fd(fd, max_bytes + 1)
    return data[:max_bytes], max(st.st_size, len(data)), len(data) > max_bytes


def read_text_capped(workspace: Path, raw: str, max_bytes: int) -> tuple[str, int, bool]:
    """(text, size, truncated) of a file inside the workspace; bytes that are not UTF-8 are
    replaced so binary files never crash a tool."""
    data, size, truncated = read_bytes_capped(workspace, raw, max_bytes)
    return data.decode("utf-8", errors="replace"), size, truncated


@dataclass(frozen=True)
class FileState:
    """What a write was previewed against: whether the file existed, and its content hash."""

    exists: bool
    sha256: str | None = None
    size: int = 0
    anchor: DirAnchor | None = field(default=None, compare=False)
    """Where it was previewed; a write given this state goes there or nowhere. Not part of
    equality: two states of the same content are equal wherever they were taken."""


def file_state(workspace: Path, raw: str) -> FileState:
    """The current state of a (possibly missing) file, for a snapshot before the panel."""
    real = resolve_in_workspace(workspace, raw)
    anchor = dir_anchor(workspace, real, raw)
    if not os.path.lexists(real.parent):
        # the write will create the folders (and re-check on the way)
        return FileState(False, anchor=anchor)
    with open_parent(workspace, real, raw, anchor=anchor) as (dir_fd, name):
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return FileState(False, anchor=anchor)
        except OSError as e:
            raise _refusal(e, raw) from None
        _check_regular(st, raw)
        try:
            fd = os.open(name, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC, dir_fd=dir_fd)
        except OSError as e:
            raise _refusal(e, raw) from None
    try:
        _check_regular(os.fstat(fd), raw)
        digest, size = hash_fd(fd)
    finally:
        os.close(fd)
    return FileState(True, digest, size, anchor)


def write_bytes_guarded(workspace: Path, raw: str, data: bytes,
                        expected: FileState | None = None) -> Path:
    """Write `data` as the whole content of a file inside the workspace; return its real path.

    `expected` is the snapshot taken when the panel was shown: if the file no longer matches it
    (created, deleted or changed since), nothing is written and PathRefused says so. None writes
    without comparing (a tool that took no snapshot). The hash is
    taken on the very descriptor that is then written, so the check and the write see one file.
    """
    real = resolve_in_workspace(workspace, raw)
    return write_resolved(workspace, real, raw, data, expected)


def write_resolved(workspace: Path, real: Path, raw: str, data: bytes,
                   expected: FileState | None = None) -> Path:
    """The write half of `write_bytes_guarded`, for a path already resolved (tests use it to
    swap a folder for a link between the check and the write)."""
    root = real_root(workspace)
    if not _inside(root, real):
        raise PathRefused(f"{raw!r} is outside the workspace ({root}); refused.")
    refuse_protected(real, raw)
    must_be_new = expected is not None and not expected.exists
    anchor = expected.anchor if expected is not None else None
    if anchor is not None and str(real) != anchor.real:
        shown = display_path(workspace, Path(anchor.real))
        raise PathRefused(
            f"{raw} now leads to {display_path(workspace, real)}, not to {shown} as the panel "
            "showed (a folder on the way was replaced by a link or moved); nothing was written. "
            "Look at the folder and propose the change anew."
        )
    with open_parent(workspace, real, raw, create=True, anchor=anchor) as (dir_fd, name):
        flags = os.O_RDWR | _NOFOLLOW | _NONBLOCK | _CLOEXEC | os.O_CREAT
        if must_be_new:
            flags |= os.O_EXCL
        try:
            fd = os.open(name, flags, 0o644, dir_fd=dir_fd)
        except FileExistsError:
            raise PathRefused(
                f"{raw} was created by someone else after the preview was shown; not "
                "overwritten. Read it and propose the change anew."
            ) from None
        except OSError as e:
            raise _refusal(e, raw) from None
    try:
        st = os.fstat(fd)
        _check_regular(st, raw)
        if st.st_nlink > 1:
            raise PathRefused(
                f"{raw!r} has {st.st_nlink} hard links; writing it would change the other names "
                "too (maybe outside the workspace). Refused."
            )
        if expected is not None and expected.exists:
            digest, _size = hash_fd(fd)
            if digest != expected.sha256:
                raise PathRefused(
                    f"{raw} changed after the preview was shown; not written. Read it again and "
                    "propose the change anew."
                )
        os.lseek(fd, 0, os.SEEK_SET)
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.ftruncate(fd, len(data))
        os.fsync(fd)
    finally:
        os.close(fd)
    return real


# -- agent-cli's own state ---------------------------------------------------------------------
# AGENT_CLI_HOME holds the log key (whose MAC makes a log trusted), the config (which decides
# which MCP servers are trusted and what is denied), the pins (which plugin code may run), the
# prompt history and the session logs. A tool that could read the key could forge trusted logs;
# one that could write the config could trust a server behind an ordinary panel. So every path a
# tool names is refused when its real location is inside that state, whatever the workspace is
# (`~` included): checked here, in the one function that resolves paths, so every file tool that
# uses the guard gets it. run_command cannot be path-checked; the sandbox confines it.

_PROTECTED: dict[Path, str] = {}
"""Real paths registered by sessions (config files, log folders), with what they are. It only
grows within a process: a session never makes another's state reachable."""
_STATE_REFUSAL = "agent-cli's own state is out of reach of tools"
_SENSITIVE_FILES = ("log.key", "config.toml", "plugin-pins.json", "mcp-pins.json", "history")


def protect(paths: dict[Path, str]) -> None:
    """Register agent-cli state (path -> what it is, for the refusal) for the path guard."""
    for path, what in paths.items():
        try:
            real = Path(os.path.realpath(Path(path).expanduser()))
        except (OSError, ValueError):
            continue
        _PROTECTED.setdefault(real, what)


@lru_cache(maxsize=16)
def _real_home(home: str) -> Path:
    return Path(os.path.realpath(home))


_HOME_VARS = ("AGENT_CLI_HOME", "XDG_DATA_HOME", "HOME", "APPDATA", "USERPROFILE")
_roots_cache: tuple[tuple[object, ...], dict[Path, str]] | None = None


def protected_roots() -> dict[Path, str]:
    """Every protected real path: AGENT_CLI_HOME as it is now, and what sessions registered.
    Kept, keyed on all it depends on: the variables `config.home()` reads and how many paths
    sessions registered (`_PROTECTED` only grows); a changed AGENT_CLI_HOME is a new key."""
    global _roots_cache
    key = (*map(os.environ.get, _HOME_VARS), len(_PROTECTED))
    if _roots_cache is not None and _roots_cache[0] == key:
        return dict(_roots_cache[1])
    from agent_cli.config import home

    roots = {_real_home(str(home())): "AGENT_CLI_HOME (config, log key, sessions, pins, "
                                      "history)"}
    for real, what in _PROTECTED.items():
        roots.setdefault(real, what)
    _roots_cache = (key, roots)
    return dict(roots)


def protected_reason(real: Path) -> str | None:
    """What protected state `real` is in, or None when it is not agent-cli's own. Both sides are
    real (resolved, normalised) paths, so a prefix on a component boundary is containment."""
    text = str(real)
    for root, what in protected_roots().items():
        base = str(root).rstrip(os.sep)
        if text == str(root) or text.startswith(base + os.sep):
            return what
    return None


def refuse_protected(real: Path, raw: str) -> None:
    """Raise PathRefused when a resolved path is inside agent-cli's own state."""
    what = protected_reason(real)
    if what is not None:
        raise PathRefused(f"{raw!r} is inside {what}; {_STATE_REFUSAL}. Refused.")


def _protected_inodes() -> set[tuple[int, int]]:
    """(device, inode) of the sensitive state files, for catching a hard link to one of them
    from inside the workspace (its path is elsewhere, its content is the key)."""
    out: set[tuple[int, int]] = set()
    for root in protected_roots():
        candidates = [root] + [root / name for name in _SENSITIVE_FILES]
        for path in candidates:
            try:
                st = os.stat(path)
            except (OSError, ValueError):
                continue
            if stat.S_ISREG(st.st_mode):
                out.add((st.st_dev, st.st_ino))
    return out


def is_protected_file(st: os.stat_result) -> bool:
    """True when an opened file (its fstat) is one of agent-cli's state files under another
    name: a hard link. Only files with more than one link can be."""
    return st.st_nlink > 1 and (st.st_dev, st.st_ino) in _protected_inodes()


def refuse_protected_fd(st: os.stat_result, raw: str) -> None:
    if is_protected_file(st):
        raise PathRefused(f"{raw!r} is a hard link to one of agent-cli's own files; "
                          f"{_STATE_REFUSAL}. Refused.")
