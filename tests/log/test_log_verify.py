"""`agent-cli log verify`: any tampering is detected and named; a crash's torn last line is only
a warning. Also `agent-cli log list`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_cli.cli.app import app
from agent_cli.log.verify import verify
from agent_cli.log.writer import chain_hash, serialize
from tests.scripts import PLUGIN, run_session, text, tool_use

runner = CliRunner()


@pytest.fixture
def log(workspace: Path, tmp_path: Path) -> Path:
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "echo_write.py").write_text(PLUGIN, encoding="utf-8")
    path = tmp_path / "s.jsonl"
    run_session(workspace, path, prompt="first \u00e9 \u2028", tools_dir=tools, replies=[
        tool_use("toolu_1", "echo_write", {"text": "a"}, "One."),
        tool_use("toolu_2", "echo_write", {"text": "b"}), text("Done.")], answers=["y", "n no"])
    return path


def lines_of(path: Path) -> list[bytes]:
    return path.read_bytes().split(b"\n")[:-1]


def write_lines(path: Path, lines: list[bytes]) -> None:
    path.write_bytes(b"".join(line + b"\n" for line in lines))


def cli(*args: str) -> Any:
    return runner.invoke(app, list(args))


def test_an_intact_log_is_ok_with_its_count(log: Path) -> None:
    n = len(lines_of(log))
    result = cli("log", "verify", str(log))
    assert result.exit_code == 0, result.output
    assert "OK" in result.output and f"{n} events" in result.output


def test_every_single_byte_edit_is_detected(log: Path, tmp_path: Path) -> None:
    original = log.read_bytes()
    target = tmp_path / "edited.jsonl"
    missed = []
    for pos in range(len(original)):
        old = original[pos]
        # a digit where a digit was keeps the JSON valid: the chain must catch it
        new = ord("1") if old == ord("0") else ord("0") if chr(old).isdigit() else ord("A") \
            if old != ord("A") else ord("a")
        target.write_bytes(original[:pos] + bytes([new]) + original[pos + 1:])
        if verify(target).ok:
            missed.append((pos, chr(old), chr(new)))
    assert missed == []


def test_edit_names_the_line(log: Path) -> None:
    lines = lines_of(log)
    rec = json.loads(lines[4])
    rec["args"] = {"text": "not what was approved"}
    lines[4] = serialize(rec)
    write_lines(log, lines)
    result = cli("log", "verify", str(log))
    assert result.exit_code == 1
    assert "line 5" in result.output and "edited" in result.output


def test_escape_case_edit_that_keeps_the_values_is_detected(log: Path) -> None:
    lines = lines_of(log)
    assert b"\\u00e9" in lines[1]
    lines[1] = lines[1].replace(b"\\u00e9", b"\\u00E9")
    write_lines(log, lines)
    result = verify(log)
    assert not result.ok and "line 2" in (result.fault or "")


@pytest.mark.parametrize("drop", range(0, 14))
def test_dropping_any_line_but_the_last_is_detected(log: Path, drop: int) -> None:
    lines = lines_of(log)
    assert len(lines) == 15  # with the approved call's `effects` record
    del lines[drop]
    write_lines(log, lines)
    result = verify(log)
    assert not result.ok
    assert "dropped" in (result.fault or "")
    assert f"line {drop + 1}" in (result.fault or "")


def test_dropping_the_last_line_is_a_warning_and_the_head_hash_changes(log: Path) -> None:
    head = verify(log).head
    write_lines(log, lines_of(log)[:-1])
    result = verify(log)
    assert result.ok and result.head != head
    assert any("session_end" in w for w in result.warnings)


@pytest.mark.parametrize("first", range(0, 14))
def test_swapping_two_lines_is_detected_as_reordered(log: Path, first: int) -> None:
    lines = lines_of(log)
    lines[first], lines[first + 1] = lines[first + 1], lines[first]
    write_lines(log, lines)
    result = cli("log", "verify", str(log))
    assert result.exit_code == 1
    assert "reordered" in result.output and f"line {first + 1}" in result.output


def test_appended_forgeries_are_detected(log: Path) -> None:
    lines = lines_of(log)
    last = json.loads(lines[-1])
    forged: list[bytes] = []
    # a made-up hash
    forged.append(serialize({"v": 1, "seq": last["seq"] + 1, "ts": 1.0, "hash": "0" * 64,
                             "type": "notice", "message": "all fine", "kind": "info"}))
    # a copy of an earlier line
    forged.append(lines[3])
    # a correctly chained record that no session would write: after session_end
    body = {"v": 1, "seq": last["seq"] + 1, "ts": 2.0, "type": "tool_started",
            "id": "toolu_2", "name": "echo_write"}
    forged.append(serialize({**body, "hash": chain_hash(last["hash"], body)}))
    for line in forged:
        write_lines(log, [*lines, line])
        result = cli("log", "verify", str(log))
        assert result.exit_code == 1, line
        assert f"line {len(lines) + 1}" in result.output


def test_a_chained_tool_start_without_approval_is_a_fault(log: Path) -> None:
    """Removing an approval and re-chaining everything after it still shows."""
    lines = [json.loads(x) for x in lines_of(log)]
    kept = [r for r in lines if not (r["type"] == "approval" and r["id"] == "toolu_1")]
    prev = ""
    out = []
    for i, r in enumerate(kept, start=1):
        body = {k: v for k, v in r.items() if k != "hash"}
        body["seq"] = i
        h = chain_hash(prev, body)
        rec = {**body, "hash": h}
        rec = {k: rec[k] for k in r}  # keep the writer's field order
        out.append(serialize(rec))
        prev = h
    write_lines(log, out)
    result = verify(log)
    assert not result.ok and "without a recorded approval" in (result.fault or "")


def test_torn_final_line_exits_0_with_a_warning(log: Path) -> None:
    with open(log, "ab") as f:
        f.write(b'{"v":1,"seq":15,"ts":17')
    result = cli("log", "verify", str(log))
    assert result.exit_code == 0
    assert "OK" in result.output and "torn" in result.output


def test_garbage_final_line_is_not_excused_as_torn(log: Path) -> None:
    with open(log, "ab") as f:
        f.write(b"hello")
    assert cli("log", "verify", str(log)).exit_code == 1


def test_missing_file_is_exit_2(tmp_path: Path) -> None:
    result = cli("log", "verify", str(tmp_path / "nope.jsonl"))
    assert result.exit_code == 2 and "not found" in " ".join(result.output.split())


def test_log_list_shows_recent_sessions(workspace: Path, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "echo_write.py").write_text(PLUGIN, encoding="utf-8")
    sessions = Path(os.environ["AGENT_CLI_HOME"]) / "sessions"
    run_session(workspace, sessions / "a.jsonl", prompt="fix \x1b[31mthe\nbug", tools_dir=tools,
                replies=[tool_use("toolu_1", "echo_write", {"text": "a"}),
                         tool_use("toolu_2", "echo_write", {"text": "b"}),
                         tool_use("toolu_3", "echo_write", {"text": "c"}), text("ok")],
                answers=["y", "n", "yes"])
    result = runner.invoke(app, ["log", "list"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    row = next(line for line in result.output.splitlines() if "a.jsonl" in line)
    assert str(workspace.resolve()) in row
    assert "fix \\x1b[31mthe\\nbug" in row  # sanitised, on one line
    assert "\x1b" not in result.output
    assert row.split()[-4:-1] == ["3", "2", "1"]  # calls, approved, denied
    other = tmp_path / "other"
    other.mkdir()
    filtered = runner.invoke(app, ["log", "list", "--workspace", str(other)])
    assert "a.jsonl" not in filtered.output


def _rechained_forgery(lines: list[bytes]) -> bytes:
    """A record chained correctly after the last one: anyone can compute the public chain."""
    last = json.loads(lines[-1])
    body = {"v": 1, "seq": last["seq"] + 1, "ts": last["ts"] + 1, "type": "tool_result",
            "id": "toolu_2", "name": "echo_write", "is_error": False,
            "content": "echo:b (it ran after all)", "duration": 0.1, "truncated": False}
    return serialize({**body, "hash": chain_hash(last["hash"], body)})


def test_a_rechained_forgery_is_caught_by_the_log_key(log: Path) -> None:
    import os

    lines = lines_of(log)[:-3]  # as if the session crashed before its turn ended
    write_lines(log, [*lines, _rechained_forgery(lines)])
    result = cli("log", "verify", str(log))
    assert result.exit_code == 1
    assert f"line {len(lines) + 1}" in result.output and "forged" in result.output
    key = Path(os.environ["AGENT_CLI_HOME"]) / "log.key"
    assert key.stat().st_mode & 0o777 == 0o600


def test_without_the_key_only_the_chain_is_checked_and_verify_says_so(log: Path) -> None:
    import os

    (Path(os.environ["AGENT_CLI_HOME"]) / "log.key").unlink()
    lines = lines_of(log)[:-3]
    write_lines(log, [*lines, _rechained_forgery(lines)])
    result = verify(log)
    assert result.ok  # the stated limit: no key, no way to tell a recomputed chain apart
    assert any("another log key" in w for w in result.warnings)


def test_recorded_logs_from_another_machine_verify_with_a_warning() -> None:
    data = Path(__file__).resolve().parents[1] / "data"
    for name in ("session_edit.jsonl", "session_search.jsonl"):
        result = verify(data / name)
        assert result.ok, result.fault
        assert any("another log key" in w for w in result.warnings)
