"""A PID namespace per approved command: when the command ends, everything it started ends.

The spawner thread (agent_cli.sandbox.spawner) calls `fresh()` before each start: it points
the thread's namespace for new children back at its own (setns) and then at a new one
(unshare), so the next child is PID 1 of a namespace of its own. When PID 1 exits, the kernel
kills every other process of that namespace: a `setsid ... &` that left the process group and
wiped its environment ends with the command, by structure. Both calls apply to the calling
thread only and need CAP_SYS_ADMIN (root, in practice: unshare of a user namespace is refused
to a process with threads). Where they are refused, processes are ended by the marker in their
environment (agent_cli.tools.procs), and the panel says so.

A command that is PID 1 gets only the signals it has a handler for, SIGKILL excepted (sent from
outside, as agent-cli does, SIGKILL always ends it). So on a timeout or Ctrl-C a command that
does not handle SIGTERM is killed after the grace period (agent_cli.tools.procs.TERM_GRACE_S)
rather than at once; its other processes get SIGTERM as before.
"""

from __future__ import annotations

import ctypes
import os
import threading

CLONE_NEWPID = 0x20000000


def _libc() -> ctypes.CDLL:
    from agent_cli.sandbox.landlock import libc

    return libc()


def own() -> int:
    """An fd of the calling thread's PID namespace (to come back to before each new one)."""
    return os.open("/proc/thread-self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)


def fresh(own_fd: int) -> None:
    """The next child of the calling thread starts a new PID namespace. Raises OSError."""
    libc = _libc()
    if libc.setns(own_fd, CLONE_NEWPID) != 0 or libc.unshare(CLONE_NEWPID) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"PID namespace: {os.strerror(err)}")


def fresh_thread() -> None:
    """In a thread that never made a PID namespace (a fresh one, started by a thread that did
    not either): its next child starts a new one, without coming back first (`fresh`)."""
    if _libc().unshare(CLONE_NEWPID) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"PID namespace: {os.strerror(err)}")


_AVAILABLE: bool | None = None


def available() -> bool:
    """Whether this process may make PID namespaces (tried once, in a throwaway thread)."""
    global _AVAILABLE
    if _AVAILABLE is None:
        result: list[bool] = []

        def attempt() -> None:
            try:
                fd = own()
            except OSError:
                result.append(False)
                return
            try:
                fresh(fd)
                result.append(True)
            except OSError:
                result.append(False)
            finally:
                os.close(fd)

        thread = threading.Thread(target=attempt, name="agent-cli-pidns-probe", daemon=True)
        thread.start()
        thread.join()
        _AVAILABLE = bool(result and result[0])
    return _AVAILABLE
