"""Deterministic providers: the offline demo, the tests and replay's rerun drive the real loop
with them.

`ScriptedProvider` hands out a list of replies in the Messages API response shape, one per
request. `FunctionProvider` asks a function of the conversation, for branching scripts.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from agent_cli.conversation import has_tool_use
from agent_cli.errors import ScriptExhausted, UsageError
from agent_cli.providers.base import ModelRequest, ModelResponse, StatusSink, TextSink, usage_of


def response_from_dict(raw: Any, where: str) -> ModelResponse:
    if not isinstance(raw, dict) or not isinstance(raw.get("content"), list):
        raise UsageError(
            f"{where}: each reply must be an object with a `content` list of blocks "
            '(for example {"content": [{"type": "text", "text": "hi"}], '
            '"stop_reason": "end_turn"}).'
        )
    content = [dict(b) for b in raw["content"] if isinstance(b, dict)]
    stop = raw.get("stop_reason")
    if stop is None:
        stop = "tool_use" if has_tool_use(content) else "end_turn"
    return ModelResponse(content, stop, usage_of(raw.get("usage")), raw.get("model"))


def _snapshot(request: ModelRequest) -> ModelRequest:
    """The request as it was sent: the loop goes on appending to the same history list, and a test
    (or a rerun) looking at `requests` later must see what this request held."""
    return replace(request, messages=list(request.messages), tools=list(request.tools))


class ScriptedProvider:
    name = "scripted"

    def __init__(
        self,
        replies: Sequence[dict[str, Any] | ModelResponse],
        *,
        model: str = "scripted",
        source: str = "script",
        chunk: int = 0,
    ) -> None:
        self.model = model
        self._replies = list(replies)
        self._next = 0
        self._source = source
        self._chunk = chunk
        self.requests: list[ModelRequest] = []

    @classmethod
    def from_file(cls, path: Path, **kw: Any) -> ScriptedProvider:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise UsageError(f"Script file {path} not found.") from None
        except json.JSONDecodeError as e:
            raise UsageError(f"Script file {path} is not valid JSON: {e}.") from None
        if not isinstance(data, list):
            raise UsageError(f"Script file {path} must hold a JSON array of replies.")
        return cls(data, source=str(path), **kw)

    @property
    def remaining(self) -> int:
        return len(self._replies) - self._next

    def complete(
        self, request: ModelRequest, on_text: TextSink, on_status: StatusSink
    ) -> ModelResponse:
        self.requests.append(_snapshot(request))
        if self._next >= len(self._replies):
            raise ScriptExhausted(
                f"The script {self._source} has no reply left for request {self._next + 1} "
                f"(it holds {len(self._replies)}). Add replies to the script or end the session."
            )
        raw = self._replies[self._next]
        self._next += 1
        resp = raw if isinstance(raw, ModelResponse) else response_from_dict(raw, self._source)
        for block in resp.content:
            if block.get("type") == "text":
                text = str(block.get("text", ""))
                step = self._chunk or len(text) or 1
                for i in range(0, len(text), step):
                    on_text(text[i : i + step])
        return resp


class FunctionProvider:
    """A provider that asks `fn(request)` for each reply (branching scripts in tests)."""

    name = "function"

    def __init__(
        self, fn: Callable[[ModelRequest], dict[str, Any] | ModelResponse], model: str = "fn"
    ) -> None:
        self.fn = fn
        self.model = model
        self.requests: list[ModelRequest] = []

    def complete(
        self, request: ModelRequest, on_text: TextSink, on_status: StatusSink
    ) -> ModelResponse:
        self.requests.append(_snapshot(request))
        raw = self.fn(request)
        resp = raw if isinstance(raw, ModelResponse) else response_from_dict(raw, "function")
        text = resp.text()
        if text:
            on_text(text)
        return resp

