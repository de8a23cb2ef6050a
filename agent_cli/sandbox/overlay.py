"""A copy-on-write layer per approved command: the workspace as the lower layer of an overlayfs
mounted over the workspace's own path, in a private mount namespace of one thread.

Mount first, confine second: a fresh thread unshares its mount namespace (CLONE_NEWNS with
CLONE_FS: both apply to the calling thread alone, unlike a user namespace, which the kernel
refuses to a threaded process), makes every mount private, mounts the overlay on the workspace's
path, and only then builds and applies the Landlock ruleset, so its rules name the merged view.
Then it makes the command's PID namespace and starts it; the thread ends, the command keeps the
namespace, and when it ends the namespace (and the mount) goes with it. The command's writes are
in the upper folder; agent_cli.undo.upper applies them to the workspace and records them.

Needs CAP_SYS_ADMIN (root here). Where the kernel refuses, `available()` says why once and undo
falls back to snapshots. AGENT_CLI_UNDO_OVERLAY=off forces that fallback (as
AGENT_CLI_SANDBOX_PROBE does the sandbox's), for tests and for anyone who would rather not.
"""

from __future__ import annotations

import ctypes
import os
import secrets
import subprocess
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENV = "AGENT_CLI_UNDO_OVERLAY"
CLONE_FS = 0x00000200
CLONE_NEWNS = 0x00020000
MS_REC = 16384
MS_PRIVATE = 1 << 18


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _err(what: str) -> OSError:
    e = ctypes.get_errno()
    return OSError(e, f"{what}: {os.strerror(e)}")


def enter(workspace: str, upper: str, work: str) -> None:
    """In the calling thread: a private mount namespace with the overlay over `workspace`."""
    libc = _libc()
    if libc.unshare(CLONE_NEWNS | CLONE_FS) != 0:
        raise _err("mount namespace")
    if libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None) != 0:
        raise _err("private mounts")
    opts = f"lowerdir={workspace},upperdir={upper},workdir={work}".encode()
    if libc.mount(b"overlay", workspace.encode(), b"overlay", 0, opts) != 0:
        raise _err("overlayfs")


@dataclass
class Layer:
    """The upper and work folders of one command (private, outside the workspace)."""

    root: Path
    upper: Path
    work: Path

    @classmethod
    def make(cls, base: Path) -> Layer:
        base.mkdir(parents=True, exist_ok=True, mode=0o700)
        root = base / secrets.token_hex(8)
        root.mkdir(mode=0o700)
        upper, work = root / "upper", root / "work"
        upper.mkdir(mode=0o700)
        work.mkdir(mode=0o700)
        return cls(root, upper, work)

    def remove(self) -> None:
        import shutil

        shutil.rmtree(self.root, ignore_errors=True)


def popen_in_layer(layer: Layer, workspace: Path, argv: list[str], *,
                   confine: Any = None, **kwargs: Any) -> subprocess.Popen[bytes]:
    """Start `argv` in a fresh thread that mounted `layer` over `workspace` and then ran
    `confine()` (Landlock, the socket filter, a PID namespace: built now, so they see the
    merged view). Raises OSError when the kernel refuses."""
    out: list[Any] = []

    def run() -> None:
        try:
            enter(str(workspace), str(layer.upper), str(layer.work))
            if confine is not None:
                confine()
            out.append(subprocess.Popen(argv, **kwargs))
        except BaseException as e:  # handed to the caller, raised there
            out.append(e)

    thread = threading.Thread(target=run, name="agent-cli-overlay", daemon=True)
    thread.start()
    thread.join()
    result = out[0]
    if isinstance(result, BaseException):
        raise result
    proc: subprocess.Popen[bytes] = result
    return proc


def landlock_confine(abi: int, rules: Iterable[tuple[str, str]], write_files: Iterable[str],
                     network: bool) -> Any:
    """A `confine` for popen_in_layer: the session's rules, built after the mount."""
    rules, write_files = list(rules), list(write_files)

    def confine() -> None:
        from agent_cli.sandbox import landlock

        fd = landlock.build_ruleset(abi, rules=rules, write_files=write_files, network=network)
        try:
            landlock.restrict_self(fd)
        finally:
            os.close(fd)

    return confine


_AVAILABLE: tuple[bool, str] | None = None


def available(base: Path) -> tuple[bool, str]:
    """(whether overlays work here, why not), tried once with a throwaway mount."""
    global _AVAILABLE
    if os.environ.get(ENV, "").lower() in ("off", "0", "no"):
        return False, f"{ENV}=off"
    if _AVAILABLE is None:
        layer = Layer.make(base)
        lower = layer.root / "lower"
        lower.mkdir()
        failure: list[OSError] = []

        def attempt() -> None:  # the namespace goes with the thread
            try:
                enter(str(lower), str(layer.upper), str(layer.work))
            except OSError as e:
                failure.append(e)

        thread = threading.Thread(target=attempt, name="agent-cli-overlay-probe", daemon=True)
        thread.start()
        thread.join()
        layer.remove()
        _AVAILABLE = (False, str(failure[0])) if failure else (True, "")
    return _AVAILABLE
