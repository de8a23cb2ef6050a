"""The log package's seams: a rerun's session is built with the provider that answers it, undo
finds logs through log.store (the one lookup), and the rerun report is a renderable that keeps
every string from the log behind the output boundary."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from rich.console import Console

from agent_cli import events as ev
from agent_cli import rerun as rr
from agent_cli.approval import ScriptedApprover
from agent_cli.config import Settings
from agent_cli.log.reader import read_events
from agent_cli.log.store import sessions_dir
from agent_cli.log.writer import SessionLog
from agent_cli.ui.views.rerun_report import RerunReportView
from agent_cli.undo.logs import UndoRefused, latest_with_undo, resolve_log
from tests.log.test_replay import DATA, make_workspace, recorded_tools
from tests.logtools import sign_as_mine

ESC = "\x1b"


def test_the_rerun_session_is_built_with_the_provider_that_answers(tmp_path: Path) -> None:
    """Every model request of the rerun is answered by the provider the session was made with
    (before, the session held an empty script and its loop was handed another one per turn)."""
    mine = sign_as_mine(DATA / "session_edit.jsonl", tmp_path / "mine.jsonl")
    recorded = sum(1 for _, e in read_events(mine) if isinstance(e, ev.ModelReply))
    report = rr.rerun(mine, settings=Settings(provider="scripted"),
                      workspace=make_workspace(tmp_path / "ws"),
                      registry=recorded_tools(mine), approver=ScriptedApprover(["n keep my notes"]),
                      reuse_approvals=True, log_path=tmp_path / "rerun.jsonl")
    assert report.drift == []
    assert recorded > 0 and report.requests == recorded


def _settings(tmp_path: Path) -> Settings:
    return Settings(provider="scripted", log_dir=str(tmp_path / "sessions"))


def _write_log(path: Path, workspace: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    log = SessionLog(path, fsync=False, key=None)
    log.write(ev.SessionStart(version="t", model="m", provider="scripted", workspace=workspace,
                              tools=[]))
    log.write(ev.SessionEnd())
    log.close()


def test_undo_last_skips_a_log_whose_workspace_is_not_a_path(tmp_path: Path) -> None:
    """A saved log is data: a recorded workspace holding a NUL once stopped `undo --last` with
    a traceback; log.store's search steps over it like any foreign log."""
    settings = _settings(tmp_path)
    _write_log(sessions_dir(settings) / "20261201-101500-aaaaaa.jsonl", "/ws\x00/evil")
    ws = tmp_path / "ws"
    ws.mkdir()
    with pytest.raises(UndoRefused, match="Nothing to undo for workspace"):
        latest_with_undo(settings, ws)


def test_undo_takes_a_log_by_its_id_like_every_command(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    path = sessions_dir(settings) / "20261201-101500-3fa9c1.jsonl"
    _write_log(path, str(tmp_path))
    assert resolve_log("3fa9c1", settings) == path
    assert resolve_log("20261201-101500-3fa9c1", settings) == path


def test_the_rerun_report_view_shows_log_text_as_tokens() -> None:
    report = rr.RerunReport(
        drift=[rr.Drift(f"toolu_{ESC}[2J", "read_file", "result differs",
                        f"old {ESC}[31mred", "new")],
        tools=[rr.ToolDrift(f"gone{ESC}]0;t\a", "missing now")],
        calls=2, warnings=[f"line 3: bad {ESC}[1m"])
    console = Console(file=io.StringIO(), width=120, force_terminal=True, color_system=None)
    console.print(RerunReportView(report))
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert ESC not in out.replace("\x1b[0m", "").replace("\x1b[1m", "").replace(
        "\x1b[3m", "").replace("\x1b[2m", "")
    assert "Drift: 1 call(s) differ from the recording" in out
    assert "Tools changed since the recording" in out
    assert "\\x1b" in out


def test_no_drift_says_so_with_the_count() -> None:
    console = Console(file=io.StringIO(), width=80, color_system=None)
    console.print(RerunReportView(rr.RerunReport(calls=3, log_path=Path("r.jsonl"))))
    assert console.file.getvalue() == (  # type: ignore[attr-defined]
        "No drift: all 3 call results match the recording.\nRerun log: r.jsonl\n")
