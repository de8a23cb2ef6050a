"""Running a child process so that it cannot hang the agent, flood its memory, read its secrets
or outlive its call.

- stdin is /dev/null and the child has no controlling terminal (new session), so a program that
  waits for input or a password prompt gets EOF at once; editors and pagers are set to programs
  that end immediately;
- stdout and stderr share one pipe, read in chunks into a bounded head buffer and a ring tail
  buffer: a 1 GB output costs no more memory than those two buffers (32 KB by default);
- the child leads its own process group. On timeout or cancel the whole group gets SIGTERM, then
  SIGKILL; when the command returns, whatever it left running in its group is ended too;
- confined by the session's sandbox, the child is PID 1 of a PID namespace of its own
  (agent_cli.sandbox.pidns): when it exits, the kernel ends everything it started, also
  processes that left the group with a wiped environment (`setsid env -i ...`);
- besides, every child carries a random marker in its environment; processes that left the
  group (setsid, daemons) are found by that marker under /proc and ended as well (Linux; the
  only way where no PID namespace can be made, and the panel then says so);
- the environment is scrubbed of secrets by name and by value shape;
- on Linux the child is confined before it execs (agent_cli.sandbox: Landlock, the socket
  filter without network, the PID namespace): by default with the running session's sandbox, so
  a plugin that starts processes through `run_process` is confined like run_command.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import secrets
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agent_cli.redact import is_secret_var  # the scrub's rule; plugins import it from here

MARKER_VAR = "AGENT_CLI_RUN_ID"
QUIET_ENV = {
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_ASKPASS": "true",
    "SSH_ASKPASS": "true",
    "SSH_ASKPASS_REQUIRE": "never",
    "EDITOR": "true",
    "VISUAL": "true",
    "GIT_EDITOR": "true",
    "GIT_SEQUENCE_EDITOR": "true",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "MANPAGER": "cat",
    "SYSTEMD_PAGER": "cat",
    "DEBIAN_FRONTEND": "noninteractive",
    "PIP_NO_INPUT": "1",
}
TERM_GRACE_S = 0.5
"""Seconds between SIGTERM and SIGKILL for the group."""
DRAIN_S = 0.25
"""Seconds to keep reading after the group is gone, for output still in the pipe."""
_POLL_S = 0.05
_PF_KTHREAD = 0x00200000


def scrubbed_env(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment a command sees: ours minus anything that looks secret, plus settings that
    make interactive programs end at once."""
    src = os.environ if base is None else base
    env = {k: v for k, v in src.items() if not is_secret_var(k, v)}
    env.update(QUIET_ENV)
    return env


class CappedBuffer:
    """Keeps the first `head` and the last `tail` bytes of a stream, and counts the rest."""

    def __init__(self, head: int, tail: int,
                 watch: Callable[[bytes], None] | None = None) -> None:
        self.head_cap = head
        self.tail_cap = tail
        self.head = bytearray()
        self.tail = bytearray()
        self.total = 0
        self.watch = watch
        """Sees every chunk as it arrives (the live view of a running command)."""

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        if self.watch is not None and chunk:
            with contextlib.suppress(Exception):  # a broken view must not break the command
                self.watch(chunk)
        room = self.head_cap - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if chunk and self.tail_cap > 0:
            self.tail += chunk
            if len(self.tail) > 2 * self.tail_cap:
                del self.tail[: len(self.tail) - self.tail_cap]

    @property
    def cut(self) -> int:
        return self.total - len(self.head) - min(len(self.tail), self.tail_cap)

    def parts(self) -> tuple[bytes, bytes]:
        tail = bytes(self.tail[-self.tail_cap:]) if self.tail_cap and self.tail else b""
        return bytes(self.head), tail


@dataclass
class ProcResult:
    argv: list[str]
    returncode: int | None
    """Exit status; negative means killed by that signal (subprocess convention)."""
    duration_s: float
    head: bytes
    tail: bytes
    total_bytes: int
    cut_bytes: int
    timed_out: bool = False
    cancelled: bool = False
    leftovers: int = 0
    """Processes still running when the command returned (or was stopped), now ended."""
    error: str | None = None
    """Why the command could not start."""

    def text(self) -> str:
        """The output as text: head, a note of what was cut, tail. Invalid UTF-8 is replaced."""
        head = self.head.decode("utf-8", "replace")
        if not self.cut_bytes and not self.tail:
            return head
        tail = self.tail
        # The tail may start inside a multi-byte character: drop the orphan continuation bytes.
        skip = 0
        while skip < min(3, len(tail)) and 0x80 <= tail[skip] <= 0xBF:
            skip += 1
        note = (f"\n[... {self.cut_bytes:,} bytes cut from the middle of the output "
                f"({self.total_bytes:,} bytes in total) ...]\n") if self.cut_bytes else ""
        return head + note + tail[skip:].decode("utf-8", "replace")


def _proc_stat(pid: int) -> tuple[str, int] | None:
    """(state, process group) of a live pid, from /proc; None if gone or unknown."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    fields = raw[raw.rfind(b")") + 2:].split()
    try:
        return fields[0].decode(), int(fields[2])
    except (IndexError, ValueError):
        return None


def is_running(pid: int) -> bool:
    """True if the process exists and is not a zombie waiting to be reaped."""
    st = _proc_stat(pid)
    if st is not None:
        return st[0] not in ("Z", "X")
    if os.path.isdir("/proc/self"):
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _group_pids(pgid: int) -> list[int]:
    """Running (non-zombie) members of a process group, from /proc."""
    found = []
    for pid in _proc_pids():
        st = _proc_stat(pid)
        if st is not None and st[1] == pgid and st[0] not in ("Z", "X"):
            found.append(pid)
    return found


def _group_alive(pgid: int) -> bool:
    """Any process of the group still running (zombies do not count)?"""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    if not os.path.isdir("/proc/self"):
        return True
    return bool(_group_pids(pgid))


def _proc_pids() -> list[int]:
    try:
        return [int(n) for n in os.listdir("/proc") if n.isdigit()]
    except OSError:
        return []


def _pids_since(first: int) -> list[int]:
    """Pids that may have been created since `first` was: pids are handed out in increasing
    order (wrapping at pid_max), so only [first, last allocated] can hold them. All pids when the
    kernel does not say."""
    pids = _proc_pids()
    try:
        with open("/proc/sys/kernel/ns_last_pid", "rb") as f:
            last = int(f.read())
    except (OSError, ValueError):
        return pids
    if last >= first:
        return [p for p in pids if first <= p <= last]
    return [p for p in pids if p >= first or p <= last]  # wrapped around pid_max


def marked_pids(marker: str, since_pid: int | None = None) -> list[int]:
    """Live processes (of this user) whose environment carries `MARKER_VAR=marker`.

    `since_pid` (the command's own pid) limits the scan to processes created after it. A
    process in the middle of execve shows an empty environment for a moment, so such processes
    are looked at again a few times before they are let go.
    """
    needle = f"{MARKER_VAR}={marker}".encode()
    me = os.getpid()
    uid = os.getuid()
    found: list[int] = []
    candidates = _proc_pids() if since_pid is None else _pids_since(since_pid)
    pending = [p for p in candidates if p != me]
    for attempt in range(4):
        unsure: list[int] = []
        for pid in pending:
            try:
                if os.stat(f"/proc/{pid}").st_uid != uid:
                    continue
                with open(f"/proc/{pid}/environ", "rb") as f:
                    env = f.read()
            except OSError:
                continue  # gone, or not ours to read
            if not env:
                if _mid_exec(pid):
                    unsure.append(pid)
                continue
            if needle + b"\0" in env or env.endswith(needle):
                st = _proc_stat(pid)
                if st is not None and st[0] not in ("Z", "X"):
                    found.append(pid)
        if not unsure:
            break
        pending = unsure
        time.sleep(0.002 * (attempt + 1))
    return found


def _mid_exec(pid: int) -> bool:
    """A live user process with an empty environment: probably inside execve right now."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            raw = f.read()
        fields = raw[raw.rfind(b")") + 2:].split()
        state, flags = fields[0], int(fields[6])
    except (OSError, IndexError, ValueError):
        return False
    return state not in (b"Z", b"X") and not flags & _PF_KTHREAD


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _signal_pids(pids: list[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def _wait_gone(pgid: int, pids: list[int], seconds: float) -> bool:
    """Wait until the group and `pids` have no running process; False if time ran out."""
    deadline = time.monotonic() + seconds
    while _group_alive(pgid) or any(is_running(p) for p in pids):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
    return True


def end_processes(pgid: int, marker: str | None, grace_s: float = TERM_GRACE_S) -> int:
    """End the group `pgid` and every process carrying `marker`: SIGTERM, wait up to `grace_s`,
    then SIGKILL. Returns how many processes were still running."""
    escaped = marked_pids(marker, pgid) if marker else []
    alive = _group_alive(pgid)
    if not alive and not escaped:
        return 0
    members = set(escaped)
    if alive:
        members.update(_group_pids(pgid) if os.path.isdir("/proc/self") else [pgid])
    _signal_group(pgid, signal.SIGTERM)
    _signal_pids(escaped, signal.SIGTERM)
    if not _wait_gone(pgid, escaped, grace_s):
        _signal_group(pgid, signal.SIGKILL)
        _signal_pids(escaped, signal.SIGKILL)
    if marker:
        # Children an escaped process started while we were waiting.
        late = marked_pids(marker, pgid)
        _signal_pids(late, signal.SIGKILL)
        members.update(late)
        escaped = list(set(escaped) | set(late))
    _wait_gone(pgid, escaped, 1.0)  # SIGKILL is asynchronous: let the kernel finish
    return len(members)


_ACTIVE: dict[int, str] = {}
"""Process groups (and their markers) of commands running now, ended if the agent exits."""
_ACTIVE_LOCK = threading.Lock()
_ATEXIT_SET = False


def _end_active() -> None:
    with _ACTIVE_LOCK:
        active = dict(_ACTIVE)
    for pgid, marker in active.items():
        end_processes(pgid, marker, grace_s=0.2)


def _track(pgid: int, marker: str | None) -> None:
    global _ATEXIT_SET
    with _ACTIVE_LOCK:
        if marker is None:
            _ACTIVE.pop(pgid, None)
            return
        _ACTIVE[pgid] = marker
        if not _ATEXIT_SET:
            atexit.register(_end_active)
            _ATEXIT_SET = True


SESSION_SANDBOX: Any = object()
"""Default of `run_process(sandbox=...)`: the running session's sandbox."""


def run_process(
    argv: list[str],
    *,
    cwd: str,
    env: dict[str, str],
    timeout_s: float,
    cancel: threading.Event | None = None,
    head_bytes: int = 16_000,
    tail_bytes: int = 16_000,
    sandbox: Any = SESSION_SANDBOX,
    network: bool = False,
    on_output: Callable[[bytes], None] | None = None,
) -> ProcResult:
    """Run `argv` to completion, timeout or cancel, never holding more than head+tail bytes of
    its output, and leave no process of it behind.

    `sandbox` (an agent_cli.sandbox.Sandbox, or None for none) confines the child before it
    execs; by default the running session's. `network` lets it use the network and sockets.
    `on_output` sees every chunk as it is read (for a live view; it must not block)."""
    marker = secrets.token_hex(8)
    child_env = {**env, MARKER_VAR: marker}
    buf = CappedBuffer(head_bytes, tail_bytes, on_output)
    start = time.monotonic()
    if sandbox is SESSION_SANDBOX:
        from agent_cli.sandbox.policy import current

        sandbox = current()
    spawn: Any = subprocess.Popen
    if sandbox is not None:
        try:
            spawn = sandbox.popen(network)
        except OSError as e:
            return ProcResult(list(argv), None, time.monotonic() - start, b"", b"", 0, 0,
                              error=f"could not confine {argv[0]!r} with Landlock ({e}), so it "
                                    "was not run; --sandbox off runs commands unconfined")
        child_env = sandbox.env(child_env)
    try:
        proc = spawn(
            argv, cwd=cwd, env=child_env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT, start_new_session=True, close_fds=True,
        )
    except OSError as e:
        return ProcResult(list(argv), None, time.monotonic() - start, b"", b"", 0, 0,
                          error=f"could not start {argv[0]!r}: {e.strerror or e}")
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    pgid = proc.pid
    _track(pgid, marker)
    deadline = start + timeout_s
    timed_out = cancelled = False
    leftovers = 0
    eof = False
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    exited = _exit_fd(proc.pid)
    if exited >= 0:
        sel.register(exited, selectors.EVENT_READ)

    def output(timeout: float) -> None:
        """Wait up to `timeout` for output (read it) or for the process's exit."""
        nonlocal eof
        for key, _ in sel.select(timeout):
            if key.fd == fd:
                eof = _read_some(fd, buf)
                if eof:
                    sel.unregister(fd)

    def drain(until: float) -> None:
        if exited >= 0:
            sel.unregister(exited)
        while not eof:
            left = until - time.monotonic()
            if left <= 0:
                break
            output(min(_POLL_S, left))

    try:
        while True:
            if not eof or exited >= 0:
                output(_POLL_S)
            if proc.poll() is not None:
                break
            if eof and exited < 0:
                # Output closed but the process lives on: just wait for it, without spinning.
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(_POLL_S)
            if cancel is not None and cancel.is_set():
                cancelled = True
                break
            if time.monotonic() >= deadline:
                timed_out = True
                break
        # Stopped, or returned: either way whatever is left of it (in its group, or escaped
        # and carrying the marker) is ended. Output already in the pipe is read afterwards.
        leftovers = end_processes(pgid, marker)
        proc.wait()
        drain(time.monotonic() + DRAIN_S)
    finally:
        sel.close()
        if exited >= 0:
            os.close(exited)
        proc.stdout.close()
        if proc.poll() is None:
            _signal_group(pgid, signal.SIGKILL)
            proc.wait()
        _track(pgid, None)
    head, tail = buf.parts()
    return ProcResult(list(argv), proc.returncode, time.monotonic() - start, head, tail,
                      buf.total, buf.cut, timed_out, cancelled, leftovers)


def _exit_fd(pid: int) -> int:
    """A pidfd of `pid` (readable once it has exited), so the wait for its exit is a wake-up
    at that moment, not Popen.wait's sleeps of 1, 2, 4 ms...; -1 where the system has none
    (then the loop waits as Popen.wait does)."""
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return -1


def _read_some(fd: int, buf: CappedBuffer) -> bool:
    """Read what the pipe holds; True at end of file."""
    for _ in range(64):
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return False
        except OSError:
            return True
        if not chunk:
            return True
        buf.add(chunk)
    return False
