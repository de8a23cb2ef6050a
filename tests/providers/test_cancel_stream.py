"""A cancelled turn stops its model request, not just its wait for it: the stream's connection is
closed at the next piece of text (the server stops generating, and billing, a reply nobody will
read), and a retry pause ends at once with no further request sent. The request runs on a thread
of its own (loop._cancellable); before, that thread read the abandoned stream to its end and,
after a retry pause, sent the request again."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_cli import events as ev
from agent_cli.config import Settings
from tests.fakes import anthropic_server as anth
from tests.fakes import openai_server as oai
from tests.scripts import make_session

WAIT_S = 60.0
"""Generous bound of every wait for a condition (a loaded machine is slow, never wrong)."""


@pytest.fixture(params=["anthropic", "openai"])
def fake(request: pytest.FixtureRequest) -> Iterator[Any]:
    server: Any = anth.FakeAnthropic() if request.param == "anthropic" else oai.FakeOpenAI()
    with server:
        yield server


def _settings(fake: Any) -> Settings:
    if isinstance(fake, anth.FakeAnthropic):
        return Settings(provider="anthropic", model="claude-test", base_url=fake.base_url,
                        api_key="sk-test-key", retries=3)
    return Settings(provider="openai", model="gpt-test", base_url=fake.v1_url,
                    api_key="sk-test-key", retries=3)


def _text(fake: Any, text: str, **fault: Any) -> dict[str, Any]:
    reply = (anth.text_reply(text) if isinstance(fake, anth.FakeAnthropic)
             else oai.text_reply(text))
    return {**reply, **fault}


def _model_threads() -> set[threading.Thread]:
    """The threads of model requests alive now (other tests' may linger: compare sets)."""
    return {t for t in threading.enumerate() if t.name == "agent-cli-model"}


def _until(condition: Callable[[], bool]) -> None:
    done = threading.Event()
    for _ in range(int(WAIT_S / 0.05)):
        if condition():
            return
        done.wait(0.05)
    raise AssertionError("the condition did not come true in time")


def _cancel_once(settings: Settings, tmp_path: Path, workspace: Path,
                 when: Callable[[Any], bool]) -> None:
    """Start a turn, cancel it at the first event `when` accepts, and wait until the turn and
    its model request's own thread have ended."""
    seen = threading.Event()
    session = make_session(workspace, log=tmp_path / "s.jsonl", settings=settings)
    session.sinks = (*session.sinks, lambda e: seen.set() if when(e) else None)
    session.start()
    before = _model_threads()
    handle = session.prompt("hello")
    assert seen.wait(WAIT_S)
    session.cancel()
    assert handle.wait().reason == "interrupted"
    # Without the fix the thread went on: it read the stream to its end, or sent the request
    # again after the pause.
    _until(lambda: _model_threads() <= before)
    session.close()


def test_a_cancel_mid_stream_hangs_up_on_the_server(fake: Any, tmp_path: Path,
                                                     workspace: Path) -> None:
    # 400 words, one event every 50 ms: 20 s of stream, were it read to its end.
    fake.add(_text(fake, " ".join(["word"] * 400), event_delay_s=0.05, chunk_bytes=40))
    _cancel_once(_settings(fake), tmp_path, workspace, lambda e: isinstance(e, ev.TextDelta))
    _until(lambda: bool(fake.streams))  # the server's next write meets a closed socket
    assert fake.streams == ["cut by the client"]


def test_a_cancel_during_a_retry_pause_sends_no_further_request(fake: Any, tmp_path: Path,
                                                                 workspace: Path) -> None:
    fake.add({"status": 429, "retry_after": "5"}, _text(fake, "too late"))
    settings = _settings(fake).model_copy(update={"retry_cap_s": 5.0})
    _cancel_once(settings, tmp_path, workspace,
                 lambda e: isinstance(e, ev.Notice) and e.kind == "retry")
    assert len(fake.requests) == 1
    assert fake.pending == 1  # "too late" was never asked for
