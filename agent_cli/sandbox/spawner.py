"""Start processes from a thread that is itself confined, so they are born confined.

Landlock (like PR_SET_NO_NEW_PRIVS) applies to the calling thread and to every process it starts
afterwards. A spawner is one daemon thread that confines itself with a ruleset once and then runs
`subprocess.Popen` for whoever asks: the children inherit the domain, and nothing runs in the
child between fork and exec.

Why not a preexec_fn: it forces fork instead of vfork (measured: +5 to 9 ms per command on a
loaded 2-core machine, more as the agent's memory grows) and runs Python in the child of a
threaded program, which can deadlock. Why not the exec wrapper: a Python start per command
(30 to 130 ms). A spawner costs a queue hand-off (about 0.05 ms).

The thread does nothing but start processes: the session's other threads stay unconfined and
keep their rights to watch, signal and reap the children. Besides Landlock it carries, when the
command has no network, the socket filter (agent_cli.sandbox.seccomp), and before each start it
makes a new PID namespace for the next child (agent_cli.sandbox.pidns), so each command is PID 1
of its own and takes everything it started with it when it ends.
"""

from __future__ import annotations

import os
import queue
import subprocess
import threading
from typing import Any


class _Job:
    __slots__ = ("args", "done", "error", "kwargs", "result")

    def __init__(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        self.args = args
        self.kwargs = kwargs
        self.done = threading.Event()
        self.result: subprocess.Popen[bytes] | None = None
        self.error: BaseException | None = None


class Spawner:
    """A confined thread that runs Popen. Raises OSError at creation if it cannot confine
    itself (then nothing is ever started through it)."""

    def __init__(self, ruleset_fd: int, name: str = "agent-cli-sandbox", *,
                 sockets: bool = True, pid_namespace: bool = False) -> None:
        self._sockets = sockets
        self._pid_namespace = pid_namespace
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._ready = threading.Event()
        self._failure: OSError | None = None
        self._fd = ruleset_fd
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()
        self._ready.wait()
        if self._failure is not None:
            raise self._failure

    def _serve(self) -> None:
        from agent_cli.sandbox import landlock, pidns

        own_ns = -1
        try:
            if self._pid_namespace:
                own_ns = pidns.own()
            landlock.restrict_self(self._fd)
            if not self._sockets:
                from agent_cli.sandbox import seccomp

                seccomp.install()
        except OSError as e:
            self._failure = e
            self._ready.set()
            return
        self._ready.set()
        while True:
            job = self._jobs.get()
            if job is None:
                if own_ns >= 0:
                    os.close(own_ns)
                return
            try:
                if own_ns >= 0:
                    pidns.fresh(own_ns)
                job.result = subprocess.Popen(*job.args, **job.kwargs)
            except BaseException as e:  # handed to the caller, raised there
                job.error = e
            finally:
                job.done.set()

    def popen(self, *args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        """subprocess.Popen(*args, **kwargs), started by the confined thread."""
        if not self._thread.is_alive():
            raise OSError("the sandbox's spawner thread has stopped")
        job = _Job(args, kwargs)
        self._jobs.put(job)
        job.done.wait()
        if job.error is not None:
            raise job.error
        assert job.result is not None
        return job.result

    def close(self) -> None:
        self._jobs.put(None)
