"""`chat --resume LOG` and `--continue`: the conversation rebuilt from the log, every tool_use
answered exactly once, a call that was running when the process died answered "interrupted;
outcome unknown" and never run again. Includes a real SIGKILL of a real `agent-cli` in a pty."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_cli import events as ev
from agent_cli.cli.app import app
from agent_cli.config import Settings
from agent_cli.errors import LogError
from agent_cli.log import resume as rs
from agent_cli.log.reader import BadLine, read_events
from agent_cli.log.verify import verify
from tests.fakes.anthropic_server import FakeAnthropic, strip_cache_control, text_reply
from tests.scripts import make_session, text, tool_use

REPO = Path(__file__).resolve().parents[2]
runner = CliRunner()


def two_calls(a: str, b: str, call_a: str = "toolu_a", call_b: str = "toolu_b"
              ) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": "Two at once."},
                        {"type": "tool_use", "id": call_a, "name": "echo_write",
                         "input": {"text": a}},
                        {"type": "tool_use", "id": call_b, "name": "echo_write",
                         "input": {"text": b}}],
            "stop_reason": "tool_use"}


def test_rebuilt_history_equals_the_live_history(workspace: Path, tmp_path: Path,
                                                 tools: Path) -> None:
    log = tmp_path / "s.jsonl"
    s = make_session(workspace, [
        text("zero"), two_calls("1", "2"), tool_use("toolu_x", "nope", {}), text("first done"),
        tool_use("toolu_c", "echo_write", {"text": "3"}), text("second done"),
    ], log, ["y", "n not that", "y"], tools)
    s.start()
    s.send("zeroth, forgotten by /clear")
    s.clear()
    s.send("first")
    s.send("second")
    s.send("third: the script is exhausted")  # a provider error ends this turn
    s.close()
    assert rs.rebuild(log).history == s.history
    assert "zeroth" not in json.dumps(s.history)


def test_a_missing_earlier_log_is_a_warning_not_a_failure(workspace: Path,
                                                          tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    s = make_session(workspace, [text("hi")], log)
    s.continues = str(tmp_path / "moved-away.jsonl")
    s.start()
    s.send("hello")
    s.close()
    rebuilt = rs.rebuild(log)
    assert [m["role"] for m in rebuilt.history] == ["user", "assistant"]
    assert any("moved-away.jsonl" in w and "missing" in w for w in rebuilt.warnings)


def test_a_call_without_result_is_answered_interrupted_never_rerun(
        workspace: Path, tmp_path: Path, tools: Path) -> None:
    log = tmp_path / "s.jsonl"
    s = make_session(workspace, [two_calls("1", "2"), text("done")], log, ["y", "y"], tools)
    s.start()
    s.send("go")
    s.log.close()
    # what a crash while toolu_b ran leaves: cut the file just after toolu_b's tool_started
    lines = log.read_bytes().split(b"\n")
    cut = next(i for i, line in enumerate(lines)
               if b'"tool_started"' in line and b"toolu_b" in line)
    log.write_bytes(b"\n".join(lines[:cut + 1]) + b"\n" + lines[cut + 1][:25])
    rebuilt = rs.rebuild(log)
    assert rebuilt.interrupted == ["toolu_b"]
    last = rebuilt.history[-1]
    assert last["role"] == "user"
    assert [b["tool_use_id"] for b in last["content"]] == ["toolu_a", "toolu_b"]
    assert last["content"][0]["content"] == "echo:1"
    assert last["content"][1] == {"type": "tool_result", "tool_use_id": "toolu_b",
                                  "content": "interrupted; outcome unknown", "is_error": True}
    assert any("torn" in w for w in rebuilt.warnings)


def test_recorded_killed_session_verifies_with_a_warning_and_resumes() -> None:
    """tests/data/session_killed.jsonl: cut during an approved write_file, torn last line."""
    log = REPO / "tests" / "data" / "session_killed.jsonl"
    check = verify(log)
    assert check.ok and any("torn" in w for w in check.warnings)
    events = [e for _, e in read_events(log) if not isinstance(e, BadLine)]
    assert [e.type for e in events][-3:] == ["tool_proposed", "approval", "tool_started"]
    rebuilt = rs.rebuild(log)
    assert rebuilt.interrupted == ["toolu_02"]
    assert rebuilt.history[-1]["content"][-1]["content"] == "interrupted; outcome unknown"
    result = runner.invoke(app, ["replay", str(log)], env={"COLUMNS": "100"})
    assert "Approve call toolu_02" in result.stdout and "approved by user" in result.stdout


def test_resume_writes_a_new_log_that_names_the_old_one(workspace: Path, tmp_path: Path,
                                                        tools: Path) -> None:
    old = tmp_path / "old.jsonl"
    s = make_session(workspace, [tool_use("toolu_a", "echo_write", {"text": "1"}),
                                 text("done")], old, ["y"], tools)
    s.start()
    s.send("first")
    s.close()
    with FakeAnthropic() as fake:
        fake.add(text_reply("carrying on"))
        result = runner.invoke(app, ["chat", "--resume", str(old), "--provider", "anthropic",
                                     "--base-url", fake.base_url, "--model", "claude-test",
                                     "--workspace", str(workspace), "--tools-dir", str(tools)],
                               input="and now?\n", env={"ANTHROPIC_API_KEY": "sk-test"})
        assert result.exit_code == 0, result.output
        sent = strip_cache_control(fake.requests[0].body["messages"])
    assert sent[:-1] == rs.rebuild(old).history
    assert sent[-1] == {"role": "user", "content": [{"type": "text", "text": "and now?"}]}
    assert "carrying on" in result.output
    [new] = (Path(os.environ["AGENT_CLI_HOME"]) / "sessions").glob("*.jsonl")
    events = [e for _, e in read_events(new)]
    start = events[0]
    assert isinstance(start, ev.SessionStart) and start.continues == str(old.resolve())
    assert any(isinstance(e, ev.Notice) and e.kind == "resume" for e in events)
    # resuming the new log follows `continues` back: the whole conversation
    reply = {"role": "assistant", "content": [{"type": "text", "text": "carrying on"}]}
    assert rs.rebuild(new).history == [*sent, reply]
    assert verify(new).ok


def test_continue_picks_the_latest_session_of_this_workspace(tmp_path: Path,
                                                             tools: Path) -> None:
    settings = Settings(provider="scripted")
    sessions = Path(os.environ["AGENT_CLI_HOME"]) / "sessions"
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    with pytest.raises(LogError, match="No saved session"):
        rs.latest_log_for(settings, here)
    for name, ws in (("1-old.jsonl", here), ("2-new.jsonl", here), ("3-other.jsonl", there)):
        s = make_session(ws, [text(name)], sessions / name)
        s.start()
        s.send(name)
        s.close()
        time.sleep(0.01)  # distinct modification times (ordering, not a timed assertion)
    os.utime(sessions / "1-old.jsonl", (1, 1))
    assert rs.latest_log_for(settings, here).name == "2-new.jsonl"
    assert rs.latest_log_for(settings, there).name == "3-other.jsonl"
    script = tmp_path / "s.json"
    script.write_text(json.dumps([text("ok")]))
    result = runner.invoke(app, ["chat", "--continue", "--script", str(script), "--workspace",
                                 str(here)], input="hi\n")
    assert result.exit_code == 0, result.output
    newest = max(sessions.glob("*.jsonl"), key=lambda p: p.stat().st_mtime)
    first = json.loads(newest.read_text().splitlines()[0])
    assert first["continues"] == str((sessions / "2-new.jsonl").resolve())


def test_resume_from_a_missing_log_is_one_sentence(tmp_path: Path) -> None:
    result = runner.invoke(app, ["chat", "--resume", str(tmp_path / "gone.jsonl")], input="")
    said = " ".join(result.output.split())
    assert result.exit_code != 0 and "not found" in said and "agent-cli log list" in said
    assert "Traceback" not in said


SLOW_WRITE = '''
import time
from pathlib import Path
from pydantic import BaseModel
from agent_cli.tools import Tool


class Args(BaseModel):
    name: str


def run(args, ctx):
    with open(Path(ctx.workspace) / "runs.txt", "a") as f:
        f.write(args.name + "\\n")
    time.sleep(120)
    return "finished"


TOOL = Tool(name="slow_write", description="Writes, then takes its time.", args=Args,
            effect="write", run=run)
'''


@pytest.mark.pty
def test_sigkill_during_an_approved_call_then_resume(workspace: Path, tmp_path: Path) -> None:
    pexpect = pytest.importorskip("pexpect")
    tools = tmp_path / "slow_tools"
    tools.mkdir()
    (tools / "slow_write.py").write_text(SLOW_WRITE, encoding="utf-8")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([tool_use("toolu_slow", "slow_write", {"name": "once"},
                                           "Starting the slow write."), text("never")]))
    log = tmp_path / "killed.jsonl"
    env = dict(os.environ, PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm-256color",
               PYTHONUNBUFFERED="1")
    child = pexpect.spawn(sys.executable, ["-m", "agent_cli", "chat", "--script", str(script),
                                           "--workspace", str(workspace), "--tools-dir",
                                           str(tools), "--log", str(log)],
                          env=env, cwd=str(REPO), dimensions=(40, 120), timeout=30)
    try:
        child.expect("›".encode())
        child.send(b"do the slow write\r")
        child.expect(rb"Run .*\? \[y/N\]")
        child.send(b"y\r")
        child.expect(rb"slow_write")  # the tool has started ...
        runs = workspace / "runs.txt"
        for _ in range(3000):  # ... wait until its effect is visible (no timing asserted)
            if runs.exists() and runs.read_text():
                break
            time.sleep(0.01)
        os.kill(child.pid, signal.SIGKILL)
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.signalstatus == signal.SIGKILL

    events = [e for _, e in read_events(log) if not isinstance(e, BadLine)]
    kinds = [(e.type, getattr(e, "id", None)) for e in events]
    assert ("tool_proposed", "toolu_slow") in kinds
    [approval] = [e for e in events if isinstance(e, ev.Approval)]
    assert approval.decision == "approved" and approval.by == "user"
    assert ("tool_started", "toolu_slow") in kinds
    assert not any(isinstance(e, ev.ToolResultEvent) for e in events)
    check = verify(log)
    assert check.ok, check.fault

    # carry on from the log, without a terminal: the call is not run again
    again = tmp_path / "again.json"
    again.write_text(json.dumps([text("Understood; I will check runs.txt first.")]))
    done = subprocess.run(
        [sys.executable, "-m", "agent_cli", "chat", "--resume", str(log), "--script",
         str(again), "--workspace", str(workspace), "--tools-dir", str(tools)],
        input="what happened?\n", capture_output=True, text=True, env=dict(os.environ),
        cwd=str(REPO), timeout=60)
    assert done.returncode == 0, done.stderr
    shown = " ".join(done.stdout.split())
    assert "Understood" in shown
    assert "Call toolu_slow was running" in shown and "outcome is unknown" in shown
    assert runs.read_text() == "once\n"
    [new] = (Path(os.environ["AGENT_CLI_HOME"]) / "sessions").glob("*.jsonl")
    start = next(e for _, e in read_events(new))
    assert isinstance(start, ev.SessionStart) and start.continues == str(log.resolve())
    history = rs.rebuild(new).history
    results = [b for m in history if m["role"] == "user" for b in m["content"]
               if b.get("type") == "tool_result"]
    assert results == [{"type": "tool_result", "tool_use_id": "toolu_slow",
                        "content": "interrupted; outcome unknown", "is_error": True}]


def test_continue_after_compact_sends_the_summary_not_the_originals(workspace: Path,
                                                                    tools: Path) -> None:
    """People compact near the limit: the resumed session must send what the live one did."""
    base = ["--provider", "anthropic", "--model", "claude-test", "--workspace", str(workspace),
            "--tools-dir", str(tools)]
    env = {"ANTHROPIC_API_KEY": "sk-test"}
    with FakeAnthropic() as fake:
        for reply in ("one done", "two done", "SUMMARY: said hello twice", "three done",
                      "four done"):
            fake.add(text_reply(reply))
        live = runner.invoke(app, ["chat", *base, "--base-url", fake.base_url],
                             input="hello one\nhello two\n/compact\nhello three\n", env=env)
        assert live.exit_code == 0, live.output
        live_sent = strip_cache_control(fake.requests[3].body["messages"])
        resumed = runner.invoke(app, ["chat", "--continue", *base, "--base-url", fake.base_url],
                                input="hello four\n", env=env)
        assert resumed.exit_code == 0, resumed.output
        sent = strip_cache_control(fake.requests[4].body["messages"])
    assert "hello one" not in json.dumps(live_sent)  # the live session compacted
    assert "hello one" not in json.dumps(sent) and "two done" not in json.dumps(sent)
    assert len(sent) == 5  # summary, ack, hello three, three done, hello four
    assert "SUMMARY: said hello twice" in sent[0]["content"][0]["text"]
    assert sent[:3] == live_sent
    assert sent[3] == {"role": "assistant", "content": [{"type": "text", "text": "three done"}]}
    assert sent[4] == {"role": "user", "content": [{"type": "text", "text": "hello four"}]}


class _CutWhileStreaming:
    """A provider whose first reply is cut by the user (the session's cancel) after some text
    streamed; later replies answer."""

    name = "cut"
    model = "cut-model"

    def __init__(self) -> None:
        self.session: Any = None
        self.requests: list[Any] = []

    def complete(self, request: Any, on_text: Any, on_status: Any) -> Any:
        from agent_cli.providers.base import ModelResponse

        self.requests.append([dict(m) for m in request.messages])
        if len(self.requests) == 1:
            on_text("Half an ")
            on_text("answer")
            self.session.cancel("user")  # Esc while it streams
        return ModelResponse(content=[{"type": "text", "text": "WHOLE"}], stop_reason="end_turn")


def test_an_interrupted_reply_is_kept_marked_live_and_on_resume(workspace: Path,
                                                                tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    provider = _CutWhileStreaming()
    s = make_session(workspace, log=log, provider=provider)
    provider.session = s
    s.start()
    assert s.send("explain").reason == "interrupted"
    assert s.send("no, focus on X").reason == "end_turn"
    s.close()
    kept = {"role": "assistant",
            "content": [{"type": "text", "text": "Half an answer\n\n[interrupted by the user]"}]}
    second = provider.requests[1]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert second[1] == kept
    assert rs.rebuild(log).history == s.history
    assert s.history[1] == kept
