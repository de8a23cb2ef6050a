"""The engine: provider -> proposals -> validate -> approve -> run -> results.

It knows no terminal. It emits events and asks a Gate; the REPL, headless runs, tests and replay
are this same loop with other providers, approvers and event sinks.

Invariants kept here:
- every tool_use id in a reply gets exactly one tool_result, in the model's order, in one user
  message (failures, denials, limits and interrupts included): the calls of a reply are answered
  in tool_calls.py, and whatever is still waiting when a turn stops is answered by
  conversation.close_dangling, in the one place a turn stop is caught (`run_turn`);
- what runs is the validated, frozen call that was shown; its hash is checked again just before
  it runs;
- the loop is bounded: model requests per turn, per-tool timeouts, output caps, repeated failures;
- a cancel is a value: the turn's token (agent_cli/cancel.py) is looked at where the turn waits
  (the model's reply, a running tool, an approval question), and a wait ends the moment it is
  cancelled. No exception from a signal ever lands in here: the front end that owns the
  terminal turns Ctrl-C, Esc, SIGTERM and SIGHUP into `Session.cancel`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_cli import events as ev
from agent_cli.approval import Gate
from agent_cli.cancel import Abandoned, CancelToken, LinkedEvent, working_for
from agent_cli.conversation import (
    NOT_RUN_INTERRUPTED,
    History,
    add_user_text,
    close_dangling,
    keep_interrupted,
    tool_uses,
)
from agent_cli.errors import ModelFailed, ProviderError, TurnLimitReached, TurnStop, UserInterrupted
from agent_cli.providers.base import ModelRequest, ModelResponse, Provider
from agent_cli.redact import Redactor, default_redactor
from agent_cli.tool_calls import (
    INTERRUPTED,
    CallRunner,
    EffectRecorder,
    Emit,
    FailureTracker,
    Limits,
)
from agent_cli.tools.paths import protected_roots
from agent_cli.tools.registry import Registry
from agent_cli.turn import Turn, TurnResult
from agent_cli.write_faults import LogUnwritable

if TYPE_CHECKING:
    from agent_cli.sandbox.policy import Sandbox

NOT_RUN_NO_LOG = "not run: the session log could not be written, so nothing new may run"
"""The result of a call that did not run because its record could not be written first."""


RequestHook = Callable[[History, "str | None"], tuple[History, "str | None"]]
"""(messages, system) -> what is sent instead, applied in order before each model request (the
MCP sync, the context budget, project instructions); the history and the log are not changed."""


class Loop:
    """Drives one conversation: each user turn sends the history to the provider, turns every
    tool_use of the reply into exactly one tool_result (`tool_calls.CallRunner`) and asks again,
    until the model answers or a stop (errors.TurnStop) ends the turn. It owns no history: the
    caller's list is appended to, so a session, a test or eval keep the conversation. Every
    collaborator is given at construction; what belongs to one turn is its `turn.Turn`."""

    def __init__(
        self,
        provider: Provider,
        registry: Registry,
        gate: Gate,
        emit: Emit,
        *,
        workspace: Path,
        limits: Limits | None = None,
        system: str | None = None,
        hooks: Sequence[RequestHook] = (),
        sandbox: Sandbox | None = None,
        effects: EffectRecorder | None = None,
        redactor: Redactor | None = None,
        cost: Callable[[], float | None] | None = None,
        tool_choice: str = "auto",
        tool_choice_after_call: str = "auto",
        protected: Callable[[], dict[Path, str]] = protected_roots,
    ) -> None:
        self.provider = provider
        self.emit = emit
        self.limits = limits or Limits()
        self.system = system
        self.hooks = tuple(hooks)
        """Shape what is sent (see RequestHook), given at construction: nothing rewires them."""
        self.calls = CallRunner(registry=registry, gate=gate, emit=emit, workspace=workspace,
                                limits=self.limits, redactor=redactor or default_redactor(),
                                sandbox=sandbox, effects=effects, protected=protected)
        """The calls of a reply (tool_calls.py), with the same collaborators."""
        self.tool_choice = tool_choice
        """auto | any | none | a tool name (providers translate it). A forced one (any, a name)
        is sent with the first request of a turn, then auto (see `tool_choice_after_call`)."""
        self.tool_choice_after_call = tool_choice_after_call
        """auto: a forced choice returns to auto after the first request of a turn; keep: every
        request carries it."""
        self.cost = cost
        """Dollars spent so far in the session, for `limits.max_cost_usd` (the usage meter)."""

    @property
    def registry(self) -> Registry:
        return self.calls.registry

    @property
    def tool_calls(self) -> int:
        """Tool calls the model made in this session, for `limits.max_tool_calls`."""
        return self.calls.tool_calls

    # -- a user turn -------------------------------------------------------------------------

    def run_turn(self, history: History, text: str,
                 token: CancelToken | None = None) -> TurnResult:
        """One user turn: `text` joins `history`, and the turn runs until the model answers, a
        stop ends it, or `token` is cancelled. Every stop is caught here, once: the calls still
        waiting are answered, the stop is recorded, and its sentence is returned."""
        turn = Turn(token=token or CancelToken())
        self.emit(ev.UserMessage(text=text))
        add_user_text(history, text)
        try:
            reason = self._turn(history, turn)
        except TurnStop as stop:
            self._close(history, turn, NOT_RUN_NO_LOG if isinstance(stop, LogUnwritable)
                        else NOT_RUN_INTERRUPTED)
            if isinstance(stop, UserInterrupted):
                # A cut reply: the question stays, with the answer so far marked interrupted.
                cut = stop.during in ("model", "turn") and keep_interrupted(history, turn.so_far)
                self.emit(ev.Interrupt(during=stop.during,
                                       reply_so_far=turn.so_far if cut else None))
            elif isinstance(stop, ModelFailed):
                self.emit(ev.ErrorEvent(message=stop.message, kind=stop.kind))
            elif stop.notice is not None:
                # Said out loud: a cut or refused answer must not look like a finished one.
                self.emit(ev.Notice(message=stop.message, kind=stop.notice))
            return self._end(stop.reason, turn.text, turn.usage, stop.message,
                             shown=stop.notice is not None)
        return self._end(reason, turn.text, turn.usage)

    def _turn(self, history: History, turn: Turn) -> str:
        """Requests and calls until the model answers; returns its stop reason. Anything that
        ends the turn short of an answer raises a TurnStop."""
        failures = FailureTracker(self.limits.repeat_failures)
        for _request in range(self.limits.max_turns):
            self._check(turn)
            spent = self.budget_spent()
            if spent is not None:
                raise TurnLimitReached(spent, reason="budget", notice="budget")
            turn.during = "model"
            reply = self._reply_to(history, turn)
            turn.during = "turn"
            turn.so_far = ""  # the reply came whole: it joins the history as it is
            turn.proposed.clear()  # ids are unique within a reply, not across replies
            _add_usage(turn.usage, reply.usage)
            try:
                self.emit(ev.ModelReply(content=reply.content, stop_reason=reply.stop_reason,
                                        usage=reply.usage, model=reply.model))
            except LogUnwritable:
                # Kept in memory, chained: the history holds the reply too, so its calls are
                # answered "not run" in both.
                if reply.content:
                    history.append({"role": "assistant", "content": reply.content})
                raise
            if reply.content:
                # The API refuses an empty assistant message anywhere but at the very end.
                history.append({"role": "assistant", "content": reply.content})
            turn.text = reply.text() or turn.text
            uses = tool_uses(reply.content)
            if not uses:
                stop = reply.stop_reason or "end_turn"
                notice = STOP_NOTICES.get(stop)
                if notice is not None:
                    raise TurnLimitReached(notice.format(max_tokens=self.limits.max_tokens),
                                           reason=stop, notice=stop)
                return stop
            if reply.stop_reason == "max_tokens":
                self._close(history, turn, "not run: the reply was cut off at the max_tokens "
                            "limit while this call was being written, so its input may be "
                            "incomplete")
                raise TurnLimitReached("The model hit its output limit (max_tokens) in the middle "
                                       "of a tool call; that call was not run. Ask it to continue "
                                       "in smaller steps.", reason="max_tokens")
            self._check(turn)
            turn.during = "tool"
            self.calls.run_calls(turn, uses, failures)
            turn.during = "turn"
            self._close(history, turn, NOT_RUN_INTERRUPTED)
            self._after_reply(turn, failures)
        raise TurnLimitReached(f"Stopped after {self.limits.max_turns} model requests in this "
                               "turn (--max-turns). Send a message to let it continue.",
                               reason="max_turns")

    @staticmethod
    def _check(turn: Turn) -> None:
        """Between steps: a cancel that came meanwhile ends the turn here."""
        if turn.token.cancelled:
            raise UserInterrupted(INTERRUPTED[turn.during if turn.during in INTERRUPTED
                                              else "turn"], during=turn.during)

    def _reply_to(self, history: History, turn: Turn) -> ModelResponse:
        """The model's reply, checked before anything in it is believed: a failed request or a
        malformed reply is a ModelFailed, and nothing from it runs."""
        try:
            reply = self._ask_model(history, turn)
        except ProviderError as e:
            raise ModelFailed(str(e), kind=e.kind) from e
        except TurnStop:
            raise  # (the log refused a notice sent meanwhile: LogUnwritable)
        except Exception as e:  # a provider bug must not take the session and history down
            raise ModelFailed(f"The model request failed unexpectedly ({type(e).__name__}: {e}); "
                              "nothing from it was run. Send your message again.",
                              kind="internal") from e
        if _too_deep(reply.content, MAX_REPLY_DEPTH):
            raise ModelFailed(f"The model's reply was malformed (a value nested more than "
                              f"{MAX_REPLY_DEPTH} levels deep); nothing from it was run. Send "
                              "your message again.", kind="malformed_reply")
        _fix_ids(reply.content)
        return reply

    def _after_reply(self, turn: Turn, failures: FailureTracker) -> None:
        """Once every call of a reply is answered: the stops the person or the limits asked for."""
        held = turn.reply.held
        if held:
            self.emit(ev.Notice(kind="panel_limit", message=(
                f"{held} more call{'s' if held != 1 else ''} in this "
                f"reply {'were' if held != 1 else 'was'} not run without asking: "
                f"after a denial a reply opens at most {self.limits.max_panels_after_denial} "
                "panels (config max_panels_after_denial).")))
        if turn.reply.stopped:
            raise UserInterrupted("Stopped at the panel: that call and the rest of the reply "
                                  "were not run.", during="approval")
        if failures.tripped is not None:
            what = "failed" if failures.any_failed else "was called"
            raise TurnLimitReached(f"Stopped: {failures.tripped} {what} {failures.count} times "
                                   "in a row with the same input. Say how to proceed.",
                                   reason="repeated_failure")
        cap = self.limits.max_tool_calls
        if cap is not None and self.tool_calls >= cap:
            # No reply could use a tool any more: end now rather than ask for one.
            raise TurnLimitReached(self.budget_spent() or "Session budget reached.",
                                   reason="budget", notice="budget")

    def _close(self, history: History, turn: Turn, why: str) -> None:
        """Append the results of the last reply's calls: those given so far, and `why` (logged
        as each call's result) for every call still waiting."""
        closed = [(use, call_id) for use, call_id, found
                  in close_dangling(history, why, turn.answers) if found is None]
        turn.answers = {}
        self.calls.close_unanswered(turn, closed, why)

    def _end(self, reason: str, text: str, usage: dict[str, int],
             message: str | None = None, *, shown: bool = False) -> TurnResult:
        """`shown`: the message was already announced by a notice, so the turn_end event does
        not carry it a second time (the renderer would print it twice)."""
        self.emit(ev.TurnEnd(reason=reason, message=None if shown else message, usage=usage))
        return TurnResult(reason, text, message)

    def budget_spent(self) -> str | None:
        """Why the session's budget is used up (a sentence for the user), or None."""
        cap = self.limits.max_tool_calls
        if cap is not None and self.tool_calls >= cap:
            return (f"Session budget reached: {self.tool_calls} of {cap} tool calls "
                    "(max_tool_calls) used; the session ends here. Start a new session, or "
                    "raise --max-tool-calls, to go on.")
        limit = self.limits.max_cost_usd
        spent = self.cost() if self.cost is not None and limit is not None else None
        if limit is not None and spent is not None and spent >= limit:
            return (f"Session budget reached: ${spent:.4f} spent of ${limit:.4f} "
                    "(max_cost_usd); the session ends here. Start a new session, or raise "
                    "--max-cost-usd, to go on.")
        return None

    def _ask_model(self, history: History, turn: Turn) -> ModelResponse:
        messages, system = history, self.system
        for hook in self.hooks:
            messages, system = hook(messages, system)
        turn.choice_sent = self._choice_now(turn)
        turn.requests += 1
        turn.so_far = ""
        request = ModelRequest(
            messages=messages,
            tools=self.registry.specs(),
            system=system,
            max_tokens=self.limits.max_tokens,
            model=self.provider.model,
            tool_choice=turn.choice_sent,
        )
        return _cancellable(turn.token, lambda: self.provider.complete(
            request,
            lambda t: self._live(turn, ev.TextDelta(t)),
            lambda m: self._live(turn, ev.Notice(message=m, kind="retry")),
        ))

    def _live(self, turn: Turn, event: ev.AnyEvent) -> None:
        """What the provider reports while it streams (text, a retry's notice). Once the turn
        was cancelled the reply is abandoned: nothing more is shown or kept, and the stream stops
        here (`Abandoned` leaves the provider's reader, which closes the connection, so the
        server stops generating a reply nobody will read)."""
        if turn.token.cancelled:
            raise Abandoned(turn.token.reason)
        if isinstance(event, ev.TextDelta):
            turn.so_far += event.text
        elif isinstance(event, ev.Notice) and event.kind == "retry":
            turn.so_far = ""  # the request starts again: so does its text
        self.emit(event)

    def _choice_now(self, turn: Turn) -> str:
        """The tool choice of the next request. A forced choice makes the model call a tool
        whatever it has learnt; sent on every request, the model could never answer (an API that
        obeys it makes the turn end on the repeat or max_turns limit), so after the first
        request of a turn it is auto again, as the OpenAI Agents SDK does. `none` stays."""
        choice = self.tool_choice
        if choice in ("auto", "none") or self.tool_choice_after_call == "keep":
            return choice
        return choice if turn.requests == 0 else "auto"


def _cancellable(token: CancelToken, request: Callable[[], ModelResponse]) -> ModelResponse:
    """Run a model request (its stream, its retries and their pauses) so that a cancel ends the
    wait at once: the request runs on a thread of its own, and on cancel it is abandoned (its
    stream stops at its next piece of text, `Loop._live`, and its retry pause at once) while the
    turn stops with "interrupted"."""
    done = LinkedEvent()
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            with working_for(token):  # its retry pauses end, and no new attempt starts, on cancel
                box["reply"] = request()
        except BaseException as e:
            box["error"] = e
        finally:
            done.set()

    threading.Thread(target=target, name="agent-cli-model", daemon=True).start()
    # A cancel while the request ran stops the turn, also when its reply came in meanwhile.
    if not token.wait(done) or token.cancelled:
        raise UserInterrupted(INTERRUPTED["model"], during="model")
    if "error" in box:
        raise box["error"]
    reply: ModelResponse = box["reply"]
    return reply


STOP_NOTICES = {
    "max_tokens": ("The reply was cut off at the output limit (max_tokens {max_tokens}); the "
                   "answer above is incomplete. Ask the model to continue, or raise max_tokens "
                   "in your config."),
    "refusal": ("The model declined to answer this request (stop reason: refusal). Rephrase "
                "the request, or start a new conversation."),
}
"""Stop reasons of a reply without tool calls that end the turn short of an answer."""


MAX_REPLY_DEPTH = 128
"""Deeper than any tool input needs, and well inside what the log writer and the SDK's JSON
encoder can handle (a reply nested thousands deep would crash them)."""


def _too_deep(value: Any, limit: int) -> bool:
    """True when `value` nests lists or dicts more than `limit` levels (iterative: no recursion
    limit to hit on hostile input)."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list | tuple):
            children = item
        else:
            continue
        if depth >= limit:
            return True
        stack.extend((child, depth + 1) for child in children)
    return False


def _fix_ids(content: list[dict[str, Any]]) -> None:
    """Give a tool_use with a missing or repeated id a unique one, so that its result can be paired
    with it in the history (the API never sends such ids; a hand-written script may)."""
    # A made-up id must not collide with an id the model wrote, earlier or later in the reply.
    taken = {b.get("id") for b in content
             if b.get("type") == "tool_use" and isinstance(b.get("id"), str)}
    seen: set[str] = set()
    for i, block in enumerate(content):
        if block.get("type") != "tool_use":
            continue
        value = block.get("id")
        if not isinstance(value, str) or not value or value in seen:
            base = f"toolu_fixed_{i}_{value if isinstance(value, str) else ''}"
            fresh, n = base, 0
            while fresh in taken:
                n += 1
                fresh = f"{base}_{n}"
            block["id"] = fresh
            taken.add(fresh)
        seen.add(block["id"])


def _add_usage(total: dict[str, int], usage: dict[str, int]) -> None:
    for k, v in usage.items():
        total[k] = total.get(k, 0) + v
