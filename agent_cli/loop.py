"""The engine: provider -> proposals -> validate -> approve -> run -> results.

It knows no terminal. It emits events and asks a Gate; the REPL, headless runs, tests and replay
are this same loop with other providers, approvers and event sinks.

Invariants kept here:
- every tool_use id in a reply gets exactly one tool_result, in the model's order, in one user
  message (failures, denials, limits and interrupts included);
- what runs is the validated, frozen call that was shown; its hash is checked again just before
  it runs;
- the loop is bounded: model requests per turn, per-tool timeouts, output caps, repeated failures.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from agent_cli import events as ev
from agent_cli.approval import ApprovalRequest, Approved, Denied, Gate, path_arg_names
from agent_cli.config import default_of
from agent_cli.errors import ProviderError, ToolFailed
from agent_cli.providers.base import ModelRequest, ModelResponse, Provider
from agent_cli.tools.base import ToolContext, ToolOutput, canonical_json
from agent_cli.tools.paths import protected_roots
from agent_cli.tools.registry import CallRejected, Registry, ValidCall

Emit = Callable[[ev.AnyEvent], None]

INTERRUPT_GRACE_S = 5.0
TIMEOUT_GRACE_S = 2.0


@dataclass
class Limits:
    max_turns: int = default_of("max_turns")
    """Model requests within one user turn."""
    max_tokens: int = default_of("max_tokens")
    tool_timeout_s: float = default_of("tool_timeout_s")
    output_cap: int = default_of("output_cap")
    """Characters of one tool result sent back to the model (head and tail kept)."""
    repeat_failures: int = default_of("repeat_failures")
    max_read_bytes: int = default_of("max_read_bytes")
    max_panels_after_denial: int = default_of("max_panels_after_denial")
    """Once the user has denied a call in a reply, at most this many panels open for that reply;
    the rest are answered without asking (approval fatigue is how a wall of calls gets a yes)."""
    max_tool_calls: int | None = None
    """Tool calls in the whole session (every call the model made counts, run or not)."""
    max_cost_usd: float | None = None
    """Dollars the whole session may spend (Loop.cost says how much it has)."""


class EffectRecorder(Protocol):
    """Records what approved calls change, so they can be undone (agent_cli/undo). The loop only
    calls it around an approved write call; it never raises and knows no terminal."""

    def notes(self, call: ValidCall) -> dict[str, str]:
        """Extra panel rows before the question (what undo will not cover)."""
        ...

    def before(self, call: ValidCall) -> object:
        """Snapshot taken after the yes, right before the call runs."""
        ...

    def after(self, token: object, finished: bool) -> list[ev.Event]:
        """Events (an `effects` record) once the call returned, timed out or was interrupted."""
        ...


REPEAT_NOTE_AFTER = 3
"""The same successful call this many times in a row gets a note appended to its result."""


@dataclass
class TurnResult:
    reason: str
    """end_turn | max_turns | max_tokens | refusal | budget | interrupted | repeated_failure |
    error | <stop_reason>"""
    text: str = ""
    message: str | None = None


def cap_output(text: str, cap: int) -> tuple[str, bool]:
    """Keep the head and tail of a long result and say how much was cut."""
    if len(text) <= cap:
        return text, False
    head = cap * 2 // 3
    tail = cap - head
    cut = len(text) - head - tail
    note = f"\n\n[... {cut} characters cut from the middle of this output (cap {cap}) ...]\n\n"
    return text[:head] + note + text[-tail:], True


@dataclass
class _Turn:
    """What one user turn has gathered so far (kept outside `_turn` so an interrupt sees it)."""

    text: str = ""
    usage: dict[str, int] = field(default_factory=dict)


TOO_MANY_AFTER_DENIAL = "not run: too many calls in one reply after denials"
STOPPED_AT_PANEL = "not run: the user stopped the turn at an earlier panel"


@dataclass
class _ReplyState:
    """What the person has done at the panels of the current reply."""

    panels: int = 0
    denials: int = 0
    held: int = 0
    """Write calls answered TOO_MANY_AFTER_DENIAL without a panel."""
    stopped: bool = False
    """The person answered `q`, Esc or Ctrl-C at a panel: the rest of the reply is not run."""


class _Interrupted(Exception):
    def __init__(self, after_s: float) -> None:
        self.after_s = after_s


RequestHook = Callable[[list[dict[str, Any]], "str | None"],
                       tuple[list[dict[str, Any]], "str | None"]]
"""(messages, system) -> what is sent instead, applied in order before each model request (the
MCP sync, the context budget, project instructions); the history and the log are not changed."""


class Loop:
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
    ) -> None:
        self.provider = provider
        self.registry = registry
        self.gate = gate
        self.emit = emit
        self.workspace = workspace
        self.limits = limits or Limits()
        self.system = system
        self.usage: dict[str, int] = {}
        self._proposed: set[str] = set()
        self._reply = _ReplyState()
        self.hooks = tuple(hooks)
        """Shape what is sent (see RequestHook), given at construction: nothing rewires them."""
        self.sandbox: Any = None
        """The session's agent_cli.sandbox.Sandbox: handed to tools, recorded per call."""
        self.effects: EffectRecorder | None = None
        """Snapshots around approved write calls for undo; None records nothing."""
        self.tool_choice = "auto"
        """auto | any | none | a tool name, sent with every request (providers translate it)."""
        self.cost: Callable[[], float | None] | None = None
        """Dollars spent so far in the session, for `limits.max_cost_usd` (the usage meter)."""
        self.tool_calls = 0
        """Tool calls the model made in this session, for `limits.max_tool_calls`."""
        self._repeat_note: str | None = None
        """Appended to the next successful result: the model repeated one call (see _run_calls)."""

    # -- a user turn -------------------------------------------------------------------------

    def run_turn(self, history: list[dict[str, Any]], text: str) -> TurnResult:
        self.emit(ev.UserMessage(text=text))
        add_user_text(history, text)
        turn = _Turn()
        try:
            return self._turn(history, turn)
        except KeyboardInterrupt:
            # Ctrl-C between the steps the loop watches (say while an event was being written):
            # whatever the last reply asked for is answered, so the history stays valid.
            self._answer_pending(history)
            self.emit(ev.Interrupt(during="turn"))
            return self._end("interrupted", turn.text, turn.usage,
                             "Interrupted; calls that had not run yet were not run.")

    def _turn(self, history: list[dict[str, Any]], turn: _Turn) -> TurnResult:
        failures = _FailureTracker(self.limits.repeat_failures)
        for _request in range(self.limits.max_turns):
            spent = self.budget_spent()
            if spent is not None:
                self.emit(ev.Notice(message=spent, kind="budget"))
                return self._end("budget", turn.text, turn.usage, spent, shown=True)
            try:
                reply = self._ask_model(history)
            except KeyboardInterrupt:
                self.emit(ev.Interrupt(during="model"))
                return self._end("interrupted", turn.text, turn.usage,
                                 "Interrupted while the model was replying; nothing was run.")
            except ProviderError as e:
                self.emit(ev.ErrorEvent(message=str(e), kind=e.kind))
                return self._end("error", turn.text, turn.usage, str(e))
            except Exception as e:  # a provider bug must not take the session and history down
                msg = (f"The model request failed unexpectedly ({type(e).__name__}: {e}); "
                       "nothing from it was run. Send your message again.")
                self.emit(ev.ErrorEvent(message=msg, kind="internal"))
                return self._end("error", turn.text, turn.usage, msg)
            if _too_deep(reply.content, MAX_REPLY_DEPTH):
                msg = (f"The model's reply was malformed (a value nested more than "
                       f"{MAX_REPLY_DEPTH} levels deep); nothing from it was run. Send your "
                       "message again.")
                self.emit(ev.ErrorEvent(message=msg, kind="malformed_reply"))
                return self._end("error", turn.text, turn.usage, msg)
            _fix_ids(reply.content)
            self._proposed.clear()  # ids are unique within a reply, not across replies
            _add_usage(turn.usage, reply.usage)
            _add_usage(self.usage, reply.usage)
            self.emit(ev.ModelReply(content=reply.content, stop_reason=reply.stop_reason,
                                    usage=reply.usage, model=reply.model))
            if reply.content:
                # The API refuses an empty assistant message anywhere but at the very end.
                history.append({"role": "assistant", "content": reply.content})
            turn.text = reply.text() or turn.text
            uses = reply.tool_uses()
            if not uses:
                stop = reply.stop_reason or "end_turn"
                notice = STOP_NOTICES.get(stop)
                if notice is not None:
                    # Said out loud: a cut or refused answer must not look like a finished one.
                    msg = notice.format(max_tokens=self.limits.max_tokens)
                    self.emit(ev.Notice(message=msg, kind=stop))
                    return self._end(stop, turn.text, turn.usage, msg, shown=True)
                return self._end(stop, turn.text, turn.usage)
            if reply.stop_reason == "max_tokens":
                results = [self._not_run(u, i, "not run: the reply was cut off at the max_tokens "
                                         "limit while this call was being written, so its input "
                                         "may be incomplete") for i, u in enumerate(uses)]
                history.append({"role": "user", "content": results})
                return self._end("max_tokens", turn.text, turn.usage,
                                 "The model hit its output limit (max_tokens) in the middle of a "
                                 "tool call; that call was not run. Ask it to continue in "
                                 "smaller steps.")
            results, interrupted = self._run_calls(uses, failures)
            history.append({"role": "user", "content": results})
            if self._reply.held:
                self.emit(ev.Notice(kind="panel_limit", message=(
                    f"{self._reply.held} more call{'s' if self._reply.held != 1 else ''} in this "
                    f"reply {'were' if self._reply.held != 1 else 'was'} not run without asking: "
                    f"after a denial a reply opens at most {self.limits.max_panels_after_denial} "
                    "panels (config max_panels_after_denial).")))
            if self._reply.stopped:
                self.emit(ev.Interrupt(during="approval"))
                return self._end("interrupted", turn.text, turn.usage,
                                 "Stopped at the panel: that call and the rest of the reply were "
                                 "not run.")
            if interrupted:
                self.emit(ev.Interrupt(during="tool"))
                return self._end("interrupted", turn.text, turn.usage,
                                 "Interrupted; the remaining calls were not run.")
            if failures.tripped is not None:
                what = "failed" if failures.any_failed else "was called"
                return self._end("repeated_failure", turn.text, turn.usage,
                                 f"Stopped: {failures.tripped} {what} {failures.count} times "
                                 "in a row with the same input. Say how to proceed.")
            cap = self.limits.max_tool_calls
            if cap is not None and self.tool_calls >= cap:
                # No reply could use a tool any more: end now rather than ask for one.
                spent = self.budget_spent() or "Session budget reached."
                self.emit(ev.Notice(message=spent, kind="budget"))
                return self._end("budget", turn.text, turn.usage, spent, shown=True)
        return self._end("max_turns", turn.text, turn.usage,
                         f"Stopped after {self.limits.max_turns} model requests in this turn "
                         "(--max-turns). Send a message to let it continue.")

    def _answer_pending(self, history: list[dict[str, Any]]) -> None:
        """If the last message is an assistant reply with tool calls, answer each one."""
        if not history or history[-1].get("role") != "assistant":
            return
        content = history[-1].get("content")
        uses = [b for b in content if isinstance(b, dict) and b.get("type") == "tool_use"] \
            if isinstance(content, list) else []
        if uses:
            history.append({"role": "user", "content": [
                self._not_run(u, i, "not run: the user interrupted the turn")
                for i, u in enumerate(uses)]})

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

    def _ask_model(self, history: list[dict[str, Any]]) -> ModelResponse:
        messages, system = history, self.system
        for hook in self.hooks:
            messages, system = hook(messages, system)
        request = ModelRequest(
            messages=messages,
            tools=self.registry.specs(),
            system=system,
            max_tokens=self.limits.max_tokens,
            model=self.provider.model,
            tool_choice=self.tool_choice,
        )
        return self.provider.complete(
            request,
            lambda t: self.emit(ev.TextDelta(t)),
            lambda m: self.emit(ev.Notice(message=m, kind="retry")),
        )

    # -- tool calls --------------------------------------------------------------------------

    def _run_calls(
        self, uses: list[dict[str, Any]], failures: _FailureTracker
    ) -> tuple[list[dict[str, Any]], bool]:
        results: list[dict[str, Any]] = []
        self._reply = _ReplyState()
        for i, use in enumerate(uses):
            if self._reply.stopped:
                results.append(self._not_run(use, i, STOPPED_AT_PANEL))
                continue
            cap = self.limits.max_tool_calls
            if cap is not None and self.tool_calls >= cap:
                results.append(self._not_run(use, i, f"not run: the session's budget of {cap} "
                                             "tool calls (max_tool_calls) is used up"))
                continue
            self.tool_calls += 1
            repeats = failures.repeats_if_ok(str(use.get("name")), use.get("input"))
            self._repeat_note = None if repeats < REPEAT_NOTE_AFTER else (
                f"\n\n[agent-cli note: this is the same {use.get('name')} call with the same "
                f"input {repeats} times in a row; repeating it is unlikely to tell you anything "
                "new. Use the result above, or try something different.]")
            try:
                result = self._one_call(use, i)
            except _Interrupted as stop:
                call_id = _use_id(use, i)
                msg = f"interrupted by the user after running {stop.after_s:.1f} s; outcome unknown"
                results.append(self._result(call_id, str(use.get("name")), msg, True,
                                            stop.after_s))
                for j in range(i + 1, len(uses)):
                    results.append(self._not_run(uses[j], j, "not run: the user interrupted "
                                                 "the turn before this call"))
                return results, True
            except KeyboardInterrupt:
                for j in range(i, len(uses)):
                    results.append(self._not_run(uses[j], j, "not run: the user interrupted "
                                                 "the turn before this call"))
                return results, True
            failures.record(str(use.get("name")), use.get("input"), bool(result.get("is_error")))
            results.append(result)
            if failures.tripped is not None:
                # A wall of identical failing calls in one reply must not become a wall of
                # panels (approval fatigue): the rest are answered without running or asking.
                for j in range(i + 1, len(uses)):
                    what = "failed" if failures.any_failed else "been made"
                    results.append(self._not_run(uses[j], j, "not run: the same call had just "
                                                 f"{what} {failures.count} times in a row, so "
                                                 "the turn stopped"))
                break
        return results, False

    def _one_call(self, use: dict[str, Any], index: int) -> dict[str, Any]:
        call_id = _use_id(use, index)
        name = use.get("name")
        raw_input = use.get("input")
        self._propose(call_id, name, raw_input)
        try:
            call = self.registry.validate(call_id, name, raw_input)
        except CallRejected as e:
            self.emit(ev.ToolInvalid(id=call_id, name=str(name), reason=e.reason))
            return self._result(call_id, str(name), e.reason, True, 0.0)
        ctx = self._context(call)
        preview = self._preview(call, ctx)
        extra = dict(call.tool.extra_panel)
        if self.effects is not None and call.tool.effect != "read":
            extra.update(self.effects.notes(call))
        # The approver and the log each get their own copy of the shown arguments: nothing an
        # approver does to its dict can change what is logged, and neither changes what runs.
        order = _declared_order(call.tool.schema())
        request = ApprovalRequest(
            call_id=call_id,
            name=call.tool.name,
            effect=call.tool.effect,
            args=_in_order(call.shown_args(), order),
            args_hash=call.args_hash,
            preview=preview,
            description=call.tool.description,
            source=call.tool.source,
            extra=dict(extra),
            arg_order=order,
            path_args=path_arg_names(call.tool.schema()),
            workspace=str(self.workspace),
        )
        reply = self._reply
        if (reply.denials and reply.panels >= self.limits.max_panels_after_denial
                and self.gate.would_ask(request)):
            reply.held += 1
            decision: Approved | Denied = Denied(call_id, TOO_MANY_AFTER_DENIAL, by="policy")
        else:
            decision = self.gate.decide(request)
        if decision.by == "user":
            reply.panels += 1
            if isinstance(decision, Denied):
                reply.denials += 1
                reply.stopped = reply.stopped or decision.stop_turn
        approved = isinstance(decision, Approved)
        reason = None if isinstance(decision, Approved) else decision.reason
        self.emit(ev.Approval(id=call_id, name=call.tool.name, effect=call.tool.effect,
                              decision="approved" if approved else "denied", by=decision.by,
                              args_hash=call.args_hash, reason=reason,
                              args=_in_order(call.shown_args(), order),
                              preview=preview, panel_extra=extra))
        if not approved:
            if decision.by == "user":
                msg = "The user denied this call."
                if reason:
                    msg += f" Their reason: {reason}"
            elif reason and reason.startswith(("refused ", "not run: ")):
                msg = reason if reason.startswith("not run: ") else f"This call was {reason}."
            else:
                msg = f"This call was refused: {reason}."
            return self._result(call_id, call.tool.name, msg, True, 0.0)
        return self._execute(call, ctx)

    def _context(self, call: ValidCall) -> ToolContext:
        timeout = call.tool.timeout_s or self.limits.tool_timeout_s
        return ToolContext(workspace=self.workspace, timeout_s=timeout,
                           output_cap=self.limits.output_cap,
                           max_read_bytes=self.limits.max_read_bytes, sandbox=self.sandbox,
                           protected=tuple(protected_roots()),
                           on_output=lambda text: self.emit(ev.ToolOutputDelta(call.id, text)))

    def _preview(self, call: ValidCall, ctx: ToolContext) -> str | None:
        if call.tool.effect == "read":
            return None
        # The hooks get their own copy: nothing they do to it can change the call that runs.
        args = call.args.model_copy(deep=True) if call.args is not None else None
        try:
            if call.tool.snapshot is not None:
                ctx.snapshot = call.tool.snapshot(args, ctx)
            if call.tool.preview is not None:
                return call.tool.preview(args, ctx)
        except Exception as e:  # a broken preview must not hide the call
            return f"(no preview: {type(e).__name__}: {e})"
        return None

    def _execute(self, call: ValidCall, ctx: ToolContext) -> dict[str, Any]:
        ran = call.args.model_dump(mode="json") if call.args is not None else None
        if ran is not None and self.registry.args_hash(ran) != call.args_hash:
            msg = "refused: the arguments changed after they were shown"
            return self._result(call.id, call.tool.name, msg, True, 0.0)
        token = self.effects.before(call) if self.effects is not None and \
            call.tool.effect != "read" else None
        finished = threading.Event()
        try:
            out, duration = self._run_tool(call, ctx, finished)
        finally:
            # Before the result, also when the call timed out or was interrupted.
            if self.effects is not None and token is not None:
                for event in self.effects.after(token, finished.is_set()):
                    self.emit(event)
        return self._result(call.id, call.tool.name, out.content, out.is_error, duration,
                            out.images)

    def _run_tool(self, call: ValidCall, ctx: ToolContext,
                  finished: threading.Event) -> tuple[ToolOutput, float]:
        self.emit(ev.ToolStarted(id=call.id, name=call.tool.name,
                                 sandbox=None if self.sandbox is None
                                 else self.sandbox.record_for(call.args)))
        start = time.monotonic()
        box: dict[str, Any] = {}

        # Completion is signalled by an Event, not Thread.join: on CPython 3.11 a join that was
        # interrupted by Ctrl-C makes the next join return at once, so the grace period for the
        # tool to stop would be skipped.

        def target() -> None:
            try:
                box["out"] = call.tool.run(call.args if call.args is not None
                                           else call.shown_args(), ctx)
            except BaseException as e:
                box["exc"] = e
            finally:
                finished.set()

        worker = threading.Thread(target=target, name=f"tool-{call.tool.name}", daemon=True)
        # A tool that enforces its own timeout (run_command) gets a moment to report it itself.
        grace = min(TIMEOUT_GRACE_S, ctx.timeout_s)
        try:
            worker.start()  # inside the try: a Ctrl-C right after the start still cancels it
            finished.wait(ctx.timeout_s + grace)
        except KeyboardInterrupt:
            ctx.cancel.set()
            finished.wait(INTERRUPT_GRACE_S)
            raise _Interrupted(time.monotonic() - start) from None
        duration = time.monotonic() - start
        if not finished.is_set():
            ctx.cancel.set()
            out = ToolOutput(self._timed_out(call, ctx), True)
        elif isinstance(box.get("exc"), KeyboardInterrupt):
            # Ctrl-C seen by the tool itself (e.g. a child process it waited on) ends the turn
            # like a Ctrl-C seen here.
            raise _Interrupted(duration)
        elif "exc" in box:
            exc = box["exc"]
            if isinstance(exc, ToolFailed | ValueError | OSError) or hasattr(exc, "exit_code"):
                out = ToolOutput(f"{call.tool.name} failed: {exc}", True)
            else:
                out = ToolOutput(f"{call.tool.name} failed: {type(exc).__name__}: {exc}", True)
        else:
            raw = box.get("out")
            out = raw if isinstance(raw, ToolOutput) else ToolOutput(str(raw if raw is not None
                                                                         else ""))
            if not out.is_error and call.tool.verify is not None:
                try:
                    problem = call.tool.verify(call.args, ctx, raw)
                except Exception as e:
                    problem = f"{type(e).__name__}: {e}"
                if problem:
                    out = ToolOutput(f"{out.content}\nBut the effect could not be confirmed: "
                                     f"{problem}", True)
        return out, duration

    def _timed_out(self, call: ValidCall, ctx: ToolContext) -> str:
        """What a timeout means: the call may have done all, part or none of its work. For a
        write tool with a verify hook, the hook says what it finds now."""
        msg = (f"timed out after {ctx.timeout_s:g} s; its effect is unknown (the tool was asked "
               "to stop)")
        if call.tool.effect != "write" or call.tool.verify is None:
            return msg
        try:
            problem = call.tool.verify(call.args, ctx, None)
        except Exception as e:
            problem = f"the check itself failed ({type(e).__name__}: {e})"
        if problem:
            return f"{msg}. Checked after the timeout: {problem}"
        return f"{msg}. Checked after the timeout: the intended effect is in place."

    def _result(self, call_id: str, name: str, content: str, is_error: bool,
                duration: float, images: list[dict[str, str]] | None = None) -> dict[str, Any]:
        if not is_error and self._repeat_note:
            content += self._repeat_note  # logged and sent alike
        self._repeat_note = None
        capped, truncated = cap_output(content, self.limits.output_cap)
        self._emit_result(call_id, name, capped, is_error, duration, truncated)
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": capped}
        if images:  # image blocks beside the text (the Anthropic shape; providers convert it)
            block["content"] = [{"type": "text", "text": capped}, *(
                {"type": "image", "source": {"type": "base64", "media_type": i["media_type"],
                                             "data": i["data"]}} for i in images)]
        if is_error:
            block["is_error"] = True
        return block

    def _emit_result(self, call_id: str, name: str, content: str, is_error: bool,
                     duration: float, truncated: bool) -> None:
        self.emit(ev.ToolResultEvent(id=call_id, name=name, is_error=is_error, content=content,
                                     duration=round(duration, 6), truncated=truncated))

    def _propose(self, call_id: str, name: Any, raw_input: Any) -> None:
        """Every call the model made is logged as a proposal once, run or not."""
        if call_id not in self._proposed:
            self._proposed.add(call_id)
            self.emit(ev.ToolProposed(id=call_id, name=str(name), input=raw_input))

    def _not_run(self, use: dict[str, Any], index: int, why: str) -> dict[str, Any]:
        call_id = _use_id(use, index)
        self._propose(call_id, use.get("name"), use.get("input"))
        return self._result(call_id, str(use.get("name")), why, True, 0.0)


class _FailureTracker:
    """The same tool with the same input N times in a row trips it: failing again and again, or
    succeeding again and again (a loop that re-reads one file learns nothing new either). A
    success after failures of the same call starts the count afresh."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.last: str | None = None
        self.last_failed = False
        self.count = 0
        self.any_failed = False
        self.tripped: str | None = None

    def repeats_if_ok(self, name: str, raw_input: Any) -> int:
        """How many identical successful calls in a row this one makes, if it succeeds."""
        sig = name + "\x00" + canonical_json(raw_input)
        return self.count + 1 if sig == self.last and not self.last_failed else 1

    def record(self, name: str, raw_input: Any, failed: bool) -> None:
        sig = name + "\x00" + canonical_json(raw_input)
        same = sig == self.last and failed == self.last_failed
        self.count = self.count + 1 if same else 1
        self.last, self.last_failed = sig, failed
        # A repeated success is first pointed out to the model (REPEAT_NOTE_AFTER); the stop
        # comes when it repeats the call once more after that note.
        limit = self.limit if failed else max(self.limit, REPEAT_NOTE_AFTER) + 1
        if self.count >= limit:
            self.tripped = name
            self.any_failed = failed


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


def _declared_order(schema: dict[str, Any]) -> tuple[str, ...]:
    """Argument names in the order the tool's schema lists them (pydantic keeps field order)."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    return tuple(str(k) for k in props) if isinstance(props, dict) else ()


def _in_order(args: dict[str, Any], order: tuple[str, ...]) -> dict[str, Any]:
    """The same arguments, keyed in the declared order (the log then keeps the panel's order)."""
    first = {k: args[k] for k in order if k in args}
    return first | {k: v for k, v in args.items() if k not in first}


def _use_id(use: dict[str, Any], index: int) -> str:
    value = use.get("id")
    return value if isinstance(value, str) and value else f"toolu_missing_{index}"


def _add_usage(total: dict[str, int], usage: dict[str, int]) -> None:
    for k, v in usage.items():
        total[k] = total.get(k, 0) + v


def add_user_text(history: list[dict[str, Any]], text: str) -> None:
    """Append the user's words; after an interrupted or limited turn the last message may already
    be the user's (tool results), so the text joins it rather than breaking role alternation."""
    if history and history[-1].get("role") == "user":
        content = history[-1]["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        history[-1] = {"role": "user", "content": [*content, {"type": "text", "text": text}]}
    else:
        history.append({"role": "user", "content": [{"type": "text", "text": text}]})
