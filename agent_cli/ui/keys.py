"""The keyboard during a turn: Esc cancels it, like Ctrl-C; what else is typed is kept.

While the model streams or a tool runs, prompt-toolkit is not reading the keyboard, so a lone Esc
would sit in the terminal's line buffer. `EscWatcher` puts the terminal in cbreak mode for the
turn (ISIG stays on, so Ctrl-C still raises SIGINT itself), reads keys in a thread, and on a lone
Esc cancels the session's turn (`on_esc`, set by ui/turns.py): every pending call is answered.
An escape *sequence* (an arrow key: ESC [ A, Alt-x) is not a lone Esc and is ignored.

Every other key edits the line typed ahead (`TypedAhead`): printable characters join it,
Backspace, Ctrl-W and Ctrl-U edit it, Enter finishes it. A finished line is announced
(`on_line`) and kept; the REPL sends the kept lines as the next message once the turn ends, and
the unfinished text becomes the next prompt's text (ui/repl.py). Nothing typed ahead is ever an
answer: ui/turns.py drops all of it before a question.

It pauses around the approval panel (`paused()`), which reads the keyboard itself and treats
Esc as "deny the rest".
"""

from __future__ import annotations

import codecs
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


BACKSPACES = ("\x7f", "\b")
ENTERS = ("\r", "\n")
CTRL_U = "\x15"
CTRL_W = "\x17"


class TypedAhead:
    """The keys typed while a turn runs, as lines: those finished with Enter (`lines`) and the
    one being typed (`text`). Fed by the watcher's thread, read by the terminal's: one lock."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lines: list[str] = []
        self._text = ""

    @property
    def text(self) -> str:
        """The unfinished line (for the live region that shows it as it is typed)."""
        return self._text

    def feed(self, typed: str) -> list[str]:
        """Apply `typed` (escape sequences already taken out); returns the lines it finished.
        An empty line is no message: Enter on nothing finishes nothing."""
        finished: list[str] = []
        with self._lock:
            text = self._text
            for char in typed:
                if char in ENTERS:
                    if text.strip():
                        finished.append(text)
                    text = ""
                elif char in BACKSPACES:
                    text = text[:-1]
                elif char == CTRL_U:
                    text = ""
                elif char == CTRL_W:
                    text = text.rstrip()
                    text = text[:len(text) - len(text.split(" ")[-1])] if text else ""
                elif char == "\t":
                    text += " "
                elif char.isprintable():
                    text += char
                # (other control characters are no text: dropped)
            self._text = text
            self._lines += finished
        return finished

    def take(self) -> tuple[list[str], str]:
        """(the finished lines, the unfinished text), each handed out once."""
        with self._lock:
            taken = self._lines, self._text
            self._lines, self._text = [], ""
        return taken


def plain_keys(data: bytes) -> tuple[bytes, bool]:
    """`data` without its escape sequences (ESC [ ... final, ESC O x, ESC x), and whether it
    ends in an ESC that may be a lone Esc (the caller waits a moment to tell)."""
    out = bytearray()
    i, n = 0, len(data)
    while i < n:
        byte = data[i]
        if byte != 0x1B:
            out.append(byte)
            i += 1
            continue
        if i + 1 >= n:
            return bytes(out), True
        kind = data[i + 1]
        if kind == ord("["):
            j = i + 2
            while j < n and not 0x40 <= data[j] <= 0x7E:
                j += 1
            i = j + 1
        elif kind == ord("O"):
            i += 3
        else:
            i += 2  # Alt-x: the key is not text
    return bytes(out), False


class EscWatcher:
    def __init__(self, fd: int | None = None) -> None:
        self.fd = sys.stdin.fileno() if fd is None else fd
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._saved: Any = None
        self.on_esc: Callable[[], None] | None = None
        """What a lone Esc does: cancel the session's turn (ui/turns.py sets it); without it,
        Esc sends this process SIGINT, like Ctrl-C."""
        self.typed = TypedAhead()
        """What was typed during the turn (kept across `paused`; the REPL takes it)."""
        self.on_line: Callable[[str], None] | None = None
        """Told each line finished with Enter, on the watcher's thread (ui/turns.py shows it)."""

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
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        while not self._stop.is_set():
            if not self._ready(0.1) or self._stop.is_set():
                continue
            try:
                data = os.read(self.fd, 64)
            except OSError:
                return
            if not data:
                return
            while True:
                keys, esc_last = plain_keys(data)
                if not esc_last or not self._ready(SEQUENCE_WAIT_S):
                    break
                try:  # an ESC whose sequence is still arriving
                    more = os.read(self.fd, 64)
                except OSError:
                    return
                if not more:
                    return
                data += more
            self._typed(decoder.decode(keys))
            if esc_last:
                self._lone_esc()

    def _typed(self, text: str) -> None:
        if not text:
            return
        for line in self.typed.feed(text):
            on_line = self.on_line
            if on_line is not None:
                on_line(line)

    def _lone_esc(self) -> None:
        on_esc = self.on_esc
        if on_esc is not None:
            on_esc()
        else:
            os.kill(os.getpid(), signal.SIGINT)
