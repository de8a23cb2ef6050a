"""The Anthropic Messages API through the official SDK, streaming.

The SDK is imported on first use (it costs about a second). One client is built per provider and
reused, so connections are kept alive across requests. Retries are ours, not the SDK's: we cap
`retry-after`, back off, and tell the user we are waiting.
"""

from __future__ import annotations

import os
import random
import time
from typing import Any

from agent_cli.errors import ProviderError
from agent_cli.providers.base import ModelRequest, ModelResponse, StatusSink, TextSink, usage_of

RETRY_STATUSES = {408, 409, 429, 500, 502, 503, 504, 529}

NO_KEY = (
    "No Anthropic API key: set ANTHROPIC_API_KEY (export ANTHROPIC_API_KEY=sk-ant-...) or put "
    "api_key in your config file. To try agent-cli without a key, run the offline demo: "
    "agent-cli chat --provider scripted --script examples/demo_script.json"
)


def _block_to_dict(block: Any) -> dict[str, Any]:
    kind = getattr(block, "type", None)
    if kind == "text":
        return {"type": "text", "text": block.text}
    if kind == "tool_use":
        return {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
    dumped: dict[str, Any] = block.model_dump(mode="json", exclude_none=True)
    return dumped


def explain_status(status: int, message: str, model: str) -> tuple[str, str]:
    """A sentence the user can act on for an HTTP error, and its kind."""
    if status in (401, 403):
        return (
            f"The API refused the credentials ({status}: {message}). Check ANTHROPIC_API_KEY "
            "or api_key in your config.",
            "auth",
        )
    if status == 404:
        return (
            f"The API does not know this model or endpoint ({message}). Check --model "
            f"(now {model!r}) and --base-url.",
            "not_found",
        )
    if status == 413 or "too long" in message.lower() or "context" in message.lower():
        return (
            f"The request is too large for the model ({status}: {message}). Use /compact, "
            "/clear, or ask for smaller tool outputs.",
            "too_large",
        )
    if status == 429:
        return (f"Rate limited by the API ({message}); retries ran out. Wait and try again.",
                "rate_limit")
    if status in (500, 502, 503, 504, 529):
        return (f"The API is overloaded or failing ({status}: {message}); retries ran out. "
                "Try again in a moment.", "overloaded")
    return (f"The API rejected the request ({status}: {message}).", "bad_request")


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
    ) -> None:
        self.model = model
        self.api_key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        self.base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        if not self.api_key and not os.environ.get("ANTHROPIC_AUTH_TOKEN"):
            raise ProviderError(NO_KEY, kind="auth")
        self.max_retries = max_retries
        self.retry_cap_s = retry_cap_s
        self.timeout_s = timeout_s
        self._client: Any = None

    def client(self) -> Any:
        if self._client is None:
            import anthropic

            self._client = anthropic.Anthropic(
                api_key=self.api_key,
                base_url=self.base_url,
                max_retries=0,
                timeout=self.timeout_s,
            )
        return self._client

    def _wait_for(self, attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                return min(max(float(retry_after), 0.0), self.retry_cap_s)
            except ValueError:
                pass
        return min(self.retry_cap_s, 0.5 * 2**attempt) * (0.5 + random.random() / 2)

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
        if request.system:
            kwargs["system"] = request.system
        client = self.client()
        attempt = 0
        while True:
            streamed = False
            try:
                with client.messages.stream(**kwargs) as stream:
                    for text in stream.text_stream:
                        streamed = True
                        on_text(text)
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
                        f"The reply broke off mid-stream ({message}); nothing from it was run. "
                        "Send your message again.",
                        kind="stream_error",
                    ) from None
                if status in RETRY_STATUSES and attempt < self.max_retries:
                    wait = self._wait_for(attempt, e.response.headers.get("retry-after"))
                    attempt += 1
                    on_status(
                        f"API answered {status} ({message}); retrying in {wait:.1f} s "
                        f"(attempt {attempt + 1} of {self.max_retries + 1})"
                    )
                    time.sleep(wait)
                    continue
                text, kind = explain_status(status, message, kwargs["model"])
                raise ProviderError(text, kind=kind, status=status) from None
            except (anthropic.APIConnectionError, anthropic.APITimeoutError) as e:
                if not streamed and attempt < self.max_retries:
                    wait = self._wait_for(attempt, None)
                    attempt += 1
                    on_status(f"Cannot reach the API ({e}); retrying in {wait:.1f} s")
                    time.sleep(wait)
                    continue
                where = self.base_url or "the Anthropic API"
                raise ProviderError(
                    f"Cannot reach {where}: {e}. Check your network or --base-url; "
                    "nothing from a partial reply was run.",
                    kind="connection",
                ) from None
            except TypeError as e:
                if "api_key" in str(e) or "auth" in str(e).lower():
                    raise ProviderError(NO_KEY, kind="auth") from None
                raise


def _api_message(e: Any) -> str:
    body = getattr(e, "body", None)
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict) and err.get("message"):
            return str(err["message"])
    return str(getattr(e, "message", e))
