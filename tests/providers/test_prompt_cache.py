"""Prompt caching: the breakpoints the real SDK sends, and what the (fake) API bills for them.

The fake server (tests/fakes/anthropic_server.py, PromptCache) bills like the API: a prefix
ending at a breakpoint is cached under its exact bytes, a later request whose prefix is the same
reads it at a tenth of the price. So "the cache would hit" is checked on the bytes the SDK sent.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from agent_cli import events as ev
from agent_cli.approval import NonInteractiveApprover
from agent_cli.config import Settings
from agent_cli.providers.anthropic import AnthropicProvider, with_cache_breakpoints
from agent_cli.session import Session
from agent_cli.tools.loader import load_tools
from tests.fakes.anthropic_server import (
    FakeAnthropic,
    PromptCache,
    RecordedRequest,
    strip_cache_control,
    text_reply,
    tool_reply,
)

LONG_SYSTEM = "You are a careful assistant. " * 300  # about 2,200 fake tokens: cacheable


def marks(body: dict[str, Any]) -> list[str]:
    """Where the request's cache_control marks are: tools / system / messages.N."""
    found = []
    for tool in body.get("tools") or []:
        if "cache_control" in tool:
            assert tool["cache_control"] == {"type": "ephemeral"}
            found.append("tools")
    for block in body["system"] if isinstance(body.get("system"), list) else []:
        if "cache_control" in block:
            found.append("system")
    for i, msg in enumerate(body["messages"]):
        for block in msg["content"] if isinstance(msg["content"], list) else []:
            if "cache_control" in block:
                found.append(f"messages.{i}")
    return found


def run_session(fake: FakeAnthropic, workspace: Path, tmp_path: Path, turns: int,
                *, prompt_cache: bool = True) -> tuple[Session, list[ev.AnyEvent]]:
    events: list[ev.AnyEvent] = []
    registry, report = load_tools([])
    provider = AnthropicProvider("claude-sonnet-5-5", api_key="test-key",
                                 base_url=fake.base_url, prompt_cache=prompt_cache)
    session = Session(Settings(system_prompt=LONG_SYSTEM, prompt_cache=prompt_cache),
                      workspace=workspace, provider=provider, registry=registry,
                      approver=NonInteractiveApprover(), sinks=[events.append],
                      log_path=tmp_path / "s.jsonl", load_report=report)
    session.start()
    for n in range(turns):
        fake.add(tool_reply((f"toolu_{n}", "multiply", {"a": n, "b": 3})),
                 text_reply(f"answer {n}"))
        result = session.send(f"question {n}")
        assert result.reason == "end_turn"
    session.close()
    return session, events


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


def test_breakpoints_on_tools_system_and_conversation(workspace: Path, tmp_path: Path) -> None:
    with FakeAnthropic() as fake:
        run_session(fake, workspace, tmp_path, turns=3)
    assert len(fake.requests) == 6
    first = fake.requests[0].body
    assert marks(first) == ["tools", "system", "messages.0"]
    assert first["system"][0]["text"].startswith(LONG_SYSTEM)  # (+ the sandbox note)
    for req in fake.requests[1:]:
        found = marks(req.body)
        last = len(req.body["messages"]) - 1
        assert found[:2] == ["tools", "system"]
        assert found[-1] == f"messages.{last}", "the conversation so far is marked"
        assert len(found) <= 4, "the API takes at most four breakpoints"
        # the marks sit on the last block of user messages only
        for mark in found[2:]:
            assert req.body["messages"][int(mark.split(".")[1])]["role"] == "user"


def canonical(req: RecordedRequest, upto: int) -> str:
    body = strip_cache_control(req.body)
    return json.dumps([body["tools"], body["system"], body["messages"][:upto]],
                      sort_keys=True, ensure_ascii=False)


def test_the_cached_prefix_is_byte_stable_across_turns(workspace: Path, tmp_path: Path) -> None:
    """Request k+1 starts with exactly the bytes request k sent (tools, system, messages), so
    the prefix request k cached is the one request k+1 looks up."""
    with FakeAnthropic() as fake:
        run_session(fake, workspace, tmp_path, turns=3)
    for prev, nxt in itertools.pairwise(fake.requests):
        n = len(prev.body["messages"])
        assert canonical(prev, n) == canonical(nxt, n)
        assert len(nxt.body["messages"]) > n


def test_the_fake_bills_cache_reads_after_the_first_request(workspace: Path,
                                                             tmp_path: Path) -> None:
    with FakeAnthropic() as fake:
        session, events = run_session(fake, workspace, tmp_path, turns=3)
    usages = [e.usage for e in events if isinstance(e, ev.ModelReply)]
    assert usages[0]["cache_read_input_tokens"] == 0
    assert usages[0]["cache_creation_input_tokens"] > 2000  # tools + system + first message
    for before, after in itertools.pairwise(usages):
        # the whole previous prompt is read back; only the new part is written
        prompt_before = before["cache_read_input_tokens"] + before["cache_creation_input_tokens"]
        assert after["cache_read_input_tokens"] == prompt_before
        assert 0 < after["cache_creation_input_tokens"] < 200
        assert after["input_tokens"] < 50
    report = session.usage.report()
    assert "cache:" in report and " read)" in report
    assert "$" in report  # the shipped price table knows claude-sonnet-5-5: no config needed
    assert "context:" in report and "of 1,000,000 tokens" in report


def test_prompt_cache_off_sends_no_breakpoints(workspace: Path, tmp_path: Path) -> None:
    with FakeAnthropic() as fake:
        _, events = run_session(fake, workspace, tmp_path, turns=2, prompt_cache=False)
    assert all(marks(r.body) == [] for r in fake.requests)
    assert all(isinstance(r.body["system"], str) for r in fake.requests)
    usages = [e.usage for e in events if isinstance(e, ev.ModelReply)]
    assert all(u["cache_read_input_tokens"] == 0 == u["cache_creation_input_tokens"]
               for u in usages)


def test_the_history_itself_is_never_marked() -> None:
    history = [{"role": "user", "content": "hi"},
               {"role": "assistant", "content": [{"type": "text", "text": "yes"}]},
               {"role": "user", "content": [{"type": "text", "text": "more"}]}]
    before = json.dumps(history)
    body = with_cache_breakpoints({"messages": history, "system": "s",
                                   "tools": [{"name": "t", "input_schema": {}}]})
    assert json.dumps(history) == before
    assert body["messages"][0]["content"] == [
        {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]
    assert "cache_control" in body["messages"][2]["content"][-1]


def test_short_prefixes_are_not_cached() -> None:
    """Below the API's minimum cacheable length nothing is written, as the real API does."""
    cache = PromptCache()
    body = with_cache_breakpoints({"model": "m", "max_tokens": 5, "system": "short",
                                   "messages": [{"role": "user", "content": "hi"}]})
    for _ in range(2):
        usage = cache.bill(body)
        assert usage["cache_creation_input_tokens"] == 0 == usage["cache_read_input_tokens"]
