"""The real anthropic SDK end to end against the loopback fake (tests/fakes/anthropic_server.py).

Half of these run `agent-cli run` as a subprocess, exactly as a user or a script would; the other
half drive Session + AnthropicProvider in-process to look at events. Either way the assertions
are made on what the fake server received: that is what the real API would have seen.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_cli import events as ev
from agent_cli.approval import NonInteractiveApprover, ScriptedApprover
from agent_cli.config import Settings
from agent_cli.providers.anthropic import AnthropicProvider
from agent_cli.session import Session
from agent_cli.tools.loader import load_tools
from tests.fakes.anthropic_server import (
    FakeAnthropic,
    RecordedRequest,
    strip_cache_control,
    text_reply,
    tool_reply,
)

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def fake() -> Any:
    with FakeAnthropic() as server:
        yield server


def run_cli(args: list[str], fake: FakeAnthropic | None, *, key: str | None = "test-key",
            timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("ANTHROPIC_API_KEY", None)
    if fake is not None:
        env["ANTHROPIC_BASE_URL"] = fake.base_url
    if key is not None:
        env["ANTHROPIC_API_KEY"] = key
    env["COLUMNS"] = "200"
    return subprocess.run([sys.executable, "-m", "agent_cli", "run", *args], env=env, cwd=REPO,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=timeout)


def run_in_process(args: list[str], fake: FakeAnthropic | None, *,
                   key: str | None = "test-key") -> subprocess.CompletedProcess[str]:
    """`agent-cli run ARGS` as `run_cli` runs it (the same environment, no stdin, 200 columns,
    stdout and stderr apart), but in this process: the typer app through click's runner. A
    subprocess imports the anthropic SDK again, about 1.5 s of CPU each time; the tests that look
    at what reached the wire, not at the process, use this one."""
    return run_env_in_process(args, {"ANTHROPIC_API_KEY": key, "ANTHROPIC_BASE_URL":
                                     fake.base_url if fake else None})


def run_env_in_process(args: list[str], env_extra: dict[str, str | None], *,
                       columns: str | None = "200") -> subprocess.CompletedProcess[str]:
    """`agent-cli run ARGS` in this process with `env_extra` over this environment (None
    removes a variable), from the repository's folder, as a CompletedProcess."""
    from agent_cli.cli.app import app
    from tests.scripts import split_runner

    env = {"COLUMNS": columns, **env_extra}
    before = Path.cwd()
    os.chdir(REPO)
    try:
        result = split_runner().invoke(app, ["run", *args], env=env, catch_exceptions=False)
    finally:
        os.chdir(before)
    return subprocess.CompletedProcess(["agent-cli", "run", *args], result.exit_code,
                                       result.stdout, result.stderr)


def no_traceback(proc: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr


def tool_results(req: RecordedRequest) -> list[dict[str, Any]]:
    last = req.body["messages"][-1]
    assert last["role"] == "user"
    return [b for b in last["content"] if b.get("type") == "tool_result"]


def mixed_calls() -> dict[str, Any]:
    """Streamed text plus five parallel calls with five different fates."""
    reply = tool_reply(
        ("toolu_01", "read_file", {"path": "notes.txt"}),
        ("toolu_02", "multiply", {"a": 24, "b": 17}),
        ("toolu_03", "launch_rockets", {"count": 3}),
        ("toolu_04", "multiply", {"a": "24", "b": 17, "approved": True}),
        ("toolu_05", "write_file", {"path": "out.txt", "content": "should not exist\n"}),
        text="Let me look at your notes and do some sums.",
    )
    return reply


def assert_mixed_results(req: RecordedRequest, workspace: Path) -> None:
    results = tool_results(req)
    assert [r["tool_use_id"] for r in results] == [f"toolu_0{i}" for i in range(1, 6)]
    assert [bool(r.get("is_error")) for r in results] == [False, False, True, True, True]
    assert results[0]["content"] == "remember the milk\n"
    assert results[1]["content"] == "408"
    assert 'Unknown tool "launch_rockets"' in results[2]["content"]
    assert "read_file" in results[2]["content"]
    assert "- a:" in results[3]["content"] and "- approved:" in results[3]["content"]
    assert "non-interactive" in results[4]["content"]
    assert not (workspace / "out.txt").exists()
    # exactly one user message answers the five calls, right after the assistant's reply
    messages = req.body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    uses = [b for b in messages[1]["content"] if b["type"] == "tool_use"]
    assert [u["id"] for u in uses] == [r["tool_use_id"] for r in results]


def assert_request_shape(req: RecordedRequest) -> None:
    assert req.path.split("?")[0] == "/v1/messages"
    assert req.headers.get("authorization") == "Bearer test-key"
    assert req.stream is True
    for banned in ("temperature", "top_p", "top_k"):
        assert banned not in req.body
    tools = req.body["tools"]
    names = {t["name"] for t in tools}
    assert {"read_file", "write_file", "multiply", "list_dir", "search_text"} <= names
    for tool in tools:
        assert tool["input_schema"]["type"] == "object"
        assert tool["input_schema"]["additionalProperties"] is False
        assert tool["description"]


# --------------------------------------------------------------------------- the CLI


def test_cli_run_full_conversation(fake: FakeAnthropic, workspace: Path) -> None:
    (workspace / "notes.txt").write_text("remember the milk\n")
    fake.add(mixed_calls(), {"status": 529, "retry_after": "0.01"},
             text_reply("24 x 17 = 408, and your notes say to remember the milk."))
    proc = run_cli(["do the thing", "--workspace", str(workspace)], fake)
    no_traceback(proc)
    assert proc.returncode == 7, proc.stdout + proc.stderr  # done, but its write was denied
    # stdout is not a terminal: only the answer there, the way there on stderr
    assert proc.stdout == "24 x 17 = 408, and your notes say to remember the milk.\n"
    assert "Let me look at your notes and do some sums." in proc.stderr
    assert "write call(s) were denied" in proc.stderr
    assert fake.pending == 0
    assert len(fake.requests) == 3, "the 529 was retried once"
    first, overloaded, retried = fake.requests
    for req in fake.requests:
        assert_request_shape(req)
    assert strip_cache_control(first.body["messages"]) == [
        {"role": "user", "content": [{"type": "text", "text": "do the thing"}]}]
    assert overloaded.body == retried.body
    assert_mixed_results(retried, workspace)
    # the session log was written under AGENT_CLI_HOME
    logs = list((Path(os.environ["AGENT_CLI_HOME"]) / "sessions").glob("*.jsonl"))
    assert len(logs) == 1
    types = [json.loads(line)["type"] for line in logs[0].read_text().splitlines()]
    assert types[0] == "session_start" and types[-2:] == ["turn_end", "session_end"]


def test_cli_jsonl_output_is_the_event_stream(fake: FakeAnthropic, workspace: Path) -> None:
    fake.add(tool_reply(("toolu_1", "multiply", {"a": 6, "b": 7}),
                        ("toolu_2", "write_file", {"path": "x.txt", "content": "x"})),
             text_reply("42."))
    log = workspace.parent / "session.jsonl"
    proc = run_cli(["multiply", "--workspace", str(workspace), "--output", "jsonl",
                    "--log", str(log)], fake)
    no_traceback(proc)
    assert proc.returncode == 7, proc.stderr  # finished, with its write denied (no terminal)
    lines = proc.stdout.splitlines()
    events = [ev.parse_event(line) for line in lines]
    types = [e.type for e in events]
    assert types[0] == "session_start"
    assert types[-2:] == ["turn_end", "session_end"]
    assert types.count("model_reply") == 2
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    by_id = [e.type for e in events if getattr(e, "id", None) == "toolu_1"]
    assert by_id == ["tool_proposed", "approval", "tool_started", "tool_result"]
    by_id = [e.type for e in events if getattr(e, "id", None) == "toolu_2"]
    assert by_id == ["tool_proposed", "approval", "tool_result"]
    denied = next(e for e in events if isinstance(e, ev.Approval) and e.id == "toolu_2")
    assert (denied.decision, denied.by) == ("denied", "policy")
    end = events[-2]
    assert isinstance(end, ev.TurnEnd) and end.reason == "end_turn"
    # stdout is exactly the log
    assert log.read_text() == proc.stdout


def test_cli_exit_3_when_max_turns_is_hit(fake: FakeAnthropic, workspace: Path) -> None:
    fake.add(tool_reply(("toolu_1", "multiply", {"a": 1, "b": 2})),
             tool_reply(("toolu_2", "multiply", {"a": 3, "b": 4})),
             text_reply("never reached"))
    proc = run_cli(["loop", "--workspace", str(workspace), "--max-turns", "2"], fake)
    no_traceback(proc)
    assert proc.returncode == 3
    assert len(fake.requests) == 2
    assert "--max-turns" in proc.stderr


def test_cli_exit_4_on_401_with_a_sentence_about_the_key(fake: FakeAnthropic,
                                                          workspace: Path) -> None:
    fake.add({"status": 401})
    proc = run_cli(["hi", "--workspace", str(workspace)], fake, key="sk-ant-wrong")
    no_traceback(proc)
    assert proc.returncode == 4
    out = " ".join((proc.stdout + proc.stderr).split())
    assert "ANTHROPIC_API_KEY" in out
    assert "401" in out
    assert len(fake.requests) == 1, "a 401 is not retried"
    assert fake.requests[0].headers["authorization"] == "Bearer sk-ant-wrong"


def test_cli_jsonl_error_also_reaches_stderr(fake: FakeAnthropic, workspace: Path) -> None:
    """stdout carries events for scripts; the person still sees why it stopped."""
    fake.add({"status": 401})
    proc = run_cli(["hi", "--workspace", str(workspace), "--output", "jsonl"], fake,
                   key="sk-ant-wrong")
    no_traceback(proc)
    assert proc.returncode == 4
    assert "ANTHROPIC_API_KEY" in " ".join(proc.stderr.split())
    types = [ev.parse_event(line).type for line in proc.stdout.splitlines()]
    assert "error" in types and types[-1] == "session_end"


def test_cli_without_a_key_says_how_to_set_it_and_how_to_try_offline(workspace: Path) -> None:
    proc = run_cli(["hi", "--workspace", str(workspace)], None, key=None)
    no_traceback(proc)
    assert proc.returncode != 0
    out = " ".join((proc.stdout + proc.stderr).split())
    assert "ANTHROPIC_API_KEY" in out
    assert "export ANTHROPIC_API_KEY=" in out
    assert "--provider scripted --script examples/demo_script.json" in out
    assert len((proc.stdout + proc.stderr).strip().splitlines()) <= 3


def test_cli_mid_stream_error_exits_4_and_runs_nothing(fake: FakeAnthropic,
                                                        workspace: Path) -> None:
    reply = tool_reply(("toolu_1", "write_file", {"path": "x.txt", "content": "x"}),
                       text="Writing the file now, hold on")
    fake.add({**reply, "error_event_after": 9})
    proc = run_cli(["go", "--workspace", str(workspace), "--output", "jsonl"], fake)
    no_traceback(proc)
    assert proc.returncode == 4
    types = [ev.parse_event(line).type for line in proc.stdout.splitlines()]
    assert "error" in types and "tool_proposed" not in types
    assert types[-2:] == ["turn_end", "session_end"]
    assert len(fake.requests) == 1, "an error event inside a stream is not retried"


# --------------------------------------------------------------------------- in-process


class Run:
    """A Session on the real provider against the fake, with a list sink."""

    def __init__(self, fake: FakeAnthropic, workspace: Path, tmp_path: Path,
                 approver: Any = None, **settings: Any) -> None:
        self.events: list[ev.AnyEvent] = []
        registry, report = load_tools([])
        provider = AnthropicProvider("claude-test", api_key="test-key", base_url=fake.base_url,
                                     retry_cap_s=0.05)
        self.session = Session(Settings(**settings), workspace=workspace, provider=provider,
                               registry=registry,
                               approver=approver or NonInteractiveApprover(),
                               sinks=[self.events.append], log_path=tmp_path / "s.jsonl",
                               load_report=report)
        self.session.start()

    def of(self, kind: type[Any]) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    def types(self) -> list[str]:
        return [e.type for e in self.events if not isinstance(e, ev.TextDelta)]


def test_session_full_conversation(fake: FakeAnthropic, workspace: Path, tmp_path: Path) -> None:
    (workspace / "notes.txt").write_text("remember the milk\n")
    fake.add(mixed_calls(), {"status": 529, "retry_after": "0.01"}, text_reply("All done."))
    run = Run(fake, workspace, tmp_path)
    result = run.session.send("do the thing")
    run.session.close()
    assert result.reason == "end_turn" and result.text == "All done."
    assert len(fake.requests) == 3
    for req in fake.requests:
        assert_request_shape(req)
    assert fake.requests[1].body == fake.requests[2].body
    assert_mixed_results(fake.requests[2], workspace)
    streamed = "".join(e.text for e in run.of(ev.TextDelta))
    assert streamed == "Let me look at your notes and do some sums.All done."
    assert len(run.of(ev.TextDelta)) > 2, "text arrived in pieces"
    retries = [n for n in run.of(ev.Notice) if n.kind == "retry"]
    assert len(retries) == 1 and "529" in retries[0].message
    replies = run.of(ev.ModelReply)
    assert [r.stop_reason for r in replies] == ["tool_use", "end_turn"]
    assert replies[0].usage.get("input_tokens", 0) > 0
    assert run.types()[-2:] == ["turn_end", "session_end"]


@pytest.mark.parametrize("fault", [{"error_event_after": 10}, {"reset_after": 10}],
                         ids=["error-event", "connection-reset"])
def test_broken_stream_ends_the_turn_with_an_error_and_runs_nothing(
    fake: FakeAnthropic, workspace: Path, tmp_path: Path, fault: dict[str, Any]
) -> None:
    reply = tool_reply(("toolu_1", "write_file", {"path": "x.txt", "content": "x" * 200}),
                       ("toolu_2", "multiply", {"a": 2, "b": 2}),
                       text="Sure, writing it.")
    fake.add({**reply, **fault}, text_reply("Recovered."))
    run = Run(fake, workspace, tmp_path, approver=ScriptedApprover(["y", "y"]))
    result = run.session.send("write x")
    assert result.reason == "error"
    assert len(run.of(ev.ErrorEvent)) == 1
    assert "nothing" in run.of(ev.ErrorEvent)[0].message
    assert run.of(ev.ToolProposed) == [] and run.of(ev.ToolStarted) == []
    assert run.of(ev.ModelReply) == []
    assert not (workspace / "x.txt").exists()
    assert len(fake.requests) == 1, "a stream broken midway is not retried"
    # the conversation goes on: the next request is well-formed (the fake validates it)
    again = run.session.send("try again")
    assert again.reason == "end_turn" and again.text == "Recovered."
    messages = fake.requests[-1].body["messages"]
    assert [m["role"] for m in messages] == ["user"]
    assert [b["text"] for b in messages[0]["content"]] == ["write x", "try again"]


def test_tool_json_cut_by_max_tokens_is_not_run(fake: FakeAnthropic, workspace: Path,
                                                tmp_path: Path) -> None:
    cut = {"content": [
        {"type": "text", "text": "Writing the config."},
        {"type": "tool_use", "id": "toolu_cut", "name": "write_file",
         "raw_input": '{"path": "config.ini", "content": "[main]\\nmode = saf'},
    ], "stop_reason": "max_tokens"}
    fake.add(cut, text_reply("OK, smaller steps."))
    approver = ScriptedApprover(["y"])
    run = Run(fake, workspace, tmp_path, approver=approver)
    result = run.session.send("write the config")
    assert result.reason == "max_tokens"
    assert result.message is not None and "max_tokens" in result.message
    assert approver.seen == []
    assert not (workspace / "config.ini").exists()
    assert run.of(ev.ToolStarted) == []
    (res,) = run.of(ev.ToolResultEvent)
    assert res.id == "toolu_cut" and res.is_error and "not run" in res.content
    # the next turn answers the cut call and the API accepts the history
    assert run.session.send("go on").reason == "end_turn"
    results = tool_results(fake.requests[-1])
    assert [r["tool_use_id"] for r in results] == ["toolu_cut"] and results[0]["is_error"]


def test_retry_after_is_capped(fake: FakeAnthropic, workspace: Path, tmp_path: Path) -> None:
    fake.add({"status": 429, "retry_after": "120"}, text_reply("fine"))
    run = Run(fake, workspace, tmp_path)
    assert run.session.send("hi").text == "fine"
    (notice,) = [n for n in run.of(ev.Notice) if n.kind == "retry"]
    assert "0.1 s" in notice.message or "0.0 s" in notice.message


def test_persistent_overload_gives_up_with_a_sentence(fake: FakeAnthropic, workspace: Path,
                                                      tmp_path: Path) -> None:
    fake.add(*[{"status": 529, "retry_after": "0.01"}] * 5)
    run = Run(fake, workspace, tmp_path)
    result = run.session.send("hi")
    assert result.reason == "error"
    assert len(fake.requests) == 5, "first try + 4 retries"
    (error,) = run.of(ev.ErrorEvent)
    assert "overloaded" in error.message.lower() and "Try again" in error.message


def test_undecodable_bytes_kept_by_a_tool_never_make_the_request_invalid_utf8(
        fake: FakeAnthropic) -> None:
    """A lone surrogate (surrogateescape from a tool) is sent as "?", not as invalid UTF-8."""
    from agent_cli.providers.base import ModelRequest

    fake.add(text_reply("ok"))
    provider = AnthropicProvider("claude-test", api_key="test-key", base_url=fake.base_url)
    history = [{"role": "user", "content": [{"type": "text", "text": "bytes: \udc80!"}]}]
    reply = provider.complete(ModelRequest(messages=history, tools=[], max_tokens=100),
                              lambda _t: None, lambda _m: None)
    assert reply.text() == "ok"
    sent = fake.requests[0].raw_body.decode("utf-8")  # strict: raises on invalid UTF-8
    assert json.loads(sent)["messages"][0]["content"][0]["text"] == "bytes: ?!"


def test_warm_up_builds_the_client_in_the_background_and_requests_reuse_it(
        fake: FakeAnthropic) -> None:
    """chat warms the SDK up while the person types; the first request then uses that client."""
    import time

    from agent_cli.providers.base import ModelRequest

    provider = AnthropicProvider("claude-test", api_key="test-key", base_url=fake.base_url)
    provider.warm_up(delay_s=0)
    deadline = time.monotonic() + 30
    while provider._client is None and time.monotonic() < deadline:
        time.sleep(0.01)
    warmed = provider._client
    assert warmed is not None
    fake.add(text_reply("ok"))
    reply = provider.complete(ModelRequest(messages=[{"role": "user", "content": "hi"}],
                                           tools=[], max_tokens=10),
                              lambda _t: None, lambda _m: None)
    assert reply.text() == "ok"
    assert provider._client is warmed
