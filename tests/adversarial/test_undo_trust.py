"""Undo acts on records, so it trusts only logs signed with this user's key whose chain verifies
without a single warning: a forged, edited, unsigned or foreign-key log is refused with the
reason, and nothing in the workspace is touched."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from agent_cli import events as ev
from agent_cli.log.trust import check_trust
from agent_cli.log.writer import chain_hash, serialize
from tests.undo.test_undo import run_session, sh, undo_cli


@pytest.fixture
def recorded(tmp_path: Path) -> tuple[Path, Path]:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("original\n")
    log = tmp_path / "s.jsonl"
    run_session(ws, log, [("toolu_c", "run_command", {"command": "printf 'new\\n' > a.txt",
                                                      "timeout_s": 60})])
    assert (ws / "a.txt").read_text() == "new\n"
    return ws, log


def records(log: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def rewrite(log: Path, recs: list[dict[str, Any]], *, rechain: bool, drop_mac: bool) -> None:
    prev = ""
    lines = []
    for rec in recs:
        if drop_mac:
            rec.pop("mac", None)
        if rechain:
            rec["hash"] = chain_hash(prev, rec)
            prev = rec["hash"]
        lines.append(serialize(rec).decode())
    log.write_text("\n".join(lines) + "\n")


def refused(ws: Path, log: Path, tmp: Path, words: str) -> None:
    result = undo_cli(str(log), tmp=tmp)
    assert result.returncode == 1, result.stdout + result.stderr
    said = " ".join(result.stderr.split())  # the sentence as read, not as wrapped
    assert "Not undoing" in said and words in said, result.stderr
    assert (ws / "a.txt").read_text() == "new\n"


def test_the_genuine_log_is_trusted(recorded: tuple[Path, Path]) -> None:
    _ws, log = recorded
    assert check_trust(log).trusted


def test_an_edited_before_state_is_refused(recorded: tuple[Path, Path], tmp_path: Path) -> None:
    ws, log = recorded
    recs = records(log)
    for rec in recs:
        if rec["type"] == "effects":
            rec["changes"][0]["path"] = "../escape.txt"
    rewrite(log, recs, rechain=False, drop_mac=False)
    refused(ws, log, tmp_path, "fails `agent-cli log verify`")


def test_a_rechained_forgery_without_the_key_is_refused(recorded: tuple[Path, Path],
                                                        tmp_path: Path) -> None:
    """Someone who recomputes the public hash chain but lacks the key: the MACs give it away."""
    ws, log = recorded
    recs = records(log)
    for rec in recs:
        if rec["type"] == "effects":
            rec["changes"][0]["before"]["sha256"] = "0" * 64
    rewrite(log, recs, rechain=True, drop_mac=False)
    refused(ws, log, tmp_path, "forged")


def test_an_unsigned_log_is_refused(recorded: tuple[Path, Path], tmp_path: Path) -> None:
    ws, log = recorded
    recs = records(log)
    for rec in recs:
        rec.pop("key_id", None)
    rewrite(log, recs, rechain=True, drop_mac=True)
    refused(ws, log, tmp_path, "no key id")


def test_a_log_signed_with_another_key_is_refused(recorded: tuple[Path, Path],
                                                  tmp_path: Path) -> None:
    ws, log = recorded
    key = Path(os.environ["AGENT_CLI_HOME"]) / "log.key"
    key.write_text("11" * 32 + "\n")
    refused(ws, log, tmp_path, "another log key")


def test_a_crashed_log_is_trusted_for_undo_and_says_so(recorded: tuple[Path, Path],
                                                       tmp_path: Path) -> None:
    """No session_end (a crash): every record up to there verifies and is signed, so undo acts
    on it and the panel says the session crashed; approvals are never reused from it."""
    ws, log = recorded
    lines = log.read_text().splitlines()
    assert json.loads(lines[-1])["type"] == "session_end"
    log.write_text("\n".join(lines[:-1]) + "\n")
    assert not check_trust(log).trusted  # --reuse-approvals: still refused
    assert check_trust(log, after_crash=True).crashed
    result = undo_cli(str(log), tmp=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "That session crashed" in result.stdout
    assert (ws / "a.txt").read_text() != "new\n"


def test_a_crashed_log_with_a_foreign_session_is_still_refused(recorded: tuple[Path, Path],
                                                               tmp_path: Path) -> None:
    """A crash forgives only a torn or missing end: any other warning still refuses."""
    from agent_cli.log.writer import SessionLog

    ws, log = recorded
    lines = log.read_text().splitlines()
    log.write_text("\n".join(lines[:-1]) + "\n")
    other = SessionLog(log, key=b"k" * 32)
    other.write(ev.SessionStart(version="0", model="m", provider="p", workspace=str(ws)))
    other.close()
    refused(ws, log, tmp_path, "another log key")


def test_paths_in_records_cannot_leave_the_workspace(tmp_path: Path) -> None:
    """Even a signed record is checked: `..`, absolute paths and .git (but for the top
    .git/config and .git/hooks/, which snapshots record) are never touched."""
    from agent_cli.events import EntryState, PathChange
    from agent_cli.log.changes import ChangeSet
    from agent_cli.undo.restore import make_plan
    from agent_cli.undo.store import Store

    ws = tmp_path / "ws"
    ws.mkdir()
    store = Store()
    after = EntryState(kind="file", sha256="a" * 64, mode=0o644)
    bad = [PathChange(path=p, change="created", after=after)
           for p in ("../x", "/etc/passwd", ".git/objects/x", ".git/hooks/../config",
                      "sub/.git/hooks/x", "a/../../b", "")]
    plan = make_plan([ChangeSet("toolu_x", "run_command", 0.0, str(ws), bad)], ws, store)
    assert plan.steps == []
    assert len(plan.conflicts) == len(bad)


def test_a_link_planted_on_the_way_is_not_followed(tmp_path: Path) -> None:
    """A folder swapped for a link to the outside after the record: undo never writes through
    it (the folder is now a link, so the path's state matches no record)."""
    ws = tmp_path / "ws"
    (ws / "d").mkdir(parents=True)
    (ws / "d" / "f.txt").write_text("v1\n")
    log = tmp_path / "s.jsonl"
    run_session(ws, log, [("toolu_c", "run_command", sh("printf 'v2\\n' > d/f.txt"))])
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "f.txt").write_text("v2\n")
    (ws / "d" / "f.txt").unlink()
    (ws / "d").rmdir()
    os.symlink(str(outside), ws / "d")
    result = undo_cli(str(log), tmp=tmp_path)
    assert result.returncode == 1
    assert (outside / "f.txt").read_text() == "v2\n"
