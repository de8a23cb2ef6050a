"""OpenAI-compatible chat completions (OpenAI, Groq, vLLM, LM Studio, Ollama), streaming.

The conversation stays in the neutral Messages-API shape (providers/base.py); this module
translates at the edge, both ways:
- system prompt -> a "system" message; assistant tool_use blocks -> `tool_calls` (arguments as a
  JSON string); user tool_result blocks -> "tool" messages with `tool_call_id`;
- streamed deltas -> text (passed to `on_text` as it arrives) and tool calls reassembled by
  `index` (fragments of parallel calls may interleave); `finish_reason` -> stop_reason.

HTTP goes through httpx2, the client the anthropic SDK already installs: no new dependency, one
`Client` per provider so the connection is reused, and the same error handling and retries as the
Anthropic provider (see http_errors.py). The `openai` package would add a second SDK (and its
import time) for one endpoint whose wire format is small and stable.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from agent_cli import __version__
from agent_cli.conversation import History, tool_uses
from agent_cli.errors import ProviderError
from agent_cli.providers.base import (
    ModelRequest,
    ModelResponse,
    StatusSink,
    TextSink,
    openai_tool_choice,
)
from agent_cli.providers.http_errors import CUT_OFF_KIND, broken_stream_message, cut_off_message
from agent_cli.providers.retry import status_failed, unreachable, with_retries

if TYPE_CHECKING:
    import httpx2

DEFAULT_BASE_URL = "https://api.openai.com/v1"

STOP_REASONS = {
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "stop": "end_turn",
    "length": "max_tokens",
}

BAD_ARGS_ERROR = "arguments_error"
"""Key of the stand-in input for tool-call arguments that are not a JSON object. The tool's schema
never has it, so the registry rejects the call and the model reads why, with its own text."""
BAD_ARGS_TEXT = "arguments_text"


def parse_arguments(raw: str) -> dict[str, Any]:
    """The `arguments` JSON string of a tool call as an input object.

    Not JSON, or JSON that is not an object: returns a stand-in the registry rejects with a
    validation error quoting the text, so the model can correct itself and nothing crashes.
    """
    if not raw.strip():
        return {}  # some servers send "" for a call without arguments
    try:
        value = json.loads(raw)
    except ValueError as e:
        why = f"not valid JSON ({e.msg if isinstance(e, json.JSONDecodeError) else e})"
        return {BAD_ARGS_ERROR: f"the arguments string was {why}", BAD_ARGS_TEXT: raw}
    if not isinstance(value, dict):
        kind = "array" if isinstance(value, list) else type(value).__name__
        return {
            BAD_ARGS_ERROR: f"the arguments string was a JSON {kind}, not an object",
            BAD_ARGS_TEXT: raw,
        }
    return value


# ------------------------------------------------------------------ neutral -> chat completions


def to_openai_tool(spec: dict[str, Any], strict: bool = False) -> dict[str, Any]:
    """A tool in the Chat Completions shape. Chat Completions has no field for input examples,
    so they are folded into the description. With `strict`, a schema that has a strict form
    (providers/strict_schema.py) is sent in it with `strict: true`."""
    parameters = spec.get("input_schema") or {"type": "object", "properties": {}}
    description = spec.get("description", "")
    examples = spec.get("input_examples")
    if examples:
        description += "\n\nExamples of valid input:\n" + "\n".join(
            json.dumps(e, ensure_ascii=False) for e in examples)
    function: dict[str, Any] = {"name": spec["name"], "description": description,
                                "parameters": parameters}
    if strict:
        from agent_cli.providers.strict_schema import strict_schema

        converted = strict_schema(parameters)
        if converted is not None:
            function["parameters"] = converted
            function["strict"] = True
    return {"type": "function", "function": function}


def _result_images(block: dict[str, Any]) -> list[dict[str, Any]]:
    """A tool_result's Anthropic-shape image blocks as chat-completion image_url parts."""
    content = block.get("content")
    out: list[dict[str, Any]] = []
    for b in content if isinstance(content, list) else []:
        src = b.get("source") if isinstance(b, dict) and b.get("type") == "image" else None
        if isinstance(src, dict) and src.get("type") == "base64":
            url = f"data:{src.get('media_type', 'image/png')};base64,{src.get('data', '')}"
            out.append({"type": "image_url", "image_url": {"url": url}})
    return out


def _result_text(block: dict[str, Any]) -> str:
    content = block.get("content", "")
    if isinstance(content, list):
        content = "\n".join(
            str(b.get("text", ""))
            for b in content
            if isinstance(b, dict) and b.get("type") == "text"
        )
    text = str(content)
    # chat completions has no is_error flag on tool messages: say it in the text
    return f"ERROR: {text}" if block.get("is_error") else text


def to_openai_messages(messages: History, system: str | None) -> list[dict[str, Any]]:
    """The neutral conversation as chat-completion messages (tool messages right after the
    assistant message that asked for them, then any user text of the same turn)."""
    out: list[dict[str, Any]] = []
    if system:
        out.append({"role": "system", "content": system})
    for msg in messages:
        role = msg.get("role")
        content = msg.get("content")
        if isinstance(content, str):
            out.append({"role": role, "content": content})
            continue
        blocks = [b for b in content or [] if isinstance(b, dict)]
        if role == "assistant":
            text = "".join(str(b.get("text", "")) for b in blocks if b.get("type") == "text")
            calls = [
                {
                    "id": str(b.get("id")),
                    "type": "function",
                    "function": {
                        "name": str(b.get("name")),
                        "arguments": json.dumps(b.get("input", {}), ensure_ascii=False),
                    },
                }
                for b in tool_uses(blocks)
            ]
            item: dict[str, Any] = {"role": "assistant", "content": text or (None if calls else "")}
            if calls:
                item["tool_calls"] = calls
            out.append(item)
            continue
        texts: list[str] = []
        images: list[dict[str, Any]] = []
        for b in blocks:
            if b.get("type") == "tool_result":
                out.append(
                    {
                        "role": "tool",
                        "tool_call_id": str(b.get("tool_use_id")),
                        "content": _result_text(b),
                    }
                )
                images.extend(_result_images(b))
            elif b.get("type") == "text":
                texts.append(str(b.get("text", "")))
        if images:
            # Tool messages carry text only: the images a tool returned follow as a user
            # message of image parts, introduced as tool output (not as the user's words).
            parts: list[dict[str, Any]] = [{"type": "text", "text": "Images returned by the "
                                            "tool calls above (tool output, not the user):"}]
            out.append({"role": "user", "content": parts + images})
        if texts:
            out.append({"role": "user", "content": "\n\n".join(texts)})
    return out


# ------------------------------------------------------------------ streamed reply -> neutral


class StreamAssembler:
    """Collects `chat.completion.chunk` objects into one neutral reply."""

    def __init__(self, on_text: TextSink) -> None:
        self.on_text = on_text
        self.text: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.finish_reason: str | None = None
        self.usage: dict[str, int] = {}
        self.model: str | None = None
        self._last_index = -1

    def add(self, chunk: dict[str, Any]) -> None:
        if isinstance(chunk.get("model"), str):
            self.model = chunk["model"]
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.usage = _usage(usage)
        for choice in chunk.get("choices") or []:
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            piece = delta.get("content") or delta.get("refusal")
            if isinstance(piece, str) and piece:
                self.text.append(piece)
                self.on_text(piece)
            for call in delta.get("tool_calls") or []:
                if isinstance(call, dict):
                    self._add_call(call)
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])

    def _add_call(self, delta: dict[str, Any]) -> None:
        index = delta.get("index")
        if not isinstance(index, int):
            # servers that omit `index`: a new id starts a new call, otherwise it continues
            index = self._last_index + 1 if delta.get("id") or self._last_index < 0 else \
                self._last_index
        self._last_index = index
        slot = self.calls.setdefault(index, {"id": None, "name": "", "args": []})
        if delta.get("id"):
            slot["id"] = str(delta["id"])
        fn = delta.get("function") or {}
        if fn.get("name"):
            slot["name"] = str(fn["name"]) if not slot["name"] else slot["name"]
        if isinstance(fn.get("arguments"), str):
            slot["args"].append(fn["arguments"])

    def response(self) -> ModelResponse:
        content: list[dict[str, Any]] = []
        text = "".join(self.text)
        if text:
            content.append({"type": "text", "text": text})
        for n, index in enumerate(sorted(self.calls)):
            slot = self.calls[index]
            content.append(
                {
                    "type": "tool_use",
                    "id": slot["id"] or f"call_missing_{n}",
                    "name": slot["name"],
                    "input": parse_arguments("".join(slot["args"])),
                }
            )
        stop = STOP_REASONS.get(self.finish_reason or "", self.finish_reason)
        if self.calls and stop in (None, "end_turn"):
            stop = "tool_use"  # some servers say "stop" even when they called tools
        return ModelResponse(content, stop or "end_turn", self.usage, self.model)


def _usage(raw: dict[str, Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for src, dst in (("prompt_tokens", "input_tokens"), ("completion_tokens", "output_tokens")):
        value = raw.get(src)
        if isinstance(value, int) and not isinstance(value, bool):
            out[dst] = value
    return out


def sse_data(lines: Iterator[str]) -> Iterator[str]:
    """The `data:` payloads of a server-sent event stream (multi-line data joined by newlines)."""
    buf: list[str] = []
    for line in lines:
        if not line:
            if buf:
                yield "\n".join(buf)
                buf = []
            continue
        if line.startswith(":"):
            continue
        field, _, value = line.partition(":")
        if field == "data":
            buf.append(value[1:] if value.startswith(" ") else value)
    if buf:
        yield "\n".join(buf)


# ------------------------------------------------------------------ the provider


class _StreamBroke(Exception):
    """The reply started but could not be completed; never retried."""


class OpenAIProvider:
    name = "openai"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 4,
        retry_cap_s: float = 30.0,
        timeout_s: float = 600.0,
        transport: httpx2.BaseTransport | None = None,
        strict: bool = True,
    ) -> None:
        self.model = model
        self.strict = strict
        """Send tool schemas that have a strict form with `strict: true`."""
        # local servers (Ollama, LM Studio, vLLM) often need no key: then none is sent
        self.api_key = api_key or os.environ.get("OPENAI_API_KEY") or None
        self.base_url = (
            base_url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
        ).rstrip("/")
        self.max_retries = max_retries
        self.retry_cap_s = retry_cap_s
        self.timeout_s = timeout_s
        self._transport = transport
        self._client: httpx2.Client | None = None

    @property
    def url(self) -> str:
        return self.base_url + "/chat/completions"

    def client(self) -> httpx2.Client:
        if self._client is None:
            import httpx2

            self._client = httpx2.Client(
                timeout=httpx2.Timeout(self.timeout_s, connect=15.0),
                transport=self._transport,
            )
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def headers(self) -> dict[str, str]:
        h = {
            "content-type": "application/json",
            "accept": "text/event-stream",
            "user-agent": f"agent-cli/{__version__}",
        }
        if self.api_key:
            h["authorization"] = f"Bearer {self.api_key}"
        return h

    def body(self, request: ModelRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": request.model or self.model,
            "messages": to_openai_messages(request.messages, request.system),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        # api.openai.com deprecated max_tokens (reasoning models reject it); the compatible
        # servers all know max_tokens, not all know max_completion_tokens
        key = "max_completion_tokens" if "api.openai.com" in self.base_url else "max_tokens"
        body[key] = request.max_tokens
        if request.tools:
            body["tools"] = [to_openai_tool(t, self.strict) for t in request.tools]
            body["tool_choice"] = openai_tool_choice(request.tool_choice)
        return body

    def complete(
        self, request: ModelRequest, on_text: TextSink, on_status: StatusSink
    ) -> ModelResponse:
        import httpx2

        body = self.body(request)
        client = self.client()

        def attempt() -> ModelResponse:
            started = False
            try:
                with client.stream("POST", self.url, json=body, headers=self.headers()) as resp:
                    if resp.status_code != 200:
                        resp.read()
                        status, message = resp.status_code, _error_message(resp)
                        if status == 400 and "stream_options" in message and \
                                body.pop("stream_options", None) is not None:
                            return attempt()  # an older server: ask again without the option
                        raise status_failed(status, message, resp.headers, model=body["model"],
                                            key_env="OPENAI_API_KEY")
                    started = True
                    return self._unstrict(request, self._read_stream(resp, on_text))
            except _StreamBroke as e:
                raise ProviderError(broken_stream_message(str(e)), kind="stream_error") from None
            except httpx2.TransportError as e:
                if started:
                    raise ProviderError(broken_stream_message(f"{type(e).__name__}: {e}"),
                                        kind="connection") from None
                raise unreachable(self.base_url, type(e).__name__, e) from None

        return with_retries(attempt, max_retries=self.max_retries,
                            retry_cap_s=self.retry_cap_s, on_status=on_status)

    def _unstrict(self, request: ModelRequest, response: ModelResponse) -> ModelResponse:
        """Drop the nulls strict mode sends for optional arguments that were left out."""
        if not self.strict:
            return response
        from agent_cli.providers.strict_schema import drop_nulls, optional_keys, strict_schema

        schemas = {t["name"]: t.get("input_schema") or {} for t in request.tools}
        for block in response.tool_uses():
            schema = schemas.get(block.get("name"))
            if schema and isinstance(block.get("input"), dict) and \
                    strict_schema(schema) is not None:
                block["input"] = drop_nulls(block["input"], optional_keys(schema))
        return response

    def _read_stream(self, resp: httpx2.Response, on_text: TextSink) -> ModelResponse:
        acc = StreamAssembler(on_text)
        done = False
        for data in sse_data(resp.iter_lines()):
            if done:
                continue  # read to the end, so the connection goes back to the pool
            if data.strip() == "[DONE]":
                done = True
                continue
            try:
                chunk = json.loads(data)
            except ValueError:
                raise _StreamBroke(
                    f"the server sent a chunk that is not JSON: {data[:80]!r}"
                ) from None
            if not isinstance(chunk, dict):
                continue
            if chunk.get("error"):
                raise _StreamBroke(f"the server reported an error: {_message_of(chunk)}")
            acc.add(chunk)
        if acc.finish_reason is None:
            # Complete means the final chunk with a finish_reason arrived; `[DONE]` alone (or
            # a clean close) after a prefix is not enough: a tool call's arguments cut short
            # can still parse as a shorter, different call.
            raise ProviderError(cut_off_message("no chunk with a finish_reason"),
                                kind=CUT_OFF_KIND)
        return acc.response()


def _message_of(body: Any) -> str:
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
        if isinstance(err, str) and err:
            return err
        if body.get("message"):
            return str(body["message"])
        if body.get("detail"):
            return str(body["detail"])
    return ""


def _error_message(resp: httpx2.Response) -> str:
    """The API's own words from an error body (OpenAI, vLLM, Ollama and LM Studio differ)."""
    try:
        message = _message_of(resp.json())
    except ValueError:
        message = ""
    if not message:
        message = resp.text.strip()[:300] or resp.reason_phrase or "no details"
    return message
