"""What both HTTP providers say when a request fails, and how long they wait before retrying.

One place, so Anthropic and OpenAI-compatible endpoints give the same advice for the same
status: the sentence names what to check (the key, the model name, the size of the conversation)
and never carries a traceback.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Mapping

RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
"""Statuses worth another try: timeouts, conflicts, rate limits, overload and server faults."""

_TOO_LONG_HINTS = (
    "too long",
    "too large",
    "context length",
    "context_length",
    "context window",
    "maximum context",
    "too many tokens",
    "request_too_large",
)


def should_retry(status: int, headers: Mapping[str, str] | None) -> bool:
    """The server may say so itself (`x-should-retry`, as the Anthropic API and SDK do)."""
    hint = (headers or {}).get("x-should-retry", "").strip().lower()
    if hint in ("true", "false"):
        return hint == "true"
    return status in RETRY_STATUSES


def is_too_long(status: int, message: str) -> bool:
    """413, or a 400 whose message says the prompt does not fit the model's context."""
    if status == 413:
        return True
    low = message.lower()
    return status == 400 and any(h in low for h in _TOO_LONG_HINTS)


def explain_status(
    status: int, message: str, *, model: str, key_env: str, retries: int = 0
) -> tuple[str, str]:
    """A sentence the user can act on for an HTTP error status, and its kind for the log."""
    msg = message.strip().rstrip(".") or "no details"
    if status in (401, 403):
        what = "refused the API key" if status == 401 else "does not allow this key here"
        return (
            f"The API {what} ({status}: {msg}). Check {key_env} or api_key in your config "
            "(and --base-url, if you use another server).",
            "auth",
        )
    if status == 404:
        return (
            f"The API does not know the model {model!r} or this endpoint (404: {msg}). Check "
            "--model (or /model NAME) and --base-url.",
            "not_found",
        )
    if is_too_long(status, message):
        return (
            f"The conversation is too large for the model ({status}: {msg}). Type /compact to "
            "continue from a summary, or /clear to start over; lower context_budget_chars or "
            "output_cap in your config to send less.",
            "too_large",
        )
    tries = (f"gave up after {retries} retr{'y' if retries == 1 else 'ies'}" if retries
             else "not retried")
    if status == 429:
        return (
            f"The API is rate limiting this key (429: {msg}); {tries}. Wait a minute and send "
            "your message again, or raise retries / retry_cap_s in your config.",
            "rate_limit",
        )
    if status == 529 or status >= 500:
        return (
            f"The API is overloaded or failing ({status}: {msg}); {tries}. Try again in a "
            "moment.",
            "overloaded",
        )
    if status == 400:
        return (f"The API rejected the request (400: {msg}).", "bad_request")
    return (f"The API answered {status}: {msg}.", "http_error")


def connection_message(where: str, error: BaseException) -> str:
    """Nothing came back: say where we tried, so a wrong --base-url is easy to spot."""
    detail = str(error) or type(error).__name__
    return (
        f"Cannot reach {where} ({detail}). Check your network, that the server is running, "
        "and --base-url."
    )


def broken_stream_message(detail: str) -> str:
    return (
        f"The connection broke during the reply ({detail}), so the reply was cut off; nothing "
        "from the partial reply was run. Send your message again."
    )


CUT_OFF_KIND = "cut_off"
"""`ProviderError.kind` of a reply whose stream ended before its final event."""


def cut_off_message(detail: str) -> str:
    """A stream that ended cleanly but early: whatever arrived is a prefix of the reply (a tool
    input cut mid-JSON can parse as a shorter, different command), so none of it is used."""
    return (
        f"The stream ended early ({detail}), so the reply was cut off; nothing from it was "
        "run or proposed. Send your message again."
    )


def retry_wait(attempt: int, headers: Mapping[str, str] | None, cap_s: float) -> float:
    """Seconds to wait before retry number `attempt + 1`.

    The server's `retry-after-ms` / `retry-after` (seconds or an HTTP date) wins, capped at
    `cap_s`: a 120 s retry-after must not freeze the terminal for two minutes. Without one,
    exponential backoff from 0.5 s with jitter, also capped.
    """
    if headers is not None:
        ms = headers.get("retry-after-ms")
        if ms:
            try:
                return _clamp(float(ms) / 1000.0, cap_s)
            except ValueError:
                pass
        after = headers.get("retry-after")
        if after:
            try:
                return _clamp(float(after), cap_s)
            except ValueError:
                try:
                    when = email.utils.parsedate_to_datetime(after).timestamp()
                    return _clamp(when - time.time(), cap_s)
                except (TypeError, ValueError, IndexError):
                    pass
    return _clamp(0.5 * 2**attempt * (0.5 + random.random() / 2), cap_s)


def _clamp(seconds: float, cap_s: float) -> float:
    return min(max(seconds, 0.0), cap_s)


def retry_notice(what: str, wait: float, attempt: int, max_retries: int) -> str:
    """What the user sees while we wait (a Notice in the REPL and the log)."""
    return f"{what}; retrying in {wait:.1f} s (retry {attempt} of {max_retries})"
