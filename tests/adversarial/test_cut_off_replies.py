"""A reply whose stream ended before its last event is never run, proposed or shown for approval.

The attacker here is the network (or a proxy) closing the connection cleanly mid-reply: the real
SDK happily hands back the prefix as the final message, and a tool input cut mid-JSON parses as a
shorter object (`git clean -fdx --dry-run` becomes `git clean -fdx`). Every test drives the real
SDK (or our httpx2 client) against the loopback fakes, cut at every possible event.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_cli import events as ev
from agent_cli.approval import ScriptedApprover
from agent_cli.config import Settings
from agent_cli.errors import ProviderError
from agent_cli.providers.anthropic import AnthropicProvider
from agent_cli.providers.base import ModelRequest
from agent_cli.providers.openai_compat import OpenAIProvider
from agent_cli.session import Session, load_registry, make_provider
from tests.fakes.anthropic_server import FakeAnthropic
from tests.fakes.openai_server import FakeOpenAI
from tests.providers.test_anthropic_e2e import run_env_in_process

DANGEROUS = "git clean -fdx --dry-run"
CUT_PHRASE = "the reply was cut off"


@pytest.fixture
def anthropic_fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


@pytest.fixture
def openai_fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as server:
        yield server


def anthropic_tool_reply(**fault: Any) -> dict[str, Any]:
    return {"content": [
        {"type": "text", "text": "Cleaning up."},
        {"type": "tool_use", "id": "toolu_1", "name": "multiply", "input": {"a": 6, "b": 7}},
        {"type": "tool_use", "id": "toolu_2", "name": "run_command",
         "raw_input": json.dumps({"command": DANGEROUS})},
    ], "stop_reason": "tool_use", **fault}


def request() -> ModelRequest:
    return ModelRequest(messages=[{"role": "user", "content": [{"type": "text", "text": "go"}]}],
                        tools=[])


def test_anthropic_every_cut_before_message_stop_is_refused(
        anthropic_fake: FakeAnthropic) -> None:
    """Cut after 0, 1, 2, ... events: each prefix is refused until the one with message_stop."""
    provider = AnthropicProvider("claude-test", api_key="test-key",
                                 base_url=anthropic_fake.base_url, max_retries=0)
    refused = 0
    for cut in range(200):
        anthropic_fake.add(anthropic_tool_reply(end_after=cut))
        try:
            reply = provider.complete(request(), lambda t: None, lambda m: None)
        except ProviderError as e:
            assert e.kind == "cut_off", (cut, str(e))
            assert CUT_PHRASE in str(e)
            refused += 1
            continue
        # The first prefix accepted is the whole reply, message_stop included.
        assert reply.stop_reason == "tool_use"
        assert reply.tool_uses()[1]["input"] == {"command": DANGEROUS}
        break
    else:
        pytest.fail("no prefix was ever accepted")
    # message_start, text (start, ping, deltas, stop), two tool blocks, message_delta: many cuts,
    # among them one inside the command's JSON right after "-fdx".
    assert refused > 10


def test_openai_every_cut_before_the_finish_reason_is_refused(openai_fake: FakeOpenAI) -> None:
    provider = OpenAIProvider("gpt-test", api_key="sk-test", base_url=openai_fake.v1_url,
                              max_retries=0)
    refused = 0
    for cut in range(200):
        openai_fake.add({"content": "Cleaning up.", "finish_reason": "tool_calls",
                         "tool_calls": [{"id": "call_1", "name": "run_command",
                                         "arguments": json.dumps({"command": DANGEROUS})}],
                         "end_after": cut})
        try:
            reply = provider.complete(request(), lambda t: None, lambda m: None)
        except ProviderError as e:
            assert e.kind == "cut_off", (cut, str(e))
            assert CUT_PHRASE in str(e)
            refused += 1
            continue
        assert reply.tool_uses()[0]["input"] == {"command": DANGEROUS}
        break
    else:
        pytest.fail("no prefix was ever accepted")
    assert refused > 5


def test_openai_done_without_a_finish_reason_is_cut_off(openai_fake: FakeOpenAI) -> None:
    """`data: [DONE]` right after a partial call is not a finished reply."""
    provider = OpenAIProvider("gpt-test", api_key="sk-test", base_url=openai_fake.v1_url,
                              max_retries=0)

    def server_done_early(h: Any, req: Any) -> None:
        chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": "m",
                 "choices": [{"index": 0, "finish_reason": None, "delta": {
                     "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                                     "function": {"name": "run_command",
                                                  "arguments": '{"command": "git clean -fdx"}'}}]
                 }}]}
        frames = [f"data: {json.dumps(chunk)}\n\n".encode(), b"data: [DONE]\n\n"]
        h.send_sse(frames, openai_fake.reply_cls(), {}, None)

    openai_fake.handle = server_done_early  # type: ignore[method-assign]
    with pytest.raises(ProviderError) as caught:
        provider.complete(request(), lambda t: None, lambda m: None)
    assert caught.value.kind == "cut_off"


def session_for(settings: Settings, workspace: Path, log: Path) -> tuple[Session, list[Any],
                                                                         ScriptedApprover]:
    seen: list[Any] = []
    registry, _ = load_registry(settings)
    approver = ScriptedApprover(["y"] * 10)
    session = Session(settings, workspace=workspace, provider=make_provider(settings),
                      registry=registry, approver=approver, sinks=[seen.append], log_path=log)
    session.start()
    return session, seen, approver


@pytest.mark.parametrize("backend", ["anthropic", "openai"])
def test_a_cut_reply_proposes_nothing_even_with_yes_ready(
        backend: str, anthropic_fake: FakeAnthropic, openai_fake: FakeOpenAI, tmp_path: Path,
        workspace: Path) -> None:
    """In a session whose approver would say yes to anything, a reply cut inside the command's
    JSON is never proposed, approved or run; the history keeps no trace of it."""
    if backend == "anthropic":
        anthropic_fake.add(anthropic_tool_reply(end_after=12))
        settings = Settings(provider="anthropic", model="claude-test", api_key="test-key",
                            base_url=anthropic_fake.base_url, retries=0)
    else:
        openai_fake.add({"tool_calls": [{"id": "call_1", "name": "run_command",
                                         "arguments": json.dumps({"command": DANGEROUS})}],
                         "end_after": 6})
        settings = Settings(provider="openai", model="gpt-test", api_key="sk-test",
                            base_url=openai_fake.v1_url, retries=0)
    session, seen, approver = session_for(settings, workspace, tmp_path / "s.jsonl")
    result = session.send("clean up")
    session.close()
    assert result.reason == "error"
    errors = [e for e in seen if isinstance(e, ev.ErrorEvent)]
    assert errors and errors[0].kind == "cut_off" and CUT_PHRASE in errors[0].message
    for kind in (ev.ToolProposed, ev.Approval, ev.ToolStarted, ev.ToolResultEvent, ev.ModelReply):
        assert not [e for e in seen if isinstance(e, kind)], kind
    assert approver.seen == [], "no panel was opened"
    assert [m["role"] for m in session.history] == ["user"]


def run_cli(args: list[str], env_extra: dict[str, str | None]) -> subprocess.CompletedProcess[str]:
    """`agent-cli run ARGS` with `env_extra`, in this process (the SDK is imported once)."""
    return run_env_in_process(args, env_extra)


@pytest.mark.parametrize("shape", ["text", "tool"])
def test_cli_run_exits_4_and_says_cut_off(shape: str, anthropic_fake: FakeAnthropic,
                                          workspace: Path, tmp_path: Path) -> None:
    if shape == "text":
        anthropic_fake.add({"content": [{"type": "text",
                                         "text": "The answer is: do not delete anything."}],
                            "end_after": 6})
    else:
        (workspace / "notes.txt").write_text("secret plans\n")
        anthropic_fake.add({"content": [
            {"type": "tool_use", "id": "toolu_1", "name": "read_file",
             "raw_input": json.dumps({"path": "notes.txt.bak"})}], "end_after": 5})
    log = tmp_path / "run.jsonl"
    proc = run_cli(["go", "--workspace", str(workspace), "--log", str(log)],
                   {"ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": anthropic_fake.base_url})
    out = " ".join((proc.stdout + proc.stderr).split())
    assert "Traceback" not in out
    assert proc.returncode == 4, out
    assert CUT_PHRASE in out
    records = [json.loads(line) for line in log.read_text().splitlines()]
    types = [r["type"] for r in records]
    assert "error" in types and types[-1] == "session_end"
    assert "tool_proposed" not in types and "tool_result" not in types
    assert "model_reply" not in types
