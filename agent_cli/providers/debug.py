"""`--debug` / `--debug-file FILE`: every request body and every reply, redacted, written where
the user can read them, so what is sent is never a guess (the exact tool schemas, the system
prompt, the messages with their cache marks, the tool_choice) and neither is what came back.

The provider's own `body(request)` is what it sends, so the record is the wire body itself, not
a reconstruction. Secrets go through the log's redactor first (the record may be pasted into a
bug report); the API key travels in a header, and headers are never written.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO

from agent_cli.providers.base import ModelRequest, ModelResponse, Provider, StatusSink, TextSink


class DebugLog:
    """Numbered request/reply records, one JSON document each, after a header line."""

    def __init__(self, stream: TextIO, *, owned: bool) -> None:
        self.stream = stream
        self.owned = owned
        self.count = 0
        self._lock = threading.Lock()

    def write(self, what: str, record: Any) -> None:
        from agent_cli.redact import default_redactor

        text = json.dumps(default_redactor().value(record), indent=2, ensure_ascii=False,
                          default=str)
        stamp = time.strftime("%H:%M:%S")
        with self._lock:
            self.stream.write(f"--- agent-cli debug {stamp} {what} ---\n{text}\n")
            self.stream.flush()

    def close(self) -> None:
        if self.owned:
            self.stream.close()


def open_debug(target: str) -> DebugLog:
    """`-` is stderr; anything else a file, created 0600 (it holds the conversation), appended
    to."""
    if target == "-":
        return DebugLog(sys.stderr, owned=False)
    from agent_cli.private_files import open_private

    path = Path(target).expanduser()
    fd = open_private(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    return DebugLog(os.fdopen(fd, "a", encoding="utf-8"), owned=True)


def wire_body(provider: Provider, request: ModelRequest) -> tuple[str, dict[str, Any]]:
    """Where the provider sends `request` and the body it sends."""
    body = getattr(provider, "body", None)
    if callable(body):
        if provider.name == "openai":
            return f"POST {getattr(provider, 'url', '')}", body(request)
        base = getattr(provider, "base_url", None) or "https://api.anthropic.com"
        return f"POST {str(base).rstrip('/')}/v1/messages", body(request)
    return "(scripted: nothing is sent)", {
        "model": request.model, "max_tokens": request.max_tokens, "system": request.system,
        "tools": request.tools, "tool_choice": request.tool_choice,
        "messages": request.messages}


def attach_debug(provider: Provider, log: DebugLog) -> None:
    """Record every request and reply of `provider` in `log` (its `complete` is wrapped)."""
    inner = provider.complete

    def complete(request: ModelRequest, on_text: TextSink, on_status: StatusSink
                 ) -> ModelResponse:
        log.count += 1
        n = log.count
        where, body = wire_body(provider, request)
        log.write(f"request {n} {provider.name} {where}", body)
        try:
            reply = inner(request, on_text, on_status)
        except Exception as e:
            log.write(f"reply {n}: failed", {"error": str(e), "kind": getattr(e, "kind", None)})
            raise
        log.write(f"reply {n}", {"model": reply.model, "stop_reason": reply.stop_reason,
                                 "usage": reply.usage, "content": reply.content})
        return reply

    provider.complete = complete  # type: ignore[method-assign]
