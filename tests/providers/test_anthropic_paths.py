"""The provider's two request paths give the same request and the same reply (issue 21, goal 6).

`AnthropicProvider` encodes the body once and sends it through the SDK's public
`client.post(content=...)` inside the SDK's `MessageStreamManager`, which skips the SDK's walk and
copy of the whole body on every request. That manager's constructor is not documented, so the
provider checks it once per process (`fast_stream_supported`) and otherwise uses the public
`client.messages.stream`. Both paths run here against the loopback fake with the real SDK (CI
runs this file on the lowest supported SDK too): what the server receives and what the provider
returns must be the same, so an SDK that drops the fast path costs speed, never behaviour.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agent_cli.providers import anthropic as provider_module
from agent_cli.providers.anthropic import AnthropicProvider, fast_stream_supported
from agent_cli.providers.base import ModelRequest
from tests.fakes.anthropic_server import FakeAnthropic, tool_reply

TOOLS = [{"name": "multiply", "description": "Multiply two integers.",
          "input_schema": {"type": "object", "properties": {"a": {"type": "integer"},
                                                            "b": {"type": "integer"}}}}]


@pytest.fixture
def fake() -> Any:
    with FakeAnthropic() as server:
        yield server


def _exchange(fake: FakeAnthropic, text: str) -> tuple[dict[str, Any], dict[str, str], Any]:
    fake.add(tool_reply(("toolu_1", "multiply", {"a": 6, "b": 7}), text="Let me multiply."))
    provider = AnthropicProvider("claude-test", api_key="test-key", base_url=fake.base_url)
    history = [{"role": "user", "content": [{"type": "text", "text": text}]}]
    streamed: list[str] = []
    reply = provider.complete(ModelRequest(messages=history, tools=TOOLS, system="Be brief.",
                                           max_tokens=100), streamed.append, lambda _m: None)
    sent = fake.requests[-1]
    body = json.loads(sent.raw_body.decode("utf-8"))  # strict: the bytes are valid UTF-8
    return body, sent.headers, (reply, "".join(streamed))


def test_this_sdk_takes_the_pre_encoded_request() -> None:
    assert fast_stream_supported()


def test_both_paths_send_the_same_request_and_return_the_same_reply(
        fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> None:
    fast_body, fast_headers, fast = _exchange(fake, "six times seven, é ✓")
    monkeypatch.setattr(provider_module, "fast_stream_supported", lambda: False)
    public_body, public_headers, public = _exchange(fake, "six times seven, é ✓")
    assert fast_body == public_body
    assert fast_body["stream"] is True and fast_body["tools"][-1]["cache_control"]
    for name in ("content-type", "x-stainless-helper-method", "x-stainless-stream-helper",
                 "anthropic-version", "x-api-key"):
        assert fast_headers.get(name) == public_headers.get(name), name
    assert fast == public
    reply, streamed = fast
    assert streamed == "Let me multiply."
    assert reply.stop_reason == "tool_use"
    assert reply.content[-1] == {"type": "tool_use", "id": "toolu_1", "name": "multiply",
                                 "input": {"a": 6, "b": 7}}


def test_the_public_path_also_sends_a_lone_surrogate_as_a_question_mark(
        fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(provider_module, "fast_stream_supported", lambda: False)
    body, _headers, (reply, _streamed) = _exchange(fake, "bytes: \udc80!")
    assert body["messages"][0]["content"][0]["text"] == "bytes: ?!"
    assert reply.stop_reason == "tool_use"
