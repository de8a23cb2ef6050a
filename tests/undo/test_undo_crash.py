"""Undo when it is wanted most: `undo --list` while the chat is still open in another terminal
(and no undo behind its back), then the chat killed with SIGKILL and its log torn: undo trusts
every record up to the tear, says the session crashed, and restores."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.ui.test_repl_pty import pexpect, spawn, text, tool_use  # noqa: F401 (fixture)
from tests.undo.test_undo import undo_cli

pytestmark = pytest.mark.pty


def test_list_while_open_then_undo_after_kill_9(spawn: Any, workspace: Path,  # noqa: F811
                                                tmp_path: Path) -> None:
    (workspace / "notes.txt").write_text("old line\n")
    chat = spawn([tool_use("toolu_k", "run_command",
                           {"command": "printf 'new line\\n' > notes.txt", "timeout_s": 60}),
                  text("WROTE-IT")], workspace)
    chat.child.timeout = 60
    chat.prompt()
    chat.approved_turn("rewrite the note", b"WROTE-IT")
    [log] = (Path(os.environ["AGENT_CLI_HOME"]) / "sessions").glob("*.jsonl")

    listed = undo_cli("--list", str(log), answers=None)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert "toolu_k" in listed.stdout
    behind = undo_cli(str(log), tmp=tmp_path)
    assert behind.returncode == 1
    assert "still open in another terminal" in " ".join((behind.stdout + behind.stderr).split())
    assert (workspace / "notes.txt").read_text() == "new line\n"

    os.kill(chat.child.pid, signal.SIGKILL)
    chat.child.expect(pexpect.EOF)
    chat.child.close()
    with log.open("ab") as f:
        f.write(b'{"type":"model_reply","seq":99,"con')  # a write the kill cut short
    assert json.loads(log.read_text().splitlines()[-2])["type"] != "session_end"

    result = undo_cli(str(log), tmp=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    panel = result.stdout[result.stdout.index("╭"):result.stdout.index("╰")]
    assert "That session crashed" in panel  # the undo panel says so
    assert "still open" not in result.stdout
    assert (workspace / "notes.txt").read_text() == "old line\n"
    # the log, torn line and undo appended, is still trusted for undo (and for redo)
    redo = undo_cli(str(log), "--redo", tmp=tmp_path)
    assert redo.returncode == 0, redo.stdout + redo.stderr
    assert (workspace / "notes.txt").read_text() == "new line\n"


def test_a_forged_record_after_a_crash_is_still_refused(tmp_path: Path) -> None:
    from tests.undo.test_undo import run_session, sh

    ws = tmp_path / "ws"
    ws.mkdir()
    log = tmp_path / "s.jsonl"
    run_session(ws, log, [("toolu_f", "run_command", sh("printf x > made.txt"))])
    lines = log.read_text().splitlines()
    rec = json.loads(lines[-1])
    assert rec["type"] == "session_end"
    rec["mac"] = "0" * len(rec.get("mac", "0" * 64))
    log.write_text("\n".join([*lines[:-1], json.dumps(rec, separators=(",", ":"))]) + "\n")
    result = undo_cli(str(log), tmp=tmp_path)
    assert result.returncode == 1
    assert "Not undoing" in result.stdout + result.stderr
    assert (ws / "made.txt").exists()


def test_only_an_undo_may_follow_session_end(tmp_path: Path) -> None:
    """agent-cli undo appends one `undo` record after session_end; any other record there is
    still a fault, and the log stays trusted only with the undo."""
    from agent_cli import events as ev
    from agent_cli.log.trust import check_trust
    from agent_cli.log.verify import verify
    from agent_cli.log.writer import SessionLog

    log = tmp_path / "s.jsonl"
    w = SessionLog(log)
    w.write(ev.SessionStart(version="0", model="m", provider="p", workspace=str(tmp_path)))
    w.write(ev.SessionEnd(reason="exit"))
    w.close()
    w = SessionLog(log)
    w.write(ev.Undo(id="undo_1", undid=["toolu_x"], workspace=str(tmp_path)))
    w.close()
    result = verify(log)
    assert result.fault is None and result.warnings == []
    assert check_trust(log).trusted
    w = SessionLog(log)
    w.write(ev.UserMessage(text="smuggled after the end"))
    w.close()
    assert "comes after session_end" in (verify(log).fault or "")


def test_chat_continue_after_undo_resumes_the_whole_conversation(
        spawn: Any, workspace: Path, tmp_path: Path) -> None:  # noqa: F811
    """Case 5 as a user meets it: a chat, `agent-cli undo` afterwards, then `chat --continue`:
    the conversation is all there, and the recap names the call that was undone."""
    (workspace / "notes.txt").write_text("old\n")
    chat = spawn([tool_use("toolu_u", "write_file", {"path": "notes.txt", "content": "new\n"}),
                  text("WROTE-IT")], workspace)
    chat.child.timeout = 60
    chat.prompt()
    chat.approved_turn("rewrite the note", b"WROTE-IT")
    assert chat.quit() == 0
    [log] = (Path(os.environ["AGENT_CLI_HOME"]) / "sessions").glob("*.jsonl")
    result = undo_cli(str(log), tmp=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (workspace / "notes.txt").read_text() == "old\n"
    again = spawn([text("CONTINUED")], workspace, "--continue")
    again.child.timeout = 60
    recap = again.prompt()
    flat = b" ".join(recap.split())
    assert b"Resumed from" in flat and b": 0 messages" not in flat
    assert b"Undone since" in flat and b"toolu_u" in flat
    assert again.quit() == 0
