"""Snapshots of a workspace (or of one file in it) into the undo store.

The walk is descriptor-relative from the workspace root: every folder is opened with O_NOFOLLOW
from its parent's descriptor and every file is opened the same way, so no symlink is ever followed
(links are recorded as links, their target text stored as content) and nothing outside the
workspace is read, even when a folder is swapped for a link mid-walk. `.git/` and agent-cli's own
state (AGENT_CLI_HOME, the sessions folder) are never entered; .gitignore rules, the per-file
size cap and the per-session store cap decide the rest, and everything left out is counted so
the panel can say what undo will not cover.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import os
import stat
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from agent_cli.events import EntryState, PathChange
from agent_cli.undo.ignore import MAX_IGNORE_BYTES, Matcher, parse
from agent_cli.undo.store import StatCache, Store

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
MAX_DEPTH = 200
ALWAYS_SKIPPED = frozenset({".git"})
GIT_KEPT = ("config", "hooks")
"""What of the top `.git/` is recorded: what git runs or obeys on the user's next command."""
MB = 1024 * 1024


Entry = tuple[str, "str | None", int, int]
"""(kind: file/link/dir/special, sha256 of content or link target (of the file type for a
special file), permission bits, size)."""


def to_state(entry: Entry | None) -> EntryState | None:
    if entry is None:
        return None
    kind, sha, mode, size = entry
    assert kind in ("file", "link", "dir", "special")
    return EntryState(kind=kind, sha256=sha, mode=mode, size=size)  # type: ignore[arg-type]


def special_tag(st: os.stat_result) -> str:
    """The `sha256` of a special file's state: of its file type (a FIFO is not a socket)."""
    return hashlib.sha256(b"special:%o" % stat.S_IFMT(st.st_mode)).hexdigest()


def hash_fd(fd: int) -> tuple[str, int]:
    h = hashlib.sha256()
    size = 0
    while True:
        b = os.read(fd, 1 << 16)
        if not b:
            break
        h.update(b)
        size += len(b)
    return h.hexdigest(), size


@dataclass
class Limits:
    file_cap: int = 50 * MB
    """Files larger than this are not snapshotted (said in the panel)."""
    session_cap: int = 1024 * MB
    """Bytes one session may add to the store; past it, new content is not kept."""


@dataclass
class Snapshot:
    entries: dict[str, Entry] = field(default_factory=dict)
    """Relative POSIX path -> (kind, sha256, mode, size), for everything covered. Plain tuples:
    a 10,000-file walk builds 10,000 of them, and a pydantic model each would triple its cost."""
    untracked: set[str] = field(default_factory=set)
    """Paths seen but not covered (too big, special files, store full): never reported as a
    change, whatever happens to them."""
    ignored: list[str] = field(default_factory=list)
    """Ignored paths at the top of an ignored subtree (folders end in `/`)."""
    over_cap: list[str] = field(default_factory=list)
    special: list[str] = field(default_factory=list)
    store_full: list[str] = field(default_factory=list)
    too_deep: list[str] = field(default_factory=list)
    after_only: dict[str, Entry] = field(default_factory=dict)
    """Paths the snapshot before covered that this one could not (too big now, a special file,
    the store full): their state, hashed but not stored, so the change is still recorded."""
    matchers: dict[str, Matcher] = field(default_factory=dict)
    """Folder -> the ignore rules in force there, reused by the after-snapshot so a call that
    rewrites .gitignore cannot make its own changes vanish from the record."""
    files: int = 0

    def not_covered(self, file_cap: int) -> list[str]:
        """What undo will not cover, in the panel's words."""
        out: list[str] = []
        shown = self.ignored[:5]
        out += [f"{p} (ignored)" for p in shown]
        if len(self.ignored) > len(shown):
            out.append(f"{len(self.ignored) - len(shown):,} more ignored paths")
        if self.over_cap:
            n = len(self.over_cap)
            out.append(f"{n:,} file{'s' if n != 1 else ''} over {file_cap // MB:,} MB")
        if self.special:
            out.append(f"{len(self.special):,} special files (FIFOs, sockets, devices)")
        if self.store_full:
            out.append(f"{len(self.store_full):,} files past the session's undo store cap")
        if self.too_deep:
            out.append(f"{len(self.too_deep):,} folders nested deeper than {MAX_DEPTH}")
        return out


def _open_dir(name: str, dir_fd: int | None) -> int:
    return os.open(name, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=dir_fd)


def _perm(st: os.stat_result) -> int:
    return st.st_mode & 0o7777


class Snapshotter:
    """Takes snapshots of one workspace, sharing one store, stat cache and session cap."""

    def __init__(self, workspace: Path, store: Store, limits: Limits | None = None,
                 skip: Iterable[Path] = ()) -> None:
        self.workspace = Path(os.path.realpath(workspace))
        self.store = store
        self.limits = limits or Limits()
        self.cache = StatCache(store, self.workspace)
        self.skip: set[tuple[int, int]] = set()
        """(dev, inode) of folders never entered: AGENT_CLI_HOME, the sessions folder."""
        for p in skip:
            with contextlib.suppress(OSError):
                st = os.stat(p)
                self.skip.add((st.st_dev, st.st_ino))
        self._prev: Snapshot | None = None
        """The snapshot before the call, while the one after it is taken."""

    def _uncovered(self, dir_fd: int, name: str, st: os.stat_result, rel: str,
                   snap: Snapshot) -> None:
        """`rel` is not covered now; if it was before the call, keep its state anyway."""
        snap.untracked.add(rel)
        if self._prev is None or rel not in self._prev.entries:
            return
        if not stat.S_ISREG(st.st_mode):
            snap.after_only[rel] = ("special", special_tag(st), _perm(st), 0)
            return
        try:
            fd = os.open(name, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC, dir_fd=dir_fd)
        except OSError:
            return
        try:
            sha, size = hash_fd(fd)
            snap.after_only[rel] = ("file", sha, _perm(os.fstat(fd)), size)
        finally:
            os.close(fd)

    # -- one file ----------------------------------------------------------------------------

    def _file_state(self, dir_fd: int, name: str, st: os.stat_result, rel: str,
                    snap: Snapshot, scan_ns: int) -> Entry | None:
        if st.st_size > self.limits.file_cap:
            snap.over_cap.append(rel)
            self._uncovered(dir_fd, name, st, rel, snap)
            return None
        sha = self.cache.get(st)
        if sha is not None and self.store.has(sha):
            return ("file", sha, _perm(st), st.st_size)
        if self.store.added + st.st_size > self.limits.session_cap:
            snap.store_full.append(rel)
            self._uncovered(dir_fd, name, st, rel, snap)
            return None
        try:
            fd = os.open(name, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC, dir_fd=dir_fd)
        except OSError:
            snap.untracked.add(rel)  # vanished or unreadable: not covered, never a change
            return None
        try:
            fst = os.fstat(fd)
            if not stat.S_ISREG(fst.st_mode) or (fst.st_dev, fst.st_ino) != (st.st_dev,
                                                                             st.st_ino):
                snap.untracked.add(rel)
                return None
            sha, size = self.store.put_fd(fd)
            after = os.fstat(fd)
        finally:
            os.close(fd)
        if (after.st_size, after.st_mtime_ns) == (fst.st_size, fst.st_mtime_ns):
            self.cache.put(fst, sha, scan_ns)
        return ("file", sha, _perm(fst), size)

    def _link_state(self, dir_fd: int, name: str) -> Entry | None:
        try:
            target = os.readlink(name, dir_fd=dir_fd)
        except OSError:
            return None
        data = os.fsencode(target)
        sha = self.store.put_bytes(data)
        return ("link", sha, 0, len(data))

    def _entry(self, dir_fd: int, name: str, rel: str, snap: Snapshot,
               scan_ns: int) -> tuple[Entry | None, os.stat_result | None]:
        try:
            st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            return None, None
        if stat.S_ISLNK(st.st_mode):
            return self._link_state(dir_fd, name), st
        if stat.S_ISDIR(st.st_mode):
            return ("dir", None, _perm(st), 0), st
        if stat.S_ISREG(st.st_mode):
            return self._file_state(dir_fd, name, st, rel, snap, scan_ns), st
        snap.special.append(rel)
        self._uncovered(dir_fd, name, st, rel, snap)
        return None, st

    # -- the tree ----------------------------------------------------------------------------

    def tree(self, rules_from: Snapshot | None = None) -> Snapshot:
        """Every covered path of the workspace. With `rules_from`, the ignore rules of the folders
        it saw are reused (new folders read their own .gitignore)."""
        self.cache.load()
        snap = Snapshot()
        scan_ns = time.time_ns()
        root_fd = _open_dir(str(self.workspace), None)
        self._prev = rules_from
        try:
            self._walk(root_fd, "", Matcher(), snap, scan_ns, 0, rules_from)
            self._git(root_fd, snap, scan_ns)
        finally:
            self._prev = None
            os.close(root_fd)
        self.cache.save()
        return snap

    def _git(self, root_fd: int, snap: Snapshot, scan_ns: int) -> None:
        """`.git/config` and everything under `.git/hooks/`, no ignore rule applied (a
        `.gitignore` planted in hooks/ must not hide a hook)."""
        try:
            git = _open_dir(".git", root_fd)
        except OSError:
            return  # no repository, a `.git` file (a worktree's pointer) or a link: nothing
        try:
            for name in GIT_KEPT:
                rel = f".git/{name}"
                state, _st = self._entry(git, name, rel, snap, scan_ns)
                if state is None:
                    continue
                snap.entries[rel] = state
                if name == "hooks" and state[0] == "dir":
                    try:
                        sub = _open_dir(name, git)
                    except OSError:
                        snap.untracked.add(rel)
                        snap.entries.pop(rel, None)
                        continue
                    try:
                        self._walk(sub, rel, Matcher(), snap, scan_ns, 2, None, rules=False)
                    finally:
                        os.close(sub)
        finally:
            os.close(git)

    def _matcher_for(self, fd: int, rel: str, parent: Matcher,
                     rules_from: Snapshot | None) -> Matcher:
        if rules_from is not None and rel in rules_from.matchers:
            return rules_from.matchers[rel]
        try:
            gi = os.open(".gitignore", os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC, dir_fd=fd)
        except OSError:
            return parent
        try:
            if not stat.S_ISREG(os.fstat(gi).st_mode):
                return parent
            data = os.read(gi, MAX_IGNORE_BYTES)
        finally:
            os.close(gi)
        return parent.child(rel, parse(data.decode("utf-8", "replace")))

    def _walk(self, fd: int, rel: str, parent: Matcher, snap: Snapshot, scan_ns: int,
              depth: int, rules_from: Snapshot | None, *, rules: bool = True) -> None:
        matcher = self._matcher_for(fd, rel, parent, rules_from) if rules else parent
        if rules:
            snap.matchers[rel] = matcher
        prefix = rel + "/" if rel else ""
        subdirs: list[tuple[str, str]] = []
        with os.scandir(fd) as it:
            entries = list(it)  # (order does not matter: diff sorts the paths)
        for entry in entries:
            name = entry.name
            path = prefix + name
            if name in ALWAYS_SKIPPED and rules:
                continue
            try:
                st = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            is_dir = stat.S_ISDIR(st.st_mode)
            if is_dir and (st.st_dev, st.st_ino) in self.skip:
                continue  # agent-cli's own state: never recorded, never restored
            if matcher.ignored(path, is_dir):
                snap.ignored.append(path + "/" if is_dir else path)
                continue
            if is_dir:
                snap.entries[path] = ("dir", None, _perm(st), 0)
                subdirs.append((name, path))
            elif stat.S_ISLNK(st.st_mode):
                state = self._link_state(fd, name)
                if state is not None:
                    snap.entries[path] = state
            elif stat.S_ISREG(st.st_mode):
                snap.files += 1
                state = self._file_state(fd, name, st, path, snap, scan_ns)
                if state is not None:
                    snap.entries[path] = state
            else:
                snap.special.append(path)
                self._uncovered(fd, name, st, path, snap)
        for name, path in subdirs:
            if depth + 1 >= MAX_DEPTH:
                snap.too_deep.append(path + "/")
                snap.untracked.add(path)
                snap.entries.pop(path, None)
                continue
            try:
                sub = _open_dir(name, fd)
            except OSError:
                snap.untracked.add(path)  # replaced by a link or vanished mid-walk
                snap.entries.pop(path, None)
                continue
            try:
                self._walk(sub, path, matcher, snap, scan_ns, depth + 1, rules_from,
                           rules=rules)
            finally:
                os.close(sub)

    # -- one path ----------------------------------------------------------------------------

    def paths(self, rels: list[str], before: Snapshot | None = None) -> Snapshot:
        """Just these paths and their folders (write_file/edit_file: the target, and the folders
        a write would create); `before`: the snapshot before the call, when this is after it."""
        self.cache.load()
        snap = Snapshot()
        scan_ns = time.time_ns()
        self._prev = before
        try:
            self._paths(rels, snap, scan_ns)
        finally:
            self._prev = None
        self.cache.save()
        return snap

    def _paths(self, rels: list[str], snap: Snapshot, scan_ns: int) -> None:
        for rel in rels:
            parts = rel.split("/")
            fd = _open_dir(str(self.workspace), None)
            try:
                for i, part in enumerate(parts):
                    sub_rel = "/".join(parts[:i + 1])
                    state, _st = self._entry(fd, part, sub_rel, snap, scan_ns)
                    if state is not None:
                        snap.entries[sub_rel] = state
                    if i == len(parts) - 1 or state is None or state[0] != "dir":
                        break
                    try:
                        nxt = _open_dir(part, fd)
                    except OSError:
                        break
                    os.close(fd)
                    fd = nxt
            finally:
                os.close(fd)


def diff(before: Snapshot, after: Snapshot, only: Iterable[str] | None = None) -> list[PathChange]:
    """The change set between two snapshots, sorted by path. Paths the snapshot before did not
    cover are left out (nothing is claimed about them); a path it covered that the one after
    could not is compared by its `after_only` state."""
    skip = before.untracked | (after.untracked - set(after.after_only))
    paths = set(only) if only is not None else set(before.entries) | set(after.entries) \
        | set(after.after_only)
    changes: list[PathChange] = []
    for path in sorted(paths):
        if path in skip or _dir_prefixes(path, skip):
            continue
        b = before.entries.get(path)
        a = after.entries.get(path) or after.after_only.get(path)
        if b == a:
            continue
        kind: Literal["created", "modified", "deleted", "mode"]
        if b is None:
            kind = "created"
        elif a is None:
            kind = "deleted"
        elif b[0] == a[0] and b[1] == a[1]:
            kind = "mode"
        else:
            kind = "modified"
        changes.append(PathChange(path=path, change=kind, before=to_state(b),
                                  after=to_state(a)))
    return changes


def _dir_prefixes(path: str, skip: set[str]) -> list[str]:
    if not skip:
        return []
    parts = path.split("/")
    return [p for p in ("/".join(parts[:i]) for i in range(1, len(parts))) if p in skip]


def current_state(workspace: Path, rel: str) -> EntryState | None:
    """What is at `rel` now, reached without following any link (a link on the way counts as
    "not what was recorded": the caller sees a state that matches nothing)."""
    parts = rel.split("/")
    fd = _open_dir(os.path.realpath(workspace), None)
    try:
        for part in parts[:-1]:
            try:
                nxt = _open_dir(part, fd)
            except OSError as e:
                if e.errno == errno.ENOENT:
                    return None
                if e.errno in (errno.ENOTDIR, errno.ELOOP):
                    return EntryState(kind="link", sha256="0" * 64)  # a non-folder on the way
                raise
            os.close(fd)
            fd = nxt
        return state_at(fd, parts[-1])
    finally:
        os.close(fd)


def state_at(dir_fd: int, name: str) -> EntryState | None:
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(st.st_mode):
        data = os.fsencode(os.readlink(name, dir_fd=dir_fd))
        return EntryState(kind="link", sha256=hashlib.sha256(data).hexdigest(), size=len(data))
    if stat.S_ISDIR(st.st_mode):
        return EntryState(kind="dir", mode=_perm(st))
    if not stat.S_ISREG(st.st_mode):
        return EntryState(kind="special", sha256=special_tag(st), mode=_perm(st))
    fd = os.open(name, os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC, dir_fd=dir_fd)
    try:
        sha, size = hash_fd(fd)
        fst = os.fstat(fd)
    finally:
        os.close(fd)
    return EntryState(kind="file", sha256=sha, mode=_perm(fst), size=size)
