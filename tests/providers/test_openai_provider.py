"""The OpenAI-compatible provider end to end: the real Session, loop, registry, approvals and log,
against the fake chat-completions server on 127.0.0.1 (tests/fakes/openai_server.py).

Each test asserts what the model was sent (the fake records every request), what ran in the
workspace, and what the log says.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_cli import events as ev
from agent_cli.config import Settings
from agent_cli.providers.base import ModelRequest
from agent_cli.providers.openai_compat import (
    BAD_ARGS_TEXT,
    OpenAIProvider,
    StreamAssembler,
    parse_arguments,
    sse_data,
    to_openai_messages,
    to_openai_tool,
)
from tests.conftest import REPO
from tests.fakes.openai_server import FakeOpenAI, Reply, text_reply, tool_reply
from tests.scripts import log_records, make_session, started

MODEL = "gpt-test"


@pytest.fixture
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI() as f:
        yield f


def settings_for(fake: FakeOpenAI, **extra: Any) -> Settings:
    return Settings(provider="openai", model=MODEL, base_url=fake.v1_url, api_key="sk-test-key",
                    retries=2, retry_cap_s=0.0, **extra)


def of_type(records: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [r for r in records if r["type"] == kind]


# --------------------------------------------------------------------------- translation


def test_history_is_translated_at_the_edge() -> None:
    history = [
        {"role": "user", "content": [{"type": "text", "text": "read a"}]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Reading."},
            {"type": "tool_use", "id": "c1", "name": "read_file", "input": {"path": "a"}},
            {"type": "tool_use", "id": "c2", "name": "list_dir", "input": {"path": "."}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "c1", "content": "AAA"},
            {"type": "tool_result", "tool_use_id": "c2", "content": "denied", "is_error": True},
            {"type": "text", "text": "and then?"},
        ]},
    ]
    out = to_openai_messages(history, "be brief")
    assert out == [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "read a"},
        {"role": "assistant", "content": "Reading.", "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "read_file", "arguments": '{"path": "a"}'}},
            {"id": "c2", "type": "function",
             "function": {"name": "list_dir", "arguments": '{"path": "."}'}},
        ]},
        {"role": "tool", "tool_call_id": "c1", "content": "AAA"},
        {"role": "tool", "tool_call_id": "c2", "content": "ERROR: denied"},
        {"role": "user", "content": "and then?"},
    ]
    spec = {"name": "t", "description": "d", "input_schema": {"type": "object"}}
    assert to_openai_tool(spec) == {"type": "function", "function": {
        "name": "t", "description": "d", "parameters": {"type": "object"}}}


@pytest.mark.parametrize("raw, why", [
    ('{"path": "a.txt"', "not valid JSON"),
    ("path=a.txt", "not valid JSON"),
    ('["a.txt"]', "JSON array, not an object"),
    ('"a.txt"', "JSON str, not an object"),
    ("42", "JSON int, not an object"),
])
def test_arguments_that_are_not_an_object_become_a_stand_in(raw: str, why: str) -> None:
    parsed = parse_arguments(raw)
    assert parsed[BAD_ARGS_TEXT] == raw
    assert why in parsed["arguments_error"]


def test_empty_arguments_mean_no_arguments() -> None:
    assert parse_arguments("") == {}
    assert parse_arguments('{"a": 1}') == {"a": 1}


def test_assembler_survives_servers_that_omit_index_and_say_stop() -> None:
    texts: list[str] = []
    acc = StreamAssembler(texts.append)
    for chunk in [
        {"choices": [{"index": 0, "delta": {"content": "Hi"}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [
            {"id": "a", "function": {"name": "f", "arguments": '{"x"'}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [{"function": {"arguments": ": 1}"}}]}}]},
        {"choices": [{"index": 0, "delta": {"tool_calls": [
            {"id": "b", "function": {"name": "g", "arguments": "{}"}}]}, "finish_reason": "stop"}]},
    ]:
        acc.add(chunk)
    resp = acc.response()
    assert texts == ["Hi"]
    assert resp.stop_reason == "tool_use"
    assert [(u["id"], u["name"], u["input"]) for u in resp.tool_uses()] == [
        ("a", "f", {"x": 1}), ("b", "g", {})]


def test_sse_parser_joins_multiline_data_and_skips_comments() -> None:
    lines = [": keep-alive", "data: {\"a\":", "data: 1}", "", "event: x", "data:[DONE]", ""]
    assert list(sse_data(iter(lines))) == ['{"a":\n1}', "[DONE]"]


# --------------------------------------------------------------------------- end to end


def test_streamed_tool_call_split_across_chunks_runs_and_result_goes_back(
        fake: FakeOpenAI, workspace: Path, tmp_path: Path) -> None:
    (workspace / "notes — é.txt").write_text("line one\nline two\n", encoding="utf-8")
    fake.add(tool_reply(("call_1", "read_file", {"path": "notes — é.txt"}),
                        text="Let me read the notes file first."))
    fake.add(text_reply("The notes have two lines."))
    session, seen = started(make_session(workspace, log=tmp_path / "session.jsonl",
                                         settings=settings_for(fake)))

    result = session.send("what is in the notes?")

    assert result.reason == "end_turn"
    assert result.text == "The notes have two lines."
    deltas = [e.text for e in seen if isinstance(e, ev.TextDelta)]
    assert len(deltas) > 3 and "".join(deltas).startswith("Let me read the notes file first.")
    first, second = fake.requests
    assert first.body["stream"] is True
    assert first.body["stream_options"] == {"include_usage": True}
    assert first.body["messages"][0]["role"] == "system"
    tool_names = {t["function"]["name"] for t in first.body["tools"]}
    assert {"read_file", "write_file", "list_dir"} <= tool_names
    assert all(t["type"] == "function" for t in first.body["tools"])
    sent = second.body["messages"]
    assistant = next(m for m in sent if m["role"] == "assistant")
    assert json.loads(assistant["tool_calls"][0]["function"]["arguments"]) == {
        "path": "notes — é.txt"}
    tool_msg = next(m for m in sent if m["role"] == "tool")
    assert tool_msg["tool_call_id"] == "call_1"
    assert tool_msg["content"] == "line one\nline two\n"
    assert first.headers["authorization"] == "Bearer sk-test-key"
    assert first.client_port == second.client_port  # one connection, reused
    records = log_records(session)
    replies = of_type(records, "model_reply")
    assert replies[0]["content"][1]["input"] == {"path": "notes — é.txt"}
    assert replies[0]["stop_reason"] == "tool_use"
    assert replies[0]["usage"]["input_tokens"] > 0 and replies[0]["usage"]["output_tokens"] > 0
    turn_end = of_type(records, "turn_end")[-1]
    assert turn_end["usage"]["input_tokens"] == sum(r["usage"]["input_tokens"] for r in replies)


def test_two_parallel_interleaved_calls_are_reassembled_in_order(
        fake: FakeOpenAI, workspace: Path, tmp_path: Path) -> None:
    (workspace / "a.txt").write_text("alpha", encoding="utf-8")
    (workspace / "b.txt").write_text("beta", encoding="utf-8")
    call = tool_reply(("call_a", "read_file", {"path": "a.txt"}),
                      ("call_b", "search_text", {"pattern": "be[t]a", "path": "."}))
    fake.add(Reply(**call, interleave=True))
    fake.add(text_reply("alpha and beta"))
    session, seen = started(make_session(workspace, log=tmp_path / "session.jsonl",
                                         settings=settings_for(fake)))

    assert session.send("read both").reason == "end_turn"

    proposed = [e for e in seen if isinstance(e, ev.ToolProposed)]
    assert [(p.id, p.name, p.input) for p in proposed] == [
        ("call_a", "read_file", {"path": "a.txt"}),
        ("call_b", "search_text", {"pattern": "be[t]a", "path": "."}),
    ]
    tools = [m for m in fake.requests[1].body["messages"] if m["role"] == "tool"]
    assert [t["tool_call_id"] for t in tools] == ["call_a", "call_b"]
    assert tools[0]["content"] == "alpha"
    assert "b.txt" in tools[1]["content"]


def test_arguments_that_are_not_json_reach_the_model_as_a_validation_error(
        fake: FakeOpenAI, workspace: Path, tmp_path: Path) -> None:
    fake.add(tool_reply(("call_bad", "read_file", '{"path": "a.txt"')))  # cut JSON
    fake.add(tool_reply(("call_arr", "read_file", '["a.txt"]')))  # JSON, not an object
    fake.add(text_reply("Sorry, fixed."))
    session, seen = started(make_session(workspace, log=tmp_path / "session.jsonl",
                                         settings=settings_for(fake)))

    result = session.send("read a.txt")

    assert result.reason == "end_turn"
    invalid = [e for e in seen if isinstance(e, ev.ToolInvalid)]
    assert [i.id for i in invalid] == ["call_bad", "call_arr"]
    assert "Invalid arguments for read_file" in invalid[0].reason
    assert "not valid JSON" in invalid[0].reason
    assert '{\\"path\\": \\"a.txt\\"' in invalid[0].reason  # the model's own text, quoted
    assert "not an object" in invalid[1].reason
    assert not [e for e in seen if isinstance(e, ev.ToolStarted)]
    tool_msg = next(m for m in fake.requests[1].body["messages"] if m["role"] == "tool")
    assert tool_msg["tool_call_id"] == "call_bad"
    assert tool_msg["content"].startswith("ERROR: Invalid arguments for read_file")
    # what we send back as the call's arguments is valid JSON again
    assistant = next(m for m in fake.requests[1].body["messages"] if m["role"] == "assistant")
    json.loads(assistant["tool_calls"][0]["function"]["arguments"])


def test_write_call_still_waits_for_a_yes(fake: FakeOpenAI, workspace: Path,
                                          tmp_path: Path) -> None:
    fake.add(tool_reply(("w1", "write_file", {"path": "out.txt", "content": "hello\n"})))
    fake.add(tool_reply(("w2", "write_file", {"path": "no.txt", "content": "nope\n"})))
    fake.add(text_reply("One written, one refused."))
    session, _ = started(make_session(workspace, log=tmp_path / "session.jsonl",
                                         settings=settings_for(fake), answers=["y", "n not now"]))

    assert session.send("write two files").reason == "end_turn"

    assert (workspace / "out.txt").read_text() == "hello\n"
    assert not (workspace / "no.txt").exists()
    tool_msgs = [m for m in fake.requests[2].body["messages"] if m["role"] == "tool"]
    assert "not now" in tool_msgs[1]["content"] and tool_msgs[1]["content"].startswith("ERROR:")
    approvals = of_type(log_records(session), "approval")
    assert [(a["decision"], a["by"]) for a in approvals] == [("approved", "user"),
                                                           ("denied", "user")]


def test_finish_reason_length_maps_to_max_tokens_and_the_call_is_not_run(
        fake: FakeOpenAI, workspace: Path, tmp_path: Path) -> None:
    cut = tool_reply(("c1", "write_file", '{"path": "x.txt", "content": "ab'))
    fake.add({**cut, "finish_reason": "length"})
    session, seen = started(make_session(workspace, log=tmp_path / "session.jsonl",
                                         settings=settings_for(fake), answers=["y"]))

    result = session.send("write")

    assert result.reason == "max_tokens"
    assert not (workspace / "x.txt").exists()
    assert [e.stop_reason for e in seen if isinstance(e, ev.ModelReply)] == ["max_tokens"]


def test_no_key_sends_no_authorization_for_local_servers(fake: FakeOpenAI) -> None:
    fake.add(text_reply("hi"))
    provider = OpenAIProvider(MODEL, base_url=fake.v1_url, max_retries=0)
    assert provider.headers().get("authorization") is None
    # the fake, like api.openai.com, insists on a key: the user is told which one
    from agent_cli.errors import ProviderError

    with pytest.raises(ProviderError, match="OPENAI_API_KEY"):
        provider.complete(ModelRequest(messages=[{"role": "user", "content": "hi"}], tools=[]),
                          lambda t: None, lambda m: None)


def test_key_and_base_url_come_from_the_environment(fake: FakeOpenAI,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    monkeypatch.setenv("OPENAI_BASE_URL", fake.v1_url + "/")
    fake.add(text_reply("hi"))
    provider = OpenAIProvider(MODEL)
    resp = provider.complete(ModelRequest(messages=[{"role": "user", "content": "hi"}], tools=[]),
                             lambda t: None, lambda m: None)
    assert resp.text() == "hi"
    assert fake.last_request.headers["authorization"] == "Bearer sk-from-env"
    assert fake.last_request.path == "/v1/chat/completions"
    assert fake.last_request.body["max_tokens"] == 4096
    assert OpenAIProvider(MODEL, base_url="https://api.openai.com/v1").body(
        ModelRequest(messages=[], tools=[], max_tokens=7))["max_completion_tokens"] == 7


def test_agent_cli_run_against_the_fake_in_a_subprocess(fake: FakeOpenAI, workspace: Path,
                                                         tmp_path: Path) -> None:
    (workspace / "hello.txt").write_text("hello from the workspace", encoding="utf-8")
    fake.add(tool_reply(("c1", "read_file", {"path": "hello.txt"}), text="Reading it."))
    fake.add(text_reply("It says hello."))
    log = tmp_path / "run.jsonl"
    env = {**os.environ, "OPENAI_API_KEY": "sk-sub-test"}
    proc = subprocess.run(
        [sys.executable, "-m", "agent_cli", "run", "what does hello.txt say?",
         "--provider", "openai", "--base-url", fake.v1_url, "--model", MODEL,
         "--workspace", str(workspace), "--log", str(log)],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "It says hello." in proc.stdout
    assert "Traceback" not in proc.stderr
    records = [json.loads(line) for line in log.read_text().splitlines()]
    start = of_type(records, "session_start")[0]
    assert (start["provider"], start["model"]) == ("openai", MODEL)
    assert of_type(records, "tool_result")[0]["content"] == "hello from the workspace"
    assert fake.requests[0].headers["authorization"] == "Bearer sk-sub-test"
    assert "sk-sub-test" not in log.read_text()


def test_a_server_that_rejects_stream_options_is_asked_again_without(fake: FakeOpenAI) -> None:
    fake.add({"status": 400, "error_message": "Unrecognized request argument supplied: "
                                              "stream_options"},
             text_reply("hi"))
    provider = OpenAIProvider(MODEL, api_key="k", base_url=fake.v1_url, max_retries=0)
    resp = provider.complete(ModelRequest(messages=[{"role": "user", "content": "hi"}], tools=[]),
                             lambda t: None, lambda m: None)
    assert resp.text() == "hi"
    assert [("stream_options" in r.body) for r in fake.requests] == [True, False]
