"""SIGTERM and SIGHUP handled like Ctrl-C, then the process exits 128 + the signal number.

Without this, `kill PID` or closing the terminal ended agent-cli at once: a running command was
re-parented to init and kept running, and the log lost its tool results and `session_end`. Now
the first such signal raises `Terminated` (a KeyboardInterrupt) in the main thread, where only
the terminal front end runs (the turn has its own thread: ui/turns.py), and it takes the Ctrl-C
path there: `Session.cancel`, so the running command's process group and the processes that
escaped it are ended (tools/procs.py), every pending call gets its tool_result, the turn ends as
interrupted, and the session closes with `session_end`. The command then exits 143 (TERM) or
129 (HUP). A second signal while that happens is noted, not raised, so the log is finished.

Where another thread runs beside the main one (the session built behind the first prompt,
ui/startup.py), the signal is `held` instead: noted, and the code that waits is woken, never
raised at a random point of the main thread. An exception landing there can leave a lock held
that the other thread needs next (a module's import lock: both threads import), and then the
build never ends and neither does agent-cli.

After a hang-up the terminal is gone: standard input, output and error are pointed at /dev/null
first, so nothing that still prints (a renderer, a prompt) fails on the dead terminal halfway
through writing the log.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterator
from types import FrameType, TracebackType
from typing import Any

HANDLED = (signal.SIGTERM, signal.SIGHUP)


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, taking the Ctrl-C path; `signum` says which."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class TerminationSignals:
    """While active (a `with` block), SIGTERM and SIGHUP end the session like Ctrl-C.

    With `take_interrupt` (the REPL on a terminal), SIGINT is taken back too when the process was
    started with it ignored (by `nohup`, a `&` in a script, some IDE and container launchers):
    a person at the REPL's terminal presses Ctrl-C or Esc (which sends SIGINT to this process)
    to stop a reply or a command, and an inherited "ignore" would make both do nothing."""

    def __init__(self, *, take_interrupt: bool = False) -> None:
        self.received: int | None = None
        self._old: dict[int, Any] = {}
        self._take_interrupt = take_interrupt
        self._holding = False
        self.waker: Callable[[], None] | None = None
        """While `held`: called (in the main thread, from the handler) when a signal arrives, to
        end a wait at its next safe point. It must take no lock and do no I/O."""

    @property
    def exit_code(self) -> int | None:
        """128 + the signal's number once one arrived (143 for TERM, 129 for HUP)."""
        return None if self.received is None else 128 + self.received

    @property
    def reason(self) -> str:
        """The `session_end` reason."""
        if self.received is None:
            return "exit"
        return "signal " + signal.Signals(self.received).name

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        if self.received is not None:
            return  # already ending: let the log be finished
        self.received = signum
        if signum == signal.SIGHUP:
            _detach_from_terminal()
        if self._holding:
            waker = self.waker
            if waker is not None:
                waker()
            return
        raise Terminated(signum)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Inside, a signal is only noted (`received`) and `waker` called; the code inside looks
        at `received` where it is safe to stop. For the main thread while another thread works
        (see the module's docstring)."""
        holding, self._holding = self._holding, True
        try:
            yield
        finally:
            self._holding = holding

    def __enter__(self) -> TerminationSignals:
        for sig in HANDLED:
            with contextlib.suppress(ValueError, OSError):  # not the main thread: nothing to do
                self._old[sig] = signal.signal(sig, self._handle)
        if self._take_interrupt and signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
            with contextlib.suppress(ValueError, OSError):
                self._old[signal.SIGINT] = signal.signal(signal.SIGINT,
                                                         signal.default_int_handler)
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        for sig, old in self._old.items():
            with contextlib.suppress(ValueError, OSError, TypeError):
                signal.signal(sig, old)
        self._old.clear()


def _detach_from_terminal() -> None:
    """Point fds 0, 1 and 2 at /dev/null: the terminal hung up."""
    try:
        null = os.open(os.devnull, os.O_RDWR)
    except OSError:
        return
    try:
        for fd in (0, 1, 2):
            with contextlib.suppress(OSError):
                os.dup2(null, fd)
    finally:
        os.close(null)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
