"""The Anthropic Messages API through the official SDK, streaming.

The SDK is imported on first use (it costs about a second). One client is built per provider and
reused, so connections are kept alive across requests. Retries are ours, not the SDK's: we cap
`retry-after`, back off, and tell the user we are waiting. The request goes through the SDK's
public `client.post` (auth, base URL, headers, timeouts, status errors stay the SDK's) with the
body encoded here once, and the streamed events are read here into plain dicts
(providers/sse.py), which is most of what a tool call costs the host otherwise (goal 5 of
issue 21, docs/benchmarks.md).
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import threading
from typing import Any

from agent_cli.errors import ProviderError
from agent_cli.providers.base import (
    ModelRequest,
    ModelResponse,
    StatusSink,
    TextSink,
    anthropic_tool_choice,
)
from agent_cli.providers.body_json import BodyEncoder
from agent_cli.providers.http_errors import CUT_OFF_KIND, broken_stream_message, cut_off_message
from agent_cli.providers.retry import status_failed, unreachable, with_retries
from agent_cli.providers.sse import MalformedStream, StreamError, read_reply

NO_KEY = (
    "No Anthropic API key: set ANTHROPIC_API_KEY (export ANTHROPIC_API_KEY=sk-ant-...) or put "
    "api_key in your config file. To try agent-cli without a key, run the offline demo: "
    "agent-cli chat --demo (in the repository also: agent-cli chat --provider scripted "
    "--script examples/demo_script.json)"
)


EPHEMERAL = {"type": "ephemeral"}

STREAM_HEADERS = {"Content-Type": "application/json", "X-Stainless-Helper-Method": "stream",
                  "X-Stainless-Stream-Helper": "messages"}
"""What `messages.stream` sends besides the client's own headers (the server sees the same)."""


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
        strict: bool = True,
    ) -> None:
        self.model = model
        self.strict = strict
        """Send `strict: true` for tools whose schema is already in strict form (config
        `strict_tools`; providers/strict_schema.is_strict_as_is)."""
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

    def _send(self, client: Any, body: dict[str, Any]) -> Any:
        """POST the request and return the streaming `httpx2.Response`, not yet read.

        Through the SDK's public `client.post(path, cast_to=httpx2.Response, ...)`, its way to
        make a request by hand: the client's auth, base URL, headers, timeout and status errors
        (`APIStatusError` for a non-2xx answer, `APIConnectionError`/`APITimeoutError`) apply
        as to `messages.stream`; retries are ours (`max_retries=0`). Two reasons for it:
        - the body is encoded here, once (`content=` bytes). The SDK's own path walks and
          copies the whole body on every request before encoding it (`prepare_request_data`),
          which grows with the history (bench/bench_overhead.py --sdk-ab);
        - the events are read here as dicts (providers/sse.py) instead of as a typed model per
          event, and the tool input is parsed once instead of on every delta.
        The headers are those `messages.stream` sends. A lone surrogate (undecodable bytes kept
        by a tool) becomes "?" rather than invalid UTF-8 in the request.
        """
        import httpx2

        content, _replaced = _encode(body, self._body_json)
        return client.post("/v1/messages", cast_to=httpx2.Response, content=content,
                           options={"headers": STREAM_HEADERS}, stream=True)

    def body(self, request: ModelRequest) -> dict[str, Any]:
        """The Messages API request for `request` (without `stream`), cache marks included."""
        kwargs: dict[str, Any] = {
            "model": request.model or self.model,
            "max_tokens": request.max_tokens,
            "messages": request.messages,
        }
        if request.tools:
            kwargs["tools"] = [_with_strict(t) for t in request.tools] if self.strict \
                else request.tools
            kwargs["tool_choice"] = anthropic_tool_choice(request.tool_choice)
        if request.system:
            kwargs["system"] = request.system
        if self.prompt_cache:
            kwargs = with_cache_breakpoints(kwargs)
        return kwargs

    def complete(
        self, request: ModelRequest, on_text: TextSink, on_status: StatusSink
    ) -> ModelResponse:
        import anthropic

        kwargs = self.body(request)
        client = self.client()
        where = self.base_url or "the Anthropic API"

        def attempt() -> ModelResponse:
            streamed = False
            try:
                response = self._send(client, kwargs)
                streamed = True  # the request was answered: from here on, never retried
                try:
                    reply = read_reply(response.iter_bytes(), on_text)
                finally:
                    response.close()
                # A server may close the stream cleanly before the end: only a reply whose
                # `message_stop` arrived is complete (what came before is a prefix of it).
                if not reply.done:
                    raise ProviderError(cut_off_message("no message_stop event"),
                                        kind=CUT_OFF_KIND)
                return reply.response()
            except StreamError as e:
                raise ProviderError(
                    f"The reply broke off mid-stream (the API said: {e}); nothing from it was "
                    "run. Send your message again.",
                    kind="stream_error",
                ) from None
            except MalformedStream as e:
                raise ProviderError(
                    f"The reply could not be read ({e}); nothing from it was run. Send your "
                    "message again.",
                    kind="stream_error",
                ) from None
            except anthropic.APIStatusError as e:
                status = e.status_code
                message = _api_message(e)
                if status == 200 or streamed:
                    raise ProviderError(
                        f"The reply broke off mid-stream (the API said: {message}); nothing "
                        "from it was run. Send your message again.",
                        kind="stream_error",
                    ) from None
                raise status_failed(status, message, e.response.headers, model=kwargs["model"],
                                    key_env="ANTHROPIC_API_KEY") from None
            except (anthropic.APIConnectionError, anthropic.APITimeoutError) as e:
                if streamed:
                    raise ProviderError(broken_stream_message(str(e)),
                                        kind="connection") from None
                raise unreachable(where, str(e), e) from None
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

        return with_retries(attempt, max_retries=self.max_retries,
                            retry_cap_s=self.retry_cap_s, on_status=on_status)

def _with_strict(spec: dict[str, Any]) -> dict[str, Any]:
    """A tool definition with `strict: true` when its schema qualifies as it is (the API then
    guarantees calls match it); any other is sent unchanged."""
    from agent_cli.providers.strict_schema import is_strict_as_is

    schema = spec.get("input_schema")
    if "strict" in spec or not isinstance(schema, dict) or not is_strict_as_is(schema):
        return spec
    return {**spec, "strict": True}


def _api_message(e: Any) -> str:
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
    return str(getattr(e, "message", e))
