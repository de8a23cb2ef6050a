"""The Anthropic Messages API through the official SDK, streaming.

The SDK is imported on first use (it costs about a second). One client is built per provider and
reused, so connections are kept alive across requests. Retries are ours, not the SDK's: we cap
`retry-after`, back off, and tell the user we are waiting.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import os
import threading
import time
from typing import Any

from agent_cli.errors import ProviderError
from agent_cli.providers.base import (
    ModelRequest,
    ModelResponse,
    StatusSink,
    TextSink,
    anthropic_tool_choice,
    usage_of,
)
from agent_cli.providers.body_json import BodyEncoder
from agent_cli.providers.http_errors import (
    CUT_OFF_KIND,
    broken_stream_message,
    connection_message,
    cut_off_message,
    explain_status,
    retry_notice,
    retry_wait,
    should_retry,
)

NO_KEY = (
    "No Anthropic API key: set ANTHROPIC_API_KEY (export ANTHROPIC_API_KEY=sk-ant-...) or put "
    "api_key in your config file. To try agent-cli without a key, run the offline demo: "
    "agent-cli chat --demo (in the repository also: agent-cli chat --provider scripted "
    "--script examples/demo_script.json)"
)


def _block_to_dict(block: Any) -> dict[str, Any]:
    kind = getattr(block, "type", None)
    if kind == "text":
        return {"type": "text", "text": block.text}
    if kind == "tool_use":
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    dumped: dict[str, Any] = block.model_dump(mode="json", exclude_none=True)
    return dumped


EPHEMERAL = {"type": "ephemeral"}


def with_cache_breakpoints(body: dict[str, Any]) -> dict[str, Any]:
    """The request with prompt-caching breakpoints, as the Messages API documents them (at most
    four `cache_control: {"type": "ephemeral"}` marks; each caches the prefix up to it, in the
    order tools, system, messages):

    1. the last tool definition (all tools: they change only when a tool joins or leaves);
    2. the system prompt;
    3. the last block of the last message (the conversation so far: the next request reads it);
    4. the last block of the user message before it: where the previous request put mark 3, so
       that request's entry is found even when a reply added more than the API's 20-block
       look-back (many tool calls at once).

    The history is never changed: only the copies sent carry the marks, so a prefix is
    byte-for-byte what the previous request sent, which is what a cache hit needs.
    """
    out = dict(body)
    tools = body.get("tools")
    if tools:
        out["tools"] = [*tools[:-1], {**tools[-1], "cache_control": EPHEMERAL}]
    system = body.get("system")
    if isinstance(system, str) and system:
        out["system"] = [{"type": "text", "text": system, "cache_control": EPHEMERAL}]
    messages = list(body.get("messages") or [])
    marked = 0
    for i in range(len(messages) - 1, -1, -1):  # from the end: the last two user messages
        if messages[i].get("role") == "user":
            messages[i] = _mark_last_block(messages[i])
            marked += 1
            if marked == 2:
                break
    out["messages"] = messages
    return out


def _mark_last_block(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    if isinstance(content, str):
        if not content:
            return message
        blocks: list[Any] = [{"type": "text", "text": content}]
    elif isinstance(content, list) and content and isinstance(content[-1], dict):
        blocks = list(content)
    else:
        return message
    blocks[-1] = {**blocks[-1], "cache_control": EPHEMERAL}
    return {**message, "content": blocks}


_frozen = False


def _freeze_import_time_objects() -> None:
    """The SDK's ~150k import-time objects live as long as the process: moving them out of the
    collector's reach (once per process) spares every later full collection walking them
    (measured: 65 ms pauses, about 0.25 ms of CPU per model request over a long session; see
    bench/bench_overhead.py)."""
    global _frozen
    if not _frozen:
        _frozen = True
        gc.freeze()


@functools.cache
def fast_stream_supported() -> bool:
    """Whether this SDK takes a pre-encoded streaming request the way `_open_stream` builds it:
    `Anthropic.post(..., content=, stream=, stream_cls=)` and
    `MessageStreamManager(api_request, *, output_format=)`, checked on their signatures."""
    import inspect

    import anthropic

    try:
        post = inspect.signature(anthropic.Anthropic.post).parameters
        manager = inspect.signature(anthropic.MessageStreamManager.__init__).parameters
        anthropic.Stream[Any]
    except (AttributeError, TypeError, ValueError):
        return False
    needed = ("self", "api_request", "output_format")
    others_optional = all(p.default is not p.empty or p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
                          for name, p in manager.items() if name not in needed)
    return ({"content", "stream", "stream_cls", "cast_to", "options"} <= set(post)
            and list(manager)[:2] == ["self", "api_request"] and "output_format" in manager
            and manager["output_format"].kind is inspect.Parameter.KEYWORD_ONLY
            and others_optional)


def _encode(body: dict[str, Any], encoder: BodyEncoder | None = None) -> tuple[bytes, bool]:
    """The streaming request body as UTF-8 JSON, and whether a lone surrogate had to become
    "?" (undecodable bytes a tool kept) for it to be valid UTF-8. With `encoder`, the messages
    seen at the last request are not encoded again (the same bytes: providers/body_json.py)."""
    full = {**body, "stream": True}
    text = encoder(full) if encoder is not None else json.dumps(
        full, ensure_ascii=False, separators=(",", ":"))
    try:
        return text.encode("utf-8"), False
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace"), True


class AnthropicProvider:
    name = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 4,
        retry_cap_s: float = 30.0,
        timeout_s: float = 600.0,
        prompt_cache: bool = True,
    ) -> None:
        self.model = model
        self.prompt_cache = prompt_cache
        """Send cache_control breakpoints (config `prompt_cache`)."""
        self.api_key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        self.base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        if not self.api_key and not os.environ.get("ANTHROPIC_AUTH_TOKEN"):
            raise ProviderError(NO_KEY, kind="auth")
        self.max_retries = max_retries
        self.retry_cap_s = retry_cap_s
        self.timeout_s = timeout_s
        self._client: Any = None
        self._client_lock = threading.Lock()
        self._body_json = BodyEncoder()
        """Each message's JSON, kept from one request to the next (the same bytes)."""

    def warm_up(self, delay_s: float = 0.3) -> None:
        """Import the SDK and build the client in the background while the person types, so
        the first message does not wait for the import (about a second here). The delay lets
        the prompt draw first."""
        timer = threading.Timer(delay_s, self._warm)
        timer.daemon = True
        timer.start()

    def _warm(self) -> None:
        # Any problem here is reported, in a sentence, by the first real request.
        with contextlib.suppress(Exception):
            self.client()

    def client(self) -> Any:
        with self._client_lock:
            return self._make_client()

    def _make_client(self) -> Any:
        if self._client is None:
            import anthropic

            self._client = anthropic.Anthropic(
                api_key=self.api_key,
                base_url=self.base_url,
                max_retries=0,
                timeout=self.timeout_s,
            )
            _freeze_import_time_objects()
        return self._client

    def _open_stream(self, client: Any, body: dict[str, Any]) -> Any:
        """`client.messages.stream(**body)`, with the body encoded here when the SDK allows.

        The SDK walks and copies the whole request body on every request before encoding it
        (`prepare_request_data`); with a long history that grows with every call: at 300 calls
        4.95 ms against 1.46 ms for one json.dumps of the same 80 KB, and 2.4x the per-call host
        overhead seen from the server (bench/bench_overhead.py --sdk-ab). Our body is plain JSON
        already, so it is encoded once and sent through the client's public `post(content=...)`
        inside the SDK's own `MessageStreamManager`: streaming, events, accumulation and errors
        stay the SDK's. That manager's constructor is not documented, so it is checked once per
        process (`fast_stream_supported`); an SDK that changed it gets the public
        `messages.stream`: slower, never broken. A lone surrogate (undecodable bytes kept by a
        tool) becomes "?" rather than invalid UTF-8 in the request, on either path.
        """
        import anthropic

        content, replaced = _encode(body, self._body_json)
        if not fast_stream_supported():
            cleaned = json.loads(content) if replaced else dict(body)
            cleaned.pop("stream", None)
            return client.messages.stream(**cleaned)
        from anthropic.types import Message, RawMessageStreamEvent

        request = functools.partial(
            client.post,
            "/v1/messages",
            cast_to=Message,
            content=content,
            options={"headers": {"Content-Type": "application/json",
                                 "X-Stainless-Helper-Method": "stream",
                                 "X-Stainless-Stream-Helper": "messages"}},
            stream=True,
            stream_cls=anthropic.Stream[RawMessageStreamEvent],
        )
        return anthropic.MessageStreamManager(request, output_format=anthropic.NOT_GIVEN)

    def complete(
        self, request: ModelRequest, on_text: TextSink, on_status: StatusSink
    ) -> ModelResponse:
        import anthropic

        kwargs: dict[str, Any] = {
            "model": request.model or self.model,
            "max_tokens": request.max_tokens,
            "messages": request.messages,
        }
        if request.tools:
            kwargs["tools"] = request.tools
            kwargs["tool_choice"] = anthropic_tool_choice(request.tool_choice)
        if request.system:
            kwargs["system"] = request.system
        if self.prompt_cache:
            kwargs = with_cache_breakpoints(kwargs)
        client = self.client()
        attempt = 0
        while True:
            streamed = False
            try:
                with self._open_stream(client, kwargs) as stream:
                    streamed = True  # the request was answered: from here on, never retried
                    # A server may close the stream cleanly before the end: only a reply whose
                    # `message_stop` arrived is complete (the SDK accepts the prefix as final).
                    complete = False
                    for event in stream:
                        if event.type == "content_block_delta" and \
                                event.delta.type == "text_delta":
                            on_text(event.delta.text)
                        elif event.type == "message_stop":
                            complete = True
                    if not complete:
                        raise ProviderError(cut_off_message("no message_stop event"),
                                            kind=CUT_OFF_KIND)
                    final = stream.get_final_message()
                return ModelResponse(
                    content=[_block_to_dict(b) for b in final.content],
                    stop_reason=final.stop_reason,
                    usage=usage_of(final.usage.model_dump()),
                    model=final.model,
                )
            except anthropic.APIStatusError as e:
                status = e.status_code
                message = _api_message(e)
                if status == 200 or streamed:
                    raise ProviderError(
                        f"The reply broke off mid-stream (the API said: {message}); nothing "
                        "from it was run. Send your message again.",
                        kind="stream_error",
                    ) from None
                if should_retry(status, e.response.headers) and attempt < self.max_retries:
                    wait = retry_wait(attempt, e.response.headers, self.retry_cap_s)
                    attempt += 1
                    on_status(retry_notice(f"The API answered {status} ({message})", wait,
                                           attempt, self.max_retries))
                    time.sleep(wait)
                    continue
                text, kind = explain_status(status, message, model=kwargs["model"],
                                            key_env="ANTHROPIC_API_KEY", retries=attempt)
                raise ProviderError(text, kind=kind, status=status) from None
            except (anthropic.APIConnectionError, anthropic.APITimeoutError) as e:
                where = self.base_url or "the Anthropic API"
                if streamed:
                    raise ProviderError(broken_stream_message(str(e)),
                                        kind="connection") from None
                if attempt < self.max_retries:
                    wait = retry_wait(attempt, None, self.retry_cap_s)
                    attempt += 1
                    on_status(retry_notice(f"Cannot reach {where} ({e})", wait, attempt,
                                           self.max_retries))
                    time.sleep(wait)
                    continue
                raise ProviderError(connection_message(where, e), kind="connection") from None
            except Exception as e:
                # A connection dropped mid-stream surfaces as httpx2's TransportError, not as an
                # anthropic error; it is never retried (text may already be on screen).
                if not type(e).__module__.startswith(("httpx", "httpcore")):
                    if isinstance(e, TypeError) and ("api_key" in str(e)
                                                     or "auth" in str(e).lower()):
                        raise ProviderError(NO_KEY, kind="auth") from None
                    raise
                raise ProviderError(
                    broken_stream_message(f"{type(e).__name__}: {e}"), kind="connection"
                ) from None


def _api_message(e: Any) -> str:
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
    return str(getattr(e, "message", e))
