"""One user turn, and the questions it asks: the engine's half of the turn protocol.

A front end (the REPL, `run`, eval, replay's rerun, an editor over ACP) drives a session with
three commands, from any thread: `prompt` starts a turn, `answer` decides a pending call,
`cancel` ends the turn. Out come events (events.py), among them `ApprovalNeeded` with the exact
call a panel shows. This module holds what those commands act on:

- `Turn`: the state of one user turn (its cancel token, the results given so far, what the
  person did at this reply's questions), made fresh for each turn and passed down, so nothing of
  a turn outlives it on the loop;
- `Answers`: the pending questions, one record per call, answered by id and hash from any thread
  (a yes for another id, or for other arguments, is a denial), resolved as cancelled when the
  turn is;
- `TurnHandle`: a turn running on its own thread, for front ends that keep reading their input
  meanwhile (an editor sends `session/cancel` while the turn runs).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, TypeVar, cast

from agent_cli import events as ev
from agent_cli.calls import Approved, Call, Decision, Denied
from agent_cli.cancel import CancelToken, LinkedEvent, wait_on_main

if TYPE_CHECKING:
    from agent_cli.conversation import ToolResultBlock

@dataclass
class TurnResult:
    """How a user turn ended, for the caller (the REPL, `run`'s exit code, eval)."""

    reason: str
    """end_turn | max_turns | max_tokens | refusal | budget | interrupted | repeated_failure |
    error | <stop_reason>"""
    text: str = ""
    """The model's last text of the turn (the answer, when it finished)."""
    message: str | None = None
    """The sentence for the user when the turn stopped short of an answer."""


CANCELLED_QUESTION = "the turn was cancelled while this call waited for an answer"


@dataclass
class ReplyState:
    """What the person has done at the questions of the current reply."""

    panels: int = 0
    denials: int = 0
    held: int = 0
    """Write calls answered "too many after denial" without a question."""
    stopped: bool = False
    """The person answered `q`, Esc or Ctrl-C at a panel: the rest of the reply is not run."""


@dataclass
class Turn:
    """Everything one user turn has gathered, kept outside the loop's call stack so a stop
    anywhere still finds it."""

    token: CancelToken = field(default_factory=CancelToken)
    text: str = ""
    """The model's last text of the turn."""
    so_far: str = ""
    """The text of the reply streaming now (kept, marked interrupted, if the user cuts it)."""
    usage: dict[str, int] = field(default_factory=dict)
    during: str = "turn"
    """What is running, for the message of a cancel: model, tool, approval or turn."""
    answers: dict[str, ToolResultBlock] = field(default_factory=dict)
    """Results given so far to the calls of the current reply, by id, in order."""
    proposed: set[str] = field(default_factory=set)
    """Ids of the current reply already logged as proposed (ids are unique within a reply)."""
    reply: ReplyState = field(default_factory=ReplyState)
    choice_sent: str = "auto"
    """The tool choice of the request whose reply is being answered (calls outside it are
    refused)."""
    requests: int = 0
    """Model requests made in this turn."""
    repeat_note: str | None = None
    """Appended to the next successful result: the model repeated one call."""


class Answerer(Protocol):
    """Answers a call on the spot, or not at all (None: a person is asked). Every `Approver`
    (approval.py) is one that always answers."""

    def decide(self, call: Call) -> Decision | None: ...


class _Pending:
    def __init__(self, call: Call) -> None:
        self.call = call
        self.decision: Decision | None = None
        self.done = LinkedEvent()


class Answers:
    """The engine's approver: each question is a pending record (the call's id and hash),
    announced as `ApprovalNeeded` and answered by `answer` from any thread.

    `direct` answers on the spot, on the engine's thread, before anyone is asked (a scripted
    list, eval's answer file, "no one to ask", a rerun's recorded yeses); its decision goes
    through `answer` like any other. When it has none (None), the call is announced as
    `ApprovalNeeded` and waits for a front end's `answer` or the turn's cancel."""

    def __init__(self, emit: Callable[[ev.AnyEvent], None],
                 direct: Answerer | None = None) -> None:
        self._emit = emit
        self.direct = direct
        self._lock = threading.Lock()
        self._pending: dict[str, _Pending] = {}
        self._cancelled = False

    def begin_turn(self) -> None:
        """A new turn: questions may be asked again."""
        with self._lock:
            self._cancelled = False

    def decide(self, call: Call) -> Decision:
        pending = _Pending(call)
        with self._lock:
            if self._cancelled:
                return Denied(call.id, CANCELLED_QUESTION)
            self._pending[call.id] = pending
        try:
            given = self.direct.decide(call) if self.direct is not None else None
            if given is not None:
                self.answer(call.id, given)
            else:
                self._emit(ev.ApprovalNeeded(call))
            pending.done.wait()
        finally:
            with self._lock:
                self._pending.pop(call.id, None)
        assert pending.decision is not None
        return pending.decision

    def answer(self, call_id: str, decision: Decision) -> bool:
        """Decide the pending call `call_id`; False when no call of that id waits. A decision
        for another id, or a yes for other arguments than the ones shown, is a denial."""
        with self._lock:
            pending = self._pending.get(call_id)
            if pending is None or pending.done.is_set():
                return False
            call = pending.call
            if decision.id != call.id:
                decision = Denied(call.id, "decision was for another call", by="policy")
            elif isinstance(decision, Approved) and decision.args_hash != call.args_hash:
                decision = Denied(call.id, "approval did not match the arguments shown",
                                  by="policy")
            pending.decision = decision
        pending.done.set()
        return True

    def waiting(self) -> list[Call]:
        """The calls waiting for an answer now (at most one with today's loop)."""
        with self._lock:
            return [p.call for p in self._pending.values() if not p.done.is_set()]

    def cancel_all(self) -> None:
        """The turn was cancelled: every question waiting is answered "no" (the turn stops right
        after), and none is asked until the next turn."""
        with self._lock:
            self._cancelled = True
            waiting = [p for p in self._pending.values() if not p.done.is_set()]
            for p in waiting:
                p.decision = Denied(p.call.id, CANCELLED_QUESTION, stop_turn=True)
        for p in waiting:
            p.done.set()


class TurnHandle:
    """A turn running on its own thread. `wait` gives its TurnResult, or raises what the turn
    raised (a log that could not be written)."""

    def __init__(self, run: Callable[[], TurnResult], on_done: Callable[[], None]) -> None:
        self._run = run
        self._on_done = on_done
        self.finished = LinkedEvent()
        self.result: TurnResult | None = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._main, name="agent-cli-turn", daemon=True)

    def _main(self) -> None:
        try:
            self.result = self._run()
        except BaseException as e:  # handed to the waiter: it decides what the user sees
            self.error = e
        finally:
            self._on_done()
            self.finished.set()

    @property
    def done(self) -> bool:
        return self.finished.is_set()

    def wait(self, timeout: float | None = None) -> TurnResult | None:
        """The result once the turn ended (None when `timeout` passed first). On the main
        thread a signal interrupts it however long it waits (cancel.wait_on_main)."""
        if not wait_on_main(self.finished, timeout):
            return None
        if self.error is not None:
            raise self.error
        return self.result


class Outbox:
    """The sink of a front end that draws on a thread of its own (a terminal's main thread):
    events from the engine's thread wait here, in order, until that thread takes them
    (`next`); an event emitted on the owner's own thread (a slash command's notice between
    turns) goes straight to `deliver`, after whatever still waited.

    `on_owner` runs a function on the owner's thread for the engine and returns its result:
    the questions undo asks while applying a command's changes are drawn where the panel is."""

    def __init__(self, deliver: Callable[[ev.AnyEvent], None], *,
                 owner: int | None = None) -> None:
        self.deliver = deliver
        self.owner = owner if owner is not None else threading.get_ident()
        """The thread that draws (by default the one that made the outbox)."""
        self._lock = threading.Lock()
        self._items: list[object] = []
        self.wake = LinkedEvent()

    def __call__(self, event: ev.AnyEvent) -> None:
        if threading.get_ident() == self.owner:
            self.flush()
            self.deliver(event)
            return
        self._put(event)

    def _put(self, item: object) -> None:
        with self._lock:
            self._items.append(item)
        self.wake.set()

    def take(self) -> list[object]:
        """Everything waiting, oldest first (events, and `Errand`s to run)."""
        with self._lock:
            items, self._items = self._items, []
            self.wake.clear()
        return items

    def flush(self) -> None:
        """Deliver what waits (on the owner's thread)."""
        for item in self.take():
            if isinstance(item, Errand):
                item.run()
            else:
                self.deliver(item)  # type: ignore[arg-type]

    def on_owner(self, fn: Callable[[], _T]) -> _T:
        """`fn()` run on the owner's thread (at once when called there)."""
        if threading.get_ident() == self.owner:
            return fn()
        errand: Errand = Errand(fn)
        self._put(errand)
        errand.done.wait()
        if errand.error is not None:
            raise errand.error
        return cast(_T, errand.result)


_T = TypeVar("_T")


class Errand:
    """A function the engine's thread asked the owner's thread to run."""

    def __init__(self, fn: Callable[[], object]) -> None:
        self.fn = fn
        self.result: object = None
        self.error: BaseException | None = None
        self.done = threading.Event()

    def run(self) -> None:
        try:
            self.result = self.fn()
        except Exception as e:  # handed back to the engine's thread
            self.error = e
        except BaseException:
            # A signal on the owner's thread (its front end cancels the turn): the engine gets
            # a plain failure, the owner its interrupt.
            self.error = RuntimeError("interrupted before it was answered")
            raise
        finally:
            self.done.set()
