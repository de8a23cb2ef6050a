"""The fake API servers must be faithful: prove the Anthropic one against the real SDK and the
OpenAI one against a plain HTTP client, so tests built on them test the agent, not the fake."""

from __future__ import annotations

import http.client
import json
import time
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx2
import pytest

from tests.fakes.anthropic_server import FakeAnthropic, Reply, text_reply, tool_reply
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.openai_server import Reply as OAReply
from tests.fakes.openai_server import tool_reply as oa_tool_reply

MODEL = "claude-test"
USER = [{"role": "user", "content": "hi"}]


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as f:
        yield f


def client(fake: FakeAnthropic, max_retries: int = 0) -> anthropic.Anthropic:
    # api_key explicitly, so a stray profile on the machine is never used
    return anthropic.Anthropic(api_key="test-key", base_url=fake.base_url, max_retries=max_retries)


def stream_kwargs(**extra: Any) -> dict[str, Any]:
    return {"model": MODEL, "max_tokens": 1000, "messages": USER, **extra}


# --------------------------------------------------------------------------- Anthropic, real SDK


def test_stream_text_arrives_in_several_chunks(fake: FakeAnthropic) -> None:
    text = "The quick brown fox jumps over the lazy dog, twice: é ✓."
    fake.add(text_reply(text))
    with client(fake).messages.stream(**stream_kwargs()) as stream:
        chunks = list(stream.text_stream)
        final = stream.get_final_message()
    assert len(chunks) > 4
    assert "".join(chunks) == text
    assert [b.type for b in final.content] == ["text"]
    assert final.content[0].text == text  # type: ignore[union-attr]
    assert final.stop_reason == "end_turn"
    assert final.model == MODEL
    assert final.usage.input_tokens > 0 and final.usage.output_tokens > 1
    req = fake.last_request
    assert req.path == "/v1/messages" and req.stream is True
    assert req.body["messages"] == USER
    assert req.headers["authorization"] == "Bearer test-key"
    assert "x-api-key" not in req.headers


def test_stream_parallel_tool_use_reassembles_split_partial_json(fake: FakeAnthropic) -> None:
    read_args = {"path": "dir/ä b.txt", "limit": 12345, "nested": {"q": 'say "hi"\\n', "l": [1, 2]}}
    fake.add(
        tool_reply(("toolu_1", "read_file", read_args), ("toolu_2", "ls", {}), text="Looking.")
    )
    json_deltas: dict[int, int] = {}
    with client(fake).messages.stream(**stream_kwargs()) as stream:
        for event in stream:
            if event.type == "content_block_delta" and event.delta.type == "input_json_delta":
                json_deltas[event.index] = json_deltas.get(event.index, 0) + 1
        final = stream.get_final_message()
    assert final.stop_reason == "tool_use"
    assert [b.type for b in final.content] == ["text", "tool_use", "tool_use"]
    first, second = final.content[1], final.content[2]
    assert isinstance(first, anthropic.types.ToolUseBlock)
    assert isinstance(second, anthropic.types.ToolUseBlock)
    assert (first.id, first.name, first.input) == ("toolu_1", "read_file", read_args)
    assert (second.id, second.name, second.input) == ("toolu_2", "ls", {})
    assert json_deltas[1] > 5  # the input really arrived in pieces
    # the reply round-trips into the next request's history, which the fake validates
    fake.add(text_reply("done"))
    history: list[Any] = [
        *USER,
        final.to_param(),
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"},
                {"type": "tool_result", "tool_use_id": "toolu_2", "content": "y"},
            ],
        },
    ]
    # the tools go too: the API (and the fake) refuse tool blocks in a request without them
    tools: list[Any] = [{"name": n, "input_schema": {"type": "object"}}
                        for n in ("read_file", "ls")]
    done = client(fake).messages.create(model=MODEL, max_tokens=100, messages=history,
                                        tools=tools)
    assert done.content[0].text == "done"  # type: ignore[union-attr]


def test_truncated_tool_input_parses_as_shorter_object(fake: FakeAnthropic) -> None:
    """Documents the SDK quirk: cut JSON is not an error, so callers must check stop_reason."""
    block = {
        "type": "tool_use",
        "id": "toolu_9",
        "name": "write",
        "raw_input": '{"path":"a","n":12',
    }
    fake.add(Reply(content=[block], stop_reason="max_tokens"))
    with client(fake).messages.stream(**stream_kwargs()) as stream:
        final = stream.get_final_message()
    assert final.stop_reason == "max_tokens"
    assert final.content[0].input == {"path": "a", "n": 12}  # type: ignore[union-attr]


def test_non_stream_create(fake: FakeAnthropic) -> None:
    fake.add(tool_reply(("toolu_a", "grep", {"pattern": "x"})))
    msg = client(fake).messages.create(**stream_kwargs())
    assert msg.id == "msg_fake_0001" and msg.type == "message" and msg.role == "assistant"
    assert msg.stop_reason == "tool_use" and msg.stop_sequence is None
    assert msg.content[0].type == "tool_use"
    assert msg.content[0].input == {"pattern": "x"}
    assert msg._request_id == "req_fake_0001"
    assert fake.last_request.stream is False


def test_overloaded_then_success_is_retried(fake: FakeAnthropic) -> None:
    # The SDK's own first backoff is at most 0.5 s, so a wait of at least 1.5 s shows the server's
    # retry-after was obeyed. A lower bound: a loaded machine can only make it longer.
    fake.add(Reply(status=529, retry_after="1.5"), text_reply("after retry"))
    start = time.monotonic()
    with client(fake, max_retries=2).messages.stream(**stream_kwargs()) as stream:
        text = stream.get_final_text()
    assert text == "after retry"
    assert time.monotonic() - start >= 1.5
    assert len(fake.requests) == 2
    assert [r.headers["x-stainless-retry-count"] for r in fake.requests] == ["0", "1"]


@pytest.mark.parametrize(
    ("status", "exc_type", "error_type"),
    [
        (400, anthropic.BadRequestError, "invalid_request_error"),
        (401, anthropic.AuthenticationError, "authentication_error"),
        (404, anthropic.NotFoundError, "not_found_error"),
        (413, anthropic.ContentTooLargeError, "request_too_large"),
        (429, anthropic.RateLimitError, "rate_limit_error"),
        (500, anthropic.InternalServerError, "api_error"),
        (529, anthropic.OverloadedError, "overloaded_error"),
    ],
)
def test_status_faults_map_to_sdk_errors(
    fake: FakeAnthropic, status: int, exc_type: type[Exception], error_type: str
) -> None:
    fake.add(Reply(status=status, retry_after="7"))
    with pytest.raises(exc_type) as info:
        client(fake).messages.create(**stream_kwargs())
    err = info.value
    assert isinstance(err, anthropic.APIStatusError)
    assert err.status_code == status
    assert err.body["error"]["type"] == error_type  # type: ignore[index]
    assert err.response.headers["retry-after"] == "7"


def test_error_event_mid_stream_raises_and_is_not_retried(fake: FakeAnthropic) -> None:
    fake.add(Reply(content=[{"type": "text", "text": "a" * 60}], error_event_after=5))
    received: list[str] = []
    with (
        pytest.raises(anthropic.APIStatusError) as info,
        client(fake, max_retries=2).messages.stream(**stream_kwargs()) as stream,
    ):
        received.extend(stream.text_stream)
    assert info.value.status_code == 200
    assert info.value.body == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
    }
    assert received and "".join(received) == "a" * len("".join(received))
    assert len(fake.requests) == 1


def test_reset_mid_stream_raises_transport_error(fake: FakeAnthropic) -> None:
    """A reset after the stream began reaches the SDK's reader: SDK versions before 2.17 raise
    it as raw httpx2 (not wrapped), 2.17 wraps it in APIConnectionError. The provider takes both
    for a broken stream (providers/anthropic.py), and never retries it."""
    fake.add(Reply(content=[{"type": "text", "text": "b" * 60}], reset_after=6))
    received: list[str] = []
    with (
        pytest.raises((httpx2.TransportError, anthropic.APIConnectionError)),
        client(fake, max_retries=2).messages.stream(**stream_kwargs()) as stream,
    ):
        received.extend(stream.text_stream)
    assert received
    assert len(fake.requests) == 1


def test_reset_before_response_is_a_connection_error(fake: FakeAnthropic) -> None:
    fake.add(Reply(reset_after=0))
    with pytest.raises(anthropic.APIConnectionError):
        client(fake).messages.create(**stream_kwargs())
    assert len(fake.requests) == 1


def test_truncated_json_body_is_a_connection_error(fake: FakeAnthropic) -> None:
    fake.add(Reply(content=[{"type": "text", "text": "c" * 200}], reset_after=1))
    with pytest.raises((anthropic.APIConnectionError, httpx2.TransportError)):
        client(fake).messages.create(**stream_kwargs())


def test_running_out_of_replies_is_a_500_and_not_retried(fake: FakeAnthropic) -> None:
    with pytest.raises(anthropic.InternalServerError) as info:
        client(fake, max_retries=2).messages.create(**stream_kwargs())
    assert "ran out of replies" in str(info.value)
    assert len(fake.requests) == 1  # x-should-retry: false keeps the failure fast


def test_delay_triggers_client_timeout(fake: FakeAnthropic) -> None:
    fake.add(Reply(content=[{"type": "text", "text": "late"}], delay_s=0.5))
    slow = client(fake).with_options(timeout=0.1)
    with pytest.raises(anthropic.APITimeoutError):
        slow.messages.create(**stream_kwargs())


def test_keep_alive_connection_is_reused(fake: FakeAnthropic) -> None:
    fake.add(text_reply("one"), text_reply("two"), text_reply("three"))
    c = client(fake)
    with c.messages.stream(**stream_kwargs()) as s:
        assert s.get_final_text() == "one"
    with c.messages.stream(**stream_kwargs()) as s:
        assert s.get_final_text() == "two"
    assert c.messages.create(**stream_kwargs()).content[0].text == "three"
    assert len({r.client_port for r in fake.requests}) == 1


def test_responder_sees_the_request(fake: FakeAnthropic) -> None:
    fake.responder = lambda body: text_reply(f"echo: {body['messages'][-1]['content']}")
    msg = client(fake).messages.create(**stream_kwargs())
    assert msg.content[0].text == "echo: hi"


def test_validation_rejects_unpaired_tool_use_without_consuming_a_reply(
    fake: FakeAnthropic,
) -> None:
    fake.add(text_reply("unused"))
    history = [
        *USER,
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}],
        },
        {"role": "user", "content": "no result"},
    ]
    with pytest.raises(anthropic.BadRequestError, match="t1"):
        client(fake).messages.create(model=MODEL, max_tokens=10, messages=history)  # type: ignore[arg-type]
    assert fake.pending == 1


def test_missing_auth_is_401(fake: FakeAnthropic) -> None:
    status, _, body = raw_post(fake.base_url, "/v1/messages", stream_kwargs(), {})
    assert status == 401
    assert json.loads(body)["error"]["type"] == "authentication_error"
    status, _, _ = raw_post(fake.base_url, "/v1/messages", stream_kwargs(), {"x-api-key": "k"})
    assert status == 500  # authenticated; the queue is empty


def test_sse_wire_format(fake: FakeAnthropic) -> None:
    fake.add(tool_reply(("toolu_1", "ls", {"p": "."}), text="hi there"))
    status, headers, body = raw_post(
        fake.base_url, "/v1/messages", stream_kwargs(stream=True), {"x-api-key": "k"}
    )
    assert status == 200
    assert headers["transfer-encoding"] == "chunked"
    assert headers["content-type"].startswith("text/event-stream")
    names = []
    for block in body.decode().strip().split("\n\n"):
        lines = block.split("\n")
        assert lines[0].startswith("event: ") and lines[1].startswith("data: ")
        name = lines[0][7:]
        assert json.loads(lines[1][6:])["type"] == name
        names.append(name)
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    assert names.count("ping") == 1
    assert names.count("content_block_start") == names.count("content_block_stop") == 2


def test_refuses_non_loopback_and_unknown_reply_keys() -> None:
    with pytest.raises(ValueError):
        FakeAnthropic(host="0.0.0.0")
    with pytest.raises(TypeError, match="stop_reson"):
        FakeAnthropic([{"content": [], "stop_reson": "end_turn"}])


# --------------------------------------------------------------------------- OpenAI, raw HTTP


def raw_post(
    base_url: str, path: str, body: dict[str, Any], headers: dict[str, str]
) -> tuple[int, dict[str, str], bytes]:
    """One POST with http.client, so the SDK's leniency cannot hide a wire-format mistake."""
    host, port = base_url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=5)
    try:
        conn.request(
            "POST", path, json.dumps(body), {"content-type": "application/json", **headers}
        )
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def oa_stream(fake: FakeOpenAI, body: dict[str, Any]) -> list[dict[str, Any]]:
    """Stream with httpx2 and parse the data-only SSE, checking it ends with [DONE]."""
    events: list[str] = []
    with (
        httpx2.Client(base_url=fake.v1_url, headers={"authorization": "Bearer sk-test"}) as http,
        http.stream("POST", "/chat/completions", json={**body, "stream": True}) as resp,
    ):
        assert resp.status_code == 200
        assert resp.headers["content-type"].startswith("text/event-stream")
        for line in resp.iter_lines():
            if line:
                assert line.startswith("data: ")
                events.append(line[6:])
    assert events[-1] == "[DONE]"
    return [json.loads(e) for e in events[:-1]]


OA_BODY: dict[str, Any] = {"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]}


def test_openai_stream_reassembles_two_interleaved_tool_calls() -> None:
    args_a = {"path": "src/ö.py", "lines": [1, 20], "quote": 'he said "no"'}
    bad_b = '{"cmd": "ls -la", "cwd": '  # invalid on purpose: the client must cope
    reply = oa_tool_reply(("call_a", "read", args_a), ("call_b", "shell", bad_b), text="Both.")
    with FakeOpenAI([{**reply, "interleave": True}]) as fake:
        chunks = oa_stream(fake, {**OA_BODY, "stream_options": {"include_usage": True}})
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"

    text = ""
    calls: dict[int, dict[str, str]] = {}
    order: list[int] = []
    finish = None
    for c in chunks[:-1]:
        choice = c["choices"][0]
        text += choice["delta"].get("content") or ""
        finish = choice["finish_reason"] or finish
        for tc in choice["delta"].get("tool_calls", []):
            idx = tc["index"]
            order.append(idx)
            if idx not in calls:  # the first chunk of a call names it
                assert tc["type"] == "function" and tc["id"] and tc["function"]["name"]
                calls[idx] = {"id": tc["id"], "name": tc["function"]["name"], "arguments": ""}
            else:
                assert "id" not in tc and "name" not in tc["function"]
            calls[idx]["arguments"] += tc["function"].get("arguments", "")
    assert text == "Both."
    assert finish == "tool_calls"
    assert order[:4] == [0, 1, 0, 1]  # really interleaved
    assert order.count(0) > 3 and order.count(1) > 2
    assert calls[0]["id"] == "call_a" and calls[0]["name"] == "read"
    assert json.loads(calls[0]["arguments"]) == args_a
    assert calls[1] == {"id": "call_b", "name": "shell", "arguments": bad_b}
    usage = chunks[-1]
    assert usage["choices"] == [] and usage["usage"]["total_tokens"] > 0


def test_openai_non_stream_and_recording() -> None:
    with FakeOpenAI([oa_tool_reply(("call_1", "ls", {"p": "."}))]) as fake:
        status, headers, body = raw_post(
            fake.base_url, "/v1/chat/completions", OA_BODY, {"authorization": "Bearer sk-x"}
        )
    assert status == 200 and headers["content-type"] == "application/json"
    completion = json.loads(body)
    assert completion["object"] == "chat.completion"
    choice = completion["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["tool_calls"] == [
        {"id": "call_1", "type": "function", "function": {"name": "ls", "arguments": '{"p":"."}'}}
    ]
    assert fake.last_request.headers["authorization"] == "Bearer sk-x"
    assert fake.last_request.body == OA_BODY and fake.last_request.stream is False


def test_openai_faults() -> None:
    replies = [OAReply(status=429, retry_after="3"), OAReply(content="x" * 100, reset_after=3)]
    with FakeOpenAI(replies) as fake:
        auth = {"authorization": "Bearer sk-x"}
        status, headers, body = raw_post(fake.base_url, "/v1/chat/completions", OA_BODY, auth)
        assert status == 429 and headers["retry-after"] == "3"
        assert json.loads(body)["error"]["code"] == "rate_limit_exceeded"
        with pytest.raises(httpx2.RemoteProtocolError):
            oa_stream(fake, OA_BODY)
        status, _, body = raw_post(fake.base_url, "/v1/chat/completions", OA_BODY, auth)
        assert status == 500 and "ran out of replies" in json.loads(body)["error"]["message"]
        status, _, body = raw_post(fake.base_url, "/v1/chat/completions", OA_BODY, {})
        assert status == 401 and json.loads(body)["error"]["type"] == "invalid_request_error"
        orphan = {**OA_BODY, "messages": [{"role": "tool", "tool_call_id": "c", "content": "x"}]}
        status, _, body = raw_post(fake.base_url, "/v1/chat/completions", orphan, auth)
        assert status == 400 and "role 'tool'" in json.loads(body)["error"]["message"]
