"""The real chat in a pty with AGENT_CLI_HOME on a small tmpfs that fills up at the prompt: the
message is refused with one sentence and stays in the input line; once space is freed, Enter
sends it, the turn runs, and the log verifies."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from agent_cli.log.verify import verify
from tests.faults.conftest import SmallDisk

pexpect = pytest.importorskip("pexpect")

pytestmark = pytest.mark.pty

REPO = Path(__file__).resolve().parents[2]
PROMPT = "›".encode()
PASTE_ON = b"\x1b[?2004h"
PASTE_OFF = b"\x1b[?2004l"


def test_a_message_refused_by_a_full_disk_stays_in_the_input_line_and_runs_later(
        tmp_path: Path, disk: SmallDisk, home_on_disk: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"content": [{"type": "text", "text": "ANSWER-ONE"}],
                                   "stop_reason": "end_turn"}]), encoding="utf-8")
    env = {**os.environ, "PROMPT_TOOLKIT_NO_CPR": "1", "TERM": "xterm-256color",
           "PYTHONUNBUFFERED": "1"}
    child = pexpect.spawn(sys.executable, ["-m", "agent_cli", "chat", "--script", str(script),
                                           "--workspace", str(workspace)],
                          env=env, cwd=str(REPO), dimensions=(50, 400), timeout=60)
    try:
        child.expect_exact(PASTE_ON)
        child.expect_exact(PROMPT)
        child.expect_exact("Ctrl-D to leave")  # the banner: the session is built and started
        disk.fill()
        # (longer than the slack of the log's last page, which a full tmpfs still lets it use)
        message = "hello " + "w" * 4200
        child.send(message.encode() + b"\r")
        child.expect_exact(PASTE_OFF)
        child.expect_exact("is full: free space and press Enter to retry, or Ctrl-D to leave")
        child.expect_exact("back in the input line")
        child.expect_exact(PASTE_ON)
        child.expect_exact(b"hello wwww")  # the refused message, put back in the input line
        disk.free()
        child.send(b"\r")
        child.expect_exact("ANSWER-ONE")
        child.expect_exact(PASTE_ON)
        child.send(b"\x04")
        child.expect(pexpect.EOF)
        child.close()
        assert child.exitstatus == 0
    finally:
        if child.isalive():
            child.terminate(force=True)
    [log] = sorted((home_on_disk / "sessions").glob("*.jsonl"))
    assert verify(log).ok
    records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    users = [r["text"] for r in records if r["type"] == "user_message"]
    assert users == [message], "the message was lost or logged twice"
    history = (home_on_disk / "history").read_text(encoding="utf-8")
    assert "+hello www" in history  # the history entry refused meanwhile landed too
    assert disk.debris() == sorted(str(p.relative_to(disk.root)) for p in (
        home_on_disk / "history", home_on_disk / "log.key", log)), "a temporary file was left"


def test_chat_with_a_read_only_home_says_one_sentence_and_exits_10(
        tmp_path: Path, disk: SmallDisk, home_on_disk: Path) -> None:
    home_on_disk.mkdir()
    disk.read_only()
    script = tmp_path / "script.json"
    script.write_text("[]", encoding="utf-8")
    env = {**os.environ, "PROMPT_TOOLKIT_NO_CPR": "1", "TERM": "xterm-256color"}
    child = pexpect.spawn(sys.executable, ["-m", "agent_cli", "chat", "--script", str(script),
                                           "--workspace", str(tmp_path)],
                          env=env, cwd=str(REPO), dimensions=(50, 400), timeout=60)
    try:
        child.expect(pexpect.EOF)
        shown = bytes(child.before)
        child.close()
    finally:
        if child.isalive():
            child.terminate(force=True)
        disk.writable()
    assert child.exitstatus == 10
    assert b"Traceback" not in shown
    assert shown.count(b"error:") == 1 and b"read-only file system" in shown
