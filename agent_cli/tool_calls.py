"""The calls of one reply: propose -> validate -> preview -> decide -> run -> answer.

Split from loop.py so each reads on its own: the loop drives turns and model requests; this module
takes the tool_use blocks of one reply and gives each exactly one tool_result (kept in the
turn's `answers` in the model's order until the loop appends them, so a stop anywhere still
finds every result given so far). `CallRunner` is the loop's part for calls: it holds the
session's collaborators, given at construction; what belongs to one turn lives in `turn.Turn`.

Cancellation is the turn's token (agent_cli/cancel.py), looked at where a call waits: for the
person's answer (`Answers`, agent_cli/turn.py) and for the running tool, whose cancel event the
token sets at once (tools/procs.py then ends the command's process group).
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agent_cli import events as ev
from agent_cli.approval import Gate
from agent_cli.calls import Call, Decision, Denied
from agent_cli.cancel import LinkedEvent
from agent_cli.config import default_of
from agent_cli.conversation import ToolResultBlock, ToolUseBlock, tool_result, use_id
from agent_cli.errors import ToolFailed, UserInterrupted
from agent_cli.events import approval_event
from agent_cli.redact import Redactor, hidden_kinds
from agent_cli.tools.base import ToolContext, ToolOutput, canonical_json
from agent_cli.tools.path_args import path_refusal
from agent_cli.tools.paths import protected_roots
from agent_cli.tools.registry import CallRejected, Registry

if TYPE_CHECKING:
    from agent_cli.sandbox.policy import Sandbox
    from agent_cli.turn import Turn

Emit = Callable[[ev.AnyEvent], None]

INTERRUPT_GRACE_S = 5.0
TIMEOUT_GRACE_S = 2.0

REPEAT_NOTE_AFTER = 3
"""The same successful call this many times in a row gets a note appended to its result."""

TOO_MANY_AFTER_DENIAL = "not run: too many calls in one reply after denials"
STOPPED_AT_PANEL = "not run: the user stopped the turn at an earlier panel"

INTERRUPTED = {
    "model": "Interrupted while the model was replying; nothing was run.",
    "tool": "Interrupted; the remaining calls were not run.",
    "approval": "Interrupted at the question; that call and the rest of the reply were not run.",
    "turn": "Interrupted; calls that had not run yet were not run.",
}
"""What the user is told after a cancel (Ctrl-C, Esc, an editor's), by what was running."""


@dataclass
class Limits:
    """The bounds of a session: each stops a turn (or a call) with a sentence, never silently."""

    max_turns: int = default_of("max_turns")
    """Model requests within one user turn."""
    max_tokens: int = default_of("max_tokens")
    """Output tokens of one model reply."""
    tool_timeout_s: float = default_of("tool_timeout_s")
    """Seconds one call may run when its tool sets no timeout of its own."""
    output_cap: int = default_of("output_cap")
    """Characters of one tool result sent back to the model (head and tail kept)."""
    repeat_failures: int = default_of("repeat_failures")
    """The same call failing this many times in a row ends the turn."""
    max_read_bytes: int = default_of("max_read_bytes")
    """The most a reading tool reads of one file (ToolContext.max_read_bytes)."""
    max_panels_after_denial: int = default_of("max_panels_after_denial")
    """Once the user has denied a call in a reply, at most this many panels open for that reply;
    the rest are answered without asking (approval fatigue is how a wall of calls gets a yes)."""
    max_tool_calls: int | None = None
    """Tool calls in the whole session (every call the model made counts, run or not)."""
    max_cost_usd: float | None = None
    """Dollars the whole session may spend (Loop.cost says how much it has)."""
    redact_results: bool = default_of("redact_results")
    """Hide secrets in successful results from the model too (errors always are)."""


class EffectRecorder(Protocol):
    """Records what approved calls change, so they can be undone (agent_cli/undo). The loop only
    calls it around an approved write call; it never raises and knows no terminal."""

    def notes(self, call: Call) -> dict[str, str]:
        """Extra panel rows before the question (what undo will not cover)."""
        ...

    def before(self, call: Call) -> object:
        """Snapshot taken after the yes, right before the call runs."""
        ...

    def after(self, token: object, finished: bool) -> list[ev.Event]:
        """Events (an `effects` record) once the call returned, timed out or was interrupted."""
        ...


def cap_output(text: str, cap: int) -> tuple[str, bool]:
    """Keep the head and tail of a long result and say how much was cut."""
    if len(text) <= cap:
        return text, False
    head = cap * 2 // 3
    tail = cap - head
    cut = len(text) - head - tail
    note = f"\n\n[... {cut} characters cut from the middle of this output (cap {cap}) ...]\n\n"
    return text[:head] + note + text[-tail:], True


class _ToolInterrupted(Exception):
    """Ctrl-C while a tool ran: the tool was asked to stop; `after_s` is how long it had run."""

    def __init__(self, after_s: float) -> None:
        self.after_s = after_s


class FailureTracker:
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


class CallRunner:
    """Everything between a tool_use block and its tool_result, for the calls of one reply.
    Built once per session by the Loop from the session's parts; per-turn state comes in as the
    `Turn` (its token, its answers, what the person did at this reply's questions)."""

    def __init__(self, *, registry: Registry, gate: Gate, emit: Emit, workspace: Path,
                 limits: Limits, redactor: Redactor, sandbox: Sandbox | None = None,
                 effects: EffectRecorder | None = None,
                 protected: Callable[[], dict[Path, str]] = protected_roots) -> None:
        self.registry = registry
        self.gate = gate
        self.emit = emit
        self.workspace = workspace
        self.limits = limits
        self.redactor = redactor
        """Hides secrets from the model in results (the session's log redactor)."""
        self.sandbox = sandbox
        """The session's confinement: handed to tools, recorded per call."""
        self.effects = effects
        """Records approved write calls for undo; None records nothing."""
        self.protected = protected
        """agent-cli's own state, as this session registered it (tools/paths.py)."""
        self.tool_calls = 0
        """Tool calls the model made in this session, for `limits.max_tool_calls`."""

    def run_calls(self, turn: Turn, uses: list[ToolUseBlock], failures: FailureTracker) -> None:
        """Answer every call of one reply into `turn.answers`, in order. Raises UserInterrupted
        when the turn is cancelled (the calls not reached are answered by the loop)."""
        from agent_cli.turn import ReplyState

        turn.reply = ReplyState()
        for i, use in enumerate(uses):
            if turn.reply.stopped:
                self._not_run(turn, use, i, STOPPED_AT_PANEL)
                continue
            cap = self.limits.max_tool_calls
            if cap is not None and self.tool_calls >= cap:
                self._not_run(turn, use, i, f"not run: the session's budget of {cap} tool calls "
                              "(max_tool_calls) is used up")
                continue
            self.tool_calls += 1
            repeats = failures.repeats_if_ok(str(use.get("name")), use.get("input"))
            turn.repeat_note = None if repeats < REPEAT_NOTE_AFTER else (
                f"\n\n[agent-cli note: this is the same {use.get('name')} call with the same "
                f"input {repeats} times in a row; repeating it is unlikely to tell you anything "
                "new. Use the result above, or try something different.]")
            result = self._one_call(turn, use, i)
            failures.record(str(use.get("name")), use.get("input"), bool(result.get("is_error")))
            if failures.tripped is not None:
                # A wall of identical failing calls in one reply must not become a wall of
                # panels (approval fatigue): the rest are answered without running or asking.
                for j in range(i + 1, len(uses)):
                    what = "failed" if failures.any_failed else "been made"
                    self._not_run(turn, uses[j], j, "not run: the same call had just "
                                  f"{what} {failures.count} times in a row, so the turn stopped")
                break

    def _one_call(self, turn: Turn, use: ToolUseBlock, index: int) -> ToolResultBlock:
        call_id = use_id(use, index)
        name = use.get("name")
        raw_input = use.get("input")
        self._propose(turn, call_id, name, raw_input)
        outside = _outside_choice(turn.choice_sent, str(name))
        if outside is not None:
            self.emit(ev.ToolInvalid(id=call_id, name=str(name), reason=outside))
            return self._result(turn, call_id, str(name), outside, True, 0.0)
        try:
            call = self.registry.validate(call_id, name, raw_input, workspace=str(self.workspace))
        except CallRejected as e:
            self.emit(ev.ToolInvalid(id=call_id, name=str(name), reason=e.reason))
            return self._result(turn, call_id, str(name), e.reason, True, 0.0)
        # Before any preview or panel: a yes the path guard would overrule is never asked for.
        # (A deny rule that matches as well is the reason given: the gate names it below.)
        refused = path_refusal(call) if self.gate.rule_denial(call) is None else None
        if refused is not None:
            denied = Denied(call_id, refused, by="policy")
            self.emit(approval_event(call, denied))
            return self._result(turn, call_id, call.name, _denial_text(denied), True, 0.0)
        ctx = self._context(call)
        if call.effect != "read":  # (a read call shows no panel: nothing to add to it)
            extra = dict(call.panel_extra)
            if self.effects is not None:
                extra.update(self.effects.notes(call))
            if self.sandbox is not None:
                extra.update(self.sandbox.panel_extra(call.source))
            call = replace(call, preview=self._preview(call, ctx), panel_extra=extra)
        decision = self._decide(turn, call)
        self.emit(approval_event(call, decision))
        if turn.token.cancelled:
            # Cancelled while the question waited (or as it was answered): nothing more runs.
            raise UserInterrupted(INTERRUPTED["approval"], during="approval")
        if isinstance(decision, Denied):
            return self._result(turn, call_id, call.name, _denial_text(decision), True, 0.0)
        return self._execute(turn, call, ctx)

    def _decide(self, turn: Turn, call: Call) -> Decision:
        """The gate's decision, unless the reply has used up its panels after a denial. The gate
        gets its own copy of the shown arguments: nothing an approver does to it can change what
        is logged or what runs. (A read call never reaches an approver: the gate approves it by
        policy after the deny rules, which only read.)"""
        asked = call if call.effect == "read" else replace(
            call, args=call.shown_args(), panel_extra=dict(call.panel_extra))
        reply = turn.reply
        if (reply.denials and reply.panels >= self.limits.max_panels_after_denial
                and self.gate.would_ask(asked)):
            reply.held += 1
            decision: Decision = Denied(call.id, TOO_MANY_AFTER_DENIAL, by="policy")
        else:
            decision = self.gate.decide(asked)
        if decision.by == "user":
            reply.panels += 1
            if isinstance(decision, Denied):
                reply.denials += 1
                reply.stopped = reply.stopped or decision.stop_turn
        return decision

    def _context(self, call: Call) -> ToolContext:
        tool = call.tool
        timeout = tool.timeout_s or self.limits.tool_timeout_s
        return ToolContext(workspace=self.workspace, timeout_s=timeout,
                           output_cap=self.limits.output_cap,
                           max_read_bytes=self.limits.max_read_bytes, sandbox=self.sandbox,
                           protected=tuple(self.protected()),
                           denied=(lambda path: self.gate.walk_denial(call, path))
                           if self.gate.names_paths() else None,
                           on_output=lambda text: self.emit(ev.ToolOutputDelta(call.id, text)))

    def _preview(self, call: Call, ctx: ToolContext) -> str | None:
        tool = call.tool
        if tool.effect == "read" or (tool.snapshot is None and tool.preview is None):
            return None
        # The hooks get their own copy: nothing they do to it can change the call that runs.
        args = tool.private_copy(call.value)
        try:
            if tool.snapshot is not None:
                ctx.snapshot = tool.snapshot(args, ctx)
            if tool.preview is not None:
                return tool.preview(args, ctx)
        except Exception as e:  # a broken preview must not hide the call
            return f"(no preview: {type(e).__name__}: {e})"
        return None

    def _execute(self, turn: Turn, call: Call, ctx: ToolContext) -> ToolResultBlock:
        tool = call.tool
        if self.registry.args_hash(tool.dump(call.value)) != call.args_hash:
            msg = "refused: the arguments changed after they were shown"
            return self._result(turn, call.id, call.name, msg, True, 0.0)
        token = self.effects.before(call) if self.effects is not None and \
            call.effect != "read" else None
        finished = LinkedEvent()
        try:
            try:
                out, duration = self._run_tool(turn, call, ctx, finished)
            finally:
                # Before the result, also when the call timed out or was interrupted.
                if self.effects is not None and token is not None:
                    for event in self.effects.after(token, finished.is_set()):
                        self.emit(event)
        except _ToolInterrupted as stop:
            self._result(turn, call.id, call.name, f"interrupted by the user after running "
                         f"{stop.after_s:.1f} s; outcome unknown", True, stop.after_s)
            raise UserInterrupted(INTERRUPTED["tool"], during="tool") from None
        return self._result(turn, call.id, call.name, out.content, out.is_error, duration,
                            out.images)

    def _run_tool(self, turn: Turn, call: Call, ctx: ToolContext,
                  finished: LinkedEvent) -> tuple[ToolOutput, float]:
        tool = call.tool
        self.emit(ev.ToolStarted(id=call.id, name=call.name,
                                 sandbox=None if self.sandbox is None
                                 else self.sandbox.record_for(call.value, call.source)))
        start = time.monotonic()
        box: dict[str, Any] = {}

        # Completion is signalled by an Event the token's wait is linked to: the wait ends the
        # moment the tool finishes or the turn is cancelled, whichever comes first.

        def target() -> None:
            try:
                box["out"] = tool.run(call.value, ctx)
            except BaseException as e:
                box["exc"] = e
            finally:
                finished.set()

        # The tool's thread runs in this turn's context: its session's sandbox is current there.
        worker = threading.Thread(target=contextvars.copy_context().run, args=(target,),
                                  name=f"tool-{tool.name}", daemon=True)
        # A tool that enforces its own timeout (run_command) gets a moment to report it itself.
        grace = min(TIMEOUT_GRACE_S, ctx.timeout_s)
        # A cancel tells the tool at once, from the cancelling thread: a command's process
        # group is ended while this thread is still waking up.
        forget = turn.token.on_cancel(ctx.cancel.set)
        try:
            worker.start()
            turn.token.wait(finished, ctx.timeout_s + grace)
        finally:
            forget()
        if turn.token.cancelled:
            finished.wait(INTERRUPT_GRACE_S)
            raise _ToolInterrupted(time.monotonic() - start)
        duration = time.monotonic() - start
        if not finished.is_set():
            ctx.cancel.set()
            out = ToolOutput(self._timed_out(call, ctx), True)
        elif "exc" in box:
            exc = box["exc"]
            if isinstance(exc, ToolFailed | ValueError | OSError) or hasattr(exc, "exit_code"):
                out = ToolOutput(f"{tool.name} failed: {exc}", True)
            else:
                out = ToolOutput(f"{tool.name} failed: {type(exc).__name__}: {exc}", True)
        else:
            raw = box.get("out")
            out = raw if isinstance(raw, ToolOutput) else ToolOutput(str(raw if raw is not None
                                                                         else ""))
            if not out.is_error and tool.verify is not None:
                try:
                    problem = tool.verify(call.value, ctx, raw)
                except Exception as e:
                    problem = f"{type(e).__name__}: {e}"
                if problem:
                    out = ToolOutput(f"{out.content}\nBut the effect could not be confirmed: "
                                     f"{problem}", True)
        return out, duration

    def _timed_out(self, call: Call, ctx: ToolContext) -> str:
        """What a timeout means: the call may have done all, part or none of its work. For a
        write tool with a verify hook, the hook says what it finds now."""
        tool = call.tool
        msg = (f"timed out after {ctx.timeout_s:g} s; its effect is unknown (the tool was asked "
               "to stop)")
        if tool.effect != "write" or tool.verify is None:
            return msg
        try:
            problem = tool.verify(call.value, ctx, None)
        except Exception as e:
            problem = f"the check itself failed ({type(e).__name__}: {e})"
        if problem:
            return f"{msg}. Checked after the timeout: {problem}"
        return f"{msg}. Checked after the timeout: the intended effect is in place."

    def _result(self, turn: Turn, call_id: str, name: str, content: str, is_error: bool,
                duration: float, images: list[dict[str, str]] | None = None) -> ToolResultBlock:
        """Log and keep the one result of `call_id` (capped; the repeat note on a success)."""
        if not is_error and turn.repeat_note:
            content += turn.repeat_note  # logged and sent alike
        turn.repeat_note = None
        whole = content
        # Secrets never reach the model in an error (an exception quoting a connection string),
        # and by default not in a result either (a file holding a key). Before the cap: a cut
        # through the middle of a key would leave half of it unrecognised.
        hidden: list[str] = []
        if is_error or self.limits.redact_results:
            redacted = self.redactor.text(content)
            if redacted != content:
                hidden = hidden_kinds(content, redacted)
                content = redacted + hidden_note(hidden)
        capped, truncated = cap_output(content, self.limits.output_cap)
        block = tool_result(call_id, capped, is_error, images or ())
        # Kept before it is logged: a stop raised by a sink (the log refusing the record) then
        # still finds this result, and the call is not answered (and logged) a second time.
        turn.answers[call_id] = block
        self._emit_result(call_id, name, capped, is_error, duration, truncated, hidden,
                          whole if hidden else None)
        return block

    def _emit_result(self, call_id: str, name: str, content: str, is_error: bool,
                     duration: float, truncated: bool, hidden: list[str] | None = None,
                     whole: str | None = None) -> None:
        event = ev.ToolResultEvent(id=call_id, name=name, is_error=is_error, content=content,
                                   duration=round(duration, 6), truncated=truncated,
                                   hidden=hidden or [])
        self.emit(event.with_whole(whole) if whole is not None else event)

    def _propose(self, turn: Turn, call_id: str, name: Any, raw_input: Any) -> None:
        """Every call the model made is logged as a proposal once, run or not."""
        if call_id not in turn.proposed:
            turn.proposed.add(call_id)
            self.emit(ev.ToolProposed(id=call_id, name=str(name), input=raw_input))

    def _not_run(self, turn: Turn, use: ToolUseBlock, index: int, why: str) -> ToolResultBlock:
        call_id = use_id(use, index)
        self._propose(turn, call_id, use.get("name"), use.get("input"))
        return self._result(turn, call_id, str(use.get("name")), why, True, 0.0)

    def close_unanswered(self, turn: Turn, closed: list[tuple[ToolUseBlock, str]],
                         why: str) -> None:
        """Log the proposal and the result `why` of each call closed without running: the log
        holds one result per call, like the history."""
        for use, call_id in closed:
            self._propose(turn, call_id, use.get("name"), use.get("input"))
            self._emit_result(call_id, str(use.get("name")), why, True, 0.0, False)


def _outside_choice(choice: str, name: str) -> str | None:
    """Why a call is outside the tool choice its request carried, or None. The model proposes,
    the host disposes: an API that ignores the choice (or a server in between) must not get a
    call run that the choice ruled out. Refused like an unknown tool: no panel, an error result
    that says why."""
    if choice == "none":
        return ("Refused: this request was sent with tool_choice none (no tool calls), so the "
                f"call to {name} was not run. Answer in text.")
    if choice not in ("auto", "any") and name != choice:
        return (f"Refused: this request required a call to {choice} (tool_choice), so the call "
                f"to {name} was not run. Call {choice}, or answer in text.")
    return None


def hidden_note(kinds: list[str], what: str = "this result") -> str:
    """The mark in the result itself: the model learns that something was hidden, and why.
    (Also under what the user attaches to a message: a mentioned file, their shell output.)"""
    n = len(kinds)
    return (f"\n\n[agent-cli hid {n} secret{'s' if n != 1 else ''} from {what} "
            f"({', '.join(sorted(set(kinds)))}) before sending it to you; the user can see "
            f"{'them' if n != 1 else 'it'}. Do not ask for {'them' if n != 1 else 'it'}.]")


def _denial_text(decision: Denied) -> str:
    """What the model is told about a denied call."""
    reason = decision.reason
    if decision.by == "user":
        return "The user denied this call." + (f" Their reason: {reason}" if reason else "")
    if reason and reason.startswith(("refused ", "not run: ")):
        return reason if reason.startswith("not run: ") else f"This call was {reason}."
    return f"This call was refused: {(reason or '').rstrip('.')}."

