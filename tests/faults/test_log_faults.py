"""The session log on a disk that refuses writes: a real tmpfs filled to the last byte.

A refused record leaves no partial line; a record that would start something (a turn, a call,
the session) is dropped and that thing does not happen; any other record is kept in memory,
chained, and lands first when space returns; the log then verifies.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_cli import events as ev
from agent_cli.approval import Approved, ScriptedApprover
from agent_cli.calls import Call
from agent_cli.config import Settings
from agent_cli.log.verify import verify
from agent_cli.log.writer import SessionLog
from agent_cli.providers.scripted import ScriptedProvider
from agent_cli.session import Session, load_registry
from agent_cli.write_faults import LogUnwritable
from tests.faults.conftest import SmallDisk
from tests.scripts import text, tool_use

EFFECT_TOOL = '''
from pathlib import Path
from pydantic import BaseModel
from agent_cli.tools import Tool


class Args(BaseModel):
    name: str
    pad: str = ""


def run(args, ctx):
    (Path(ctx.workspace) / args.name).write_text("made", encoding="utf-8")
    return "made " + args.name


TOOL = Tool(name="make_file", description="Creates a file.", args=Args, effect="write", run=run)
'''

FILLING_TOOL = '''
import errno, os
from pydantic import BaseModel
from agent_cli.tools import Tool


class Args(BaseModel):
    where: str


def run(args, ctx):
    fd = os.open(args.where, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
    try:
        for size in (4096, 512, 64, 1):
            while True:
                try:
                    os.write(fd, b"\\0" * size)
                except OSError as e:
                    if e.errno != errno.ENOSPC:
                        raise
                    break
    finally:
        os.close(fd)
    return "the disk is full now " + "x" * 9000


TOOL = Tool(name="fill_disk", description="Fills a disk.", args=Args, effect="read", run=run)
'''


def lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def test_a_refused_record_leaves_no_partial_line_and_lands_when_space_returns(
        disk: SmallDisk) -> None:
    path = disk.root / "s.jsonl"
    log = SessionLog(path)
    log.write(ev.SessionStart(version="t", model="m", provider="scripted", workspace="/w",
                              tools=[], system=""))
    before = path.read_bytes()
    disk.fill()
    big = "n" * 20_000  # larger than the slack of the log's last page: a short write happens
    with pytest.raises(LogUnwritable) as refused:
        log.write(ev.Notice(message=big, kind="test"))
    assert not refused.value.dropped
    assert "is full: free space and" in str(refused.value)
    assert str(disk.root) in str(refused.value)
    assert path.read_bytes() == before, "a refused write left part of a line"
    log.write(ev.Notice(message="second", kind="test"))  # behind the first, silently
    assert path.read_bytes() == before
    assert log.fault is not None and len(log.held) == 2
    disk.free()
    log.write(ev.Notice(message="third", kind="test"))
    log.close()
    records = lines(path)
    assert [r["seq"] for r in records] == [1, 2, 3, 4]
    assert [r.get("message", "")[:6] for r in records[1:]] == ["nnnnnn", "second", "third"]
    assert verify(path).ok


def test_a_refused_user_message_is_dropped_not_kept(disk: SmallDisk) -> None:
    path = disk.root / "s.jsonl"
    log = SessionLog(path)
    log.write(ev.SessionStart(version="t", model="m", provider="scripted", workspace="/w",
                              tools=[], system=""))
    disk.fill()
    with pytest.raises(LogUnwritable) as refused:
        log.write(ev.UserMessage(text="u" * 20_000))
    assert refused.value.dropped
    assert log.seq == 1 and not log.held
    disk.free()
    log.write(ev.UserMessage(text="again"))
    log.close()
    assert [(r["seq"], r["type"]) for r in lines(path)] == [(1, "session_start"),
                                                          (2, "user_message")]
    assert verify(path).ok


class FillingApprover:
    """Says yes, after filling the disk: the approval is what cannot be logged."""

    def __init__(self, disk: SmallDisk) -> None:
        self.disk = disk
        self.fill = True

    def decide(self, call: Call) -> Approved:
        if self.fill:
            self.disk.fill()
            self.fill = False
        return Approved(call.id, call.args_hash)


def _session(tmp_path: Path, disk: SmallDisk, replies: list[dict[str, object]],
             approver: object, plugin: str) -> tuple[Session, Path, Path]:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "plugin.py").write_text(plugin, encoding="utf-8")
    settings = Settings(provider="scripted")
    registry, _ = load_registry(settings, [tools])
    log = disk.root / "s.jsonl"
    session = Session(settings, workspace=workspace, provider=ScriptedProvider(replies),
                      registry=registry, approver=approver,  # type: ignore[arg-type]
                      log_path=log)
    return session, workspace, log


def test_a_call_whose_approval_cannot_be_logged_does_not_run(tmp_path: Path,
                                                             disk: SmallDisk) -> None:
    # (the pad makes the approval longer than the slack of the log's last page, which a full
    # tmpfs still lets the log fill)
    pad = "p" * 6000
    replies = [tool_use("toolu_1", "make_file", {"name": "effect.txt", "pad": pad}),
               tool_use("toolu_2", "make_file", {"name": "effect.txt", "pad": pad}),
               text("Done again.")]
    session, workspace, log = _session(tmp_path, disk, replies, FillingApprover(disk),
                                       EFFECT_TOOL)
    session.start()
    result = session.send("make it")
    assert result.reason == "log_unwritable"
    assert "is full" in (result.message or "")
    assert not (workspace / "effect.txt").exists(), "the call ran without its approval on disk"
    # The model is told the call did not run; the history stays valid for the next request.
    answered = session.history[-1]["content"][0]
    assert answered["type"] == "tool_result" and answered["is_error"]
    disk.free()
    result = session.send("try again")
    assert result.reason == "end_turn"
    assert (workspace / "effect.txt").read_text(encoding="utf-8") == "made"
    session.close()
    assert verify(log).ok
    records = lines(log)
    kinds = [r["type"] for r in records]
    assert kinds.count("user_message") == 2 and kinds[-1] == "session_end"
    started = [r["id"] for r in records if r["type"] == "tool_started"]
    assert started == ["toolu_2"]


def test_a_result_that_cannot_be_logged_stops_the_turn_and_lands_later(
        tmp_path: Path, disk: SmallDisk) -> None:
    replies = [tool_use("toolu_1", "fill_disk", {"where": str(disk.filler)}), text("Back.")]
    session, _workspace, log = _session(tmp_path, disk, replies, ScriptedApprover([]),
                                        FILLING_TOOL)
    session.start()
    result = session.send("fill it")
    assert result.reason == "log_unwritable"
    assert "is full" in (result.message or "")
    assert b"the disk is full now" not in log.read_bytes()
    assert session.log.held, "the result is kept in memory"
    disk.free()
    result = session.send("go on")
    assert result.reason == "end_turn" and result.text == "Back."
    session.close()
    assert verify(log).ok
    records = lines(log)
    [res] = [r for r in records if r["type"] == "tool_result"]
    assert str(res["content"]).startswith("the disk is full now")
    ends = [r for r in records if r["type"] == "turn_end"]
    assert [e["reason"] for e in ends] == ["log_unwritable", "end_turn"]


def test_a_session_whose_start_cannot_be_logged_leaves_no_file(tmp_path: Path,
                                                               disk: SmallDisk) -> None:
    session, _workspace, log = _session(tmp_path, disk, [text("hi")], ScriptedApprover([]),
                                        EFFECT_TOOL)
    disk.fill()
    with pytest.raises(LogUnwritable) as refused:
        session.start()
    assert refused.value.dropped and refused.value.exit_code == 10
    session.close()  # nothing to end, nothing lost
    assert not log.exists()
    assert disk.debris() == []
