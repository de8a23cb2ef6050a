"""Errors a user can act on, from both providers, against both fake servers.

For every failure the user must read one sentence saying what to do (never a traceback), `run`
must exit 4, and the session and its log must survive: the next message works, and every
tool_use the model made has its tool_result.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_cli import events as ev
from agent_cli.cli.app import app
from agent_cli.config import Settings
from agent_cli.providers.http_errors import explain_status, is_too_long, retry_wait
from tests.conftest import REPO
from tests.fakes import anthropic_server as anth
from tests.fakes import openai_server as oai
from tests.scripts import log_records, make_session, started

# --------------------------------------------------------------------------- both fakes, one API


@dataclass
class Backend:
    """One provider and its fake, with replies written in a neutral way."""

    name: str
    fake: Any
    key_env: str

    @property
    def url(self) -> str:
        return self.fake.base_url if self.name == "anthropic" else self.fake.v1_url

    def text(self, text: str) -> dict[str, Any]:
        return anth.text_reply(text) if self.name == "anthropic" else oai.text_reply(text)

    def call(self, call_id: str, name: str, args: dict[str, Any]) -> dict[str, Any]:
        if self.name == "anthropic":
            return anth.tool_reply((call_id, name, args))
        return oai.tool_reply((call_id, name, args))

    def settings(self, **extra: Any) -> Settings:
        model = "claude-test" if self.name == "anthropic" else "gpt-test"
        values: dict[str, Any] = {"provider": self.name, "model": model, "base_url": self.url,
                                  "api_key": "sk-test-key", "retries": 1, "retry_cap_s": 0.0}
        values.update(extra)
        return Settings(**values)


@pytest.fixture(params=["anthropic", "openai"])
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    if request.param == "anthropic":
        with anth.FakeAnthropic() as fa:
            yield Backend("anthropic", fa, "ANTHROPIC_API_KEY")
    else:
        with oai.FakeOpenAI() as fo:
            yield Backend("openai", fo, "OPENAI_API_KEY")


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


# --------------------------------------------------------------------------- each status, via `run`

LONG_CONTEXT = {
    "anthropic": "prompt is too long: 250000 tokens > 200000 maximum",
    "openai": "This model's maximum context length is 128000 tokens. However, your messages "
              "resulted in 250000 tokens.",
}

CASES: list[tuple[str, list[dict[str, Any]], list[str]]] = [
    ("400", [{"status": 400, "error_message": "messages.0.content: field is bogus"}],
     ["The API rejected the request (400: messages.0.content: field is bogus)"]),
    ("401", [{"status": 401}], ["refused the API key (401", "Check {key}"]),
    ("403", [{"status": 403}], ["does not allow this key here (403", "Check {key}"]),
    ("404", [{"status": 404}], ["does not know the model", "Check --model"]),
    ("413", [{"status": 413}], ["too large for the model (413", "/compact"]),
    ("400-context", [{"status": 400, "error_message": "{long}"}],
     ["too large for the model (400", "/compact", "context_budget_chars"]),
    ("429", [{"status": 429, "retry_after": "0"}] * 2,
     ["rate limiting this key (429", "gave up after 1 retry", "Wait a minute"]),
    ("5xx", [{"status": 529}, {"status": 503}],
     ["overloaded or failing (503", "gave up after 1 retry"]),
]


@pytest.mark.parametrize("case, replies, expected", CASES, ids=[c[0] for c in CASES])
def test_each_error_status_gives_one_sentence_and_exit_4(
        backend: Backend, workspace: Path, tmp_path: Path, case: str,
        replies: list[dict[str, Any]], expected: list[str]) -> None:
    for r in replies:
        r = dict(r)
        if r.get("error_message") == "{long}":
            r["error_message"] = LONG_CONTEXT[backend.name]
        backend.fake.add(r)
    config = tmp_path / "config.toml"
    config.write_text("retries = 1\nretry_cap_s = 0.0\n")
    log = tmp_path / "run.jsonl"
    result = CliRunner().invoke(
        app,
        ["run", "hello", "--provider", backend.name, "--base-url", backend.url,
         "--model", "some-model", "--workspace", str(workspace), "--config", str(config),
         "--log", str(log)],
        env={backend.key_env: "sk-test-key", "COLUMNS": "400"},
    )
    out = flat(result.output)
    assert result.exit_code == 4, out
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "Traceback" not in out
    for want in expected:
        want = want.format(key=backend.key_env)
        assert want in out
    recs = [json.loads(x) for x in log.read_text().splitlines()]
    errors = [r for r in recs if r["type"] == "error"]
    assert len(errors) == 1 and expected[0].format(key=backend.key_env) in errors[0]["message"]
    assert recs[-2]["type"] == "turn_end" and recs[-2]["reason"] == "error"
    assert recs[-1]["type"] == "session_end"
    if case in ("429", "5xx"):
        notices = [r for r in recs if r["type"] == "notice" and r["kind"] == "retry"]
        assert len(notices) == 1 and "retrying in 0.0 s (retry 1 of 1)" in notices[0]["message"]
    else:
        assert len(backend.fake.requests) == 1  # not retried


def test_unreachable_server_is_named_and_retried(backend: Backend, workspace: Path,
                                                tmp_path: Path) -> None:
    url = closed_port_url()
    settings = backend.settings(base_url=url if backend.name == "anthropic" else url + "/v1",
                                retries=2)
    session, seen = started(make_session(workspace, log=tmp_path / "session.jsonl",
                                         settings=settings))
    result = session.send("hello")
    assert result.reason == "error"
    assert result.message is not None
    assert result.message.startswith("Cannot reach")
    assert "127.0.0.1" in result.message and "--base-url" in result.message
    notices = [e for e in seen if isinstance(e, ev.Notice) and e.kind == "retry"]
    assert len(notices) == 2 and "Cannot reach" in notices[0].message


def test_subprocess_shows_the_sentence_without_a_traceback(backend: Backend, workspace: Path,
                                                           tmp_path: Path) -> None:
    backend.fake.add({"status": 401})
    env = {**os.environ, backend.key_env: "sk-wrong", "COLUMNS": "400"}
    proc = subprocess.run(
        [sys.executable, "-m", "agent_cli", "run", "hi", "--provider", backend.name,
         "--model", "test-model", "--base-url", backend.url, "--workspace", str(workspace),
         "--log", str(tmp_path / "l.jsonl")],
        capture_output=True, text=True, env=env, cwd=REPO, timeout=60,
    )
    both = flat(proc.stdout + proc.stderr)
    assert proc.returncode == 4
    assert "Traceback" not in both
    assert f"Check {backend.key_env}" in both


def test_missing_anthropic_key_exits_4_with_advice(workspace: Path) -> None:
    result = CliRunner().invoke(app, ["run", "hi", "--workspace", str(workspace)],
                                env={"COLUMNS": "400"})
    assert result.exit_code == 4
    assert "ANTHROPIC_API_KEY" in flat(result.output)


# --------------------------------------------------------------------------- retries


def test_rate_limit_and_overload_are_retried_and_the_user_sees_it(
        backend: Backend, workspace: Path, tmp_path: Path) -> None:
    backend.fake.add({"status": 429, "retry_after": "3600"},  # capped at retry_cap_s = 0
                     {"status": 529 if backend.name == "anthropic" else 503},
                     backend.text("Finally."))
    session, seen = started(make_session(workspace, log=tmp_path / "session.jsonl",
                                         settings=backend.settings(retries=3)))
    result = session.send("hello")
    assert (result.reason, result.text) == ("end_turn", "Finally.")
    notices = [e.message for e in seen if isinstance(e, ev.Notice) and e.kind == "retry"]
    assert len(notices) == 2
    assert "429" in notices[0] and "retrying in 0.0 s (retry 1 of 3)" in notices[0]
    assert "retry 2 of 3" in notices[1]
    assert len(backend.fake.requests) == 3
    logged = [r for r in log_records(session) if r["type"] == "notice"]
    assert [n["message"] for n in logged] == notices


def test_the_server_can_say_not_to_retry(backend: Backend, workspace: Path,
                                         tmp_path: Path) -> None:
    backend.fake.add({"status": 503, "headers": {"x-should-retry": "false"}})
    session, _ = started(make_session(workspace, log=tmp_path / "session.jsonl",
                                         settings=backend.settings(retries=3)))
    result = session.send("hello")
    assert result.message is not None and "(503" in result.message
    assert "not retried" in result.message
    assert len(backend.fake.requests) == 1


def test_retry_wait_honours_the_server_up_to_the_cap() -> None:
    assert retry_wait(0, {"retry-after": "2"}, 30.0) == 2.0
    assert retry_wait(0, {"retry-after": "120"}, 30.0) == 30.0
    assert retry_wait(0, {"retry-after-ms": "250"}, 30.0) == 0.25
    assert retry_wait(0, {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, 30.0) == 0.0  # past
    assert retry_wait(0, {"retry-after": "soon"}, 0.0) == 0.0
    for attempt in range(8):
        wait = retry_wait(attempt, None, 5.0)
        assert 0.0 < wait <= 5.0
    assert retry_wait(1, None, 30.0) <= 1.0  # 0.5 * 2 with jitter in [0.5, 1]


def test_context_hints_are_recognised() -> None:
    assert is_too_long(413, "")
    assert is_too_long(400, LONG_CONTEXT["openai"])
    assert is_too_long(400, LONG_CONTEXT["anthropic"])
    assert not is_too_long(400, "max_tokens: Input should be a positive integer")
    text, kind = explain_status(400, "bad field", model="m", key_env="K")
    assert kind == "bad_request" and "bad field" in text


# --------------------------------------------------------------------------- the session survives


def test_failure_after_a_tool_call_leaves_no_tool_use_unanswered(
        backend: Backend, workspace: Path, tmp_path: Path) -> None:
    (workspace / "a.txt").write_text("AAA")
    fail = {"status": 500}
    backend.fake.add(backend.call("call_1", "read_file", {"path": "a.txt"}), fail, fail,
                     backend.text("Back again."))
    session, _seen = started(make_session(workspace, log=tmp_path / "session.jsonl",
                                         settings=backend.settings(retries=1)))

    first = session.send("read a.txt")
    assert first.reason == "error"
    assert first.message is not None and "overloaded or failing (500" in first.message
    second = session.send("try again")

    assert (second.reason, second.text) == ("end_turn", "Back again.")
    # the fake validates the history like the real API: the call and its result are paired
    last = backend.fake.requests[-1].body["messages"]
    flat_body = json.dumps(last)
    assert "call_1" in flat_body and "AAA" in flat_body and "try again" in flat_body
    recs = log_records(session)
    uses = [b["id"] for r in recs if r["type"] == "model_reply" for b in r["content"]
            if b["type"] == "tool_use"]
    results = [r["id"] for r in recs if r["type"] == "tool_result"]
    assert uses == results == ["call_1"]
    assert [r["reason"] for r in recs if r["type"] == "turn_end"] == ["error", "end_turn"]


def test_a_stream_that_breaks_midway_is_not_run_and_the_session_goes_on(
        backend: Backend, workspace: Path, tmp_path: Path) -> None:
    broken = backend.call("call_w", "write_file", {"path": "x.txt", "content": "x" * 200})
    broken["reset_after"] = 4
    backend.fake.add(broken, backend.text("Recovered."))
    session, seen = started(make_session(workspace, log=tmp_path / "session.jsonl",
                                         settings=backend.settings()))

    first = session.send("write x")
    assert first.reason == "error"
    assert first.message is not None and "broke during the reply" in first.message
    assert not (workspace / "x.txt").exists()
    assert session.send("again").text == "Recovered."
    assert not [e for e in seen if isinstance(e, ev.ToolProposed)]


def test_an_error_event_inside_the_stream_is_reported(backend: Backend, workspace: Path,
                                                      tmp_path: Path) -> None:
    reply = backend.text("This answer will be cut off by an error event.")
    reply["error_event_after"] = 3
    reply["error_message"] = "Overloaded mid-stream"
    backend.fake.add(reply, backend.text("ok"))
    session, _ = started(make_session(workspace, log=tmp_path / "session.jsonl",
                                         settings=backend.settings()))
    first = session.send("hi")
    assert first.reason == "error"
    assert first.message is not None and "Overloaded mid-stream" in first.message
    assert "Send your message again" in first.message
    assert session.send("hi again").text == "ok"


def test_the_one_retry_loop_caps_the_wait_says_each_retry_and_gives_up_with_the_count() -> None:
    """providers/retry.py: both providers' attempts go through `with_retries`."""
    from agent_cli.errors import ProviderError
    from agent_cli.providers.retry import Failed, with_retries

    notices: list[str] = []
    given: list[int] = []

    def attempt() -> str:
        raise Failed("The API answered 529 (overloaded)",
                     lambda n: given.append(n) or ProviderError(f"gave up after {n}"),
                     headers={"retry-after": "120"})

    with pytest.raises(ProviderError, match="gave up after 2"):
        with_retries(attempt, max_retries=2, retry_cap_s=0.0, on_status=notices.append)
    assert notices == ["The API answered 529 (overloaded); retrying in 0.0 s (retry 1 of 2)",
                       "The API answered 529 (overloaded); retrying in 0.0 s (retry 2 of 2)"]
    assert given == [2]
    calls: list[int] = []

    def refused() -> str:
        calls.append(1)
        raise Failed("The API answered 400 (bad)", lambda n: ProviderError("no"), retry=False)

    with pytest.raises(ProviderError, match="no"):
        with_retries(refused, max_retries=5, retry_cap_s=0.0, on_status=notices.append)
    assert len(calls) == 1 and len(notices) == 2
