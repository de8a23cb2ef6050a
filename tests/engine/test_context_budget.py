"""The context budget and /compact: what is sent stays under the budget however long the session,
the history and the log keep everything, and tool_use/tool_result pairs stay whole."""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from agent_cli import events as ev
from agent_cli.approval import ScriptedApprover
from agent_cli.config import Settings
from agent_cli.context import ContextBudget, json_size, transcript
from agent_cli.providers.base import ModelRequest
from agent_cli.providers.scripted import FunctionProvider, ScriptedProvider
from agent_cli.session import Session, load_registry, make_provider
from agent_cli.tools.base import Tool, ToolContext
from agent_cli.tools.registry import Registry
from agent_cli.ui.commands import dispatch
from tests.fakes.openai_server import FakeOpenAI, text_reply, tool_reply

BIG = 100_000


class _BlobArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    n: int


def blob_tool() -> Tool:
    """A read-only tool returning 100 KB, like reading a large file."""

    def run(args: _BlobArgs, ctx: ToolContext) -> str:
        return f"blob {args.n}:" + "x" * BIG

    return Tool(name="blob", description="Return a large blob.", args=_BlobArgs, run=run,
                effect="read")


def call(i: int) -> dict[str, Any]:
    return {"type": "tool_use", "id": f"toolu_{i}", "name": "blob", "input": {"n": i}}


def pair_check(messages: list[dict[str, Any]]) -> None:
    """Every tool_use is answered by a tool_result with its id in the next message."""
    for i, msg in enumerate(messages):
        if msg["role"] != "assistant" or not isinstance(msg["content"], list):
            continue
        ids = [b["id"] for b in msg["content"] if b["type"] == "tool_use"]
        if ids:
            nxt = messages[i + 1]["content"]
            assert [b["tool_use_id"] for b in nxt if b["type"] == "tool_result"] == ids


def session_with(provider: Any, tmp_path: Path, workspace: Path, budget: int,
                 seen: list[Any]) -> Session:
    settings = Settings(provider="scripted", context_budget_chars=budget, max_turns=1000)
    return Session(settings, workspace=workspace, provider=provider,
                   registry=Registry([blob_tool()]), approver=ScriptedApprover([]),
                   sinks=[seen.append], log_path=tmp_path / "s.jsonl")


def history_of(n: int, size: int) -> list[dict[str, Any]]:
    h: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": "go"}]}]
    for i in range(n):
        h.append({"role": "assistant", "content": [call(i)]})
        h.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"toolu_{i}", "content": "y" * size}]})
    return h


# --------------------------------------------------------------------------- the budget itself


def test_size_is_characters_of_json() -> None:
    h = history_of(3, 50)
    h.append({"role": "assistant", "content": [{"type": "text", "text": "é ✓ \"q\""}]})
    budget = ContextBudget(10**9)
    budget(h)
    assert budget.last_full_chars == len(json.dumps(h, ensure_ascii=False)) == json_size(h)
    budget([])
    assert budget.last_full_chars == len("[]")


def test_under_budget_nothing_changes() -> None:
    h = history_of(3, 1000)
    out = ContextBudget(100_000)(h)
    assert out == h and out is not h


def test_oldest_results_become_stubs_until_under_budget() -> None:
    h = history_of(10, 20_000)
    before = copy.deepcopy(h)
    notices: list[ev.Notice] = []
    budget = ContextBudget(100_000, notices.append)

    out = budget(h)

    assert h == before  # the history is not touched
    assert json_size(out) <= 100_000
    assert budget.last_sent_chars == json_size(out)
    assert budget.last_full_chars == json_size(h) > 200_000
    contents = [m["content"][0]["content"] for m in out[2::2]]
    stubbed = [c for c in contents if c.startswith("[elided")]
    assert stubbed and contents[: len(stubbed)] == stubbed  # the oldest ones
    assert budget.last_elided == len(stubbed)
    assert "blob result (20,002 characters)" in stubbed[0]
    assert contents[-1] == "y" * 20_000  # the newest one, the model has not read it yet
    pair_check(out)
    assert len(notices) == 1 and notices[0].kind == "context_budget"
    # a second request with the same history: same answer, no second notice
    assert budget(h) == out and len(notices) == 1


def test_a_very_long_session_drops_whole_old_exchanges_once_stubs_are_not_enough() -> None:
    h = history_of(300, 5_000)
    h.insert(101, {"role": "assistant", "content": [{"type": "text", "text": "ok"}]})
    h.insert(102, {"role": "user", "content": [{"type": "text", "text": "the user speaks"}]})
    roles = [m["role"] for m in h]
    assert all(a != b for a, b in itertools.pairwise(roles))
    before = copy.deepcopy(h)
    budget = ContextBudget(30_000)

    out = budget(h)

    assert h == before
    assert json_size(out) <= 30_000 and budget.last_sent_chars == json_size(out)
    assert budget.last_dropped > 0
    assert out[0]["content"][0]["text"] == "go"
    assert out[0]["content"][-1]["text"].startswith("[agent-cli dropped the ")
    assert any(b.get("text") == "the user speaks" for m in out for b in m["content"])
    assert out[-1] == h[-1]  # the newest results, whole
    roles = [m["role"] for m in out]
    assert all(a != b for a, b in itertools.pairwise(roles))
    pair_check(out)


def test_the_newest_results_are_kept_even_over_budget() -> None:
    h = history_of(1, 50_000)
    notices: list[ev.Notice] = []
    budget = ContextBudget(10_000, notices.append)
    out = budget(h)
    assert out == h
    assert "over the context budget" in notices[-1].message


def test_error_flag_and_other_blocks_survive_the_stub() -> None:
    h = history_of(2, 30_000)
    h[2]["content"][0]["is_error"] = True
    h[2]["content"].append({"type": "text", "text": "keep me"})
    out = ContextBudget(40_000)(h)
    assert out[2]["content"][0]["is_error"] is True
    assert out[2]["content"][0]["content"].startswith("[elided")
    assert out[2]["content"][1] == {"type": "text", "text": "keep me"}


# --------------------------------------------------------------------------- a long session


def test_long_scripted_session_requests_stay_under_the_budget(tmp_path: Path,
                                                              workspace: Path) -> None:
    calls = 60
    budget = 200_000
    sizes: list[int] = []

    def model(request: ModelRequest) -> dict[str, Any]:
        sizes.append(json_size(request.messages))  # what the provider was really given
        pair_check(request.messages)
        n = len(sizes)
        if n <= calls:
            return {"content": [call(n)], "stop_reason": "tool_use"}
        return {"content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn"}

    seen: list[Any] = []
    session = session_with(FunctionProvider(model), tmp_path, workspace, budget, seen)
    session.start()
    result = session.send("read all the blobs")
    session.close()

    assert result.reason == "end_turn"
    assert len(sizes) == calls + 1
    assert max(sizes) <= budget
    full = json_size(session.history)
    assert full > calls * 30_000  # the history keeps every (capped) result
    log = [json.loads(x) for x in session.log_path.read_text().splitlines()]
    results = [r for r in log if r["type"] == "tool_result"]
    assert len(results) == calls and all(len(r["content"]) > 30_000 for r in results)
    assert sum(1 for r in log if r["type"] == "notice" and r["kind"] == "context_budget") == 1


def test_without_the_budget_the_same_session_grows_past_it(tmp_path: Path,
                                                           workspace: Path) -> None:
    """The control: proves the test above measures something the budget changes."""
    sizes: list[int] = []

    def model(request: ModelRequest) -> dict[str, Any]:
        sizes.append(json_size(request.messages))
        if len(sizes) <= 20:
            return {"content": [call(len(sizes))], "stop_reason": "tool_use"}
        return {"content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn"}

    session = session_with(FunctionProvider(model), tmp_path, workspace, 200_000, [])
    session.loop.hooks = ()
    session.send("go")
    assert max(sizes) > 500_000


# --------------------------------------------------------------------------- /compact


def summary_reply(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 900, "output_tokens": 40}}


def test_compact_replaces_the_history_by_a_summary(tmp_path: Path, workspace: Path) -> None:
    provider = ScriptedProvider([
        {"content": [call(1)], "stop_reason": "tool_use"},
        {"content": [{"type": "text", "text": "Read blob 1."}], "stop_reason": "end_turn"},
        summary_reply("The user asked for blob 1; it is 100 KB of x."),
        {"content": [{"type": "text", "text": "Continuing."}], "stop_reason": "end_turn"},
    ])
    seen: list[Any] = []
    session = session_with(provider, tmp_path, workspace, 400_000, seen)
    session.start()
    session.send("read blob 1")
    out = dispatch(session, "/compact")

    assert "100 KB of x" in str(out)
    req = provider.requests[2]
    assert req.tools == []
    assert len(req.messages) == 1 and req.messages[0]["role"] == "user"
    text = req.messages[0]["content"][0]["text"]
    assert "USER: read blob 1" in text and "ASSISTANT CALLS blob" in text
    assert "characters cut" in text  # the 100 KB result is clipped in the transcript
    assert [m["role"] for m in session.history] == ["user", "assistant"]
    assert "100 KB of x" in session.history[0]["content"][0]["text"]
    notice = next(e for e in seen if isinstance(e, ev.Notice) and e.kind == "compact")
    assert notice.summary == "The user asked for blob 1; it is 100 KB of x."  # type: ignore[attr-defined]
    assert session.usage.total() == {"input_tokens": 900, "output_tokens": 40}

    assert session.send("go on").text == "Continuing."
    assert "900" not in session.usage.turn_line()  # the summary request is not in the turn
    sent = provider.requests[3].messages
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    session.close()
    log = [json.loads(x) for x in session.log_path.read_text().splitlines()]
    assert any(r["type"] == "tool_result" and len(r["content"]) > 20_000 for r in log)
    compact_notes = [r for r in log if r["type"] == "notice" and r["kind"] == "compact"]
    assert compact_notes[0]["summary"].startswith("The user asked")
    assert compact_notes[0]["usage"] == {"input_tokens": 900, "output_tokens": 40}


def test_compact_keeps_a_pending_pair_whole_and_the_api_accepts_it(
        tmp_path: Path, workspace: Path) -> None:
    (workspace / "a.txt").write_text("AAA")
    with FakeOpenAI() as fake:  # validates tool_calls/tool pairing like the real API
        fake.add(tool_reply(("call_1", "read_file", {"path": "a.txt"})),
                 {"status": 500},  # the turn ends with the result not yet seen by the model
                 text_reply("Summary: the user wants a.txt read; it holds AAA."),
                 text_reply("a.txt holds AAA."))
        settings = Settings(provider="openai", model="gpt-test", base_url=fake.v1_url,
                            api_key="sk-test", retries=0, retry_cap_s=0.0)
        registry, _ = load_registry(settings)
        session = Session(settings, workspace=workspace, provider=make_provider(settings),
                          registry=registry, approver=ScriptedApprover([]),
                          log_path=tmp_path / "s.jsonl")
        assert session.send("read a.txt").reason == "error"

        result = session.compact()

        assert result.ok, result.message
        roles = [(m["role"], [b["type"] for b in m["content"]]) for m in session.history]
        assert roles == [("user", ["text"]), ("assistant", ["tool_use"]),
                         ("user", ["tool_result"])]
        assert fake.requests[2].body.get("tools") is None
        final = session.send("so?")
        assert final.text == "a.txt holds AAA.", final.message
        body = fake.requests[3].body["messages"]
        assert [m["role"] for m in body] == ["system", "user", "assistant", "tool", "user"]


def test_compact_failure_leaves_the_conversation_alone(tmp_path: Path, workspace: Path) -> None:
    provider = ScriptedProvider([{"content": [{"type": "text", "text": "hi"}]}])
    seen: list[Any] = []
    session = session_with(provider, tmp_path, workspace, 400_000, seen)
    session.send("hello")
    before = copy.deepcopy(session.history)
    result = session.compact()  # the script has no reply left: a ProviderError
    assert not result.ok and "unchanged" in result.message
    assert session.history == before
    assert any(isinstance(e, ev.ErrorEvent) for e in seen)
    assert "Nothing to compact" in str(dispatch(session_with(provider, tmp_path / "b", workspace,
                                                             400_000, []), "/compact"))


@pytest.mark.parametrize("cap", [500, 5_000])
def test_transcript_respects_its_cap(cap: int) -> None:
    text = transcript(history_of(20, 3_000), cap)
    assert len(text) <= cap + 100
    assert text.startswith("[... the earliest part")
