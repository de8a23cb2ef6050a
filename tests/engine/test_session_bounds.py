"""A log begins with its `session_start`, whatever cut the start short, and ends with
`session_end` once it began: CI once saw a chat's log that held only `session_end`, when SIGTERM
landed while the session was starting (the start was cut before its record, and `close` wrote
the end). The engine writes the end only after the start; the front ends hold signals around the
start, so the start lands whole and the signal is looked at afterwards."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_cli import events as ev
from agent_cli.cli.app import app
from agent_cli.session import Session
from tests.scripts import done, make_session


def _types(log: Path) -> list[str]:
    return [json.loads(line)["type"] for line in log.read_text().splitlines()]


def test_a_session_closed_before_it_started_leaves_no_log(tmp_path: Path,
                                                           workspace: Path) -> None:
    log = tmp_path / "s.jsonl"
    session = make_session(workspace, [done()], log=log)
    session.close("signal SIGTERM")
    assert not log.exists()  # not a log of one `session_end`


def test_a_start_cut_after_its_record_still_ends_the_log(tmp_path: Path,
                                                          workspace: Path) -> None:
    """A front end's sink interrupted by the start record (the log already has it): the end is
    written on close."""
    log = tmp_path / "s.jsonl"
    session = make_session(workspace, [done()], log=log)

    def interrupted(event: Any) -> None:
        if isinstance(event, ev.SessionStart):
            raise KeyboardInterrupt

    session.sinks = (*session.sinks, interrupted)
    with pytest.raises(KeyboardInterrupt):
        session.start()
    session.close("interrupted")
    assert _types(log) == ["session_start", "session_end"]


def test_sigterm_while_run_starts_its_session_ends_the_log_whole(
        tmp_path: Path, workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A real SIGTERM at the first instant of `Session.start` in `agent-cli run`: the start
    record lands, no turn runs, the log ends with the signal, and the exit is 143."""
    script = tmp_path / "s.json"
    script.write_text(json.dumps([{"content": [{"type": "text", "text": "hi"}],
                                   "stop_reason": "end_turn"}]))
    original = Session.start

    def signalled_start(self: Session) -> None:
        os.kill(os.getpid(), signal.SIGTERM)  # delivered at once, in this (the main) thread
        original(self)

    monkeypatch.setattr(Session, "start", signalled_start)
    result = CliRunner().invoke(app, ["run", "say hi", "--script", str(script),
                                      "--workspace", str(workspace), "-o", "json"])
    assert result.exit_code == 143, result.output
    [log] = (Path(os.environ["AGENT_CLI_HOME"]) / "sessions").glob("*.jsonl")
    records = [json.loads(line) for line in log.read_text().splitlines()]
    assert records[0]["type"] == "session_start"
    assert records[-1] == {**records[-1], "type": "session_end", "reason": "signal SIGTERM"}
    assert "user_message" not in [r["type"] for r in records]
