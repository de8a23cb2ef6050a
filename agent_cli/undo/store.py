"""The content-addressed undo store: AGENT_CLI_HOME/store/objects/ab/cdef..., keyed by sha256.

Objects are written once (temp file, fsync, rename), 0600 in folders made 0700, and checked
against their name whenever they are read back, so a damaged or swapped object is refused, never
restored. A stat cache (device, inode, size, mtime_ns, ctime_ns -> sha256) per workspace lets a
second snapshot of an unchanged tree skip reading the files; entries whose mtime is within
RACY_S of the scan are never cached (a write in the same clock tick could keep size and mtime).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
from collections.abc import Iterator
from pathlib import Path

from agent_cli.write_faults import WriteFault, write_atomic, writing

_CHUNK = 1 << 16
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
RACY_S = 2.0
SHA_LEN = 64


class StoreError(Exception):
    """The store cannot give back an object (missing, damaged)."""


def store_dir() -> Path:
    from agent_cli.config import home

    return home() / "store"


def _is_sha(value: str) -> bool:
    return len(value) == SHA_LEN and all(c in "0123456789abcdef" for c in value)


def _private_dir(path: Path) -> None:
    path.mkdir(parents=True, exist_ok=True, mode=0o700)
    with contextlib.suppress(OSError):
        os.chmod(path, 0o700)


class Store:
    """Objects plus the per-workspace stat caches. `added` counts bytes this instance stored
    (the per-session cap is checked against it)."""

    def __init__(self, root: Path | None = None) -> None:
        self.root = root or store_dir()
        self.objects = self.root / "objects"
        self.added = 0
        self._ready = False
        self._known: set[str] = set()
        """Objects seen to exist by this instance (a cache hit need not stat them again)."""

    def _prepare(self) -> None:
        if not self._ready:
            for d in (self.root, self.objects, self.root / "tmp", self.root / "statcache"):
                _private_dir(d)
            self._ready = True

    def path_of(self, sha: str) -> Path:
        if not _is_sha(sha):
            raise StoreError(f"{sha!r} is not a sha256")
        return self.objects / sha[:2] / sha[2:]

    def has(self, sha: str) -> bool:
        if sha in self._known:
            return True
        if not _is_sha(sha):
            return False
        if os.path.isfile(f"{self.objects}/{sha[:2]}/{sha[2:]}"):
            self._known.add(sha)
            return True
        return False

    # -- writing -----------------------------------------------------------------------------

    def put_fd(self, fd: int) -> tuple[str, int]:
        """Copy a file from its descriptor into the store; (sha256, size). One read: the bytes
        are hashed while they are written to a temp file, which becomes the object (or is
        dropped when the object is already there). A refused write (a full disk, say) is a
        WriteFault naming the store, and leaves no temp file."""
        with writing(self.root, "the undo store"):
            return self._put_fd(fd)

    def _put_fd(self, fd: int) -> tuple[str, int]:
        self._prepare()
        tmp = self.root / "tmp" / f"{os.getpid()}-{secrets.token_hex(6)}"
        h = hashlib.sha256()
        size = 0
        out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _CLOEXEC, 0o600)
        try:
            os.lseek(fd, 0, os.SEEK_SET)
            while True:
                b = os.read(fd, _CHUNK)
                if not b:
                    break
                h.update(b)
                size += len(b)
                view = memoryview(b)
                while view:
                    view = view[os.write(out, view):]
        except BaseException:
            os.close(out)
            tmp.unlink(missing_ok=True)
            raise
        os.close(out)
        sha = h.hexdigest()
        self._commit(tmp, sha, size)
        return sha, size

    def put_bytes(self, data: bytes) -> str:
        sha = hashlib.sha256(data).hexdigest()
        if self.has(sha):
            return sha
        with writing(self.root, "the undo store"):
            self._prepare()
            tmp = self.root / "tmp" / f"{os.getpid()}-{secrets.token_hex(6)}"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _CLOEXEC, 0o600)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
            except BaseException:
                tmp.unlink(missing_ok=True)
                raise
            finally:
                os.close(fd)
            self._commit(tmp, sha, len(data))
        return sha

    def _commit(self, tmp: Path, sha: str, size: int) -> None:
        dest = self.path_of(sha)
        if dest.exists():
            tmp.unlink(missing_ok=True)
            return
        try:
            _private_dir(dest.parent)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        # No fsync here (a first snapshot of 10,000 files would pay 10,000 of them): a torn
        # object fails its hash check on read and is refused; `sync` makes the objects an
        # effects record names durable before the record is written.
        os.replace(tmp, dest)
        self._known.add(sha)
        self.added += size

    def sync(self, shas: set[str]) -> None:
        """fsync these objects (the ones an effects record is about to name)."""
        for sha in shas:
            try:
                fd = os.open(self.path_of(sha), os.O_RDONLY | _CLOEXEC)
            except (OSError, StoreError):
                continue
            try:
                os.fsync(fd)
            finally:
                os.close(fd)

    # -- reading -----------------------------------------------------------------------------

    def read(self, sha: str, limit: int | None = None) -> bytes:
        """The whole object, checked against its sha256 (StoreError when missing or damaged)."""
        chunks = list(self.iter_chunks(sha))
        data = b"".join(chunks)
        return data if limit is None else data[:limit]

    def iter_chunks(self, sha: str) -> Iterator[bytes]:
        """The object in chunks; the last step raises StoreError if the bytes do not hash to
        `sha` (callers write to a temp file and only keep it when the iteration completed)."""
        path = self.path_of(sha)
        try:
            fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC)
        except FileNotFoundError:
            raise StoreError(f"its snapshot {sha[:12]} is no longer in the undo store (removed "
                             "by `agent-cli log prune`?)") from None
        except OSError as e:
            raise StoreError(f"its snapshot {sha[:12]} cannot be read ({e.strerror})") from None
        h = hashlib.sha256()
        try:
            while True:
                b = os.read(fd, _CHUNK)
                if not b:
                    break
                h.update(b)
                yield b
        finally:
            os.close(fd)
        if h.hexdigest() != sha:
            raise StoreError(f"its snapshot {sha[:12]} in the undo store is damaged (its content "
                             "does not match its hash)")

    # -- housekeeping ------------------------------------------------------------------------

    def size(self) -> tuple[int, int]:
        """(objects, bytes) in the store."""
        count = total = 0
        if not self.objects.is_dir():
            return 0, 0
        for sub in os.scandir(self.objects):
            if not sub.is_dir(follow_symlinks=False):
                continue
            for entry in os.scandir(sub.path):
                with contextlib.suppress(OSError):
                    total += entry.stat(follow_symlinks=False).st_size
                    count += 1
        return count, total

    def all_objects(self) -> Iterator[tuple[str, Path]]:
        if not self.objects.is_dir():
            return
        for sub in os.scandir(self.objects):
            if not sub.is_dir(follow_symlinks=False) or len(sub.name) != 2:
                continue
            for entry in os.scandir(sub.path):
                sha = sub.name + entry.name
                if _is_sha(sha):
                    yield sha, Path(entry.path)

    def drop_stat_caches(self) -> None:
        folder = self.root / "statcache"
        if folder.is_dir():
            for entry in folder.iterdir():
                entry.unlink(missing_ok=True)


StatKey = tuple[int, int]
StatSig = tuple[int, int, int]


class StatCache:
    """(dev, inode) -> (size, mtime_ns, ctime_ns, sha256) for one workspace, kept in
    store/statcache/<hash of the workspace path>.json."""

    def __init__(self, store: Store, workspace: Path) -> None:
        name = hashlib.sha256(str(workspace).encode("utf-8", "surrogateescape")).hexdigest()[:24]
        self.path = store.root / "statcache" / f"{name}.json"
        self.store = store
        self.entries: dict[StatKey, tuple[StatSig, str]] = {}
        self.dirty = False
        self._loaded = False

    def load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        try:
            raw = json.loads(self.path.read_text(encoding="ascii"))
            for row in raw.get("entries", []):
                dev, ino, size, mtime, ctime, sha = row
                if _is_sha(sha):
                    self.entries[(int(dev), int(ino))] = ((int(size), int(mtime), int(ctime)),
                                                          sha)
        except (OSError, ValueError, TypeError, AttributeError):
            self.entries = {}  # a missing or damaged cache only costs a re-read

    def get(self, st: os.stat_result) -> str | None:
        hit = self.entries.get((st.st_dev, st.st_ino))
        if hit is None:
            return None
        sig, sha = hit
        if sig != (st.st_size, st.st_mtime_ns, st.st_ctime_ns):
            return None
        return sha

    def put(self, st: os.stat_result, sha: str, scan_ns: int) -> None:
        if st.st_mtime_ns >= scan_ns - int(RACY_S * 1e9):
            return  # racily clean: a same-tick write could keep size and mtime
        key = (st.st_dev, st.st_ino)
        value = ((st.st_size, st.st_mtime_ns, st.st_ctime_ns), sha)
        if self.entries.get(key) != value:
            self.entries[key] = value
            self.dirty = True

    def save(self) -> None:
        if not self.dirty:
            return
        self.store._prepare()
        rows = [[k[0], k[1], sig[0], sig[1], sig[2], sha]
                for k, (sig, sha) in self.entries.items()]
        # (whole or not at all, no temp file left; a cache that cannot be saved only costs
        # the next snapshot a re-read, so the fault is not raised into a call)
        with contextlib.suppress(WriteFault):
            write_atomic(self.path, json.dumps({"v": 1, "entries": rows},
                                               separators=(",", ":")).encode("ascii"),
                         what="the undo store's stat cache")
            self.dirty = False
