"""Family: SIGTERM and SIGHUP (closing the terminal) end agent-cli like Ctrl-C.

A real `agent-cli chat` / `agent-cli run` in a pty runs an approved command that starts `sleep`
and a `setsid sleep` that escaped its process group. The signal goes to agent-cli itself; then
both sleeps must be gone, the log must hold the call's tool_result and end with session_end and
verify, and the exit status must be 128 + the signal (143 TERM, 129 HUP). Before, the sleeps were
re-parented to init and the log stopped mid-turn.
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.ui.test_repl_pty import (
    PROMPT,
    REPO,
    Chat,
    of_type,
    pty_env,
    session_events,
    text,
    tool_use,
)

pexpect = pytest.importorskip("pexpect")
pytestmark = pytest.mark.pty

ASK = rb"\[y/N\]"
_UNIQUE = secrets.randbelow(10**6) + 10**6
ESCAPED, OWN = f"{_UNIQUE}.17", f"{_UNIQUE}.7"
COMMAND = f"setsid sleep {ESCAPED} & echo STARTED; exec sleep {OWN}"
"""Two sleeps with durations no other process uses, found by their command lines: the command is
PID 1 of a namespace of its own, so the PIDs it could write down ($$, $!) are not this test's.
Drawn once per process: the tests of another worker (or another run on the machine) start
sleeps of their own at the same time, and must not be counted or killed here."""


def wait_for(predicate: Any, what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.05)
    pytest.fail(f"timed out waiting for {what}")


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended


def sleeps() -> list[int]:
    """The PIDs (as this test sees them) of the command's two sleeps, by their command lines."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if argv[:2] in ([b"sleep", ESCAPED.encode()], [b"sleep", OWN.encode()]) and alive(
                int(entry.name)):
            found.append(int(entry.name))
    return sorted(found)


def spawn(tmp_path: Path, workspace: Path, command: str) -> Any:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        tool_use("toolu_sleep", "run_command", {"command": COMMAND, "timeout_s": 600},
                 "Sleeping."),
        text("NEVER-REACHED")]))
    args = ["-m", "agent_cli", command, *(["go"] if command == "run" else []),
            "--script", str(script), "--workspace", str(workspace)]
    return pexpect.spawn(sys.executable, args, env=pty_env(), cwd=str(REPO),
                         dimensions=(40, 120), timeout=60)


@pytest.mark.parametrize(("command", "sig"), [
    pytest.param(c, s, id=f"{c}-{s.name}") for c in ("chat", "run")
    for s in (signal.SIGTERM, signal.SIGHUP)])
def test_a_signal_ends_the_command_and_closes_the_log(tmp_path: Path, workspace: Path,
                                                      command: str, sig: int) -> None:
    child = spawn(tmp_path, workspace, command)
    pids: list[int] = []
    try:
        if command == "chat":
            chat = Chat(child)
            chat.prompt()
            chat.say("sleep please")
        child.expect(ASK)
        child.send(b"y\r")
        wait_for(lambda: len(sleeps()) == 2, "the command to start")
        pids = sleeps()
        os.kill(child.pid, sig)
        child.expect(pexpect.EOF)
        child.close()
        assert child.signalstatus is None, "agent-cli ended itself, it was not killed"
        assert child.exitstatus == 128 + sig
    finally:
        if child.isalive():
            child.terminate(force=True)
        for pid in pids:
            if pid and alive(pid):
                os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not any(alive(p) for p in pids), "the sleeps to be gone", timeout=30)

    events = session_events()
    [result] = of_type(events, "tool_result")
    assert result["id"] == "toolu_sleep" and result["is_error"] is True
    assert "interrupted" in result["content"]
    assert of_type(events, "interrupt")
    assert events[-1]["type"] == "session_end"
    assert events[-1]["reason"] == "signal " + signal.Signals(sig).name
    log = next((Path(os.environ["AGENT_CLI_HOME"]) / "sessions").glob("*.jsonl"))
    verify = subprocess.run([sys.executable, "-m", "agent_cli", "log", "verify", str(log)],
                            cwd=REPO, capture_output=True, text=True, timeout=120)
    assert verify.returncode == 0, verify.stdout + verify.stderr


@pytest.mark.parametrize(("moment", "after"), [
    ("first-frame", 0.0), ("editor", 0.0), ("editor", 0.05), ("editor", 0.2), ("editor", 0.6)])
def test_a_signal_at_the_chat_prompt_ends_cleanly(tmp_path: Path, workspace: Path, moment: str,
                                                  after: float) -> None:
    """SIGTERM at moments spread over the start-up, while the session is built behind the
    prompt: drawn but no line editor yet (perhaps not even the chat command: then there is no
    session to log), then the editor live and `after` seconds more. Each ends 143 with the log
    closed (CI once saw one hang at "loading tools…")."""
    child = spawn(tmp_path, workspace, "chat")
    try:
        if moment == "first-frame":
            child.expect(PROMPT)  # drawn before prompt-toolkit is even imported
        else:
            Chat(child).prompt()
        time.sleep(after)  # where the signal lands; nothing below waits on a clock
        os.kill(child.pid, signal.SIGTERM)
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 143, bytes(child.before)[-400:]
    finally:
        if child.isalive():
            child.terminate(force=True)
    logs = list((Path(os.environ["AGENT_CLI_HOME"]) / "sessions").glob("*.jsonl"))
    if moment == "first-frame" and not logs:
        return  # it landed before the chat began (cli/main.py draws the prompt first): no session
    events = session_events()
    assert events[0]["type"] == "session_start"
    assert events[-1]["type"] == "session_end" and events[-1]["reason"] == "signal SIGTERM"
    assert of_type(events, "user_message") == []
