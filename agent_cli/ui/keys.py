"""Esc during a turn cancels it, like Ctrl-C.

While the model streams or a tool runs, prompt-toolkit is not reading the keyboard, so a lone Esc
would sit in the terminal's line buffer. `EscWatcher` puts the terminal in cbreak mode for the
turn (ISIG stays on, so Ctrl-C still raises SIGINT itself), reads keys in a thread, and on a lone
Esc cancels the session's turn (`on_esc`, set by ui/turns.py): every pending call is answered.
An escape *sequence* (an arrow key: ESC [ A) is not a lone Esc and is ignored.

It pauses around the approval panel (`paused()`), which reads the keyboard itself and treats
Esc as "deny the rest".
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

ESC = b"\x1b"
SEQUENCE_WAIT_S = 0.05
"""How long after an ESC the next byte of an escape sequence may take to arrive."""


class EscWatcher:
    def __init__(self, fd: int | None = None) -> None:
        self.fd = sys.stdin.fileno() if fd is None else fd
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._saved: Any = None
        self.on_esc: Callable[[], None] | None = None
        """What a lone Esc does: cancel the session's turn (ui/turns.py sets it); without it,
        Esc sends this process SIGINT, like Ctrl-C."""

    def usable(self) -> bool:
        try:
            return os.isatty(self.fd) and sys.platform != "win32"
        except OSError:
            return False

    def start(self) -> None:
        if self._thread is not None or not self.usable():
            return
        import termios
        import tty

        try:
            self._saved = termios.tcgetattr(self.fd)
            tty.setcbreak(self.fd, termios.TCSANOW)
        except (termios.error, OSError):
            self._saved = None
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._watch, name="esc-watcher", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._stop.set()
        thread.join(timeout=2)
        if self._saved is not None:
            import termios

            with contextlib.suppress(termios.error, OSError):
                termios.tcsetattr(self.fd, termios.TCSANOW, self._saved)
            self._saved = None

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        self.start()
        try:
            yield
        finally:
            self.stop()

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """Give the keyboard back (cooked mode, no reader thread) for the approval panel."""
        was = self._thread is not None
        self.stop()
        try:
            yield
        finally:
            if was:
                self.start()

    def _ready(self, timeout: float) -> bool:
        try:
            ready, _, _ = select.select([self.fd], [], [], timeout)
        except (OSError, ValueError):
            return False
        return bool(ready)

    def _watch(self) -> None:
        while not self._stop.is_set():
            if not self._ready(0.1) or self._stop.is_set():
                continue
            try:
                data = os.read(self.fd, 64)
            except OSError:
                return
            if not data:
                return
            if data == ESC and not self._ready(SEQUENCE_WAIT_S):
                on_esc = self.on_esc
                if on_esc is not None:
                    on_esc()
                else:
                    os.kill(os.getpid(), signal.SIGINT)
            # other keys typed during a turn are dropped (the panel discards type-ahead too)
