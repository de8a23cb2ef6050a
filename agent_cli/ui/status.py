"""What the terminal shows while a turn runs: a spinner with elapsed time while the model thinks or
a tool runs ("Esc to interrupt"), the answer streaming live, then the finished answer rendered as
Markdown; tool results as head and tail, with `/show N` to print one whole.

`TerminalView` is a sink that wraps the event Renderer: it owns the one live region of the screen
(Rich allows one Live at a time), stops it before anything else is printed (an approval panel
above all: it is shown only after `tool_proposed`, which stops the live region first), and hands
every event on. The loop knows nothing of it.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import TYPE_CHECKING, assert_never

from rich.console import (
    Console,
    ConsoleOptions,
    ConsoleRenderable,
    Group,
    RenderableType,
    RenderResult,
)
from rich.text import Text

from agent_cli import events as ev
from agent_cli.ui.safe_rich import safe, safe_line

if TYPE_CHECKING:
    from rich.live import Live

Sink = Callable[[ev.AnyEvent], None]

HEAD_LINES = 4
TAIL_LINES = 4
STREAM_TAIL_LINES = 12
"""Lines of the answer shown live while it streams (the whole answer is printed once done)."""


def head_tail(text: str, head: int = HEAD_LINES, tail: int = TAIL_LINES) -> tuple[str, int]:
    """The first and last lines of a tool result (errors are usually at the end) and how many
    lines were left out between them."""
    # split on "\n" only: other breaks (\r, U+2028, ...) stay visible tokens for the sanitiser
    lines = text.removesuffix("\n").split("\n")
    if len(lines) <= head + tail + 1:
        return "\n".join(lines), 0
    cut = len(lines) - head - tail
    return "\n".join([*lines[:head], f"… {cut} more lines …", *lines[-tail:]]), cut


class WaitLine:
    """`⠋ Waiting for the model · 3.2 s · Esc to interrupt`, re-rendered by Live's refresh."""

    FRAMES = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"

    def __init__(self, label: str, hint: str = "Esc to interrupt") -> None:
        self.label = label
        self.hint = hint
        self.started = time.monotonic()

    def line(self) -> Text:
        elapsed = time.monotonic() - self.started
        frame = self.FRAMES[int(elapsed * 10) % len(self.FRAMES)]
        return Text.assemble(safe(frame + " ", "cyan"), safe(self.label),
                             safe(f" · {elapsed:.1f} s · {self.hint}", "dim"))

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.line()


class _Streaming:
    """The tail of the answer as it arrives, then the spinner line."""

    def __init__(self, view: TerminalView) -> None:
        self.view = view

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        text = "".join(self.view.buffer)
        lines = text.split("\n")[-STREAM_TAIL_LINES:]
        yield safe("\n".join(lines), collapse_padding=False)
        if self.view.spinner is not None:
            yield self.view.spinner.line()


class ResultStore:
    """Every tool result of the session, numbered in the order they came, for `/show N`."""

    def __init__(self) -> None:
        self.results: list[ev.ToolResultEvent] = []
        self.effects: dict[str, ev.Effects] = {}
        """Each call's recorded change set, by call id (its diff shows on `/show`)."""

    def __call__(self, event: ev.AnyEvent) -> None:
        if isinstance(event, ev.ToolResultEvent):
            self.results.append(event)
        elif isinstance(event, ev.Effects) and event.changes:
            self.effects[event.id] = event

    def find(self, key: str) -> ev.ToolResultEvent | None:
        """By number (1 is the first result of the session), `last`, or tool_use id."""
        key = key.strip()
        if key in ("", "last"):
            return self.results[-1] if self.results else None
        if key.isdigit():
            n = int(key)
            return self.results[n - 1] if 1 <= n <= len(self.results) else None
        for result in reversed(self.results):
            if result.id == key:
                return result
        return None


LIVE_OUTPUT_LINES = 5
"""How many of a running command's last lines show under its spinner."""
LIVE_OUTPUT_CHARS = 4000


class _Running:
    """The spinner of a running tool with the last lines it printed, sanitised and dimmed."""

    def __init__(self, spinner: WaitLine, tail: str) -> None:
        self.spinner = spinner
        self.tail = tail

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.spinner.line()
        lines = self.tail.replace("\r\n", "\n").split("\n")
        if lines and not lines[-1]:
            lines.pop()
        for line in lines[-LIVE_OUTPUT_LINES:]:
            # a progress bar redraws its line with \r: show what it shows now
            yield safe_line("  │ " + line.rsplit("\r", 1)[-1], options.max_width - 1, "dim")


class _WithTyping:
    """A live region with the line typed ahead under it (read at each refresh)."""

    def __init__(self, inner: ConsoleRenderable, typing: Callable[[], str]) -> None:
        self.inner = inner
        self.typing = typing

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield self.inner
        typed = self.typing()
        if typed:
            width = max(options.max_width - 3, 10)
            yield safe_line("› " + typed[-width:], options.max_width - 1, "dim")


@contextmanager
def _ctrl_c_held() -> Iterator[None]:
    """Ctrl-C is held back (and acted on just after) while Rich starts or stops the live region:
    a KeyboardInterrupt inside Live.start or Live.stop leaves it half set up, and the next stop
    pops a render hook that was never pushed (IndexError, a traceback instead of the prompt).
    Python runs signal handlers in the main thread only, so only there is there anything to
    hold; masking the signal would not do, as another thread can take it for the process."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[FrameType | None] = []

    def hold(signum: int, frame: FrameType | None) -> None:
        held.append(frame)

    previous = signal.signal(signal.SIGINT, hold)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if held and callable(previous):
            previous(signal.SIGINT, held[0])  # the default handler raises KeyboardInterrupt


class TerminalView:
    """Spinner, live stream and Markdown answers around an event Renderer (see module doc)."""

    def __init__(self, renderer: Sink, console: Console, *, markdown: bool = True,
                 spinner: bool = True) -> None:
        self.renderer = renderer
        self.console = console
        self.markdown = markdown and console.is_terminal
        """Markdown on a terminal only: piped output is the raw text, never hard-wrapped."""
        self.spinner_on = spinner and console.is_terminal
        self.buffer: list[str] = []
        self.spinner: WaitLine | None = None
        self.results = ResultStore()
        self._live: Live | None = None
        self.output_tail = ""
        """The last part of what the running tool printed (its last lines show under the
        spinner; the whole output is in its result)."""
        self.typing: Callable[[], str] = lambda: ""
        """The line typed ahead so far (ui/turns.TerminalTurns.typing): shown under the spinner,
        so what is typed during a turn is seen as it is typed."""

    # -- the live region ---------------------------------------------------------------------

    def _show(self, renderable: ConsoleRenderable) -> None:
        if not self.console.is_terminal:
            return
        renderable = _WithTyping(renderable, self.typing)
        if self._live is None:
            from rich.live import Live

            live = Live(renderable, console=self.console, refresh_per_second=8,
                        transient=True, redirect_stdout=False, redirect_stderr=False)
            with _ctrl_c_held():
                live.start()
                self._live = live
        else:
            self._live.update(renderable)

    def stop(self) -> None:
        """Take the live region off the screen (before printing anything, and at turn end)."""
        self.spinner = None
        if self._live is not None:
            with _ctrl_c_held():
                live, self._live = self._live, None
                live.stop()

    def wait(self, label: str) -> None:
        if not self.spinner_on:
            return
        self.spinner = WaitLine(label)
        self._show(self.spinner)

    # -- the sink ----------------------------------------------------------------------------

    def __call__(self, event: ev.AnyEvent) -> None:
        match event:
            case ev.TextDelta():
                if not self.markdown:
                    self.stop()
                    self.renderer(event)
                    return
                self.buffer.append(event.text)
                if self.console.is_terminal:
                    if self.spinner is None and self.spinner_on:
                        self.spinner = WaitLine("Writing")
                    elif self.spinner is not None:
                        self.spinner.label = "Writing"  # the wait is over; the clock runs on
                    self._show(_Streaming(self))
            case ev.ModelReply():
                self.stop()
                self._flush_answer()
                self.renderer(event)
            case ev.UserMessage():
                self.stop()
                self.renderer(event)
                self.wait("Waiting for the model")
            case ev.ToolStarted():
                self.stop()
                self.renderer(event)
                self.output_tail = ""
                self.wait(f"Running {event.name}")
            case ev.ToolOutputDelta():
                self.output_tail = (self.output_tail + event.text)[-LIVE_OUTPUT_CHARS:]
                if self.spinner is not None:
                    self._show(_Running(self.spinner, self.output_tail))
            case ev.ToolResultEvent():
                self.stop()
                self.output_tail = ""
                self.results(event)
                self.renderer(event)
                _, cut = head_tail(event.content)
                if cut and not event.hidden:  # (the renderer's hidden-secrets line says /show)
                    self.console.print(Text(f"    /show {len(self.results.results):d} prints "
                                            "it whole", style="dim"))
                self.wait("Waiting for the model")
            case ev.Notice():
                if event.kind == "queued":
                    # a line typed ahead: printed above the live region, which stays
                    self.console.print(safe(event.message, "dim"))
                    return
                self.stop()
                self.renderer(event)
                if event.kind == "retry":
                    self.wait("Waiting for the model (retrying)")
            case ev.TurnEnd() | ev.Interrupt() | ev.ErrorEvent():
                self.stop()
                self._flush_answer()
                self.renderer(event)
            case (ev.SessionStart() | ev.SessionEnd() | ev.ToolProposed() | ev.ToolInvalid()
                  | ev.Approval() | ev.Effects() | ev.Undo() | ev.ApprovalNeeded()):
                self.stop()  # (before a panel too: it draws below, with the keyboard)
                self.renderer(event)
            case _:
                assert_never(event)

    def _flush_answer(self) -> None:
        """Print what streamed, now complete, as Markdown (once; the buffer is then empty)."""
        text = "".join(self.buffer)
        self.buffer.clear()
        if not text.strip():
            return
        from agent_cli.ui.markdown import render_answer

        self.console.print(render_answer(text))


def show_result(result: ev.ToolResultEvent) -> RenderableType:
    """One tool result whole, sanitised (for `/show N`)."""
    mark = Text("✗ " if result.is_error else "✓ ", style="red" if result.is_error else "green")
    title = Text.assemble(mark, safe(result.name, "bold"), (f"  {result.duration:.2f} s  ", "dim"),
                          safe(result.id, "dim"))
    return Group(title, safe(result.whole(), collapse_padding=False))

