"""The log format on disk: one ASCII JSON record per line, the hash chain, appending, the
write-ahead fsync, and a reader that survives what crashes and other writers leave behind."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from pathlib import Path
from typing import Any

import pytest

from agent_cli import events as ev
from agent_cli.log import keys, writer
from agent_cli.log.reader import BadLine, read_events
from agent_cli.log.verify import verify
from agent_cli.log.writer import SessionLog
from tests.scripts import run_session, text, tool_use


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().split(b"\n") if line]


def test_each_record_is_one_ascii_line_chained_by_sha256(workspace: Path, tmp_path: Path,
                                                          tools: Path) -> None:
    log = tmp_path / "s.jsonl"
    run_session(workspace, log, prompt="héllo \u2028 wörld", tools_dir=tools)
    data = log.read_bytes()
    assert data.isascii() and data.endswith(b"\n")
    recs = records(log)
    assert [r["seq"] for r in recs] == list(range(1, len(recs) + 1))
    assert {r["v"] for r in recs} == {ev.LOG_FORMAT_VERSION}
    key = bytes.fromhex((Path(os.environ["AGENT_CLI_HOME"]) / "log.key").read_text())
    assert recs[0]["key_id"] == keys.key_id(key)
    prev = ""
    for r in recs:  # the rules, computed independently of the module
        body = {k: v for k, v in r.items() if k not in ("hash", "mac")}
        canon = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        assert r["hash"] == hashlib.sha256((prev + canon).encode()).hexdigest()
        assert r["mac"] == hmac.new(key, r["hash"].encode(), hashlib.sha256).hexdigest()
        prev = r["hash"]
    types = [r["type"] for r in recs]
    assert types == ["session_start", "user_message", "model_reply", "tool_proposed", "approval",
                     "tool_started", "effects", "tool_result", "model_reply", "turn_end",
                     "session_end"]
    [approval] = [r for r in recs if r["type"] == "approval"]
    assert approval["by"] == "user" and approval["decision"] == "approved"
    assert approval["args"] == {"text": "hi"} and len(approval["args_hash"]) == 64
    assert recs[1]["text"] == "héllo \u2028 wörld"


def test_appending_to_an_existing_log_continues_its_chain(workspace: Path, tmp_path: Path,
                                                          tools: Path) -> None:
    log = tmp_path / "s.jsonl"
    run_session(workspace, log, tools_dir=tools)
    first = len(records(log))
    run_session(workspace, log, prompt="again", tools_dir=tools)
    recs = records(log)
    assert recs[first]["type"] == "session_start" and recs[first]["seq"] == first + 1
    result = verify(log)
    assert result.ok and result.count == len(recs)


def test_torn_last_line_is_skipped_and_the_next_writer_starts_a_fresh_line(
        workspace: Path, tmp_path: Path, tools: Path) -> None:
    log = tmp_path / "s.jsonl"
    run_session(workspace, log, tools_dir=tools)
    good = len(records(log))
    with open(log, "ab") as f:
        f.write(b'{"v":1,"seq":99,"ts":1.0,"hash":"ab')  # the process died mid-write
    items = list(read_events(log))
    bad = [i for _, i in items if isinstance(i, BadLine)]
    assert len(bad) == 1 and bad[0].torn and bad[0].lineno == good + 1
    assert sum(not isinstance(i, BadLine) for _, i in items) == good
    warned = verify(log)
    assert warned.ok and any("torn" in w for w in warned.warnings)

    run_session(workspace, log, prompt="after the crash", tools_dir=tools)
    lines = log.read_bytes().split(b"\n")
    assert lines[good].startswith(b'{"v":1,"seq":99')  # the torn piece, now alone on its line
    assert json.loads(lines[good + 1])["type"] == "session_start"
    assert json.loads(lines[good + 1])["seq"] == good + 1  # chained from the last good record
    after = verify(log)
    assert after.ok, after.fault
    assert any(f"line {good + 1}" in w for w in after.warnings)


def test_reader_loads_every_valid_event_around_nuls_separators_and_raw_utf8(
        workspace: Path, tmp_path: Path, tools: Path) -> None:
    log = tmp_path / "s.jsonl"
    run_session(workspace, log, prompt="a\u2028b\u0085c\u2029d\rsame record", tools_dir=tools)
    lines = log.read_bytes().split(b"\n")[:-1]
    raw_utf8 = json.dumps({"v": 1, "seq": 0, "ts": 1.0, "hash": "", "type": "notice",
                           "message": "raw \u2028 line\u0085 from another writer é"},
                          ensure_ascii=False).encode("utf-8")
    damaged = (b"\n".join(lines[:3]) + b"\n" + b"\x00" * 4096 + b"\n" + b"\x00" * 100
               + b"\n".join(lines[3:]) + b"\n" + raw_utf8 + b"\n" + lines[0][:40])
    log.write_bytes(damaged)
    items = [i for _, i in read_events(log)]
    good = [i for i in items if not isinstance(i, BadLine)]
    assert [e.seq for e in good[:-1]] == list(range(1, len(lines) + 1))
    assert good[1].text == "a\u2028b\u0085c\u2029d\rsame record"  # type: ignore[union-attr]
    assert isinstance(good[-1], ev.Notice) and "\u2028" in good[-1].message
    reasons = [i.reason for i in items if isinstance(i, BadLine)]
    assert len(reasons) == 3  # the NUL line, the NULs glued before a record, the torn tail
    assert any("torn" in r for r in reasons)


def test_invalid_utf8_in_a_tool_result_is_kept_as_escaped_surrogates(
        workspace: Path, tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "raw_bytes.py").write_text('''
from pydantic import BaseModel
from agent_cli.tools import Tool


class Args(BaseModel):
    pass


def run(args, ctx):
    return b"ok \\xff\\xfe end".decode("utf-8", "surrogateescape")


TOOL = Tool(name="raw_bytes", description="Bytes that are not UTF-8.", args=Args,
            effect="read", run=run)
''', encoding="utf-8")
    log = tmp_path / "s.jsonl"
    run_session(workspace, log, replies=[tool_use("toolu_b", "raw_bytes", {}), text("ok")],
                answers=[], tools_dir=tools)
    assert b'"content":"ok \\udcff\\udcfe end"' in log.read_bytes()
    [result] = [e for _, e in read_events(log) if isinstance(e, ev.ToolResultEvent)]
    assert result.content.encode("utf-8", "surrogateescape") == b"ok \xff\xfe end"
    assert verify(log).ok


def test_proposal_and_decision_are_fsynced_before_the_effect_runs(
        workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "s.jsonl"
    synced: list[int] = []  # file size at each fsync
    real_fsync = writer.os.fsync

    def spy(fd: int) -> None:
        real_fsync(fd)
        if log.exists():
            synced.append(log.stat().st_size)

    monkeypatch.setattr(writer.os, "fsync", spy)
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "probe.py").write_text(f'''
from pathlib import Path
from pydantic import BaseModel
from agent_cli.tools import Tool


class Args(BaseModel):
    n: int


def run(args, ctx):
    data = Path({str(log)!r}).read_bytes()
    Path({str(tmp_path / "probe.out")!r}).write_bytes(data)
    return "probed"


TOOL = Tool(name="probe", description="Looks at the log while it runs.", args=Args, run=run)
''', encoding="utf-8")
    run_session(workspace, log, replies=[tool_use("toolu_p", "probe", {"n": 1}), text("ok")],
                tools_dir=tools)
    on_disk = (tmp_path / "probe.out").read_bytes()
    kinds = [json.loads(line)["type"] for line in on_disk.split(b"\n") if line]
    assert kinds[-3:] == ["tool_proposed", "approval", "tool_started"]
    # the size just after the approval was written had been fsynced before the tool ran
    approval_end = on_disk.index(b'"type":"approval"')
    approval_end = on_disk.index(b"\n", approval_end) + 1
    assert approval_end in synced


@pytest.mark.parametrize(("event", "want"), [
    (ev.Approval(id="a", name="w", effect="write", decision="approved", by="user",
                 args_hash="x"), True),
    (ev.Approval(id="a", name="w", effect="write", decision="denied", by="policy",
                 args_hash="x"), True),
    (ev.Approval(id="a", name="r", effect="read", decision="approved", by="policy",
                 args_hash="x"), False),
    (ev.ToolResultEvent(id="a", name="r", is_error=False, content=""), False),
    (ev.TurnEnd(reason="end_turn"), True),
])
def test_write_ahead_policy(event: ev.Event, want: bool) -> None:
    assert writer._needs_fsync(event) is want


def test_a_folder_or_missing_file_is_one_sentence(tmp_path: Path) -> None:
    from agent_cli.errors import LogError

    with pytest.raises(LogError, match="not found"):
        list(read_events(tmp_path / "nope.jsonl"))
    with pytest.raises(LogError, match="folder"):
        list(read_events(tmp_path))


def test_writer_without_session(tmp_path: Path) -> None:
    """SessionLog is a plain sink: TextDelta is never logged."""
    log = SessionLog(tmp_path / "x.jsonl")
    log(ev.TextDelta("streamed"))
    log(ev.UserMessage(text="hi"))
    log.close()
    assert [r["type"] for r in records(tmp_path / "x.jsonl")] == ["user_message"]


def test_writes_from_several_threads_keep_one_chain(tmp_path: Path) -> None:
    """An MCP server's notices arrive on another thread while the loop writes."""
    import threading

    path = tmp_path / "t.jsonl"
    log = SessionLog(path, fsync=False)
    log.write(ev.SessionStart(version="t", model="m", provider="p", workspace="/w"))

    def burst(n: int) -> None:
        for i in range(300):
            log.write(ev.Notice(message=f"thread {n} notice {i}"))

    threads = [threading.Thread(target=burst, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    log.write(ev.SessionEnd())
    log.close()
    result = verify(path)
    assert result.ok, result.fault
    assert result.count == 1 + 4 * 300 + 1


def test_a_write_after_close_is_dropped_not_a_crash(tmp_path: Path) -> None:
    """A late notice (an MCP server stopping after session_end) must not raise on the sealed
    file, and the file stays exactly as closed."""
    from agent_cli import events as ev
    from agent_cli.log.writer import SessionLog

    path = tmp_path / "s.jsonl"
    log = SessionLog(path)
    log.write(ev.SessionEnd())
    log.close()
    before = path.read_bytes()
    log.write(ev.Notice(message="server stopped"))
    assert path.read_bytes() == before
