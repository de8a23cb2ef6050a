"""The provider's request is the one `messages.stream` would send (issue 21, goal 6).

`AnthropicProvider` encodes the body once and posts it through the SDK's public
`client.post(path, cast_to=httpx2.Response, content=..., stream=True)`, its documented way to make
a request by hand, and reads the events itself (providers/sse.py; the replies are compared with
the SDK's in test_sse_differential.py). Here the request: what the loopback server receives from
the provider must be what the SDK's public `client.messages.stream` sends for the same body (the
same JSON, the same headers), and the provider's bytes must be one `json.dumps` of it (the prompt
cache compares bytes). CI runs this file on the lowest supported SDK too.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import anthropic
import pytest

from agent_cli.errors import ProviderError
from agent_cli.providers.anthropic import AnthropicProvider, with_cache_breakpoints
from agent_cli.providers.base import ModelRequest
from tests.fakes.anthropic_server import FakeAnthropic, text_reply, tool_reply

TOOLS = [{"name": "multiply", "description": "Multiply two integers.",
          "input_schema": {"type": "object", "properties": {"a": {"type": "integer"},
                                                            "b": {"type": "integer"}}}}]
HEADERS = ("content-type", "accept", "x-stainless-helper-method", "x-stainless-stream-helper",
           "anthropic-version", "x-api-key", "authorization", "user-agent")


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


def test_the_request_is_the_one_messages_stream_sends(fake: FakeAnthropic) -> None:
    fake.add(tool_reply(("toolu_1", "multiply", {"a": 6, "b": 7}), text="Let me multiply."),
             text_reply("ok"))
    history = [{"role": "user", "content": [{"type": "text", "text": "six times seven, é ✓"}]}]
    provider = AnthropicProvider("claude-test", api_key="test-key", base_url=fake.base_url)
    reply = provider.complete(ModelRequest(messages=history, tools=TOOLS, system="Be brief.",
                                           max_tokens=100), lambda _t: None, lambda _m: None)
    ours = fake.requests[-1]
    body = with_cache_breakpoints({"model": "claude-test", "max_tokens": 100,
                                   "messages": history, "tools": TOOLS,
                                   "tool_choice": {"type": "auto"}, "system": "Be brief."})
    client = anthropic.Anthropic(api_key="test-key", base_url=fake.base_url, max_retries=0)
    with client.messages.stream(**body) as stream:
        stream.get_final_message()
    theirs = fake.requests[-1]
    assert ours.path == theirs.path == "/v1/messages"
    assert json.loads(ours.raw_body.decode("utf-8")) == json.loads(theirs.raw_body)
    assert ours.raw_body == json.dumps({**body, "stream": True}, ensure_ascii=False,
                                       separators=(",", ":")).encode("utf-8")
    assert ours.body["stream"] is True and ours.body["tools"][-1]["cache_control"]
    for name in HEADERS:
        assert ours.headers.get(name) == theirs.headers.get(name), name
    assert ours.headers.get("x-stainless-retry-count") == "0"
    assert reply.stop_reason == "tool_use"
    assert reply.content[-1] == {"type": "tool_use", "id": "toolu_1", "name": "multiply",
                                 "input": {"a": 6, "b": 7}}


def test_an_error_status_is_the_sdks_error_and_read_once(fake: FakeAnthropic) -> None:
    """A non-2xx answer to the streaming post is raised by the SDK (APIStatusError, with its
    body read) and becomes the provider's sentence; the SDK itself never retries it."""
    fake.add({"status": 400, "error_message": "messages: bad shape"})
    provider = AnthropicProvider("claude-test", api_key="test-key", base_url=fake.base_url)
    with pytest.raises(ProviderError) as err:
        provider.complete(ModelRequest(messages=[{"role": "user", "content": "hi"}], tools=[]),
                          lambda _t: None, lambda _m: None)
    assert err.value.status == 400 and "messages: bad shape" in str(err.value)
    assert len(fake.requests) == 1


def test_retries_are_the_providers_own(fake: FakeAnthropic) -> None:
    fake.add({"status": 529, "retry_after": "0"}, {"status": 429, "retry_after": "0"},
             text_reply("third time"))
    notices: list[str] = []
    provider = AnthropicProvider("claude-test", api_key="test-key", base_url=fake.base_url,
                                 max_retries=2, retry_cap_s=0.0)
    reply = provider.complete(ModelRequest(messages=[{"role": "user", "content": "hi"}],
                                           tools=[]), lambda _t: None, notices.append)
    assert reply.text() == "third time"
    assert [r.headers.get("x-stainless-retry-count") for r in fake.requests] == ["0"] * 3
    assert len(notices) == 2 and "529" in notices[0] and "429" in notices[1]
