"""Turns at a terminal: the front end that owns the keyboard and the signals.

The turn runs on its own thread (Session.prompt); this, the main thread, draws its events, asks
at its questions and is the one place where Ctrl-C, Esc, SIGTERM and SIGHUP become a cancel:
Ctrl-C and the two signals arrive here as a KeyboardInterrupt (Python raises it in the main
thread, signals.py for the two), the Esc watcher calls `cancel` from its thread. None of them
lands in the engine: it sees its token cancelled where it waits, and answers every pending call
itself, so nothing here settles a turn afterwards.

What is typed meanwhile is kept by the Esc watcher (ui/keys.TypedAhead): a line finished with
Enter is shown as `queued: …` here, on this thread, and the REPL sends it once the turn ends
(`take_typed`). Before every question all of it is dropped, and the screen says so: a line typed
ahead is never an answer.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from agent_cli import events as ev
from agent_cli.cancel import wait_on_main
from agent_cli.turn import Errand, Outbox

if TYPE_CHECKING:
    from agent_cli.approval import Approver
    from agent_cli.loop import TurnResult
    from agent_cli.session import Session
    from agent_cli.signals import TerminationSignals
    from agent_cli.ui.keys import EscWatcher

Sink = Callable[[ev.AnyEvent], None]
_P = ParamSpec("_P")
_R = TypeVar("_R")


QUEUED = "queued: "
"""How a line typed ahead is shown (the REPL sends it once the turn ends)."""


class Retry:
    """Returned by a REPL command that sends a message (/retry, /mcp prompt): the REPL sends
    `text` as the next message, through the same turn as a typed one."""

    def __init__(self, text: str) -> None:
        self.text = text


class TerminalTurns:
    """Drives a session's turns from the terminal's thread: `outbox` (given to the session as
    its front-end sink when it is made) carries the events here; `ask` is the panel; `keys`
    the Esc watcher; `signals` says which signal, if one came."""

    def __init__(self, deliver: Sink, ask: Approver, *, keys: EscWatcher | None = None,
                 signals: TerminationSignals | None = None) -> None:
        # The terminal's thread is the main one, also when the session is built on another.
        self.outbox = Outbox(deliver, owner=threading.main_thread().ident)
        self.ask = ask
        self.keys = keys
        self.signals = signals
        self.session: Session | None = None

    def attach(self, session: Session) -> None:
        """The session these turns drive (made with `outbox` among its sinks)."""
        self.session = session
        if self.keys is not None:
            self.keys.on_esc = lambda: self._esc(session)
            self.keys.on_line = self._queued

    def _queued(self, line: str) -> None:
        """A line typed ahead and finished (the watcher's thread): said on this thread."""
        self.outbox(ev.Notice(message=f"{QUEUED}{line}", kind="queued"))

    def typing(self) -> str:
        """The line being typed ahead now (the live region shows it)."""
        return self.keys.typed.text if self.keys is not None else ""

    def take_typed(self) -> tuple[list[str], str]:
        """What was typed during the turn: (lines finished with Enter, unfinished text)."""
        return self.keys.typed.take() if self.keys is not None else ([], "")

    def on_terminal(self, fn: Callable[_P, _R]) -> Callable[_P, _R]:
        """`fn` as the engine's thread may call it: it runs on the terminal's thread (a
        question undo asks while a turn applies a command's changes)."""

        def marshalled(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            return self.outbox.on_owner(lambda: fn(*args, **kwargs))

        return marshalled

    def run(self, text: str) -> TurnResult:
        """One turn, to its end; raises what the turn raised (a log that cannot be written)."""
        session = self.session
        assert session is not None, "attach() the session first"
        handle = session.prompt(text)
        # The end of the turn wakes this thread too: a turn that ends without an event (the log
        # refused its first record) must not leave it waiting for one.
        unlink = handle.finished.link(self.outbox.wake)
        with self._watching():
            while True:
                try:
                    if handle.done and not self.outbox.wake.is_set():
                        break
                    wait_on_main(self.outbox.wake)  # (Ctrl-C may land on another thread)
                    self._deliver_waiting(session)
                except KeyboardInterrupt:
                    self._cancel(session)
        unlink()
        self._deliver_waiting(session)
        result = handle.wait()
        assert result is not None
        return result

    def _deliver_waiting(self, session: Session) -> None:
        for item in self.outbox.take():
            try:
                if isinstance(item, Errand):
                    with self._asking():
                        item.run()  # a question undo asks (Outbox.on_owner)
                elif isinstance(item, ev.ApprovalNeeded):
                    self._question(session, item)
                else:
                    self.outbox.deliver(item)  # type: ignore[arg-type]
            except KeyboardInterrupt:
                self._cancel(session)

    def _question(self, session: Session, item: ev.ApprovalNeeded) -> None:
        """The panel for one call (`_asking`: the keyboard handed back, type-ahead dropped)."""
        with self._asking():
            self.outbox.deliver(item)
            decision = self.ask.decide(item.call)
        if self.signals is not None and self.signals.received is not None:
            self._cancel(session)  # the panel took the signal as "no answer"
        session.answer(item.call.id, decision)

    @contextlib.contextmanager
    def _asking(self) -> Iterator[None]:
        """Around every question of a turn: the keyboard handed back from the Esc watcher,
        and what was typed ahead dropped first (the watcher stopped: nothing joins it)."""
        with self.keys.paused() if self.keys is not None else contextlib.nullcontext():
            self._drop_typed()
            yield

    def _drop_typed(self) -> None:
        lines, text = self.take_typed()
        dropped = [*lines, text] if text.strip() else lines
        if dropped:
            self.outbox.deliver(ev.Notice(kind="typeahead", message=(
                "Dropped what was typed ahead (a question needs its own answer): "
                + " / ".join(dropped))))

    @staticmethod
    def _esc(session: Session) -> None:
        session.cancel("user")

    def _cancel(self, session: Session) -> None:
        reason = "user"
        if self.signals is not None and self.signals.received is not None:
            reason = self.signals.reason
        session.cancel(reason)

    @contextlib.contextmanager
    def _watching(self) -> Iterator[None]:
        with self.keys.active() if self.keys is not None else contextlib.nullcontext():
            yield
