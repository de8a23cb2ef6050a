"""A streamed Messages API reply, read from the response bytes into plain dicts.

The SDK's `messages.stream` builds a typed pydantic model for every server-sent event and, on
every `input_json_delta`, parses the tool input received so far again; that per-event work was
about a third of the host's time per tool call (docs/benchmarks.md, "Server side"). The reply we
return is plain dicts anyway (providers/base.ModelResponse), so this module reads the events as
dicts and builds the reply once, with the SDK's rules (`lib/streaming/_messages.py`,
`accumulate_event`, and `_streaming.Stream`), which tests/providers/test_sse_differential.py
checks stream by stream against the SDK's own `messages.stream(...).get_final_message()`:

- only events with an `event:` line count (data-only events are dropped), `ping` is skipped,
  and an event is dispatched by its data's `type`, as the SDK does;
- `event: error` stops the reply (`StreamError`, with the API's message);
- blocks are appended in order and a delta addresses the `index`-th one; text, thinking and
  signature deltas extend their block; tool input (`tool_use`, `server_tool_use`) is the
  concatenated `input_json_delta` text, parsed once when the block stops (a prefix cut by
  `max_tokens` is read as the SDK reads it: the longest object it starts with);
- `message_delta` sets the stop reason and overwrites the usage counters it carries;
- only a stream whose `message_stop` arrived is complete (`done`); the caller never uses the rest.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from agent_cli.providers.base import ModelResponse, TextSink, usage_of

__all__ = ["MalformedStream", "ReplyBuilder", "StreamError", "iter_sse", "read_reply"]

_TRACKS_TOOL_INPUT = frozenset({"tool_use", "server_tool_use"})
"""Blocks whose `input` is streamed as JSON text (the SDK's `TRACKS_TOOL_INPUT`)."""

_DELTA_USAGE = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
"""Counters a `message_delta` overwrites when it carries them (output_tokens always)."""

_USAGE_ORDER = ("cache_creation_input_tokens", "cache_read_input_tokens", "input_tokens",
                "output_tokens")
"""The SDK's `Usage` field order: the usage dict keeps it, so the log reads as it did."""

_FIELD_ORDER = {"thinking": ("signature", "thinking", "type"),
                "redacted_thinking": ("data", "type")}
"""The SDK's field order for the blocks it dumped with `model_dump` (ours keep it)."""


class StreamError(Exception):
    """The API sent `event: error` inside an open stream; `args[0]` is its message."""


class MalformedStream(ValueError):
    """The stream is not a Messages API reply we can read (bad JSON, a delta for no block)."""


def iter_sse(chunks: Iterable[bytes]) -> Iterator[tuple[str, str]]:
    """(event name, data) of each server-sent event in `chunks`, as the SDK's decoder reads them:
    lines end in LF, CRLF or CR; a blank line dispatches; `:` lines are comments; the one space
    after a field's colon is dropped; `data` lines join with LF; `id` and `retry` are ignored.
    Events without an `event:` name are skipped (the SDK drops them). An event cut off by the
    end of the stream (no blank line after it) is never dispatched. Bytes are decoded as UTF-8
    only once an event is whole, so a character split across chunks is read intact."""
    buf = b""
    held_cr = False  # buf ends in a CR whose LF may be in the next chunk
    for chunk in chunks:
        if not chunk:
            continue
        scan = max(0, len(buf) - 1)  # the rest had no blank line: look from the seam on
        buf = buf + chunk if buf else chunk
        if held_cr or b"\r" in chunk:
            held_cr = buf.endswith(b"\r")
            body = buf[:-1] if held_cr else buf
            buf = body.replace(b"\r\n", b"\n").replace(b"\r", b"\n") + (b"\r" if held_cr else b"")
            scan = 0
        start = 0
        while True:
            end = buf.find(b"\n\n", scan)
            if end < 0:
                break
            block = buf[start:end]
            start = scan = end + 2
            # The API's shape, one `event:` line and one `data:` line, without a general parse.
            if block.startswith(b"event: "):
                nl = block.find(b"\n", 7)
                if nl > 7 and block.startswith(b"data: ", nl + 1) and \
                        block.find(b"\n", nl + 1) < 0:
                    yield block[7:nl].decode("utf-8"), block[nl + 7:].decode("utf-8")
                    continue
            event = _parse_block(block)
            if event is not None:
                yield event
        if start:
            buf = buf[start:]
    if held_cr:  # the stream ended on a CR: it was a line end after all
        buf = buf[:-1] + b"\n"
        while (end := buf.find(b"\n\n")) >= 0:
            event = _parse_block(buf[:end])
            buf = buf[end + 2:]
            if event is not None:
                yield event


def _parse_block(block: bytes) -> tuple[str, str] | None:
    name = ""
    data: list[str] = []
    for raw in block.split(b"\n"):
        if not raw or raw.startswith(b":"):
            continue
        line = raw.decode("utf-8")
        field, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if field == "event":
            name = value
        elif field == "data":
            data.append(value)
    if not name:
        return None
    return name, "\n".join(data)


def error_message(data: str) -> str:
    """What an `event: error` says, as the provider quotes an APIStatusError: the error's
    `message`, else the body as compact JSON (as the SDK 2.17 formats it; earlier SDKs wrote
    Python's repr of it)."""
    try:
        body = json.loads(data)
    except ValueError:
        return data or "Error code: 200"
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
    return json.dumps(body, separators=(",", ":"), ensure_ascii=False)


def parse_tool_input(raw: str) -> Any:
    """A tool's streamed input text as the SDK reads it (jiter, partial mode): whole JSON as
    itself; a prefix (a reply cut by max_tokens) as the longest value it starts with."""
    try:
        return json.loads(raw)
    except ValueError:
        pass
    try:
        from jiter import from_json  # the SDK's own parser for this, installed with it
    except ImportError:  # an SDK that no longer brings it: the prefix reads as nothing
        return {}
    try:
        return from_json(raw.encode("utf-8"), partial_mode=True)
    except ValueError as e:
        raise MalformedStream(f"the tool input is not JSON ({e})") from None


class ReplyBuilder:
    """One reply, built from its events (dicts) in the order they arrive."""

    def __init__(self) -> None:
        self.message: dict[str, Any] | None = None
        """message_start's message: id, model, stop_reason (set by message_delta), ..."""
        self.blocks: list[dict[str, Any]] = []
        """The content blocks so far, as they came, with their deltas applied."""
        self.usage: dict[str, Any] = {}
        """message_start's usage, with what message_delta overwrote."""
        self.tool_json: dict[int, list[str]] = {}
        """Per block index, the `input_json_delta` pieces not parsed yet."""
        self.done = False
        """`message_stop` arrived: the reply is whole."""

    def add(self, event: Any) -> str | None:
        """Apply one event's data; returns the text it streamed, if any. Events before
        `message_start` are ignored, as the SDK does."""
        if not isinstance(event, dict):
            raise MalformedStream(f"an event that is not an object: {str(event)[:80]}")
        kind = event.get("type")
        if self.message is None:
            if kind == "message_start":
                message = event.get("message")
                if not isinstance(message, dict):
                    raise MalformedStream("message_start without a message")
                self.message = message
                self.blocks = [dict(b) for b in message.get("content") or []]
                usage = message.get("usage")
                self.usage = dict(usage) if isinstance(usage, dict) else {}
        elif kind == "content_block_delta":
            return self._delta(event)
        elif kind == "content_block_start":
            self.blocks.append(dict(event["content_block"]))
        elif kind == "content_block_stop":
            self._finish_input(event["index"])
        elif kind == "message_delta":
            self.message["stop_reason"] = (event.get("delta") or {}).get("stop_reason")
            usage = event.get("usage") or {}
            self.usage["output_tokens"] = usage.get("output_tokens")
            for key in _DELTA_USAGE:
                if usage.get(key) is not None:
                    self.usage[key] = usage[key]
        elif kind == "message_stop":
            self.done = True
        return None

    def _delta(self, event: dict[str, Any]) -> str | None:
        index = event["index"]
        block = self.blocks[index]
        delta = event["delta"]
        kind = delta.get("type")
        if kind == "text_delta":
            text: str = delta["text"]
            if block.get("type") == "text":
                block["text"] = block.get("text", "") + text
            return text
        if kind == "input_json_delta":
            if block.get("type") in _TRACKS_TOOL_INPUT:
                self.tool_json.setdefault(index, []).append(delta["partial_json"])
        elif kind == "thinking_delta":
            if block.get("type") == "thinking":
                block["thinking"] = block.get("thinking", "") + delta["thinking"]
        elif kind == "signature_delta" and block.get("type") == "thinking":
            block["signature"] = delta["signature"]
        return None

    def _finish_input(self, index: int) -> None:
        pieces = self.tool_json.pop(index, None)
        if pieces:
            raw = "".join(pieces)
            if raw:
                self.blocks[index]["input"] = parse_tool_input(raw)

    def response(self) -> ModelResponse:
        """The reply as the provider returns it (the caller checks `done` first)."""
        if self.message is None:
            raise MalformedStream("no message_start event")
        for index in list(self.tool_json):  # a block the stream never stopped
            self._finish_input(index)
        usage = self.usage
        ordered = {k: usage[k] for k in _USAGE_ORDER if k in usage}
        ordered.update((k, v) for k, v in usage.items() if k not in ordered)
        return ModelResponse(content=[_block_dict(b) for b in self.blocks],
                             stop_reason=self.message.get("stop_reason"),
                             usage=usage_of(ordered), model=self.message.get("model"))


def _block_dict(block: dict[str, Any]) -> dict[str, Any]:
    """A content block as the provider has always returned it: text and tool_use with exactly
    their fields; thinking blocks in the SDK's field order; any other block as it came, without
    null fields (the SDK's `model_dump(exclude_none=True)`)."""
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "text": block.get("text", "")}
    if kind == "tool_use":
        return {"type": "tool_use", "id": block.get("id"), "name": block.get("name"),
                "input": block.get("input")}
    order = _FIELD_ORDER.get(str(kind), ())
    out = {k: block[k] for k in order if block.get(k) is not None}
    out.update((k, v) for k, v in block.items() if v is not None and k not in out)
    return out


def read_reply(chunks: Iterable[bytes], on_text: TextSink) -> ReplyBuilder:
    """Read a whole streamed reply; text goes to `on_text` as it arrives. Raises StreamError
    for an `event: error` and MalformedStream for a stream that is not a reply. The builder
    returned says whether the reply finished (`done`) and gives its `response()`."""
    builder = ReplyBuilder()
    add = builder.add
    loads = json.loads
    events = iter_sse(chunks)
    while True:
        try:
            name, data = next(events)
        except StopIteration:
            return builder
        except UnicodeDecodeError as e:
            raise MalformedStream(f"an event that is not UTF-8 ({e.reason})") from None
        if name == "ping":
            continue
        if name == "error":
            raise StreamError(error_message(data))
        if not data:
            continue
        try:
            text = add(loads(data))
        except (ValueError, LookupError, TypeError, AttributeError) as e:
            if isinstance(e, MalformedStream):
                raise
            raise MalformedStream(f"{type(e).__name__}: {e}") from None
        if text is not None:
            on_text(text)
