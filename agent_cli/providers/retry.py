"""The one retry loop of both HTTP providers (anthropic.py, openai_compat.py).

A provider's attempt raises `Failed` for a failure that happened before any of the reply was
read (an error status, a server out of reach); anything after the first byte of a reply is
never retried (text may be on screen) and is raised as a ProviderError by the attempt itself.
The loop decides the rest in one place: retry while the failure allows it and retries are left,
wait as the server asks or with backoff (capped at `retry_cap_s`, http_errors.retry_wait), say so
on `on_status` before each wait, and raise the failure's own sentence when it gives up.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

from agent_cli.cancel import checkpoint, pause
from agent_cli.errors import ProviderError
from agent_cli.providers.http_errors import (
    connection_message,
    explain_status,
    retry_notice,
    retry_wait,
    should_retry,
)

T = TypeVar("T")


class Failed(Exception):
    """One attempt failed before its reply started. `what` opens the retry notice; `give_up`
    makes the error raised when no retry is left (it gets the number of retries made)."""

    def __init__(self, what: str, give_up: Callable[[int], ProviderError], *,
                 retry: bool = True, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(what)
        self.what = what
        self.give_up = give_up
        self.retry = retry
        self.headers = headers


def status_failed(status: int, message: str, headers: Mapping[str, str] | None, *,
                  model: str, key_env: str) -> Failed:
    """An error status: retried when the server says so or the status is one worth another
    try (http_errors.should_retry); else the sentence for that status."""

    def give_up(retries: int) -> ProviderError:
        text, kind = explain_status(status, message, model=model, key_env=key_env,
                                    retries=retries)
        return ProviderError(text, kind=kind, status=status)

    return Failed(f"The API answered {status} ({message})", give_up,
                  retry=should_retry(status, headers), headers=headers)


def unreachable(where: str, shown: str, error: BaseException) -> Failed:
    """The server could not be reached (or timed out) before it answered: always retried."""
    return Failed(f"Cannot reach {where} ({shown})",
                  lambda _retries: ProviderError(connection_message(where, error),
                                                 kind="connection"))


def with_retries(attempt: Callable[[], T], *, max_retries: int, retry_cap_s: float,
                 on_status: Callable[[str], None]) -> T:
    """`attempt()` until it returns, retrying each `Failed` that allows it up to `max_retries`
    times. A cancel of the turn the request is for (cancel.working_for) ends a wait at once and
    sends no further attempt; KeyboardInterrupt passes through."""
    retries = 0
    while True:
        checkpoint()  # a cancelled turn sends no further request
        try:
            return attempt()
        except Failed as failed:
            if not failed.retry or retries >= max_retries:
                raise failed.give_up(retries) from None
            wait = retry_wait(retries, failed.headers, retry_cap_s)
            retries += 1
            on_status(retry_notice(failed.what, wait, retries, max_retries))
            if wait > 0:
                pause(wait)  # ended at once by a cancel of the turn it is for
