"""A copy-on-write layer per approved command: the workspace as the lower layer of an overlayfs
mounted over the workspace's own path, in a private mount namespace of one thread.

Mount first, confine second: a fresh thread (started ahead of the command: _Helper) unshares
its mount namespace (CLONE_NEWNS with CLONE_FS: both apply to the calling thread alone, unlike a
user namespace, which the kernel refuses to a threaded process), makes every mount private,
mounts a tmpfs of the layer's own (upper and work folders) and the overlay on the workspace's
path, and only then adds the
Landlock rules on the workspace and restricts itself, so those rules name the merged view (the
rules outside it are kept in a ruleset per session: landlock.Prepared). Then it makes the
command's PID namespace and starts it; the thread ends, the command keeps the namespace, and
when it ends the namespace (and the mounts) go with it. The command's writes are in the upper
folder, which agent-cli still reaches through an O_PATH descriptor of the tmpfs (as
/proc/self/fd/N/upper); agent_cli.undo.upper applies them to the workspace and records them,
and closing the descriptor frees the memory.

Why a tmpfs: measured on a loaded machine, making and removing an on-disk upper and work folder
per command (and the overlay's own checks in its work folder at each mount) waited on the
filesystem's journal, 1 to 2 ms per operation while other programs wrote; a tmpfs has no journal,
and a crash leaves nothing behind. What a command writes is held in memory until it is applied.

Needs CAP_SYS_ADMIN (root here). Where the kernel refuses, `available()` says why once and undo
falls back to snapshots. AGENT_CLI_UNDO_OVERLAY=off forces that fallback (as
AGENT_CLI_SANDBOX_PROBE does the sandbox's), for tests and for anyone who would rather not.
"""
from __future__ import annotations

import ctypes
import os
import subprocess
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_cli.sandbox import landlock

ENV = "AGENT_CLI_UNDO_OVERLAY"
CLONE_FS = 0x00000200
CLONE_NEWNS = 0x00020000
MS_REC = 16384
MS_PRIVATE = 1 << 18
MS_NOSUID = 2
MS_NODEV = 4


LAYER_OPTIONS = b"mode=0700"
"""The layer's tmpfs: private to its owner, the kernel's default size (half the RAM). A command
that writes more gets ENOSPC, which run_command names as the layer's (diagnose.layer_full)."""

def _libc() -> ctypes.CDLL:
    from agent_cli.sandbox.landlock import libc

    return libc()


def _err(what: str) -> OSError:
    e = ctypes.get_errno()
    return OSError(e, f"{what}: {os.strerror(e)}")


def enter(workspace: str, layer: Layer) -> None:
    """In the calling thread: a private mount namespace with `layer`'s tmpfs over its base and
    the overlay over `workspace`."""
    libc = _libc()
    if libc.unshare(CLONE_NEWNS | CLONE_FS) != 0:
        raise _err("mount namespace")
    if libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        raise _err("private mounts")
    base = str(layer.base)
    if libc.mount(b"agent-cli-layer", base.encode(), b"tmpfs", MS_NOSUID | MS_NODEV,
                  LAYER_OPTIONS) != 0:
        raise _err("tmpfs")
    os.mkdir(f"{base}/upper", 0o700)
    os.mkdir(f"{base}/work", 0o700)
    layer.fd = os.open(base, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    opts = f"lowerdir={workspace},upperdir={base}/upper,workdir={base}/work".encode()
    if libc.mount(b"overlay", workspace.encode(), b"overlay", 0, opts) != 0:
        raise _err("overlayfs")


class Layer:
    """The upper and work folders of one command: a tmpfs of its own, mounted over `base` (a
    private folder outside the workspace) inside the command's mount namespace only, and
    reached from agent-cli through an fd (`/proc/self/fd/N`): nothing is made or removed on
    disk per command, and closing the fd frees it."""

    def __init__(self, base: Path) -> None:
        self.base = base
        self.fd = -1
        """An O_PATH fd of the tmpfs root, opened by `enter` (-1: not mounted yet, or freed)."""

    @classmethod
    def make(cls, base: Path) -> Layer:
        if base not in _BASES:
            base.mkdir(parents=True, exist_ok=True, mode=0o700)
            _BASES.add(base)
        return cls(base)

    @property
    def upper(self) -> Path:
        """The upper folder, as agent-cli reaches it (only while the layer is held)."""
        if self.fd < 0:
            raise FileNotFoundError(f"the layer over {self.base} is not mounted")
        return Path(f"/proc/self/fd/{self.fd}/upper")

    def keep(self, dest: Path) -> Path:
        """Copy the upper folder to `dest` on disk (when its changes could not be applied, so
        they are not lost with the layer): files, links and folders; a deletion (a whiteout)
        has no content to keep. Returns `dest`."""
        import shutil
        import stat

        def copy(src: str, dst: str) -> str:
            if stat.S_ISREG(os.lstat(src).st_mode):
                return str(shutil.copy2(src, dst, follow_symlinks=False))
            return dst

        shutil.copytree(self.upper, dest, symlinks=True, copy_function=copy)
        return dest

    def remove(self) -> None:
        """Let the layer go: its memory is freed once no process of its namespace is left."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1


_BASES: set[Path] = set()
"""Base folders known to exist (one `mkdir` per session, not per command)."""


class _Helper:
    """A thread for one command, started ahead of it: it waits for its job (enter, confine,
    Popen) and ends after it. Started while the previous command runs or between commands, so
    neither the thread's creation nor a new thread's first wait for a CPU (the scheduler places
    a new thread where it finds room, often the busy CPU) falls on the command."""

    __slots__ = ("done", "go", "job")

    def __init__(self) -> None:
        import _thread

        self.job: Callable[[], None] | None = None
        self.go, self.done = _thread.allocate_lock(), _thread.allocate_lock()
        self.go.acquire()
        self.done.acquire()
        _thread.start_new_thread(self._serve, ())

    def _serve(self) -> None:
        self.go.acquire()
        try:
            if self.job is not None:
                self.job()
        finally:
            self.done.release()

    def run(self, job: Callable[[], None]) -> None:
        """Run `job` in this helper's thread, and wait for it (it must not raise)."""
        self.job = job
        self.go.release()
        self.done.acquire()


_STANDBY: list[_Helper] = []
_STANDBY_LOCK = threading.Lock()


def _helper() -> _Helper:
    """The helper started ahead (a new one when two commands start at once), and the next one
    started. Helpers are started by the threads that run commands, which never enter a mount or
    PID namespace of their own nor confine themselves, so a helper starts from agent-cli's."""
    with _STANDBY_LOCK:
        helper = _STANDBY.pop() if _STANDBY else _Helper()
        _STANDBY.append(_Helper())
    return helper


def popen_in_layer(layer: Layer, workspace: Path, argv: list[str], *,
                   confine: Any = None, **kwargs: Any) -> subprocess.Popen[bytes]:
    """Start `argv` in a fresh thread (a _Helper) that mounted `layer` over `workspace` and then
    ran `confine()` (Landlock, the socket filter, a PID namespace: built now, so they see the
    merged view). Raises OSError when the kernel refuses."""
    out: list[Any] = []

    def run() -> None:
        try:
            enter(str(workspace), layer)
            if confine is not None:
                confine()
            out.append(subprocess.Popen(argv, **kwargs))
        except BaseException as e:  # handed to the caller, raised there
            out.append(e)

    _helper().run(run)
    result = out[0]
    if isinstance(result, BaseException):
        layer.remove()
        raise result
    proc: subprocess.Popen[bytes] = result
    return proc


def confinement(rules: landlock.Prepared, *, sockets: bool = True,
                pid_namespace: bool = False) -> Callable[[], None]:
    """A `confine` for popen_in_layer, as the spawner confines its thread: the session's
    Landlock rules (the ones inside the workspace added after the mount, so they name the
    merged view), the socket filter unless `sockets`, and a fresh PID namespace for the
    command when `pid_namespace`."""

    def confine() -> None:
        rules.restrict()
        if not sockets:
            from agent_cli.sandbox import seccomp

            seccomp.install()
        if pid_namespace:  # (popen_in_layer's thread is fresh, its creator made none)
            from agent_cli.sandbox import pidns

            pidns.fresh_thread()

    return confine


_AVAILABLE: tuple[bool, str] | None = None


def available(base: Path) -> tuple[bool, str]:
    """(whether overlays work here, why not), tried once with a throwaway mount."""
    global _AVAILABLE
    if os.environ.get(ENV, "").lower() in ("off", "0", "no"):
        return False, f"{ENV}=off"
    if _AVAILABLE is None:
        base.mkdir(parents=True, exist_ok=True, mode=0o700)
        lower = Path(tempfile.mkdtemp(prefix="probe-", dir=base))
        layer = Layer(Path(tempfile.mkdtemp(prefix="probe-", dir=base)))
        failure: list[OSError] = []

        def attempt() -> None:  # the namespace goes with the thread
            try:
                enter(str(lower), layer)
            except OSError as e:
                failure.append(e)

        thread = threading.Thread(target=attempt, name="agent-cli-overlay-probe", daemon=True)
        thread.start()
        thread.join()
        layer.remove()
        os.rmdir(layer.base)
        os.rmdir(lower)
        _AVAILABLE = (False, str(failure[0])) if failure else (True, "")
    return _AVAILABLE
