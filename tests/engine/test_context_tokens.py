"""Context in tokens: the share of the model's window in /usage, a budget in tokens that follows
the API's own counts, and /compact summaries that tie each result to its call id."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_cli import events as ev
from agent_cli.approval import ScriptedApprover
from agent_cli.config import Settings
from agent_cli.context import json_size, transcript
from agent_cli.providers.base import ModelRequest
from agent_cli.providers.scripted import FunctionProvider
from agent_cli.session import Session
from agent_cli.tools.registry import Registry
from agent_cli.usage import UsageMeter, context_window
from tests.engine.test_context_budget import blob_tool, call, pair_check


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def counting_model(sizes: list[int], calls: int, chars_per_token: int = 3
                   ) -> FunctionProvider:
    """A model that reports usage as the API would: prompt tokens from the characters sent."""

    def model(request: ModelRequest) -> dict[str, Any]:
        size = json_size(request.messages)
        sizes.append(size)
        usage = {"input_tokens": 10, "cache_read_input_tokens": size // chars_per_token,
                 "output_tokens": 5}
        if len(sizes) <= calls:
            return {"content": [call(len(sizes))], "stop_reason": "tool_use", "usage": usage}
        return {"content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn",
                "usage": usage}

    return FunctionProvider(model, model="claude-haiku-4-5")


def session(provider: Any, tmp_path: Path, workspace: Path, seen: list[Any],
            **settings: Any) -> Session:
    s = Settings(provider="scripted", max_turns=1000, **settings)
    return Session(s, workspace=workspace, provider=provider, registry=Registry([blob_tool()]),
                   approver=ScriptedApprover([]), sinks=[seen.append],
                   log_path=tmp_path / "s.jsonl")


def test_a_token_budget_binds_at_the_ratio_the_api_counted(tmp_path: Path,
                                                          workspace: Path) -> None:
    sizes: list[int] = []
    seen: list[Any] = []
    s = session(counting_model(sizes, 30), tmp_path, workspace, seen,
                context_budget_tokens=60_000, context_budget_chars=10_000_000)
    s.start()
    assert s.send("read the blobs").reason == "end_turn"
    s.close()
    # 3 characters a token, as the model counted: 60,000 tokens are 180,000 characters
    assert 2.9 < s.budget.chars_per_token < 3.1
    assert max(sizes[5:]) <= 60_000 * 3.1
    assert max(sizes) > 60_000 * 2  # it did get near the budget: the test measures something
    notes = [e for e in seen if isinstance(e, ev.Notice) and e.kind == "context_budget"]
    assert notes, "the user is told once the budget cuts in"


def test_the_default_token_budget_is_a_share_of_the_models_window(tmp_path: Path,
                                                                  workspace: Path) -> None:
    sizes: list[int] = []
    s = session(counting_model(sizes, 0), tmp_path, workspace, [])
    assert s._budget_tokens() == int(context_window("claude-haiku-4-5") * 0.8) == 160_000
    s.provider.model = "claude-sonnet-5-5"  # /model switches the window
    assert s._budget_tokens() == 800_000


def test_usage_shows_the_context_as_a_share_of_the_window() -> None:
    meter = UsageMeter({}, lambda: "claude-haiku-4-5")
    meter(ev.ModelReply(content=[], stop_reason="end_turn",
                        usage={"input_tokens": 1_000, "cache_read_input_tokens": 90_000,
                               "cache_creation_input_tokens": 9_000, "output_tokens": 10}))
    report = meter.report()
    assert "context: 100,000 of 200,000 tokens at the last request (50.0% of the window)" \
        in report
    assert "cache: 9,000 written, 90,000 read" in report
    assert "no price configured" not in report  # the shipped table prices claude-haiku-4-5


def test_an_unknown_model_gets_the_default_window_and_no_invented_price() -> None:
    meter = UsageMeter({}, lambda: "some-local-model")
    meter(ev.ModelReply(content=[], stop_reason="end_turn",
                        usage={"input_tokens": 20_000, "output_tokens": 10}))
    assert "(10.0% of the window)" in meter.report()
    assert "no price configured" in meter.report()


def test_config_prices_replace_the_shipped_entry() -> None:
    meter = UsageMeter({"claude-haiku-4-5": {"input": 100.0, "output": 0.0}},
                       lambda: "claude-haiku-4-5")
    meter(ev.ModelReply(content=[], stop_reason="end_turn",
                        usage={"input_tokens": 10_000, "output_tokens": 0}))
    assert meter.cost() == pytest.approx(1.0)


def test_compact_transcript_ties_each_result_to_its_call() -> None:
    history = [
        {"role": "user", "content": [{"type": "text", "text": "read both"}]},
        {"role": "assistant", "content": [call(1), call(2)]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "first body"},
            {"type": "tool_result", "tool_use_id": "toolu_2", "content": "denied",
             "is_error": True}]},
    ]
    pair_check(history)
    text = transcript(history, 100_000)
    assert "ASSISTANT CALLS blob [call toolu_1] {\"n\": 1}" in text
    assert "TOOL RESULT [call toolu_1, blob]: first body" in text
    assert "TOOL ERROR [call toolu_2, blob]: denied" in text
