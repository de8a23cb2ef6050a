"""One ACP session's turns over an agent-cli Session: run a prompt, ask for permissions, cancel.

The engine runs each turn on a worker thread of its own (`Session.prompt`); the main thread
waits for its result, and the JSON-RPC reader is a third thread. A call that needs a yes reaches
the sink as `ApprovalNeeded(call)`: it becomes a session/request_permission, and the client's
answer (on the reader thread) becomes `Session.answer(call.id, decision)`. `session/cancel` is
`Session.cancel`: the engine ends a running command's process group, answers a question that
waits as denied and the turn ends; a permission answer that comes later is ignored (the engine
holds no question of that id any more).
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

from agent_cli import events as ev
from agent_cli.acp import permission
from agent_cli.acp.updates import EventMapper

if TYPE_CHECKING:
    from collections.abc import Sequence

    from agent_cli.acp.wire import Channel, Pending
    from agent_cli.calls import Call
    from agent_cli.conversation import Attachment
    from agent_cli.session import Session
    from agent_cli.turn import TurnResult


class Turns:
    """The turn state of one session: whether it was cancelled, and its open questions."""

    def __init__(self, channel: Channel, via: str | None) -> None:
        self.channel = channel
        self.via = via
        """Who answers for the user: "acp:" and the client's name (recorded with decisions)."""
        self.session_id = ""
        self.session: Session | None = None
        self.mapper: EventMapper | None = None
        self._lock = threading.Lock()
        self._cancelled = False
        self._asked: dict[str, tuple[Call, int]] = {}
        """Open questions: call id -> the call and the request's id."""

    # -- the sink (called on the engine's thread) ------------------------------------------------

    def sink(self, event: ev.AnyEvent) -> None:
        if isinstance(event, ev.ApprovalNeeded):
            self._ask(event.call)
            return
        if self.mapper is None or not self.session_id:
            return
        for update in self.mapper(event):
            self.update(update)

    def update(self, update: dict[str, Any]) -> None:
        self.channel.notify("session/update", {"sessionId": self.session_id, "update": update})

    # -- approvals -------------------------------------------------------------------------------

    def _ask(self, call: Call) -> None:
        def answered(pending: Pending) -> None:
            with self._lock:
                open_ = self._asked.get(call.id)
                if open_ is None or open_[1] != pending.id:
                    return  # cancelled meanwhile: it was answered already
                del self._asked[call.id]
            result = pending.result if pending.error is None else None
            if self.session is not None:
                self.session.answer(call.id, permission.decision(call, result, self.via))

        with self._lock:
            pending = self.channel.request("session/request_permission",
                                           permission.question(self.session_id, call))
            self._asked[call.id] = (call, pending.id)
        pending.on_done = answered
        if pending.done.is_set():  # (resolved before the callback was in place: the client left)
            answered(pending)

    # -- running and cancelling --------------------------------------------------------------

    def run(self, text: str, attachments: Sequence[Attachment] = ()
            ) -> tuple[TurnResult | None, bool]:
        """Run one turn and wait for it: (its result, whether it was cancelled)."""
        assert self.session is not None
        with self._lock:
            self._cancelled = False
        handle = self.session.prompt(text, attachments)
        result = handle.wait()
        return result, self._cancelled

    def cancel(self) -> None:
        """session/cancel (from the reader thread, or a signal's helper thread)."""
        with self._lock:
            self._cancelled = True
            asked, self._asked = self._asked, {}
        for call, request_id in asked.values():
            self.channel.forget(request_id)
            if self.session is not None:  # (the user's no, with the editor's name on it)
                self.session.answer(call.id, permission.cancelled(call, self.via))
        if self.session is not None:
            self.session.cancel("acp")
