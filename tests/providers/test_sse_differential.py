"""The provider's own reading of a streamed reply against the SDK's (issue 21, goals 5 and 6).

`AnthropicProvider` reads the event stream itself (providers/sse.py) instead of through the
SDK's `messages.stream`, which builds a typed model per event. Every stream here is served by the
loopback fake to both readers with the real SDK client: the SDK's public
`client.messages.stream(...)` (its events and `get_final_message()`, turned into dicts the way
the provider did before it read the stream itself) and the provider's request + reader. They
must give the same blocks (same keys in the same order), stop reason, usage, model and streamed
text; an error event the same message; a stream cut before `message_stop` the same prefix.
CI runs this file on the lowest supported SDK too.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

from agent_cli.errors import ProviderError
from agent_cli.providers.anthropic import AnthropicProvider, with_cache_breakpoints
from agent_cli.providers.base import ModelRequest, usage_of
from agent_cli.providers.sse import StreamError, read_reply
from tests.fakes.anthropic_server import FakeAnthropic

TOOLS = [{"name": name, "description": f"The {name} tool.",
          "input_schema": {"type": "object", "properties": {}}}
         for name in ("multiply", "read_file", "write_file", "list_dir")]
HISTORY = [{"role": "user", "content": [{"type": "text", "text": "go"}]}]

UNICODE = ("naïve café, 日本語のテキスト, emoji 🧪🚀 and a combining é, RTL שלום, "
           "a line separator \u2028 end")


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _use(cid: str, name: str, args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": cid, "name": name, "input": args}


CASES: dict[str, dict[str, Any]] = {
    "text": {"content": [_text("Hello there, " * 20)]},
    "unicode split across reads": {"content": [_text(UNICODE)], "chunk_bytes": 7,
                                   "event_delay_s": 0.001},
    "several tool calls": {"content": [
        _text("Three calls:"),
        _use("toolu_1", "multiply", {"a": 6, "b": 7}),
        _use("toolu_2", "read_file", {"path": "docs/ünïcode ✓.md", "nested": {
            "list": [1, 2.5, -3e-7, None, True, False, "x"], "empty": {}, "quote": "\"\\/"}}),
        _use("toolu_3", "list_dir", {"path": "."}),
    ]},
    "empty tool input": {"content": [_use("toolu_e", "list_dir", {}),
                                     {"type": "tool_use", "id": "toolu_n", "name": "list_dir",
                                      "raw_input": ""}]},
    "thinking, signature, text and a call": {"content": [
        {"type": "thinking", "thinking": "Let me think about 6 x 7... " * 5,
         "signature": "EqQBCkYIBxgCKkDsig=="},
        _text("It is 42, but let me check."),
        _use("toolu_t", "multiply", {"a": 6, "b": 7}),
    ]},
    "redacted thinking": {"content": [
        {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwx"},
        _text("Done."),
    ]},
    "tool input cut by max_tokens": {"content": [
        _text("Writing the config."),
        {"type": "tool_use", "id": "toolu_cut", "name": "write_file",
         "raw_input": '{"path": "config.ini", "mode": 420, "content": "[main]\\nmode = saf'},
    ], "stop_reason": "max_tokens"},
    "usage from the last message_delta": {
        "content": [_text("cached")],
        "usage": {"input_tokens": 5, "cache_creation_input_tokens": 100,
                  "cache_read_input_tokens": 0, "extra_counter": 3},
        "delta_usage": {"input_tokens": 7, "cache_read_input_tokens": 2048,
                        "output_tokens": 99, "cache_creation_input_tokens": None},
    },
    "no content, only a ping": {"content": [], "stop_reason": "end_turn"},
    "stop sequence and another model": {"content": [_text("up to here")],
                                        "stop_reason": "stop_sequence", "stop_sequence": "##",
                                        "model": "claude-other-1"},
}


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


def _body() -> dict[str, Any]:
    return with_cache_breakpoints({"model": "claude-test", "max_tokens": 1000,
                                   "messages": HISTORY, "tools": TOOLS,
                                   "tool_choice": {"type": "auto"}, "system": "Be brief."})


def _sdk_block(block: Any) -> dict[str, Any]:
    """How the provider turned the SDK's blocks into dicts before it read the stream itself."""
    if block.type == "text":
        return {"type": "text", "text": block.text}
    if block.type == "tool_use":
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    dumped: dict[str, Any] = block.model_dump(mode="json", exclude_none=True)
    return dumped


def _sdk_read(client: Any) -> dict[str, Any]:
    texts: list[str] = []
    out: dict[str, Any] = {"texts": texts}
    try:
        with client.messages.stream(**_body()) as stream:
            for event in stream:
                if event.type == "content_block_delta" and event.delta.type == "text_delta":
                    texts.append(event.delta.text)
                out["done"] = event.type == "message_stop"
            final = stream.get_final_message()
    except anthropic.APIStatusError as e:
        out.pop("done", None)
        out["error"] = _sdk_error_message(e)
        return out
    out["reply"] = {"content": [_sdk_block(b) for b in final.content],
                    "stop_reason": final.stop_reason,
                    "usage": usage_of(final.usage.model_dump()), "model": final.model}
    return out


def _sdk_error_message(e: Any) -> str:
    body = e.body
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        return str(body["error"]["message"])
    return str(e.message)


def _our_read(provider: AnthropicProvider) -> dict[str, Any]:
    texts: list[str] = []
    out: dict[str, Any] = {"texts": texts}
    response = provider._send(provider.client(), _body())
    try:
        builder = read_reply(response.iter_bytes(), texts.append)
    except StreamError as e:
        out["error"] = str(e)
        return out
    finally:
        response.close()
    out["done"] = builder.done
    r = builder.response()
    out["reply"] = {"content": r.content, "stop_reason": r.stop_reason, "usage": r.usage,
                    "model": r.model}
    return out


def _both(fake: FakeAnthropic, reply: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    fake.add({**reply, "split_seed": 7}, {**reply, "split_seed": 7})
    client = anthropic.Anthropic(api_key="test-key", base_url=fake.base_url, max_retries=0)
    sdk = _sdk_read(client)
    provider = AnthropicProvider("claude-test", api_key="test-key", base_url=fake.base_url)
    ours = _our_read(provider)
    first, second = fake.requests[-2:]
    assert first.body == second.body, "both readers sent the same request"
    return sdk, ours


def _same(sdk: dict[str, Any], ours: dict[str, Any]) -> None:
    # json.dumps: the same keys in the same order too (the log and the next request keep them)
    assert json.dumps(ours, ensure_ascii=False) == json.dumps(sdk, ensure_ascii=False)


@pytest.mark.parametrize("name", list(CASES))
def test_the_same_stream_gives_the_same_reply(fake: FakeAnthropic, name: str) -> None:
    sdk, ours = _both(fake, CASES[name])
    _same(sdk, ours)
    assert ours["done"] is True
    assert "".join(ours["texts"]) == "".join(b.get("text", "") for b in CASES[name]["content"]
                                             if b["type"] == "text")


def test_the_provider_returns_that_reply(fake: FakeAnthropic) -> None:
    """`complete()` as the loop calls it: the ModelResponse is the SDK's reading."""
    for name in ("several tool calls", "thinking, signature, text and a call",
                 "tool input cut by max_tokens", "usage from the last message_delta"):
        sdk, _ours = _both(fake, CASES[name])
        fake.add({**CASES[name], "split_seed": 7})
        provider = AnthropicProvider("claude-test", api_key="test-key", base_url=fake.base_url,
                                     prompt_cache=True)
        streamed: list[str] = []
        r = provider.complete(ModelRequest(messages=HISTORY, tools=TOOLS, system="Be brief.",
                                           max_tokens=1000, model="claude-test"),
                              streamed.append, lambda _m: None)
        assert fake.requests[-1].raw_body == fake.requests[-2].raw_body  # both ours
        got = {"content": r.content, "stop_reason": r.stop_reason, "usage": r.usage,
               "model": r.model}
        assert json.dumps(got) == json.dumps(sdk["reply"]), name
        assert streamed == sdk["texts"]


@pytest.mark.parametrize("after", [1, 3, 6])
def test_an_error_event_gives_the_same_message_and_text_before_it(fake: FakeAnthropic,
                                                                   after: int) -> None:
    reply = {**CASES["several tool calls"], "error_event_after": after,
             "error_message": "Overloaded — try later ✓"}
    sdk, ours = _both(fake, reply)
    _same(sdk, ours)
    assert ours["error"] == "Overloaded — try later ✓"


def test_an_error_event_with_a_body_that_is_not_the_api_shape(fake: FakeAnthropic) -> None:
    reply = {**CASES["text"], "error_event_after": 2,
             "error_body": {"type": "error", "detail": ["odd", 1]}}
    sdk, ours = _both(fake, reply)
    assert ours["texts"] == sdk["texts"]
    # The same body: the SDK writes it as JSON with the request's id after it (2.17), or as
    # Python's repr (earlier); ours is the JSON.
    said = re.sub(r" \(request_id: [^)]*\)$", "", sdk["error"])
    assert json.loads(ours["error"]) == reply["error_body"]
    assert ours["error"] == said or ast.literal_eval(said) == reply["error_body"]


@pytest.mark.parametrize("after", [1, 2, 4, 7, 11])
def test_a_stream_cut_before_message_stop_gives_the_same_prefix(fake: FakeAnthropic,
                                                                 after: int) -> None:
    reply = {**CASES["thinking, signature, text and a call"], "end_after": after}
    sdk, ours = _both(fake, reply)
    assert ours["done"] is False and sdk.get("done") is False
    _same(sdk, ours)


def test_the_provider_never_returns_a_cut_stream(fake: FakeAnthropic) -> None:
    fake.add({**CASES["several tool calls"], "end_after": 9})
    provider = AnthropicProvider("claude-test", api_key="test-key", base_url=fake.base_url)
    with pytest.raises(ProviderError) as err:
        provider.complete(ModelRequest(messages=HISTORY, tools=TOOLS), lambda _t: None,
                          lambda _m: None)
    assert err.value.kind == "cut_off" and "no message_stop" in str(err.value)
    assert len(fake.requests) == 1
