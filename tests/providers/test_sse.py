"""The event-stream decoder (providers/sse.iter_sse) reads bytes as the SDK's decoder does.

The reference is the SDK's public `anthropic.Stream.raw_events(response)` over a real
`httpx2.Response` fed the same chunks. Every way of cutting a stream into reads is tried, so an
event, a line end (CRLF too) or a UTF-8 character split across two reads is read intact.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import anthropic
import httpx2
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agent_cli.providers.sse import iter_sse

API_SHAPED = (
    'event: message_start\ndata: {"type":"message_start","message":{"id":"m"}}\n\n'
    'event: ping\ndata: {"type": "ping"}\n\n'
    'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
    '"delta":{"type":"text_delta","text":"naïve 日本 🧪"}}\n\n'
).encode()

ODD = (
    ": a comment line\n"
    "event: multi\ndata: first line\ndata: second line ✓\nid: 7\nretry: 100\n\n"
    "data: no event name: dropped\n\n"
    "event:no-space\ndata:tight\n\n"
    "event: crlf\r\ndata: windows 🪟\r\n\r\n"
    "event: cr\rdata: old mac\r\r"
    "event: spaces\ndata:  two leading spaces\n\n"
    "event: colon:in:name\ndata\n\n"
    "\n\n\n"
    "event: empty-data\ndata: \n\n"
    "event: cut at the end\ndata: never dispatched"
).encode()


def _sdk(chunks: list[bytes]) -> list[tuple[str, str]]:
    response = httpx2.Response(200, content=iter(chunks))
    return [(e.event, e.data) for e in anthropic.Stream.raw_events(response) if e.event]


def _cuts(data: bytes, points: list[int]) -> list[bytes]:
    bounds = [0, *sorted(set(points)), len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds) if b > a]


@pytest.mark.parametrize("data", [API_SHAPED, ODD], ids=["api-shaped", "odd"])
def test_every_single_cut_reads_as_the_sdk_reads_it(data: bytes) -> None:
    whole = _sdk([data])
    assert list(iter_sse([data])) == whole
    for i in range(1, len(data)):
        chunks = [data[:i], data[i:]]
        assert list(iter_sse(chunks)) == whole, i


@pytest.mark.parametrize("data", [API_SHAPED, ODD], ids=["api-shaped", "odd"])
def test_byte_by_byte(data: bytes) -> None:
    chunks = [data[i:i + 1] for i in range(len(data))]
    assert list(iter_sse(chunks)) == _sdk(chunks) == _sdk([data])


def test_the_reference_sees_what_we_test() -> None:
    events = dict(_sdk([ODD]))
    assert events["multi"] == "first line\nsecond line ✓"
    assert events["crlf"] == "windows 🪟" and events["cr"] == "old mac"
    assert "cut at the end" not in events and "no event name: dropped" not in events.values()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=len(ODD) - 1), max_size=12),
       st.sampled_from([API_SHAPED + ODD, ODD + API_SHAPED, API_SHAPED.replace(b"\n", b"\r\n")]))
def test_any_cuts(points: list[int], data: bytes) -> None:
    points = [p for p in points if p < len(data)]
    assert list(iter_sse(_cuts(data, points))) == _sdk([data])


def _gen(chunks: list[bytes]) -> Iterator[bytes]:
    yield from chunks


def test_a_trailing_cr_at_the_end_of_the_stream_is_a_line_end() -> None:
    data = b"event: last\ndata: x\n\r"
    assert list(iter_sse(_gen([data]))) == _sdk([data]) == [("last", "x")]


START = (b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","model":"c",'
         b'"content":[],"stop_reason":null,"usage":{"input_tokens":1,"output_tokens":1}}}\n\n')
TEXT_START = (b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
              b'"content_block":{"type":"text","text":""}}\n\n')
STOP = b'event: message_stop\ndata: {"type":"message_stop"}\n\n'


@pytest.mark.parametrize("stream", [
    START + TEXT_START + b'event: content_block_delta\ndata: {"type":"content_block_delta",'
    b'"index":0,"delta":{"type":"text_delta","text":"\xff\xfe"}}\n\n' + STOP,
    START + b"event: content_block_start\ndata: {not json\n\n" + STOP,
    START + b'event: content_block_delta\ndata: {"type":"content_block_delta","index":3,'
    b'"delta":{"type":"text_delta","text":"x"}}\n\n' + STOP,
    START + b'event: content_block_start\ndata: {"type":"content_block_start","index":0,'
    b'"content_block":{"type":"tool_use","id":"t","name":"n","input":{}}}\n\n'
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,'
    b'"delta":{"type":"input_json_delta","partial_json":"{\\"a\\" 1}"}}\n\n'
    b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n' + STOP,
], ids=["not-utf8", "not-json", "delta-for-no-block", "tool-input-not-json"])
def test_a_stream_that_is_not_a_reply_is_a_sentence_and_not_retried(stream: bytes) -> None:
    from agent_cli.errors import ProviderError
    from agent_cli.providers.anthropic import AnthropicProvider
    from agent_cli.providers.base import ModelRequest
    from tests.fakes.anthropic_server import FakeAnthropic

    with FakeAnthropic() as fake:
        fake.add({"raw_sse": stream})
        provider = AnthropicProvider("claude-test", api_key="test-key", base_url=fake.base_url)
        with pytest.raises(ProviderError) as err:
            provider.complete(ModelRequest(messages=[{"role": "user", "content": "hi"}],
                                           tools=[]), lambda _t: None, lambda _m: None)
        assert err.value.kind == "stream_error"
        assert "could not be read" in str(err.value) and "Send your message again" in str(err.value)
        assert len(fake.requests) == 1
