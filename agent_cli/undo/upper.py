"""Apply a command's overlay upper layer to the workspace, and record exactly that change set.

Only the upper folder is walked (what the command wrote), never the workspace: a file or link
there is a write (a copy-up that changed neither content nor mode is no change), a character
device 0:0 is a whiteout (a deletion; a deleted folder's contents are recorded one by one), a
folder marked opaque replaced the folder below (what it no longer holds is deleted), any other
folder is merged. A rename is a deletion plus a creation (overlayfs without redirect_dir makes
`mv` of a folder copy it). Before a path is changed its workspace content goes into the undo
store (up to the file cap), so the `effects` record restores it; new content is copied from the
layer, and kept in the store only when small (AFTER_KEEP).

A workspace path whose ctime is after the command started was changed by someone else while it
ran: a conflict, named and left as the user has it unless `overwrite` says yes for it.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from agent_cli.events import EntryState, PathChange
from agent_cli.undo.restore import _Tree, change_kind, same
from agent_cli.undo.snapshot import special_tag
from agent_cli.undo.store import Store

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
OPAQUE = ("trusted.overlay.opaque", "user.overlay.opaque")
AFTER_KEEP = 1 << 20
"""A written file's new content is kept in the store up to this size (for /show's diff and a
redo); larger ones are hashed only: an `npm install` must not copy node_modules into the store.
What undo needs, the content before, is kept up to the file cap."""


@dataclass
class Applied:
    changes: list[PathChange] = field(default_factory=list)
    conflicts: list[str] = field(default_factory=list)
    """Paths changed in the workspace while the command ran, left as they are."""


def _is_whiteout(st: os.stat_result) -> bool:
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == 0


def _opaque(path: str) -> bool:
    for name in OPAQUE:
        with contextlib.suppress(OSError):
            if os.getxattr(path, name, follow_symlinks=False) == b"y":
                return True
    return False


def _state(store: Store, dir_fd: int, name: str, keep: bool | int) -> EntryState | None:
    """What `name` is; with `keep` (True, or a size limit), its content goes into the store."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(st.st_mode):
        return EntryState(kind="dir", mode=st.st_mode & 0o7777)
    if stat.S_ISLNK(st.st_mode):
        data = os.fsencode(os.readlink(name, dir_fd=dir_fd))
        sha = store.put_bytes(data)
        return EntryState(kind="link", sha256=sha, size=len(data))
    if not stat.S_ISREG(st.st_mode):
        return EntryState(kind="special", sha256=special_tag(st), mode=st.st_mode & 0o7777)
    fd = os.open(name, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC, dir_fd=dir_fd)
    try:
        if keep is True or (keep is not False and st.st_size <= keep):
            sha, size = store.put_fd(fd)
        else:
            from agent_cli.undo.snapshot import hash_fd

            sha, size = hash_fd(fd)
        return EntryState(kind="file", sha256=sha, mode=os.fstat(fd).st_mode & 0o7777,
                          size=size)
    finally:
        os.close(fd)


def _copy_in(pfd: int, name: str, src: str, mode: int) -> None:
    """Copy the upper layer's file `src` to `name` (temp file, fsync, rename)."""
    import secrets

    tmp = f".agent-cli-apply-{secrets.token_hex(6)}"
    out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600,
                  dir_fd=pfd)
    try:
        fd = os.open(src, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
        try:
            while True:
                b = os.read(fd, 1 << 16)
                if not b:
                    break
                view = memoryview(b)
                while view:
                    view = view[os.write(out, view):]
        finally:
            os.close(fd)
        os.fchmod(out, mode)
        os.fsync(out)
    except BaseException:
        os.close(out)
        os.unlink(tmp, dir_fd=pfd)
        raise
    os.close(out)
    os.rename(tmp, name, src_dir_fd=pfd, dst_dir_fd=pfd)


class _Apply:
    def __init__(self, upper: Path, workspace: Path, store: Store, since_ns: int,
                 overwrite: Callable[[str], bool] | None, dry: bool = False,
                 file_cap: int = 50 << 20) -> None:
        self.file_cap = file_cap
        """Content before a change is kept up to this size (undo_file_cap_mb)."""
        self.dry = dry
        """Only compute the change set (for a review before it is applied)."""
        self.upper = upper
        self.store = store
        self.since_ns = since_ns
        self.overwrite = overwrite
        self.tree = _Tree(Path(os.path.realpath(workspace)))
        self.out = Applied()

    def record(self, rel: str, before: EntryState | None, after: EntryState | None) -> None:
        if not same(before, after):
            self.out.changes.append(PathChange(path=rel, change=change_kind(before, after),
                                               before=before, after=after))

    def conflict(self, pfd: int, name: str, rel: str) -> bool:
        try:
            st = os.stat(name, dir_fd=pfd, follow_symlinks=False)
        except FileNotFoundError:
            return False
        if st.st_ctime_ns < self.since_ns:
            return False
        if self.overwrite is not None and self.overwrite(rel):
            return False
        self.out.conflicts.append(rel)
        return True

    def remove(self, pfd: int, name: str, rel: str) -> None:
        """Record and remove what is at `rel` (a folder: its contents first)."""
        before = _state(self.store, pfd, name, keep=self.file_cap)
        if before is None:
            return
        if before.kind == "dir":
            sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=pfd)
            try:
                for entry in sorted(os.listdir(sub)):
                    self.remove(sub, entry, f"{rel}/{entry}")
            finally:
                os.close(sub)
            if not self.dry:
                os.rmdir(name, dir_fd=pfd)
        elif not self.dry:
            os.unlink(name, dir_fd=pfd)
        self.record(rel, before, None)

    def put(self, pfd: int, name: str, rel: str, src: str) -> None:
        """Make workspace `rel` what upper `src` (a file or link) is."""
        udir, uname = os.path.split(src)
        ufd = os.open(udir, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
        try:
            after = _state(self.store, ufd, uname, keep=AFTER_KEEP)
        finally:
            os.close(ufd)
        before = _state(self.store, pfd, name, keep=self.file_cap)
        if after is None or same(before, after):
            return
        if before is not None and before.kind == "dir":
            self.remove(pfd, name, rel)
            before = None
        if after.kind == "special" and not stat.S_ISFIFO(os.lstat(src).st_mode):
            self.out.conflicts.append(rel)  # a socket or device: not carried over
            return
        if self.dry:
            pass
        elif after.kind == "special":
            if before is not None:
                os.unlink(name, dir_fd=pfd)
            os.mkfifo(name, after.mode, dir_fd=pfd)
        elif after.kind == "link":
            from agent_cli.undo.restore import _write_from_store

            _write_from_store(pfd, name, after, self.store)
        else:
            _copy_in(pfd, name, src, after.mode)
        self.record(rel, before, after)

    def walk(self, rel: str) -> None:
        src_dir = os.path.join(self.upper, rel) if rel else str(self.upper)
        for entry in sorted(os.listdir(src_dir)):
            path = f"{rel}/{entry}" if rel else entry
            src = os.path.join(src_dir, entry)
            st = os.lstat(src)
            try:
                pfd, name = self.tree.parent(path, create=False)
            except (FileNotFoundError, NotADirectoryError):
                if not self.dry:
                    raise
                self.created(path, src, st)  # beneath a folder a dry run did not make
                continue
            try:
                if self.conflict(pfd, name, path):
                    continue
                if _is_whiteout(st):
                    self.remove(pfd, name, path)
                elif stat.S_ISDIR(st.st_mode):
                    self.folder(pfd, name, path, src, st)
                    os.close(pfd)
                    pfd = -1
                    self.walk(path)
                else:
                    self.put(pfd, name, path, src)
            finally:
                if pfd >= 0:
                    os.close(pfd)

    def created(self, rel: str, src: str, st: os.stat_result) -> None:
        """Dry run: `rel` is new, as the upper layer has it."""
        if _is_whiteout(st):
            return
        if stat.S_ISDIR(st.st_mode):
            self.record(rel, None, EntryState(kind="dir", mode=st.st_mode & 0o7777))
            for entry in sorted(os.listdir(src)):
                sub = os.path.join(src, entry)
                self.created(f"{rel}/{entry}", sub, os.lstat(sub))
            return
        udir, uname = os.path.split(src)
        ufd = os.open(udir, os.O_RDONLY | os.O_DIRECTORY | _CLOEXEC)
        try:
            self.record(rel, None, _state(self.store, ufd, uname, keep=AFTER_KEEP))
        finally:
            os.close(ufd)

    def folder(self, pfd: int, name: str, rel: str, src: str, st: os.stat_result) -> None:
        before = _state(self.store, pfd, name, keep=False)
        mode = st.st_mode & 0o7777
        if before is not None and before.kind != "dir":
            self.remove(pfd, name, rel)
            before = None
        if before is None:
            if self.dry:
                self.record(rel, None, EntryState(kind="dir", mode=mode))
                return
            os.mkdir(name, mode, dir_fd=pfd)
        elif _opaque(src):
            keep = set(os.listdir(src))
            sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=pfd)
            try:
                for entry in sorted(os.listdir(sub)):
                    if entry not in keep:
                        self.remove(sub, entry, f"{rel}/{entry}")
            finally:
                os.close(sub)
        if not self.dry:
            fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=pfd)
            try:
                os.fchmod(fd, mode)
            finally:
                os.close(fd)
        self.record(rel, before, EntryState(kind="dir", mode=mode))


def apply_upper(upper: Path, workspace: Path, store: Store, since_ns: int,
                overwrite: Callable[[str], bool] | None = None, *, dry: bool = False,
                file_cap: int = 50 << 20) -> Applied:
    """Carry the upper layer into the workspace; the change set, sorted by path. `dry`: only
    compute it (the workspace is not touched)."""
    if not os.listdir(upper):  # the command wrote nothing: nothing to open or record
        return Applied()
    job = _Apply(upper, workspace, store, since_ns, overwrite, dry, file_cap)
    try:
        job.walk("")
    finally:
        job.tree.close()
    job.out.changes.sort(key=lambda ch: ch.path)
    store.sync({s.sha256 for ch in job.out.changes for s in (ch.before, ch.after)
                if s is not None and s.sha256 is not None and s.kind != "special"})
    return job.out


def preview(upper: Path) -> list[str]:
    """The paths the upper layer touches, for a review before it is applied."""
    out: list[str] = []
    for dirpath, dirnames, filenames in os.walk(upper):
        rel = os.path.relpath(dirpath, upper)
        for n in sorted(dirnames + filenames):
            out.append(n if rel == "." else f"{rel}/{n}")
    return out
