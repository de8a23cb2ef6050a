"""Cancellation as a value: a token the engine checks where it waits.

A front end (the terminal's Ctrl-C, Esc, SIGTERM or SIGHUP; an editor's `session/cancel`) calls
`Session.cancel`, which cancels the running turn's token from whatever thread it is on. The
engine never sees an exception land at a random point: it looks at the token where it waits
(the model's reply, a running tool, an approval question, a retry's pause), and each wait ends
at once because cancelling wakes it. What was done is kept; every call still waiting is answered
"interrupted" by the engine itself, in the one place a turn stop is caught.
"""

from __future__ import annotations

import contextlib
import queue
import threading
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import TypeVar

T = TypeVar("T")


class CancelToken:
    """Set once, from any thread; `wait` returns as soon as it is set or the awaited event is.

    Callbacks (`on_cancel`) run in the cancelling thread, once, right after the token is set:
    they must be quick and take no lock the engine may hold (setting an Event is the norm)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._set = threading.Event()
        self._reason: str | None = None
        self._callbacks: list[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        return self._set.is_set()

    @property
    def reason(self) -> str | None:
        """Who cancelled: "user" (Ctrl-C, Esc, an editor), "signal SIGTERM", ... or None."""
        return self._reason

    def cancel(self, reason: str = "user") -> bool:
        """Cancel; True for the call that did it (a second cancel changes nothing)."""
        with self._lock:
            if self._set.is_set():
                return False
            self._reason = reason
            self._set.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()
        return True

    def on_cancel(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Run `callback` when the token is cancelled (at once when it already is). Returns the
        function that takes it back, for a wait that ended the other way."""
        with self._lock:
            if not self._set.is_set():
                self._callbacks.append(callback)
                return lambda: self._forget(callback)
        callback()
        return lambda: None

    def _forget(self, callback: Callable[[], None]) -> None:
        with self._lock, contextlib.suppress(ValueError):
            self._callbacks.remove(callback)

    def wait(self, event: threading.Event, timeout: float | None = None) -> bool:
        """Wait until `event` is set, the token is cancelled, or `timeout` passes; returns
        whether `event` is set. One wake-up event serves both, so no wait polls."""
        if event.is_set() or self.cancelled:
            return event.is_set()
        wake = threading.Event()
        forget = self.on_cancel(wake.set)
        watcher = _chain(event, wake)
        try:
            wake.wait(timeout)
        finally:
            forget()
            watcher()
        return event.is_set()


class Abandoned(BaseException):
    """Raised inside work that a cancelled turn no longer waits for: a model request runs on a
    thread of its own (loop._cancellable), and once the turn is cancelled its stream stops at the
    next piece of text and its retry pause ends at once, with no further request sent. Leaving
    the stream closes its connection, so the server stops generating (and billing) the reply.
    A BaseException, so that no provider's `except Exception` turns it into an error or a retry;
    only the thread that ran the work catches it."""


_WORK: ContextVar[CancelToken | None] = ContextVar("agent_cli_cancel_work", default=None)


@contextlib.contextmanager
def working_for(token: CancelToken) -> Iterator[None]:
    """Inside, `checkpoint` and `pause` belong to `token`'s turn (set on the thread that does
    the turn's work in the background)."""
    reset = _WORK.set(token)
    try:
        yield
    finally:
        _WORK.reset(reset)


def checkpoint() -> None:
    """Raise `Abandoned` when the turn this work is for was cancelled (nothing outside a turn)."""
    token = _WORK.get()
    if token is not None and token.cancelled:
        raise Abandoned(token.reason)


def pause(seconds: float) -> None:
    """Sleep `seconds`, ended at once by a cancel of the turn this work is for (then `Abandoned`);
    a plain sleep outside a turn."""
    token = _WORK.get()
    if token is None:
        time.sleep(seconds)
        return
    token.wait(threading.Event(), seconds)
    checkpoint()


SIGNAL_SLICE_S = 0.1
"""How long the main thread waits at a time in `wait_on_main`."""


def wait_on_main(event: threading.Event, timeout: float | None = None) -> bool:
    """`event.wait(timeout)` that Ctrl-C (SIGINT) and the other signals still interrupt when it
    runs on the main thread. The kernel hands a signal sent to the process to any of its threads
    that does not block it (Linux skips a main thread that has a signal pending already); CPython's
    C handler then only notes it, and the Python handler (KeyboardInterrupt) runs when the main
    thread next runs Python code, which a wait with no timeout never does: CI saw a Ctrl-C land
    on another thread and wait out a 60 s command. Waiting in slices bounds that delay; on other
    threads it is a plain wait."""
    if threading.current_thread() is not threading.main_thread():
        return event.wait(timeout)
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        step = SIGNAL_SLICE_S if deadline is None else min(SIGNAL_SLICE_S,
                                                           deadline - time.monotonic())
        if step <= 0:
            return event.is_set()
        if event.wait(step):
            return True


def get_on_main(source: queue.Queue[T]) -> T:
    """`source.get()` that a signal still interrupts on the main thread (see `wait_on_main`)."""
    if threading.current_thread() is not threading.main_thread():
        return source.get()
    while True:
        try:
            return source.get(timeout=SIGNAL_SLICE_S)
        except queue.Empty:
            continue


def _chain(event: threading.Event, wake: threading.Event) -> Callable[[], None]:
    """Make `event` wake `wake` too while a wait lasts: at once for a `LinkedEvent`; a plain Event
    (a tool's own) is watched by a relay thread for the length of the wait."""
    if isinstance(event, LinkedEvent):
        return event.link(wake)
    stop = threading.Event()

    def relay() -> None:
        while not stop.is_set() and not wake.is_set():
            if event.wait(0.05):
                wake.set()
                return

    thread = threading.Thread(target=relay, name="cancel-relay", daemon=True)
    thread.start()
    return stop.set


class LinkedEvent(threading.Event):
    """An Event that wakes the token waits linked to it the moment it is set (no polling)."""

    def __init__(self) -> None:
        super().__init__()
        self._links: list[threading.Event] = []
        self._links_lock = threading.Lock()

    def set(self) -> None:
        super().set()
        with self._links_lock:
            links = list(self._links)
        for wake in links:
            wake.set()

    def link(self, wake: threading.Event) -> Callable[[], None]:
        with self._links_lock:
            self._links.append(wake)
        if self.is_set():
            wake.set()

        def unlink() -> None:
            with self._links_lock, contextlib.suppress(ValueError):
                self._links.remove(wake)

        return unlink
