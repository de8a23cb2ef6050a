"""The core loop driven by the scripted providers: every branch a model reply can take.

Each test runs the real Loop with the real bundled tools (plus small tools defined here), a
scripted approver and a list sink, and asserts on three things: the events (what the log and the
screen see), the history (what the model sees next) and the workspace (what actually happened).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from agent_cli import events as ev
from agent_cli.approval import (
    Approved,
    Decision,
    Denied,
    DenyRule,
    Gate,
    NonInteractiveApprover,
    ScriptedApprover,
)
from agent_cli.calls import Call
from agent_cli.cancel import CancelToken
from agent_cli.conversation import NOT_RUN_INTERRUPTED
from agent_cli.loop import Limits, Loop, TurnResult
from agent_cli.providers.base import ModelRequest
from agent_cli.providers.scripted import FunctionProvider, ScriptedProvider
from agent_cli.tool_calls import cap_output
from agent_cli.tools.base import Tool, ToolContext, ToolOutput, canonical_json, sha256_json
from agent_cli.tools.loader import load_tools
from agent_cli.tools.registry import Registry
from tests.scripts import use

# --------------------------------------------------------------------------- helpers


def reply(*blocks: dict[str, Any], text: str | None = None,
          stop: str | None = None) -> dict[str, Any]:
    content = ([{"type": "text", "text": text}] if text else []) + list(blocks)
    out: dict[str, Any] = {"content": content}
    if stop is not None:
        out["stop_reason"] = stop
    return out


def done(text: str = "Done.") -> dict[str, Any]:
    return reply(text=text, stop="end_turn")


class _NoteArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    path: str
    content: str
    mode: str = "w"


class _SleepArgs(BaseModel):
    seconds: float


class _NoArgs(BaseModel):
    pass


def make_tools(seen: list[Any]) -> list[Tool]:
    """Small test tools: a recording write tool, a sleeper, one that raises, one that is
    interrupted."""

    def note_run(args: _NoteArgs, ctx: ToolContext) -> str:
        seen.append(args.model_dump())
        (ctx.workspace / args.path).write_text(args.content)
        return f"noted {args.path}"

    def sleep_run(args: _SleepArgs, ctx: ToolContext) -> str:
        ctx.cancel.wait(args.seconds)
        seen.append("cancelled" if ctx.cancel.is_set() else "slept")
        return "slept"

    def boom_run(args: _NoArgs, ctx: ToolContext) -> str:
        raise RuntimeError("boom from the tool")

    def kbi_run(args: _NoArgs, ctx: ToolContext) -> str:
        # A cancel while this tool runs: the token tells the tool at once (ctx.cancel).
        assert CURRENT is not None
        CURRENT.turn_token.cancel()
        assert ctx.cancel.wait(30), "the cancel reached the running tool"
        return "stopped"

    return [
        Tool("note", "Write a note (test).", _NoteArgs, note_run, effect="write"),
        Tool("sleepy", "Sleep (test).", _SleepArgs, sleep_run, effect="read"),
        Tool("boom", "Always raises (test).", _NoArgs, boom_run, effect="read"),
        Tool("ctrl_c", "Cancels the turn while it runs (test).", _NoArgs, kbi_run,
             effect="read"),
    ]


CURRENT: Harness | None = None
"""The harness of the running test (the test tools cancel its turn)."""


class Harness:
    """One loop, its history, its events and what the test tools saw."""

    def __init__(self, workspace: Path, provider: Any, *, answers: list[str] | None = None,
                 approver: Any = None, rules: list[DenyRule] | None = None,
                 limits: Limits | None = None,
                 on_event: Callable[[ev.AnyEvent], None] | None = None) -> None:
        registry, report = load_tools([])
        assert report.errors == []
        self.seen: list[Any] = []
        for tool in make_tools(self.seen):
            registry.add(tool)
        self.registry = registry
        self.workspace = workspace
        self.provider = provider
        self.approver = approver if approver is not None else ScriptedApprover(answers or [])
        self.events: list[ev.AnyEvent] = []
        self.on_event = on_event
        self.history: list[dict[str, Any]] = []
        self.loop = Loop(provider, registry, Gate(self.approver, rules or []), self._emit,
                         workspace=workspace, limits=limits or Limits())
        self.turn_token = CancelToken()
        """The running turn's token: `cancel()` is what a front end's Ctrl-C or Esc does."""
        global CURRENT
        CURRENT = self

    def cancel(self) -> None:
        self.turn_token.cancel()

    def _emit(self, event: ev.AnyEvent) -> None:
        self.events.append(event)
        if self.on_event is not None:
            self.on_event(event)

    def turn(self, text: str = "go") -> TurnResult:
        self.turn_token = CancelToken()
        result = self.loop.run_turn(self.history, text, self.turn_token)
        assert_history_valid(self.history)
        return result

    def logged(self) -> list[ev.Event]:
        return [e for e in self.events if not isinstance(e, ev.TextDelta)]

    def of_type(self, kind: type[Any]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    def types_for(self, call_id: str) -> list[str]:
        return [e.type for e in self.logged() if getattr(e, "id", None) == call_id]

    def result(self, call_id: str) -> ev.ToolResultEvent:
        found = [e for e in self.of_type(ev.ToolResultEvent) if e.id == call_id]
        assert len(found) == 1, f"{call_id}: {len(found)} results"
        return found[0]

    def result_messages(self) -> list[dict[str, Any]]:
        return [m for m in self.history if m["role"] == "user"
                and any(b.get("type") == "tool_result" for b in m["content"])]


def assert_history_valid(history: list[dict[str, Any]]) -> None:
    """What the Messages API demands: roles alternate from the user, and every assistant tool_use
    is answered by the next user message with exactly those ids, in order, results first."""
    assert history, "empty history"
    for i, msg in enumerate(history):
        assert msg["role"] == ("user" if i % 2 == 0 else "assistant"), f"message {i} role"
        if msg["role"] != "assistant":
            continue
        ids = [b["id"] for b in msg["content"] if b.get("type") == "tool_use"]
        if not ids:
            continue
        assert i + 1 < len(history), "tool_use with no user message after it"
        nxt = history[i + 1]["content"]
        results = [b for b in nxt if b.get("type") == "tool_result"]
        assert [b["tool_use_id"] for b in results] == ids
        assert nxt[: len(results)] == results, "tool_result blocks must come first"
    for i, msg in enumerate(history):
        if msg["role"] == "user" and isinstance(msg["content"], list) and i > 0:
            prev_ids = {b["id"] for b in history[i - 1]["content"] if b.get("type") == "tool_use"}
            for b in msg["content"]:
                if b.get("type") == "tool_result":
                    assert b["tool_use_id"] in prev_ids


def results_of(message: dict[str, Any]) -> list[dict[str, Any]]:
    return [b for b in message["content"] if b.get("type") == "tool_result"]


# --------------------------------------------------------------------------- the plain path


def test_text_only_reply_ends_the_turn(workspace: Path) -> None:
    h = Harness(workspace, ScriptedProvider([done("Hello!")]))
    result = h.turn("hi")
    assert result.reason == "end_turn"
    assert result.text == "Hello!"
    assert [e.type for e in h.logged()] == ["user_message", "model_reply", "turn_end"]
    assert "".join(e.text for e in h.of_type(ev.TextDelta)) == "Hello!"
    assert h.history == [
        {"role": "user", "content": [{"type": "text", "text": "hi"}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Hello!"}]},
    ]


def test_read_calls_run_without_asking(workspace: Path) -> None:
    (workspace / "a.txt").write_text("alpha\n")
    h = Harness(workspace, ScriptedProvider([
        reply(use("t1", "read_file", {"path": "a.txt"}), use("t2", "multiply", {"a": 6, "b": 7}),
              use("t3", "list_dir", {})),
        done(),
    ]))
    assert h.turn().reason == "end_turn"
    assert h.approver.seen == []
    for cid in ("t1", "t2", "t3"):
        assert h.types_for(cid) == ["tool_proposed", "approval", "tool_started", "tool_result"]
        approval = next(e for e in h.of_type(ev.Approval) if e.id == cid)
        assert (approval.decision, approval.by, approval.effect) == ("approved", "policy", "read")
    (msg,) = h.result_messages()
    assert results_of(msg) == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "alpha\n"},
        {"type": "tool_result", "tool_use_id": "t2", "content": "42"},
        {"type": "tool_result", "tool_use_id": "t3", "content": "a.txt  (file 6 bytes)"},
    ]


def test_the_model_sees_the_results_in_its_next_request(workspace: Path) -> None:
    provider = ScriptedProvider([reply(use("t1", "multiply", {"a": 3, "b": 5})), done()])
    h = Harness(workspace, provider)
    h.turn()
    assert len(provider.requests) == 2
    last = provider.requests[1].messages[-1]
    assert last == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t1", "content": "15"}]}
    # the first request is recorded as it was sent, not as the history grew afterwards
    assert len(provider.requests[0].messages) == 1
    names = [t["name"] for t in provider.requests[0].tools]
    assert {"read_file", "write_file", "multiply", "note"} <= set(names)


# --------------------------------------------------------------------------- rejected proposals


def test_unknown_tool_names_the_tools_that_exist(workspace: Path) -> None:
    h = Harness(workspace, ScriptedProvider([reply(use("t1", "delete_everything", {})), done()]))
    h.turn()
    res = h.result("t1")
    assert res.is_error
    assert 'Unknown tool "delete_everything"' in res.content
    for name in ("read_file", "write_file", "multiply", "list_dir", "search_text", "note"):
        assert name in res.content
    assert h.types_for("t1") == ["tool_proposed", "tool_invalid", "tool_result"]
    assert h.approver.seen == []


@pytest.mark.parametrize(
    ("name", "raw", "fields"),
    [
        ("multiply", {"a": "24", "b": 2}, ["a"]),
        ("multiply", {"a": 2}, ["b"]),
        ("multiply", {"a": 1, "b": 2, "approved": True}, ["approved"]),
        ("multiply", {"a": None, "b": 2}, ["a"]),
        ("multiply", {"a": True, "b": 2.5}, ["a", "b"]),
        ("read_file", {"path": ["a", "b"]}, ["path"]),
        ("write_file", {"path": "x.txt", "content": "x", "approved": True}, ["approved"]),
        ("multiply", {"a": "24", "b": None, "approved": True}, ["a", "b", "approved"]),
    ],
)
def test_invalid_arguments_become_an_error_listing_each_field(
    workspace: Path, name: str, raw: dict[str, Any], fields: list[str]
) -> None:
    h = Harness(workspace, ScriptedProvider([reply(use("t1", name, raw)), done()]),
                answers=["y"])
    h.turn()
    res = h.result("t1")
    assert res.is_error
    assert res.content.startswith(f"Invalid arguments for {name}:")
    listed = [line[2:].split(":")[0] for line in res.content.splitlines()[1:]]
    assert listed == fields
    assert h.types_for("t1") == ["tool_proposed", "tool_invalid", "tool_result"]
    invalid = h.of_type(ev.ToolInvalid)[0]
    assert invalid.reason == res.content
    assert h.approver.seen == [], "an invalid call is never shown for approval"
    assert not (workspace / "x.txt").exists()


@pytest.mark.parametrize("raw", [None, ["a"], "path=a.txt", 3])
def test_input_that_is_not_an_object_is_rejected(workspace: Path, raw: Any) -> None:
    h = Harness(workspace, ScriptedProvider([reply(use("t1", "read_file", raw)), done()]))
    h.turn()
    res = h.result("t1")
    assert res.is_error
    assert "must be a JSON object" in res.content


def test_strict_validation_rejects_coercions_that_lax_mode_would_accept(workspace: Path) -> None:
    h = Harness(workspace, ScriptedProvider([
        reply(use("t1", "multiply", {"a": "24", "b": 1}), use("t2", "multiply", {"a": 24, "b": 1})),
        done(),
    ]))
    h.turn()
    assert h.result("t1").is_error
    assert '(got "24")' in h.result("t1").content
    assert h.result("t2").content == "24"


# --------------------------------------------------------------------------- approval


def test_write_calls_ask_once_each_with_exact_args_and_hash(workspace: Path) -> None:
    calls = [use("w1", "write_file", {"path": "one.txt", "content": "1\n"}),
             use("r1", "multiply", {"a": 2, "b": 3}),
             use("w2", "note", {"path": "two.txt", "content": "2"})]
    h = Harness(workspace, ScriptedProvider([reply(*calls), done()]), answers=["y", "yes"])
    h.turn()
    seen = h.approver.seen
    assert [r.id for r in seen] == ["w1", "w2"]
    assert seen[0].args == {"path": "one.txt", "content": "1\n"}
    assert seen[1].args == {"path": "two.txt", "content": "2", "mode": "w"}  # defaults shown
    for req in seen:
        assert req.args_hash == h.registry.args_hash(req.args)
        assert req.args_hash != sha256_json(req.args)  # keyed: guesses cannot be checked
        assert req.effect == "write"
    assert (workspace / "one.txt").read_text() == "1\n"
    assert (workspace / "two.txt").read_text() == "2"
    for cid in ("w1", "w2"):
        assert h.types_for(cid) == ["tool_proposed", "approval", "tool_started", "tool_result"]
        approval = next(e for e in h.of_type(ev.Approval) if e.id == cid)
        assert (approval.decision, approval.by) == ("approved", "user")
    assert seen[0].preview is not None and seen[0].preview.startswith("CREATE new file one.txt")


def test_run_args_are_the_frozen_shown_args(workspace: Path) -> None:
    """The tool sees exactly what was shown; the logged hash is the hash of the shown args; an
    approver that scribbles on the request cannot change what runs."""

    class Scribbler:
        def __init__(self) -> None:
            self.shown: dict[str, Any] = {}

        def decide(self, request: Call) -> Decision:
            self.shown = dict(request.args)
            request.args["content"] = "EVIL"
            request.args["path"] = "evil.txt"
            return Approved(request.id, request.args_hash)

    approver = Scribbler()
    h = Harness(workspace, ScriptedProvider([
        reply(use("n1", "note", {"content": "hello", "path": "n.txt"})), done()]),
        approver=approver)
    h.turn()
    assert approver.shown == {"path": "n.txt", "content": "hello", "mode": "w"}
    assert h.seen == [approver.shown]
    assert (workspace / "n.txt").read_text() == "hello"
    assert not (workspace / "evil.txt").exists()
    approval = h.of_type(ev.Approval)[0]
    assert approval.args == approver.shown
    assert approval.args_hash == h.registry.args_hash(approver.shown)
    assert approval.args_hash == __import__("hmac").new(
        h.registry.args_key,
        b"agent-cli args_hash v2\x00" + canonical_json(approver.shown).encode(),
        "sha256").hexdigest()


def test_denial_with_a_reason_reaches_the_model(workspace: Path) -> None:
    provider = ScriptedProvider([
        reply(use("w1", "write_file", {"path": "out.txt", "content": "x"})), done()])
    h = Harness(workspace, provider, answers=["n use ./tmp instead"])
    assert h.turn().reason == "end_turn"
    res = h.result("w1")
    assert res.is_error
    assert "denied" in res.content
    assert "use ./tmp instead" in res.content
    assert not (workspace / "out.txt").exists()
    sent = results_of(provider.requests[1].messages[-1])
    assert sent == [{"type": "tool_result", "tool_use_id": "w1", "content": res.content,
                     "is_error": True}]
    approval = h.of_type(ev.Approval)[0]
    assert (approval.decision, approval.by, approval.reason) == ("denied", "user",
                                                                 "use ./tmp instead")
    assert h.types_for("w1") == ["tool_proposed", "approval", "tool_result"]


@pytest.mark.parametrize("answer", ["", "n", "no", "nope", "yess", "y please", "Y E S"])
def test_anything_but_yes_denies(workspace: Path, answer: str) -> None:
    h = Harness(workspace, ScriptedProvider([
        reply(use("w1", "note", {"path": "a.txt", "content": "x"})), done()]), answers=[answer])
    h.turn()
    assert h.result("w1").is_error
    assert h.seen == []
    assert not (workspace / "a.txt").exists()


@pytest.mark.parametrize("answer", ["y", "Y", " yes ", "YES\n"])
def test_yes_in_any_case_approves(workspace: Path, answer: str) -> None:
    h = Harness(workspace, ScriptedProvider([
        reply(use("w1", "note", {"path": "a.txt", "content": "x"})), done()]), answers=[answer])
    h.turn()
    assert not h.result("w1").is_error
    assert (workspace / "a.txt").read_text() == "x"


def test_approver_out_of_answers_denies(workspace: Path) -> None:
    h = Harness(workspace, ScriptedProvider([
        reply(use("w1", "note", {"path": "a.txt", "content": "x"}),
              use("w2", "note", {"path": "b.txt", "content": "y"})), done()]), answers=["y"])
    h.turn()
    assert not h.result("w1").is_error
    assert h.result("w2").is_error
    assert not (workspace / "b.txt").exists()


def test_deny_rule_refuses_before_the_approver_is_asked(workspace: Path) -> None:
    rules = [DenyRule(tool="write_*", args={"path": "*.env"}, reason="secrets live there"),
             DenyRule(tool="multiply", args={"a": "13"})]
    h = Harness(workspace, ScriptedProvider([
        reply(use("w1", "write_file", {"path": "prod.env", "content": "K=1"}),
              use("w2", "write_file", {"path": "ok.txt", "content": "fine"}),
              use("r1", "multiply", {"a": 13, "b": 2})),
        done()]), answers=["y", "y"], rules=rules)
    h.turn()
    assert [r.id for r in h.approver.seen] == ["w2"]
    for cid in ("w1", "r1"):
        approval = next(e for e in h.of_type(ev.Approval) if e.id == cid)
        assert (approval.decision, approval.by) == ("denied", "rule")
        assert h.result(cid).is_error
        assert "deny rule" in h.result(cid).content
    assert "secrets live there" in h.result("w1").content
    assert not (workspace / "prod.env").exists()
    assert (workspace / "ok.txt").read_text() == "fine"


def test_non_interactive_approver_denies_write_calls_by_policy(workspace: Path) -> None:
    h = Harness(workspace, ScriptedProvider([
        reply(use("w1", "write_file", {"path": "a.txt", "content": "x"}),
              use("r1", "multiply", {"a": 2, "b": 2})),
        done()]), approver=NonInteractiveApprover())
    h.turn()
    approval = next(e for e in h.of_type(ev.Approval) if e.id == "w1")
    assert (approval.decision, approval.by) == ("denied", "policy")
    assert h.result("w1").is_error and "non-interactive" in h.result("w1").content
    assert not (workspace / "a.txt").exists()
    assert h.result("r1").content == "4"


@pytest.mark.parametrize(
    "decision",
    [lambda r: Approved("other-id", r.args_hash), lambda r: Approved(r.id, "0" * 64)],
)
def test_a_yes_for_another_call_or_other_args_is_a_denial(
    workspace: Path, decision: Callable[[Call], Decision]
) -> None:
    class Odd:
        def decide(self, request: Call) -> Decision:
            return decision(request)

    h = Harness(workspace, ScriptedProvider([
        reply(use("w1", "note", {"path": "a.txt", "content": "x"})), done()]), approver=Odd())
    h.turn()
    approval = h.of_type(ev.Approval)[0]
    assert (approval.decision, approval.by) == ("denied", "policy")
    assert not (workspace / "a.txt").exists()


def test_gate_denial_for_another_id_is_rejected() -> None:
    class Wrong:
        def decide(self, request: Call) -> Decision:
            return Denied("someone-else", "whatever")

    req = Call("c1", "note", "write", {"a": 1}, sha256_json({"a": 1}))
    out = Gate(Wrong()).decide(req)
    assert isinstance(out, Denied) and out.id == "c1" and out.by == "policy"


# --------------------------------------------------------------------------- failures and limits


def test_tool_raising_is_an_error_result_not_a_crash(workspace: Path) -> None:
    h = Harness(workspace, ScriptedProvider([
        reply(use("t1", "boom", {}), use("t2", "multiply", {"a": 2, "b": 5})), done()]))
    assert h.turn().reason == "end_turn"
    res = h.result("t1")
    assert res.is_error
    assert "RuntimeError" in res.content and "boom from the tool" in res.content
    assert h.result("t2").content == "10"
    assert h.types_for("t1") == ["tool_proposed", "approval", "tool_started", "tool_result"]


def test_tool_errors_from_the_path_guard_are_clean(workspace: Path) -> None:
    h = Harness(workspace, ScriptedProvider([
        reply(use("t1", "read_file", {"path": "../../etc/passwd"}),
              use("t2", "read_file", {"path": "missing.txt"})), done()]))
    h.turn()
    assert "outside the workspace" in h.result("t1").content
    assert "does not exist" in h.result("t2").content
    assert "Traceback" not in h.result("t1").content


def test_tool_timeout_is_an_error_and_the_tool_is_told_to_stop(workspace: Path) -> None:
    h = Harness(workspace, ScriptedProvider([
        reply(use("t1", "sleepy", {"seconds": 30}), use("t2", "multiply", {"a": 1, "b": 1})),
        done()]), limits=Limits(tool_timeout_s=0.05))
    assert h.turn().reason == "end_turn"
    res = h.result("t1")
    assert res.is_error
    assert "timed out" in res.content
    assert "0.05 s" in res.content
    assert h.result("t2").content == "1"
    # the cancelled tool noticed (it waits on ctx.cancel) soon after
    for _ in range(200):
        if h.seen:
            break
        threading.Event().wait(0.01)
    assert h.seen == ["cancelled"]


def test_output_is_capped_head_and_tail(workspace: Path) -> None:
    body = "HEAD" + "x" * 5000 + "TAIL"
    (workspace / "big.txt").write_text(body)
    h = Harness(workspace, ScriptedProvider([reply(use("t1", "read_file", {"path": "big.txt"})),
                                             done()]), limits=Limits(output_cap=1000))
    h.turn()
    res = h.result("t1")
    assert res.truncated
    assert res.content.startswith("HEAD") and res.content.endswith("TAIL")
    assert "characters cut from the middle" in res.content
    assert cap_output("short", 1000) == ("short", False)


def test_max_turns_default_is_25_and_ends_the_turn_with_a_message(workspace: Path) -> None:
    assert Limits().max_turns == 25
    provider = FunctionProvider(lambda req: reply(
        use(f"t{len(req.messages)}", "multiply", {"a": len(req.messages), "b": 1})))
    h = Harness(workspace, provider)
    result = h.turn()
    assert result.reason == "max_turns"
    assert len(provider.requests) == 25
    assert result.message is not None and "--max-turns" in result.message
    end = h.of_type(ev.TurnEnd)[-1]
    assert (end.reason, end.message) == ("max_turns", result.message)


def test_max_turns_limit_is_configurable_and_the_next_turn_continues(workspace: Path) -> None:
    n = {"calls": 0}

    def fn(req: ModelRequest) -> dict[str, Any]:
        n["calls"] += 1
        if n["calls"] <= 3:
            return reply(use(f"t{n['calls']}", "multiply", {"a": n["calls"], "b": 2}))
        return done("finished")

    h = Harness(workspace, FunctionProvider(fn), limits=Limits(max_turns=2))
    assert h.turn().reason == "max_turns"
    assert n["calls"] == 2
    result = h.turn("continue")
    assert result.reason == "end_turn" and result.text == "finished"
    # the user's new words joined the pending tool results: roles still alternate
    merged = h.history[4]
    assert merged["role"] == "user"
    assert [b["type"] for b in merged["content"]] == ["tool_result", "text"]


def test_same_call_failing_three_times_in_a_row_stops_the_turn(workspace: Path) -> None:
    provider = FunctionProvider(lambda req: reply(
        use(f"t{len(req.messages)}", "read_file", {"path": "missing.txt"})))
    h = Harness(workspace, provider)
    result = h.turn()
    assert result.reason == "repeated_failure"
    assert len(provider.requests) == 3
    assert result.message is not None and "read_file" in result.message
    assert "3 times" in result.message


def test_different_failures_or_a_success_reset_the_count(workspace: Path) -> None:
    script = [
        reply(use("a", "read_file", {"path": "m1"})),
        reply(use("b", "read_file", {"path": "m1"})),
        reply(use("c", "multiply", {"a": 1, "b": 1})),
        reply(use("d", "read_file", {"path": "m1"})),
        reply(use("e", "read_file", {"path": "m2"})),
        reply(use("f", "read_file", {"path": "m1"})),
        done(),
    ]
    h = Harness(workspace, ScriptedProvider(script))
    assert h.turn().reason == "end_turn"


def test_max_tokens_with_a_tool_use_runs_nothing_and_says_so(workspace: Path) -> None:
    cut = reply(use("w1", "write_file", {"path": "half.txt", "content": "the beginn"}),
                use("w0", "note", {"path": "n.txt", "content": "x"}), text="Writing it now",
                stop="max_tokens")
    h = Harness(workspace, ScriptedProvider([cut, done()]), answers=["y", "y"])
    result = h.turn()
    assert result.reason == "max_tokens"
    assert result.message is not None and "max_tokens" in result.message
    assert not (workspace / "half.txt").exists()
    assert not (workspace / "n.txt").exists()
    assert h.approver.seen == []
    assert h.of_type(ev.ToolStarted) == []
    for cid in ("w1", "w0"):
        assert h.result(cid).is_error and "not run" in h.result(cid).content
    assert h.of_type(ev.TurnEnd)[-1].message == result.message
    # the conversation can go on
    assert h.turn("try again, smaller").reason == "end_turn"


def test_max_tokens_without_tool_use_is_reported(workspace: Path) -> None:
    h = Harness(workspace, ScriptedProvider([reply(text="a long answ", stop="max_tokens")]))
    assert h.turn().reason == "max_tokens"


def test_parallel_calls_with_mixed_outcomes_one_result_each_in_order(workspace: Path) -> None:
    (workspace / "a.txt").write_text("alpha")
    calls = [
        use("c1", "read_file", {"path": "a.txt"}),          # ok
        use("c2", "multiply", {"a": "24", "b": 1}),         # invalid
        use("c3", "no_such_tool", {"x": 1}),                # unknown
        use("c4", "write_file", {"path": "d.txt", "content": "d"}),  # denied
        use("c5", "boom", {}),                              # raises
        use("c6", "note", {"path": "ok.txt", "content": "ok"}),      # approved
        use("c7", "multiply", {"a": 4, "b": 5}),            # ok
    ]
    provider = ScriptedProvider([reply(*calls, text="Several things at once."), done()])
    h = Harness(workspace, provider, answers=["n not there", "y"])
    assert h.turn().reason == "end_turn"
    (msg,) = h.result_messages()
    blocks = results_of(msg)
    assert [b["tool_use_id"] for b in blocks] == [c["id"] for c in calls]
    assert [bool(b.get("is_error")) for b in blocks] == [False, True, True, True, True, False,
                                                         False]
    assert blocks[0]["content"] == "alpha"
    assert blocks[6]["content"] == "20"
    assert "not there" in blocks[3]["content"]
    assert "boom from the tool" in blocks[4]["content"]
    assert not (workspace / "d.txt").exists()
    assert (workspace / "ok.txt").read_text() == "ok"
    # all results went back in ONE user message, right after the assistant reply
    idx = h.history.index(msg)
    assert h.history[idx - 1]["role"] == "assistant"
    assert len(h.result_messages()) == 1
    # events: one result per id, in the model's order
    assert [e.id for e in h.of_type(ev.ToolResultEvent)] == [c["id"] for c in calls]
    assert h.types_for("c2") == ["tool_proposed", "tool_invalid", "tool_result"]
    assert h.types_for("c3") == ["tool_proposed", "tool_invalid", "tool_result"]
    assert h.types_for("c4") == ["tool_proposed", "approval", "tool_result"]
    for cid in ("c1", "c5", "c6", "c7"):
        assert h.types_for(cid) == ["tool_proposed", "approval", "tool_started", "tool_result"]
    # calls are handled one after the other: each call's events end before the next begins
    ids = [e.id for e in h.logged() if hasattr(e, "id") and e.type != "model_reply"]
    assert ids == sorted(ids, key=lambda x: int(x[1:]))


def test_missing_or_duplicate_ids_still_pair_up(workspace: Path) -> None:
    raw = {"content": [{"type": "tool_use", "name": "multiply", "input": {"a": 1, "b": 2}}],
           "stop_reason": "tool_use"}
    h = Harness(workspace, ScriptedProvider([raw, done()]))
    h.turn()
    (msg,) = h.result_messages()
    assert len(results_of(msg)) == 1


# --------------------------------------------------------------------------- Ctrl-C


def test_interrupt_while_the_model_replies_runs_nothing_and_history_stays_valid(
    workspace: Path,
) -> None:
    state = {"n": 0}

    def fn(req: ModelRequest) -> dict[str, Any]:
        state["n"] += 1
        if state["n"] == 1:
            return reply(use("t1", "multiply", {"a": 2, "b": 3}))
        if state["n"] == 2:
            h.cancel()  # Ctrl-C while the reply streams: the reply that arrives is not used
            return reply(use("t9", "note", {"path": "never.txt", "content": "x"}))
        return done("back again")

    h = Harness(workspace, FunctionProvider(fn))
    result = h.turn()
    assert result.reason == "interrupted"
    assert result.message is not None and "nothing was run" in result.message
    interrupts = h.of_type(ev.Interrupt)
    assert [i.during for i in interrupts] == ["model"]
    assert h.of_type(ev.TurnEnd)[-1].reason == "interrupted"
    # the question stays; the cut reply (nothing streamed) is the marker alone, no tool_use
    assert h.history[-1] == {"role": "assistant",
                             "content": [{"type": "text", "text": "[interrupted by the user]"}]}
    assert interrupts[0].reply_so_far == ""
    assert not (workspace / "never.txt").exists()
    second = h.turn("go on")
    assert second.reason == "end_turn" and second.text == "back again"


def test_interrupt_from_a_tool_answers_every_pending_call(workspace: Path) -> None:
    calls = [use("c1", "multiply", {"a": 2, "b": 2}), use("c2", "ctrl_c", {}),
             use("c3", "note", {"path": "late.txt", "content": "x"}),
             use("c4", "bogus", {})]
    h = Harness(workspace, ScriptedProvider([reply(*calls), done("after")]), answers=["y"])
    result = h.turn()
    assert result.reason == "interrupted"
    (msg,) = h.result_messages()
    blocks = results_of(msg)
    assert [b["tool_use_id"] for b in blocks] == ["c1", "c2", "c3", "c4"]
    assert blocks[0] == {"type": "tool_result", "tool_use_id": "c1", "content": "4"}
    assert blocks[1]["is_error"] and "interrupted" in blocks[1]["content"]
    assert blocks[2]["is_error"] and "not run" in blocks[2]["content"]
    assert blocks[3]["is_error"] and "not run" in blocks[3]["content"]
    assert not (workspace / "late.txt").exists()
    assert h.approver.seen == []
    assert [i.during for i in h.of_type(ev.Interrupt)] == ["tool"]
    assert [e.id for e in h.of_type(ev.ToolResultEvent)] == ["c1", "c2", "c3", "c4"]
    assert h.turn("continue").reason == "end_turn"


def test_interrupt_while_asking_for_approval_answers_every_pending_call(workspace: Path) -> None:
    class CtrlC:
        """Ctrl-C while the question waits: the turn is cancelled, the question answered no."""

        def decide(self, request: Call) -> Decision:
            h.cancel()
            return Denied(request.id, "the turn was cancelled", stop_turn=True)

    calls = [use("c1", "note", {"path": "a.txt", "content": "x"}),
             use("c2", "multiply", {"a": 1, "b": 1})]
    h = Harness(workspace, ScriptedProvider([reply(*calls), done()]), approver=CtrlC())
    assert h.turn().reason == "interrupted"
    assert [e.id for e in h.of_type(ev.ToolResultEvent)] == ["c1", "c2"]
    assert all(e.is_error for e in h.of_type(ev.ToolResultEvent))
    assert h.of_type(ev.ToolStarted) == []
    assert h.turn("again").reason == "end_turn"


def test_a_cancel_from_another_thread_while_a_tool_runs_interrupts_the_turn(
        workspace: Path) -> None:
    """The front end's path: a cancel from its thread while the engine waits for the tool."""
    timers: list[threading.Timer] = []

    class _Args(BaseModel):
        pass

    def sleeper(args: _Args, ctx: ToolContext) -> str:
        # the tool is running (and the loop waiting for it) when the cancel is scheduled
        t = threading.Timer(0.05, h.cancel)
        timers.append(t)
        t.start()
        ctx.cancel.wait(30)
        h.seen.append("cancelled" if ctx.cancel.is_set() else "slept")
        return "slept"

    calls = [use("c1", "sigsleep", {}), use("c2", "multiply", {"a": 3, "b": 3})]
    h = Harness(workspace, ScriptedProvider([reply(*calls), done("ok")]))
    h.registry.add(Tool("sigsleep", "Sleeps until cancelled.", _Args, sleeper, effect="read"))
    try:
        result = h.turn()
    finally:
        for t in timers:
            t.join()
    assert result.reason == "interrupted"
    first, second = (h.result("c1"), h.result("c2"))
    assert first.is_error and "interrupted" in first.content
    assert second.is_error and "not run" in second.content
    assert h.seen == ["cancelled"], "the tool was told to stop (ctx.cancel)"
    assert h.turn("go on").reason == "end_turn"


# --------------------------------------------------------------------------- odds and ends


def test_a_tool_returning_tool_output_with_is_error(workspace: Path) -> None:
    def run(args: _NoArgs, ctx: ToolContext) -> ToolOutput:
        return ToolOutput("it went wrong politely", is_error=True)

    provider = ScriptedProvider([reply(use("t1", "polite", {})), done()])
    h = Harness(workspace, provider)
    h.registry.add(Tool("polite", "Fails politely.", _NoArgs, run, effect="read"))
    h.turn()
    res = h.result("t1")
    assert res.is_error and res.content == "it went wrong politely"


def test_tool_without_declared_effect_is_a_write() -> None:
    tool = Tool("x", "x", _NoArgs, lambda a, c: "")
    assert tool.effect == "write"


def test_failing_verify_turns_a_success_into_an_error(workspace: Path) -> None:
    def run(args: _NoArgs, ctx: ToolContext) -> str:
        return "claimed success"

    h = Harness(workspace, ScriptedProvider([reply(use("t1", "liar", {})), done()]),
                answers=["y"])
    h.registry.add(Tool("liar", "Says it worked.", _NoArgs, run,
                        verify=lambda a, c, out: "nothing changed on disk"))
    h.turn()
    res = h.result("t1")
    assert res.is_error and "nothing changed on disk" in res.content


def test_registry_is_a_plain_registry() -> None:
    assert isinstance(load_tools([])[0], Registry)


def test_interrupt_anywhere_else_still_answers_the_pending_calls(workspace: Path) -> None:
    """A cancel while an event is being written (here: the first result of a cut-off reply):
    every closed call is answered and logged once."""
    fired: list[str] = []

    def on_event(event: ev.AnyEvent) -> None:
        if isinstance(event, ev.ToolResultEvent) and not fired:
            fired.append(event.id)
            h.cancel()

    cut = reply(use("a", "multiply", {"a": 1, "b": 1}), use("b", "note", {"path": "x"}),
                stop="max_tokens")
    h = Harness(workspace, ScriptedProvider([cut, done()]), on_event=on_event)
    result = h.turn()
    # The turn was already ending (the cut-off reply): it ends as that, with every call
    # answered once; the cancel changes nothing more.
    assert result.reason == "max_tokens"
    assert fired == ["a"]
    assert [e.id for e in h.of_type(ev.ToolResultEvent)] == ["a", "b"]
    (msg,) = h.result_messages()
    assert [b["tool_use_id"] for b in results_of(msg)] == ["a", "b"]
    assert [b["content"] for b in results_of(msg)] == [h.result("a").content] * 2
    assert h.turn("again").reason == "end_turn"


def test_unexpected_provider_exception_ends_the_turn_with_an_error(workspace: Path) -> None:
    def fn(req: ModelRequest) -> dict[str, Any]:
        raise RuntimeError("provider bug")

    h = Harness(workspace, FunctionProvider(fn))
    result = h.turn()
    assert result.reason == "error"
    (error,) = h.of_type(ev.ErrorEvent)
    assert "RuntimeError: provider bug" in error.message and error.kind == "internal"
    assert h.history == [{"role": "user", "content": [{"type": "text", "text": "go"}]}]


def test_provider_error_ends_the_turn_and_the_next_turn_works(workspace: Path) -> None:
    provider = ScriptedProvider([reply(use("t1", "multiply", {"a": 1, "b": 1}))])
    h = Harness(workspace, provider)
    result = h.turn()
    assert result.reason == "error"
    assert h.of_type(ev.ErrorEvent)[0].kind == "script_exhausted"
    assert "no reply left" in (result.message or "")


def test_an_empty_reply_leaves_no_empty_assistant_message(workspace: Path) -> None:
    h = Harness(workspace, ScriptedProvider([{"content": [], "stop_reason": "end_turn"},
                                             done("now I speak")]))
    assert h.turn("hello").reason == "end_turn"
    assert h.turn("hello?").text == "now I speak"
    assert all(m["content"] for m in h.history)
    assert [b["text"] for b in h.history[0]["content"]] == ["hello", "hello?"]


def test_usage_adds_up_over_the_turn(workspace: Path) -> None:
    from agent_cli.usage import UsageMeter

    meter = UsageMeter({}, lambda: "m")  # what a session exposes as `session.usage`
    h = Harness(workspace, ScriptedProvider([
        {**reply(use("t1", "multiply", {"a": 1, "b": 1})),
         "usage": {"input_tokens": 10, "output_tokens": 3}},
        {**done(), "usage": {"input_tokens": 20, "output_tokens": 4}},
    ]), on_event=meter)
    h.turn()
    assert h.of_type(ev.TurnEnd)[-1].usage == {"input_tokens": 30, "output_tokens": 7}
    assert meter.total() == {"input_tokens": 30, "output_tokens": 7}


@pytest.mark.parametrize(
    ("answer", "expected"),
    [("y", (True, None)), (" Yes ", (True, None)), ("", (False, None)), ("n", (False, None)),
     ("no", (False, None)), ("nope", (False, "nope")), ("not now", (False, "not now")),
     ("yes please", (False, "yes please")), ("n use ./tmp", (False, "use ./tmp")),
     ("no, use ./tmp", (False, "use ./tmp")), ("N: too big", (False, "too big")),
     ("no-go", (False, "no-go")), ("q", (False, None))],
)
def test_parse_answer(answer: str, expected: tuple[bool, str | None]) -> None:
    from agent_cli.approval import parse_answer

    assert parse_answer(answer) == expected
    assert parse_answer(None) == (False, None)


def test_a_tool_calling_sys_exit_does_not_end_the_session(workspace: Path) -> None:
    def run(args: _NoArgs, ctx: ToolContext) -> str:
        raise SystemExit(3)

    h = Harness(workspace, ScriptedProvider([reply(use("t1", "quitter", {})), done("still here")]))
    h.registry.add(Tool("quitter", "Exits.", _NoArgs, run, effect="read"))
    result = h.turn()
    assert result.text == "still here"
    res = h.result("t1")
    assert res.is_error and "SystemExit" in res.content


# --------------------------------------------------------------------------- one home for closing


def test_a_cancel_between_calls_keeps_the_real_results(workspace: Path) -> None:
    """A cancel while the first call's result is being written: that result stays what it was
    (in the history and, once, in the log); the calls not reached are answered `not run`."""
    fired: list[str] = []

    def on_event(event: ev.AnyEvent) -> None:
        if isinstance(event, ev.ToolResultEvent) and not fired:
            fired.append(event.id)
            h.cancel()

    calls = [use("m1", "multiply", {"a": 2, "b": 3}), use("m2", "multiply", {"a": 1, "b": 1})]
    h = Harness(workspace, ScriptedProvider([reply(*calls), done()]), on_event=on_event)
    assert h.turn().reason == "interrupted"
    (msg,) = h.result_messages()
    blocks = results_of(msg)
    assert blocks[0] == {"type": "tool_result", "tool_use_id": "m1", "content": "6"}
    assert blocks[1]["is_error"] and blocks[1]["content"] == NOT_RUN_INTERRUPTED
    assert [e.id for e in h.of_type(ev.ToolResultEvent)] == ["m1", "m2"]
    assert [e.id for e in h.of_type(ev.ToolProposed)] == ["m1", "m2"]


def test_a_tool_without_a_pydantic_model_is_called_like_any_other(workspace: Path) -> None:
    """One validation entry point (Tool.validate): the loop does not ask which kind of tool it
    holds, so a raw-validator tool's preview gets its arguments too, and its arguments are
    checked against the shown hash before it runs."""
    seen: dict[str, Any] = {}

    def check(raw: dict[str, Any]) -> dict[str, Any]:
        if set(raw) != {"q"}:
            raise ValueError("- only q")
        return raw

    def preview(args: Any, ctx: ToolContext) -> str:
        seen["preview"] = args
        args["q"] = "EVIL"  # its own copy: the call that runs is the one shown
        return "would ask"

    def run(args: Any, ctx: ToolContext) -> str:
        seen["run"] = dict(args)
        return "ok"

    schema = {"type": "object", "properties": {"q": {"type": "string"}},
              "additionalProperties": False}
    h = Harness(workspace, ScriptedProvider([reply(use("r1", "remote", {"q": "x"})), done()]),
                answers=["y"])
    h.registry.add(Tool("remote", "Remote.", BaseModel, run, input_schema=schema,
                        validate_raw=check, preview=preview))
    h.turn()
    assert seen == {"preview": {"q": "EVIL"}, "run": {"q": "x"}}
    [approval] = h.of_type(ev.Approval)
    assert approval.preview == "would ask" and approval.args == {"q": "x"}
    assert h.result("r1").content == "ok"
