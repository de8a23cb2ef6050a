"""Property-based tests of the loop's invariants over random conversations.

Hypothesis writes the model's side of a conversation (replies holding valid, invalid, unknown,
raising and effectful tool calls, duplicated or missing ids, replies cut at max_tokens), the
user's answers at the approval prompt and the deny rules in config. The real Session runs it with
the bundled tools plus two test tools, and every example is checked against what the contract
promises (docs/contracts.md, "The approval contract", and docs/session-log.md):

1. every tool_use in the history is answered by the next user message, once, in order;
2. an effect on disk happens only after a recorded approval, and only for a y/yes answer with no
   deny rule matching;
3. the logged args_hash is the hash of the arguments the tool actually received;
4. is_error is set exactly for calls that did not succeed, and invalid calls never reach the
   approver;
5. the session log verifies, and each call's events come in the documented order;
6. every user turn ends, within max_turns, with one turn_end.

The expectations are worked out from the generated script, not from the loop's own output: each
call's fate follows from its kind, the deny rules and the next unused answer.
"""

from __future__ import annotations

import copy
import dataclasses
import fnmatch
import hashlib
import hmac
import itertools
import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from agent_cli import events as ev
from agent_cli.approval import DenyRule, ScriptedApprover
from agent_cli.config import Settings
from agent_cli.log.reader import read_events
from agent_cli.log.verify import verify
from agent_cli.providers.scripted import ScriptedProvider
from agent_cli.session import Session
from agent_cli.tool_calls import REPEAT_NOTE_AFTER, Limits
from agent_cli.tools.base import Tool, ToolContext
from agent_cli.tools.loader import load_tools

EFFECTS_FILE = "effects.txt"
MISSING = object()
"""A key left out of a block altogether (as opposed to present with a null value)."""

# --------------------------------------------------------------------------- test tools


class _WriteArgs(BaseModel):
    """No `extra="forbid"` here on purpose: the registry must reject unknown fields anyway."""

    text: str


class _BoomArgs(BaseModel):
    x: int


def make_test_tools(received: list[tuple[str, dict[str, Any]]]) -> list[Tool]:
    """`write` appends one line per run to a workspace file (the observable effect); `boom` is a
    write tool that raises. Both record the arguments they were handed."""

    def write_run(args: _WriteArgs, ctx: ToolContext) -> str:
        received.append(("write", args.model_dump(mode="json")))
        with open(ctx.workspace / EFFECTS_FILE, "a", encoding="utf-8") as f:
            f.write(json.dumps(args.text) + "\n")  # one physical line whatever the text holds
        return "appended"

    def boom_run(args: _BoomArgs, ctx: ToolContext) -> str:
        received.append(("boom", args.model_dump(mode="json")))
        raise RuntimeError(f"boom {args.x}")

    return [
        Tool(name="write", description="Append a line to effects.txt.", args=_WriteArgs,
             run=write_run, effect="write"),
        Tool(name="boom", description="Always fails.", args=_BoomArgs, run=boom_run,
             effect="write"),
    ]


def recording(tool: Tool, received: list[tuple[str, dict[str, Any]]]) -> Tool:
    """A copy of a bundled tool that records its arguments (the original object is shared by
    every load of the plugin, so it is not touched)."""
    inner = tool.run

    def run(args: Any, ctx: ToolContext) -> Any:
        received.append((tool.name, args.model_dump(mode="json")))
        return inner(args, ctx)

    return dataclasses.replace(tool, run=run)


# --------------------------------------------------------------------------- independent oracles


def canonical_sha(value: Any) -> str:
    """args_hash, computed independently: HMAC-SHA256 under this user's log key (the session's
    key) of the canonical JSON, with the v2 domain prefix."""
    from agent_cli.log.keys import log_key

    key = log_key(create=True)
    assert key is not None
    data = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hmac.new(key, b"agent-cli args_hash v2\x00" + data.encode("utf-8"),
                    hashlib.sha256).hexdigest()


def approves(answer: str | None) -> bool:
    """The contract's reading of an answer: only y/yes, any case, trimmed."""
    return answer is not None and answer.strip().lower() in ("y", "yes")


def rule_matches(rule: DenyRule, name: str, args: dict[str, Any]) -> bool:
    if not fnmatch.fnmatchcase(name, rule.tool):
        return False
    return all(k in args and fnmatch.fnmatchcase(str(args[k]), pat)
               for k, pat in rule.args.items())


# --------------------------------------------------------------------------- strategies


@dataclass
class Planned:
    """One generated tool_use block and what it is: mul | write | boom (valid calls), invalid
    (a known tool, bad input) or unknown (no such tool)."""

    kind: str
    block: dict[str, Any]

    @property
    def name(self) -> Any:
        return self.block.get("name")

    @property
    def input(self) -> Any:
        return self.block.get("input")


@dataclass
class PlannedReply:
    calls: list[Planned]
    stop_reason: str | None
    raw: dict[str, Any]


@dataclass
class Scenario:
    replies: list[PlannedReply]
    answers: list[str]
    rules: list[DenyRule]
    user_turns: int
    max_turns: int
    repeat_failures: int


YES_ANSWERS = ["y", "yes", "Y ", " YES", "Yes\t"]
NO_ANSWERS = ["n", "n reason", "no, too risky", "", "ye", "yes please", "yy", "N", "y es",
              "\u200by", "ok"]
ANSWERS = st.one_of(st.sampled_from(YES_ANSWERS), st.sampled_from(NO_ANSWERS))
"""Half approve (in any case, with spaces); the rest are near misses, denials and reasons."""

RULES = [
    DenyRule(tool="write", args={"text": "*deny*"}, reason="no denials in text"),
    DenyRule(tool="boom"),
    DenyRule(tool="w*", args={"text": "x*"}),
    DenyRule(tool="multiply", args={"a": "13"}),
    DenyRule(tool="no_such_tool"),
    DenyRule(tool="write", args={"missing_key": "*"}),
]

INT = st.integers(min_value=-1_000_000, max_value=1_000_000)
SMALL_INT = st.sampled_from([0, 1, 2, 3, 13, -7])
TEXT = st.one_of(
    st.sampled_from(["a", "deny me", "xylophone", "hello world", "two\nlines", "zero\u200bwidth",
                     "\x1b[31mred", "ünïcode", "", " padded ", "\U0001f600"]),
    st.text(max_size=12),
)
IDS = st.one_of(
    st.integers(min_value=0, max_value=4).map(lambda n: f"toolu_{n}"),
    st.sampled_from([MISSING, None, "", 7, "toolu_fixed_1_", "toolu_fixed_2_toolu_0",
                     "toolu_missing_0", "toolu_missing_1"]),
)
UNKNOWN_NAMES = st.sampled_from([
    "write ", " write", "Write", "WRITE", "write\u200b", "wri\u200bte", "multiply\u200b",
    "multiply\t", "mul", "", "no_such_tool", "../write", "write\n", "boom ", None, 7,
    ["write"],
])


GOOD: dict[str, dict[str, Any]] = {
    "multiply": {"a": 2, "b": 3},
    "write": {"text": "t"},
    "boom": {"x": 1},
}
WRONG_TYPE: dict[str, list[Any]] = {
    "multiply": [{"a": "2", "b": 3}, {"a": 1.5, "b": 2}, {"a": True, "b": 2},
                 {"a": 10**7, "b": 1}, {"a": 2, "b": "3"}],
    "write": [{"text": 5}, {"text": True}, {"text": {"t": 1}}, {"text": 1.5}],
    "boom": [{"x": "1"}, {"x": 1.5}, {"x": False}, {"x": "ten"}],
}


def bad_inputs(name: str) -> st.SearchStrategy[Any]:
    """Input a known tool must refuse: wrong types, extra or missing fields, non-objects."""
    good = GOOD[name]
    key = sorted(good)[0]
    return st.sampled_from([
        *WRONG_TYPE[name],
        {**good, "approved": True},
        {**good, key: None},
        {**good, key: [good[key]]},
        {k: v for k, v in good.items() if k != key},
        {},
        None,
        MISSING,
        [good],
        "do it",
        42,
    ])


@st.composite
def tool_uses(draw: st.DrawFn) -> Planned:
    kind = draw(st.sampled_from(["mul", "mul", "write", "write", "write", "boom", "invalid",
                                 "unknown"]))
    block: dict[str, Any] = {"type": "tool_use"}
    call_id = draw(IDS)
    if call_id is not MISSING:
        block["id"] = call_id
    inp: Any
    name: Any
    if kind == "mul":
        name, inp = "multiply", {"a": draw(st.one_of(SMALL_INT, INT)), "b": draw(INT)}
    elif kind == "write":
        name, inp = "write", {"text": draw(TEXT)}
    elif kind == "boom":
        name, inp = "boom", {"x": draw(SMALL_INT)}
    elif kind == "invalid":
        name = draw(st.sampled_from(["multiply", "write", "boom"]))
        inp = draw(bad_inputs(str(name)))
    else:
        name = draw(UNKNOWN_NAMES)
        inp = draw(st.sampled_from([{"text": "a"}, {"a": 1, "b": 2}, {}, None]))
    block["name"] = name
    if inp is not MISSING:
        block["input"] = inp
    return Planned(kind, block)


@st.composite
def replies(draw: st.DrawFn) -> PlannedReply:
    calls = draw(st.lists(tool_uses(), max_size=6))
    if calls and draw(st.integers(min_value=0, max_value=3)) == 0:
        # A burst of one call repeated (what trips the repeated-failure limit).
        first = calls[0]
        calls = [Planned(first.kind, {**copy.deepcopy(first.block), "id": f"toolu_r{i}"})
                 for i in range(draw(st.integers(min_value=2, max_value=6)))]
    if calls:
        stop = draw(st.sampled_from([None, None, "tool_use", "tool_use", "end_turn", "end_turn",
                                     "max_tokens"]))
    else:
        stop = draw(st.sampled_from([None, "end_turn", "end_turn", "max_tokens"]))
    content: list[dict[str, Any]] = []
    if draw(st.booleans()):
        content.append({"type": "text", "text": draw(st.sampled_from(["ok", "Let me see.", ""]))})
    content.extend(c.block for c in calls)
    raw: dict[str, Any] = {"content": content}
    if stop is not None:
        raw["stop_reason"] = stop
    return PlannedReply(calls, stop, raw)


scenarios = st.builds(
    Scenario,
    replies=st.lists(replies(), min_size=1, max_size=8),
    answers=st.lists(ANSWERS, min_size=1, max_size=10),
    rules=st.lists(st.sampled_from(RULES), max_size=3, unique_by=lambda r: r.describe()),
    user_turns=st.integers(min_value=1, max_value=3),
    max_turns=st.integers(min_value=1, max_value=5),
    repeat_failures=st.integers(min_value=2, max_value=3),
)

# --------------------------------------------------------------------------- running one example


@dataclass
class Run:
    events: list[ev.Event]
    logged: list[ev.Event]
    history: list[dict[str, Any]]
    received: list[tuple[str, dict[str, Any]]]
    effects: list[str]
    seen_by_approver: list[Any]
    requests: list[Any]
    verify_ok: bool
    verify_fault: str | None
    verify_warnings: list[str]


def run_scenario(sc: Scenario) -> Run:
    """Drive a fresh Session (its own workspace and log) through the scenario's user turns."""
    with tempfile.TemporaryDirectory(prefix="agent-cli-prop-") as tmp:
        root = Path(tmp)
        ws = root / "ws"
        ws.mkdir()
        received: list[tuple[str, dict[str, Any]]] = []
        registry, report = load_tools([])
        assert not report.errors
        mul = registry.get("multiply")
        assert mul is not None
        registry.remove("multiply")
        registry.add(recording(mul, received))
        for tool in make_test_tools(received):
            registry.add(tool)
        provider = ScriptedProvider(copy.deepcopy([r.raw for r in sc.replies]))
        approver = ScriptedApprover(sc.answers)
        config = Settings.model_validate({"provider": "scripted", "max_turns": sc.max_turns,
                                          "repeat_failures": sc.repeat_failures,
                                          "deny": sc.rules})
        events: list[Any] = []
        log_path = root / "session.jsonl"
        session = Session(config, workspace=ws, provider=provider, registry=registry,
                          approver=approver, sinks=[events.append], log_path=log_path)
        session.start()
        for i in range(sc.user_turns):
            session.send(f"user turn {i}")
        session.close()
        result = verify(log_path)
        logged = [e for _, e in read_events(log_path)]
        effects_path = ws / EFFECTS_FILE
        effects = (effects_path.read_text(encoding="utf-8").splitlines()
                   if effects_path.exists() else [])
        assert all(isinstance(e, ev.EventBase) for e in logged), "the log has unreadable lines"
        return Run(
            events=[e for e in events if not isinstance(e, ev.TextDelta)],
            logged=[e for e in logged if isinstance(e, ev.EventBase)],
            history=session.history,
            received=received,
            effects=effects,
            seen_by_approver=list(approver.seen),
            requests=list(provider.requests),
            verify_ok=result.ok,
            verify_fault=result.fault,
            verify_warnings=list(result.warnings),
        )


# --------------------------------------------------------------------------- the invariants


def check_history(history: list[dict[str, Any]]) -> None:
    """Invariant 1: roles alternate from a user message; every assistant message with tool_use
    blocks is followed by a user message answering exactly those ids, once each, in order."""
    assert history and history[0]["role"] == "user"
    for a, b in itertools.pairwise(history):
        assert a["role"] != b["role"], "two messages of one role in a row"
    for i, msg in enumerate(history):
        if msg["role"] != "assistant":
            continue
        ids = [b.get("id") for b in msg["content"] if b.get("type") == "tool_use"]
        if not ids:
            continue
        assert all(isinstance(x, str) and x for x in ids), f"unusable tool_use ids {ids!r}"
        assert len(set(ids)) == len(ids), f"duplicate tool_use ids in one message: {ids!r}"
        assert i + 1 < len(history), "the last assistant tool_use was never answered"
        nxt = history[i + 1]
        assert nxt["role"] == "user"
        answered = [b["tool_use_id"] for b in nxt["content"]
                    if isinstance(b, dict) and b.get("type") == "tool_result"]
        assert answered == ids
    # A tool_result only ever answers the message just before it.
    for i, msg in enumerate(history):
        if msg["role"] == "user" and isinstance(msg["content"], list):
            results = [b for b in msg["content"] if b.get("type") == "tool_result"]
            if results:
                assert i > 0 and history[i - 1]["role"] == "assistant"


def split_turns(events: list[ev.Event]) -> list[list[ev.Event]]:
    """The events of each user turn, from its user_message up to the next one (or the end)."""
    turns: list[list[ev.Event]] = []
    for e in events:
        if isinstance(e, ev.UserMessage):
            turns.append([])
        if turns and not isinstance(e, ev.SessionEnd):
            turns[-1].append(e)
    return turns


def split_replies(turn: list[ev.Event]) -> list[tuple[ev.ModelReply, list[ev.Event]]]:
    segments: list[tuple[ev.ModelReply, list[ev.Event]]] = []
    for e in turn:
        if isinstance(e, ev.ModelReply):
            segments.append((e, []))
        elif segments and not isinstance(e, ev.TurnEnd):
            segments[-1][1].append(e)
    return segments


MAX_PANELS_AFTER_DENIAL = Limits().max_panels_after_denial

TOOL_EVENT_TYPES = (ev.ToolProposed, ev.ToolInvalid, ev.Approval, ev.ToolStarted,
                    ev.ToolResultEvent)


@dataclass
class Tally:
    """What the checks have accounted for so far, across the whole session."""

    reply_index: int = 0
    answer_index: int = 0
    reply_panels: int = 0
    """Panels the user answered in the current reply (the limit after denials counts them)."""
    reply_denials: int = 0
    received_index: int = 0
    approved_writes: list[str] = field(default_factory=list)
    """The text of each approved write, in order: the effects file must hold exactly these."""
    turn_failures: list[tuple[str, str, bool]] = field(default_factory=list)


def check_call(sc: Scenario, run: Run, tally: Tally, planned: Planned, call_id: str,
               seq: list[ev.Event]) -> bool:
    """Invariants 2 to 5 for one call that the loop took up (it has a tool_proposed). Returns
    whether the call failed (is_error)."""
    types = [e.type for e in seq]
    proposed = seq[0]
    assert isinstance(proposed, ev.ToolProposed) and proposed.id == call_id
    result = seq[-1]
    assert isinstance(result, ev.ToolResultEvent)
    if planned.kind in ("invalid", "unknown"):
        assert types == ["tool_proposed", "tool_invalid", "tool_result"], (planned, types)
        assert result.is_error
        return True
    name = planned.name
    args = planned.input
    decision = seq[1]
    assert isinstance(decision, ev.Approval), (planned, types)
    assert decision.args == args, "the shown arguments differ from the model's valid input"
    assert decision.args_hash == canonical_sha(args)
    denied_by_rule = any(rule_matches(r, name, args) for r in sc.rules)
    if denied_by_rule:
        assert (decision.decision, decision.by) == ("denied", "rule"), (planned, decision)
        should_run = False
    elif planned.kind == "mul":
        assert (decision.decision, decision.by) == ("approved", "policy")
        should_run = True
    elif tally.reply_denials and tally.reply_panels >= MAX_PANELS_AFTER_DENIAL:
        # Once the user denied a call in this reply, at most that many panels open; the rest
        # are answered without asking (approval fatigue).
        assert (decision.decision, decision.by) == ("denied", "policy"), (planned, decision)
        assert "too many calls in one reply after denials" in result.content
        should_run = False
    else:
        k = tally.answer_index
        tally.answer_index += 1
        tally.reply_panels += 1
        answer = sc.answers[k] if k < len(sc.answers) else None
        assert k < len(run.seen_by_approver), "a write call was decided without the approver"
        request = run.seen_by_approver[k]
        assert request.id == call_id and request.name == name and request.args == args
        assert request.args_hash == decision.args_hash
        should_run = approves(answer)
        tally.reply_denials += 0 if should_run else 1
        expected = ("approved", "user") if should_run else ("denied", "user")
        assert (decision.decision, decision.by) == expected, (answer, decision)
        if not should_run and answer is not None and answer.strip().startswith("n "):
            assert answer.strip()[2:] in result.content, "the user's reason was not passed on"
    if not should_run:
        assert types == ["tool_proposed", "approval", "tool_result"], (planned, types)
        assert result.is_error
        return True
    assert types == ["tool_proposed", "approval", "tool_started", "tool_result"], (planned, types)
    # Invariant 3: what the tool received is what was shown and hashed.
    got_name, got_args = run.received[tally.received_index]
    tally.received_index += 1
    assert got_name == name
    assert canonical_sha(got_args) == decision.args_hash
    if planned.kind == "write":
        tally.approved_writes.append(args["text"])
        assert not result.is_error, result.content
        return False
    if planned.kind == "boom":
        assert result.is_error and "boom" in result.content
        return True
    # the third identical call in a row carries a note (the model is told it is repeating)
    content = result.content.split("\n\n[agent-cli note: ", 1)[0]
    assert not result.is_error and content == str(args["a"] * args["b"])
    return False


def check_reply(sc: Scenario, run: Run, tally: Tally, reply: ev.ModelReply,
                seg: list[ev.Event], is_last: bool, end: ev.TurnEnd) -> None:
    planned = sc.replies[tally.reply_index]
    tally.reply_index += 1
    tally.reply_panels = tally.reply_denials = 0
    uses = [b for b in reply.content if b.get("type") == "tool_use"]
    assert len(uses) == len(planned.calls)
    ids = [u.get("id") for u in uses]
    assert all(isinstance(x, str) and x for x in ids), f"ids not fixed: {ids!r}"
    assert len(set(ids)) == len(ids), f"ids not unique after fixing: {ids!r}"
    by_id: dict[Any, list[ev.Event]] = {i: [] for i in ids}
    order: list[str] = []
    for e in seg:
        if isinstance(e, TOOL_EVENT_TYPES):
            assert e.id in by_id, f"event for an id not in this reply: {e.id!r}"
            by_id[e.id].append(e)
            if isinstance(e, ev.ToolResultEvent):
                order.append(e.id)
    assert order == ids, "results are not one per id in the model's order"
    if not uses:
        assert is_last and end.reason == (planned.stop_reason or "end_turn")
        return
    if planned.stop_reason == "max_tokens":
        for call_id in ids:
            only = by_id[call_id]
            assert [e.type for e in only] == ["tool_proposed", "tool_result"]
            assert only[1].is_error and only[1].content.startswith("not run")  # type: ignore
        assert is_last and end.reason == "max_tokens"
        return
    skipped = False
    for call, call_id in zip(planned.calls, ids, strict=True):
        seq = by_id[call_id]
        if [e.type for e in seq] == ["tool_proposed", "tool_result"]:
            # Not taken up (logged as proposed, answered "not run"): allowed only after the
            # repeated-failure limit tripped in this reply.
            skipped = True
            assert seq[1].is_error and seq[1].content.startswith("not run")  # type: ignore
            continue
        assert not skipped, "a call ran after an earlier call of the same reply was skipped"
        failed = check_call(sc, run, tally, call, call_id, seq)
        tally.turn_failures.append((str(call.name), json.dumps(call.input, sort_keys=True)
                                    if "input" in call.block else "null", failed))
    tripped = _tripped(tally.turn_failures, sc.repeat_failures)
    if skipped or tripped:
        assert tripped, "calls were skipped but the same call had not failed enough times"
        assert is_last and end.reason == "repeated_failure"
    elif not is_last:
        pass  # the turn went on to the next model request
    else:
        assert end.reason in ("max_turns", "error"), end.reason


def _tripped(history: list[tuple[str, str, bool]], limit: int) -> bool:
    """The last `limit` calls of the turn failed with one name and one input, or the last
    max(limit, 3) + 1 succeeded with one name and one input (a repeat pointed out once)."""
    tail = history[-limit:]
    if (len(tail) == limit and all(failed for _, _, failed in tail)
            and len({(n, i) for n, i, _ in tail}) == 1):
        return True
    ok_limit = max(limit, REPEAT_NOTE_AFTER) + 1
    tail = history[-ok_limit:]
    return (len(tail) == ok_limit and not any(failed for _, _, failed in tail)
            and len({(n, i) for n, i, _ in tail}) == 1)


def check_run(sc: Scenario, run: Run) -> list[str]:
    """All six invariants for one example; returns labels for Hypothesis's statistics."""
    labels: list[str] = []
    # Invariant 5a: the log verifies and holds exactly the events that were emitted.
    assert run.verify_ok, run.verify_fault
    assert run.verify_warnings == []
    assert [e.type for e in run.logged] == [e.type for e in run.events]
    check_history(run.history)
    for request in run.requests:
        # What was sent each time is itself a valid conversation.
        check_history(list(request.messages))
    turns = split_turns(run.events)
    assert len(turns) == sc.user_turns
    tally = Tally()
    for turn in turns:
        # Invariant 6: one turn_end, last, within max_turns model requests.
        ends = [e for e in turn if isinstance(e, ev.TurnEnd)]
        assert len(ends) == 1 and turn[-1] is ends[0], "a turn without exactly one turn_end"
        end = ends[0]
        labels.append(f"turn ended: {end.reason}")
        segments = split_replies(turn)
        assert len(segments) <= sc.max_turns
        tally.turn_failures = []
        for n, (reply, seg) in enumerate(segments):
            check_reply(sc, run, tally, reply, seg, n == len(segments) - 1, end)
        if end.reason == "max_turns":
            assert len(segments) == sc.max_turns
        if end.reason == "error":
            assert tally.reply_index == len(sc.replies), "error before the script ran out"
            assert any(isinstance(e, ev.ErrorEvent) and e.kind == "script_exhausted"
                       for e in turn)
    # Invariant 2: effects on disk = approved writes = write runs; nothing else ran.
    assert tally.received_index == len(run.received), "a tool ran without a matching approval"
    assert run.effects == [json.dumps(t) for t in tally.approved_writes]
    labels.append(f"writes on disk: {min(len(run.effects), 3)}"
                  f"{'+' if len(run.effects) >= 3 else ''}")
    approved_write_events = [e for e in run.events if isinstance(e, ev.Approval)
                             and e.name == "write" and e.decision == "approved"]
    assert len(approved_write_events) == len(run.effects)
    # Invariant 4 (second half): only valid write calls reached the approver.
    assert len(run.seen_by_approver) == tally.answer_index
    assert all(r.name in ("write", "boom") for r in run.seen_by_approver)
    # The history carries the same results as the log, flag for flag.
    logged_results = [(e.id, e.is_error, e.content) for e in run.events
                      if isinstance(e, ev.ToolResultEvent)]
    history_results = [(b["tool_use_id"], bool(b.get("is_error")), b["content"])
                       for m in run.history if m["role"] == "user"
                       and isinstance(m["content"], list)
                       for b in m["content"] if b.get("type") == "tool_result"]
    assert history_results == logged_results
    return labels


@settings(max_examples=300, deadline=None, database=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(sc=scenarios)
def test_loop_invariants_hold_over_random_conversations(sc: Scenario) -> None:
    for label in check_run(sc, run_scenario(sc)):
        event(label)  # shown by --hypothesis-show-statistics: how often each path was taken


def _planned(kind: str, call_id: Any, name: Any, inp: Any) -> Planned:
    block: dict[str, Any] = {"type": "tool_use", "name": name, "input": inp}
    if call_id is not MISSING:
        block["id"] = call_id
    return Planned(kind, block)


def test_made_up_ids_never_collide_with_the_models_own_ids() -> None:
    """Found by the property test: a missing id at index 1 was named `toolu_fixed_1_`, which the
    model had already used for the call before it, so two results answered one id."""
    calls = [_planned("write", "toolu_fixed_1_", "write", {"text": "a"}),
             _planned("mul", MISSING, "multiply", {"a": 2, "b": 3}),
             _planned("mul", "toolu_fixed_2_", "multiply", {"a": 1, "b": 1}),
             _planned("mul", "toolu_fixed_2_", "multiply", {"a": 4, "b": 1})]
    raw = {"content": [c.block for c in calls], "stop_reason": "tool_use"}
    done = {"content": [], "stop_reason": "end_turn"}
    sc = Scenario(replies=[PlannedReply(calls, "tool_use", raw),
                           PlannedReply([], "end_turn", done)],
                  answers=["y"], rules=[], user_turns=1, max_turns=3, repeat_failures=3)
    run = run_scenario(sc)
    check_run(sc, run)
    reply = next(e for e in run.events if isinstance(e, ev.ModelReply))
    ids = [b["id"] for b in reply.content]
    assert ids[0] == "toolu_fixed_1_" and ids[2] == "toolu_fixed_2_" and len(set(ids)) == 4
    assert len(run.effects) == 1
