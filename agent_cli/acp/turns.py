"""One ACP session's turns over an agent-cli Session: run a prompt, ask for permissions, cancel.

The turn runs on the process's main thread (the JSON-RPC reader is another thread). A call that
needs a yes blocks in `AcpApprover.decide` until the client answers session/request_permission
or the turn is cancelled. `session/cancel` resolves an open question as cancelled (the call and
the rest of the reply are denied, the turn ends); otherwise it interrupts the main thread the way
Ctrl-C does in the REPL, so the engine ends a running command's process group and answers every
call that did not finish. The interrupt is held while an update is being written, so it never
lands half way through a line.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import TYPE_CHECKING, Any

from agent_cli import events as ev
from agent_cli.acp import permission
from agent_cli.acp.updates import EventMapper

if TYPE_CHECKING:
    from agent_cli.acp.wire import Channel
    from agent_cli.calls import Call, Decision
    from agent_cli.loop import TurnResult
    from agent_cli.session import Session


class Turns:
    """The turn state of one session: what is running, and the open question if any."""

    def __init__(self, channel: Channel, via: str | None) -> None:
        self.channel = channel
        self.via = via
        """Who answers for the user: "acp:" and the client's name (recorded with decisions)."""
        self.session_id = ""
        self.session: Session | None = None
        self._lock = threading.Lock()
        self._state = "idle"
        """idle | running | asking"""
        self._cancelled = False
        self._wake: threading.Event | None = None
        self._holding = 0
        self._deferred = False
        self._answered: list[str] = []
        self.mapper: EventMapper | None = None
        self._main = threading.main_thread().ident

    # -- the sink --------------------------------------------------------------------------------

    def sink(self, event: ev.AnyEvent) -> None:
        """Every event of the session as its updates (called on the thread that emits it)."""
        if isinstance(event, ev.ToolResultEvent):
            self._answered.append(event.id)
        if self.mapper is None or not self.session_id:
            return
        updates = self.mapper(event)
        if not updates:
            return
        if threading.get_ident() != self._main:  # (a tool's worker thread: no interrupt here)
            for update in updates:
                self.update(update)
            return
        self._holding += 1
        try:
            for update in updates:
                self.update(update)
        finally:
            self._holding -= 1
        if self._deferred and not self._holding and self._state == "running":
            self._deferred = False
            raise KeyboardInterrupt

    def update(self, update: dict[str, Any]) -> None:
        self.channel.notify("session/update", {"sessionId": self.session_id, "update": update})

    # -- approvals -------------------------------------------------------------------------------

    def decide(self, call: Call) -> Decision:
        """The Approver protocol: ask the client about `call` and wait for its answer or a
        cancel."""
        with self._lock:
            if self._cancelled:
                return permission.cancelled(call, self.via)
            wake = threading.Event()
            self._wake, self._state = wake, "asking"
        try:
            pending = self.channel.request("session/request_permission",
                                           permission.question(self.session_id, call), done=wake)
            wake.wait()
        finally:
            with self._lock:
                self._wake = None
                if self._state == "asking":
                    self._state = "running"
        if self._cancelled:
            self.channel.forget(pending.id)
            return permission.cancelled(call, self.via)
        return permission.decision(call, pending.result if pending.error is None else None,
                                   self.via)

    # -- running and cancelling --------------------------------------------------------------

    def run(self, text: str) -> tuple[TurnResult | None, bool]:
        """Run one turn on the main thread: (its result, whether it was cancelled). None as the
        result: the interrupt came between the engine's steps (the calls are settled here)."""
        assert self.session is not None
        previous = signal.signal(signal.SIGINT, self._on_interrupt)
        with self._lock:
            self._cancelled, self._deferred, self._state = False, False, "running"
        self._answered = []
        result: TurnResult | None = None
        try:
            result = self.session.send(text)
        except KeyboardInterrupt:
            self._settle()
        finally:
            with self._lock:
                self._state = "idle"
            signal.signal(signal.SIGINT, previous)
        return result, self._cancelled

    def _settle(self) -> None:
        assert self.session is not None
        with self._lock:
            self._state = "idle"  # (no second interrupt while the calls are answered)
        self.session.settle_interrupted_turn(self._answered)

    def cancel(self) -> None:
        """session/cancel, from the reader thread."""
        with self._lock:
            if self._state == "idle":
                return
            self._cancelled = True
            if self._state == "asking" and self._wake is not None:
                self._wake.set()
                return
        if self._main is not None:
            signal.pthread_kill(self._main, signal.SIGINT)

    def _on_interrupt(self, signum: int, frame: FrameType | None) -> None:
        if self._state != "running":
            return  # the turn is over, or a question is open (cancel answers that itself)
        if self._holding:
            self._deferred = True
            return
        raise KeyboardInterrupt
