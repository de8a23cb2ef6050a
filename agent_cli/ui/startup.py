"""The REPL's start: the prompt is on screen before the session behind it exists.

Building a session (settings, the event models, Rich, the tools and their plugins, MCP servers,
the log) costs several times what drawing a prompt does. So `agent-cli chat` on a terminal:

1. draws the prompt at once (`FirstFrame`: the prompt's characters written, the terminal in
   `typing_mode`; nothing but the standard library is imported for it). `cli/main.py` draws it
   even before typer parses the command line (`draw_early`) when the words say the chat will
   start with a prompt; the chat takes that frame over (`take_early`), and anything printed
   before that (a usage error) is printed after the frame gave way (`give_way`). Keys typed
   from then on are echoed by the kernel at once (the line editor takes a few tenths of a second
   more to load) and wait in the terminal, byte for byte, for the line editor, which draws over
   the echo: nothing is lost, and Ctrl-C and Ctrl-D are keys for that prompt, as at any other;
2. starts the line editor on that prompt and, once it is drawn, builds the session in a thread
   (`Loading`). The build prints nothing and asks nothing;
3. when the build is done (or failed), the editor gives up its line (`read_while_loading`):
   what was typed is kept, the prompt is erased, and the chat goes on exactly as before this
   module existed, in the main thread: session_start is logged, notices and the banner are
   printed, questions (a changed project instruction file) are asked, and then the prompt comes
   back with the text typed so far. A line sent (Enter) or Ctrl-D pressed before the session is
   ready waits for it, with a "loading tools…" status, and is then handled once, like any.

SIGTERM and SIGHUP meanwhile are held (`TerminationSignals.held`), not raised: the prompt ends
as on Ctrl-D and the chat closes its session once it exists. Raised at a random point of the
main thread while the builder imports, the signal could leave an import lock held, and the
build (and agent-cli) would never end.

A build that fails raises its error in the main thread (`Loading.result`), so it becomes the same
sentence and exit code as before. Nothing here imports Rich.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.application import Application

    from agent_cli.signals import TerminationSignals

from agent_cli.cancel import wait_on_main
from agent_cli.ui.typing_mode import (
    pending_count,
    read_pending,
    typeahead,
    typing_mode,
    visible,
)

T = TypeVar("T")

LOADING_STATUS = "loading tools…"
"""Shown under a line sent before the session was ready, while it waits."""
NOT_SENT = "Not sent: the line is back at the prompt."
"""Shown after Ctrl-C while a line waited for the session."""


def _termios_error() -> type[Exception]:
    """termios.error (not an OSError), or a stand-in where there is no termios."""
    try:
        import termios
    except ImportError:
        return OSError
    return termios.error


class FirstFrame:
    """The prompt drawn before the line editor is loaded. Until the editor takes the terminal
    (`hand_over`), the kernel echoes what is typed (`typing_mode`), so a key shows the moment it
    is pressed, however long the editor takes to load; the bytes wait in the terminal for the
    editor, which reads them as they came (Ctrl-C and Ctrl-D as keys for this prompt, not a
    signal or an end of file). `restore` puts the terminal back as it was."""

    def __init__(self, fd: int, saved: list[Any] | None, prompt: str = "",
                 typed: bytes = b"") -> None:
        self.fd = fd
        self.prompt = prompt
        self._saved = saved
        self._frame_mode: list[Any] | None = None
        self.typed = typed
        """Keys read off the terminal by the frame itself (typed before it was drawn, and the
        kernel's line at `hand_over`): the line editor gets them first (`take_typed`)."""
        self.on_screen = True
        """The prompt's characters are on screen and no editor has drawn over them yet."""

    @classmethod
    def draw(cls, prompt: str) -> FirstFrame:
        """The prompt, after whatever was typed before it (the shell's mode echoed that where
        the prompt now stands: it is drawn again after the prompt, and kept for the editor)."""
        fd = sys.stdin.fileno()
        saved: list[Any] | None = None
        typed = b""
        try:
            import termios

            saved = termios.tcgetattr(fd)
            typed = b"".join(_CARRIED) + read_pending(fd, saved)
            _CARRIED.clear()
            termios.tcsetattr(fd, termios.TCSANOW, typing_mode(saved))
        except (ImportError, OSError, ValueError, _termios_error()):
            saved = None
        sys.stdout.flush()
        shown = (b"\r\x1b[K" if typed else b"") + prompt.encode() + visible(typed).encode()
        os.write(sys.stdout.fileno(), shown)
        return cls(fd, saved, prompt, typed)

    def _start_of_prompt(self, take: bool) -> tuple[bytes, bool]:
        """The cursor's way back to the prompt's first column over the rows the prompt and the
        echo after it fill, and whether anything was typed. With `take` the kernel's line is
        read off into `typed` (for the line editor), else only counted (it stays for whoever
        reads the terminal next)."""
        more = 0
        if self._saved is not None:
            with contextlib.suppress(OSError, ValueError, _termios_error()):
                if take:
                    self.typed += read_pending(self.fd, self._saved)
                else:
                    more = pending_count(self.fd, self._saved)
        width = len(self.prompt) + len(visible(self.typed, echo=True)) + more
        rows = max(width - 1, 0) // (shutil.get_terminal_size().columns or 80)
        return (f"\x1b[{rows}A".encode() if rows else b"") + b"\r", bool(self.typed or more)

    def hand_over(self) -> None:
        """The line editor draws its prompt next, from the start of this prompt's line; what
        the kernel echoed is drawn over by it."""
        if self.on_screen:
            back, typed = self._start_of_prompt(take=True)
            self._write(back + (b"\x1b[J" if typed else b""))
            self.on_screen = False

    def take_typed(self) -> bytes:
        typed, self.typed = self.typed, b""
        return typed

    def erase(self) -> None:
        """Take the prompt's characters (and what was typed after it) off the screen (an error
        is printed instead)."""
        if self.on_screen:
            back, typed = self._start_of_prompt(take=False)
            self._write(back + (b"\x1b[J" if typed else b"\x1b[K"))
            self.on_screen = False

    @staticmethod
    def _write(data: bytes) -> None:
        # (after a hang-up the terminal is gone: EIO, or fd 1 is /dev/null; nothing to erase)
        with contextlib.suppress(OSError, ValueError):
            os.write(sys.stdout.fileno(), data)

    def cooked(self) -> None:
        """The terminal as it was (line editing, echo, Ctrl-C a signal) for a while, but with
        Enter kept as it is typed (`keep_enter`); the frame's `typing_mode` comes back with
        `raw_again`."""
        if self._saved is not None:
            import termios

            with contextlib.suppress(OSError, termios.error):
                self._frame_mode = termios.tcgetattr(self.fd)
            self._set(self.keep_enter(self._saved))

    def settle(self) -> None:
        """Out of the frame's mode for the rest of the chat, as `cooked` does: echo, line editing
        and Ctrl-C as they were, Enter kept. `restore` (when the chat ends) undoes the rest."""
        self.cooked()
        self._frame_mode = None

    @staticmethod
    def keep_enter(attrs: list[Any]) -> list[Any]:
        """`attrs` without ICRNL. With it the kernel turns an Enter (CR) into LF as the key
        arrives, so a line typed ahead while agent-cli is busy outside a prompt (the banner
        after loading, a "loading tools…" wait) reaches the next prompt as text + Ctrl-J, which
        the prompt takes as a new line in the message, not as sending it. The prompt itself
        reads CR either way; nothing else reads the terminal in cooked mode meanwhile."""
        import termios

        changed = list(attrs)
        changed[0] = attrs[0] & ~termios.ICRNL
        return changed

    def raw_again(self) -> None:
        raw = self._frame_mode
        if raw is not None and self._saved is not None:
            self._set(raw)

    def restore(self) -> None:
        """The terminal as it was before `draw`."""
        if self._saved is not None:
            self._set(self._saved)
            self._saved = None

    def _set(self, attrs: list[Any]) -> None:
        import termios

        # (termios.error is no OSError: after a hang-up fd 0 is /dev/null, not a terminal)
        with contextlib.suppress(OSError, termios.error):
            termios.tcsetattr(self.fd, termios.TCSANOW, attrs)


_CARRIED: list[bytes] = []
"""Keys an early frame read off the terminal and could not hand to a line editor (it gave way:
the chat draws a prompt of its own, which starts with them)."""
_EARLY: list[FirstFrame] = []
"""The frame `draw_early` drew before the command line was parsed, until the chat takes it."""


def draw_early(prompt: str) -> None:
    """`agent-cli chat` on a terminal: the prompt drawn before typer is imported and the
    command line parsed (cli/main.py), so it is there in about the time Python takes to start.
    Until the chat takes it (`take_early`), anything else that prints first calls `give_way`, and
    SIGTERM or SIGHUP put the terminal back before the process ends (the chat's own handlers
    take over once it runs)."""
    import signal

    # The handlers are in place before the terminal's mode changes, and the signals blocked
    # until the frame is registered: one that lands the moment the prompt shows (a window
    # closed at once) still puts the terminal back (it is delivered at the unblock).
    ending = {signal.SIGTERM, signal.SIGHUP}
    before = signal.pthread_sigmask(signal.SIG_BLOCK, ending)
    try:
        for sig in ending:
            signal.signal(sig, _end_early)
        _EARLY.append(FirstFrame.draw(prompt))
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, before)


def _end_early(signum: int, _frame: Any) -> None:
    give_way()
    os._exit(128 + signum)


def give_way() -> None:
    """An early frame nobody took leaves: its characters erased, the terminal as it was. Called
    before an error line is printed, and when the chat does not start with this prompt."""
    while _EARLY:
        frame = _EARLY.pop()
        frame.erase()
        frame.restore()
        _CARRIED.append(frame.take_typed())  # (read off before the frame: the next one shows them)


def take_early(prompt: str) -> FirstFrame | None:
    """The early frame, if one shows exactly `prompt` (else it gives way: the chat draws its
    own)."""
    if _EARLY and _EARLY[-1].prompt == prompt:
        return _EARLY.pop()
    give_way()
    return None


class Loading(Generic[T]):
    """`build()` run in a thread; `result()` waits for it in the caller's thread and returns its
    value or raises its exception there. `on_settled` callbacks run in the builder's thread when
    it is done either way.

    The thread starts with `start()`: `read_while_loading` calls it once the line editor has
    drawn its first frame, because a build running during the editor's own start (one GIL)
    delayed that frame by about as long again; `wait` starts it too, so nothing waits on a
    build that never began."""

    def __init__(self, build: Callable[[], T]) -> None:
        self._build = build
        self._done = threading.Event()
        self._value: T | None = None
        self._error: BaseException | None = None
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        with self._lock:
            if self._thread is not None:
                return
            self._thread = threading.Thread(target=self._run, name="session-build",
                                            daemon=True)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._value = self._build()
        except BaseException as e:  # handed to the main thread, raised there
            self._error = e
        with self._lock:
            self._done.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            callback()

    @property
    def settled(self) -> bool:
        return self._done.is_set()

    def on_settled(self, callback: Callable[[], None]) -> None:
        """Run `callback` once the build is done (at once, here, if it already is)."""
        with self._lock:
            if not self._done.is_set():
                self._callbacks.append(callback)
                return
        callback()

    def wait(self) -> None:
        """Until the build is done. A SIGTERM/SIGHUP (`Terminated`) while waiting is noted by
        its handler and the wait goes on: the session is still closed and logged properly.
        Ctrl-C is raised to the caller."""
        from agent_cli.signals import Terminated

        self.start()
        while True:
            try:
                wait_on_main(self._done)  # (a Ctrl-C that lands on another thread still ends it)
                return
            except Terminated:
                continue

    def value_if_done(self) -> T | None:
        """The build's value when it finished without an error, else None (never waits)."""
        return self._value if self._done.is_set() and self._error is None else None

    def result(self) -> T:
        self.wait()
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        assert self._value is not None
        return self._value


@dataclass
class FirstInput:
    """What the person did at the prompt while the session was being built."""

    text: str = ""
    """What was typed and not yet sent (it goes back into the prompt)."""
    sent: str | None = None
    """A line sent with Enter (it is the first message, sent once)."""
    eof: bool = False
    """Ctrl-D (or SIGTERM/SIGHUP) at the prompt: the chat ends once the session is ready."""

    def take(self) -> tuple[str | None, bool, str]:
        """(the line sent, EOF, the text typed), each handed out once."""
        sent, eof, text = self.sent, self.eof, self.text
        self.sent, self.eof, self.text = None, False, ""
        return sent, eof, text


class _Ready:
    """The result a loading prompt gives when the build was done before anything was sent."""


READY = _Ready()
SIGNALLED = _Ready()
"""The result a loading prompt gives when SIGTERM or SIGHUP arrived (the chat ends)."""


class _Exiter:
    """Ends the running loading prompt from the builder's thread once the build is done, and
    from the signal handler (`signalled`) when SIGTERM or SIGHUP arrived."""

    def __init__(self, loading: Loading[Any], signals: TerminationSignals) -> None:
        self.loading = loading
        self.signals = signals
        self._lock = threading.Lock()
        self._app: Application[Any] | None = None
        self._loop: Any = None

    def pre_run(self, app: Application[Any]) -> None:
        """In the prompt's own loop, before its first frame: from here on it can be ended."""
        import asyncio

        loop = asyncio.get_running_loop()
        with self._lock:
            self._app, self._loop = app, loop
        # Callbacks run once the prompt waits for keys, after its first frame was drawn.
        loop.call_soon(self.loading.start)
        if self.loading.settled:  # done before this prompt started: end it at its first step
            loop.call_soon(self._exit, app, READY)
        if self.signals.received is not None:  # (after the stores `signalled` reads)
            loop.call_soon(self._exit, app, SIGNALLED)

    def finished(self) -> None:
        with self._lock:
            self._app, self._loop = None, None

    def settled(self) -> None:
        """The builder's callback."""
        with self._lock:
            app, loop = self._app, self._loop
        if app is not None and loop is not None:
            # (a RuntimeError: the loop closed meanwhile, so the prompt is over anyway)
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._exit, app, READY)

    def signalled(self) -> None:
        """The signal handler's waker: it runs in the main thread at any point, so it takes no
        lock; it only schedules the prompt's end in the prompt's own loop."""
        app, loop = self._app, self._loop
        if app is not None and loop is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._exit, app, SIGNALLED)

    @staticmethod
    def _exit(app: Application[Any], result: _Ready) -> None:
        future = getattr(app, "future", None)
        if app.is_running and future is not None and not future.done():
            app.erase_when_done = True  # the line is drawn again, with its text, afterwards
            app.exit(result=result)


def read_while_loading(ps: PromptSession[Any], loading: Loading[Any], message: str,
                       frame: FirstFrame, signals: TerminationSignals,
                       text: str = "") -> FirstInput:
    """Prompt on `frame`'s line (with `text` already typed) until the build is done or the
    person sends a line or leaves. Ctrl-C clears the line and prompts again, and on an empty
    line a second Ctrl-C in a row leaves (as Ctrl-D does), as at the REPL's prompt. The caller
    holds `signals` (`TerminationSignals.held`): SIGTERM or SIGHUP ends the
    prompt from its own loop, as Ctrl-D does."""
    from agent_cli.ui.line_editor import EXIT_HINT, EmptyLineInterrupt

    exiter = _Exiter(loading, signals)
    loading.on_settled(exiter.settled)
    armed = False
    """Ctrl-C was pressed on an empty line, and nothing since: a second one leaves."""
    signals.waker = exiter.signalled
    try:
        while not loading.settled and signals.received is None:
            frame.hand_over()
            typed = frame.take_typed()
            if typed:  # (read off the terminal by the frame: the editor gets them first)
                from prompt_toolkit.input.typeahead import store_typeahead

                store_typeahead(ps.app.input, typeahead(typed))
            try:
                line = ps.prompt(message, default=text,
                                 pre_run=lambda: exiter.pre_run(ps.app))
            except EmptyLineInterrupt:
                if armed:
                    return FirstInput(eof=True)
                armed, text = True, ""
                _say_dim(ps, EXIT_HINT)
                continue
            except KeyboardInterrupt:
                armed, text = False, ""
                continue
            except EOFError:
                return FirstInput(eof=True)
            finally:
                exiter.finished()
                ps.app.erase_when_done = False
            if line is SIGNALLED:
                break
            if isinstance(line, _Ready):
                return FirstInput(text=ps.default_buffer.text)
            return FirstInput(sent=line)
        if signals.received is not None:
            return FirstInput(eof=True)
        return FirstInput(text=text)
    finally:
        signals.waker = None
        if frame.on_screen:
            frame.erase()


def _say_dim(ps: PromptSession[Any], text: str) -> None:
    """A line of ours under the prompt (our own words, not from outside)."""
    from prompt_toolkit.formatted_text import FormattedText
    from prompt_toolkit.shortcuts import print_formatted_text

    print_formatted_text(FormattedText([("fg:ansibrightblack", text)]), output=ps.app.output)


def wait_with_status(loading: Loading[Any], frame: FirstFrame) -> bool:
    """After a line was sent (or Ctrl-D) before the session is ready: say so, and wait. The
    terminal is back in its normal mode meanwhile, so Ctrl-C interrupts the wait: False then
    (the line was not sent). SIGTERM and SIGHUP, held by the caller, do not: the session is
    still closed and logged once it exists."""
    if loading.settled:
        return True
    out = sys.stdout
    frame.cooked()  # first, so a Ctrl-C pressed once the status shows is a signal
    try:
        out.write(f"\x1b[2m{LOADING_STATUS}\x1b[0m\n")
        out.flush()
        loading.wait()
    except KeyboardInterrupt:
        out.write(f"\n\x1b[2m{NOT_SENT}\x1b[0m\n")
        out.flush()
        return False
    finally:
        frame.raw_again()
    return True
