"""Family: hostile log files. A log is data from disk, maybe from someone else; every reader
(`log verify`, `replay` in each output, `log list`, `chat --resume`, a `continues` pointer)
must survive any single bad line with a message naming it, never hang and never show a
traceback; one bad log never hides the other sessions from `log list`.

FIFOs and other non-regular files are refused at once (a FIFO opened the ordinary way blocks
until someone writes to it). Those cases run as real processes with a deadline, so a hang fails
the test instead of freezing the suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_cli.cli.app import app
from tests.conftest import REPO
from tests.logtools import records_of, write_chain
from tests.scripts import run_session, text, tool_use

runner = CliRunner()
DEADLINE_S = 60

BAD_LINES: dict[str, bytes] = {
    "huge-ts": b'{"v":1,"seq":3,"ts":1e999,"type":"user_message","text":"x","hash":"0"}',
    "far-ts": b'{"v":1,"seq":3,"ts":1e300,"type":"user_message","text":"x","hash":"0"}',
    "5000-digit-ts": b'{"v":1,"seq":3,"ts":' + b"9" * 5000 + b',"type":"user_message"}',
    "100000-deep": b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    "invalid-utf8": b'{"v":1,"seq":3,"ts":1.0,"type":"user_message","text":"\xff\xfe\xc0"}',
    "not-an-object": b"[1, 2, 3]",
    "a-bare-string": b'"\\u001b]52;c;aGk=\\u0007"',
}


@pytest.fixture
def good_log(workspace: Path, tmp_path: Path) -> Path:
    log = tmp_path / "good.jsonl"
    run_session(workspace, log, prompt="the good one", replies=[
        tool_use("toolu_1", "read_file", {"path": "nope.txt"}), text("Done.")])
    return log


def _with_bad_line(good: Path, dst: Path, bad: bytes, at: int = 2) -> Path:
    lines = good.read_bytes().split(b"\n")[:-1]
    dst.write_bytes(b"\n".join([*lines[:at], bad, *lines[at:]]) + b"\n")
    return dst


def _clean(result: Any) -> str:
    out = result.output + (result.stderr if result.stderr_bytes else "")
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in out
    return " ".join(out.split())


@pytest.mark.parametrize("kind", list(BAD_LINES))
def test_every_reader_survives_one_bad_line_and_names_it(kind: str, good_log: Path,
                                                          tmp_path: Path) -> None:
    log = _with_bad_line(good_log, tmp_path / f"{kind}.jsonl", BAD_LINES[kind])
    verify = runner.invoke(app, ["log", "verify", str(log)])
    assert verify.exit_code == 1 and "line 3" in _clean(verify)
    for output in ("text", "markdown", "jsonl"):
        shown = runner.invoke(app, ["replay", str(log), "--output", output])
        out = _clean(shown)
        assert shown.exit_code == 0, out
        if kind == "invalid-utf8":  # readable apart from its bytes: shown, bytes as tokens
            assert "<U+DCFF>" in out or output == "jsonl", (output, out)
        else:
            assert "line 3" in out, (output, out)
        assert "Done." in out or output == "jsonl"
    resumed = runner.invoke(app, ["chat", "--provider", "scripted", "--script",
                                  str(REPO / "examples" / "demo_script.json"), "--resume",
                                  str(log), "--workspace", str(tmp_path)], input="")
    out = _clean(resumed)
    assert resumed.exit_code == 0, out
    assert "line 3" in out or kind == "invalid-utf8"


def test_a_chained_record_with_hostile_values_is_survived(good_log: Path, tmp_path: Path) -> None:
    """Values that parse but are no event (a ts no date has, 900-deep nesting, a lone surrogate
    from bad UTF-8), chained correctly with the public arithmetic, so only the readers' own
    robustness stands between them and a crash."""
    recs = records_of(good_log)
    deep: Any = {"x": 1}
    for _ in range(900):
        deep = [deep]
    extra = [
        {"v": 1, "ts": 1e300, "type": "user_message", "text": "far future"},
        {"v": 1, "ts": 1.0, "type": "tool_proposed", "id": "t9", "name": "n", "input": {"a": deep}},
        {"v": 1, "ts": 1.0, "type": "user_message", "text": "lone \udcff surrogate"},
        {"v": 1, "ts": -1e300, "type": "session_start", "version": "1", "model": "m",
         "provider": "p", "workspace": "/tmp/\x00nul"},
    ]
    recs = recs[:2] + extra + recs[2:]
    for i, rec in enumerate(recs, start=1):
        rec["seq"] = i
        rec.pop("mac", None)
        if rec["type"] == "session_start":
            rec.pop("key_id", None)
    log = tmp_path / "chained.jsonl"
    write_chain(log, recs)
    for args in (["log", "verify", str(log)], ["replay", str(log)],
                 ["replay", str(log), "--output", "markdown"]):
        result = runner.invoke(app, args)
        out = _clean(result)
        assert result.exit_code in (0, 1), out
    shown = _clean(runner.invoke(app, ["replay", str(log)]))
    assert "line 3" in shown and "line 6" in shown  # the far-future ts and the bad start


def test_one_bad_log_never_hides_the_others_from_log_list(good_log: Path, workspace: Path,
                                                          tmp_path: Path) -> None:
    sessions = Path(os.environ["AGENT_CLI_HOME"]) / "sessions"
    sessions.mkdir(parents=True, exist_ok=True)
    (sessions / "good.jsonl").write_bytes(good_log.read_bytes())
    for kind, bad in BAD_LINES.items():
        _with_bad_line(good_log, sessions / f"bad-{kind}.jsonl", bad, at=0)
    recs = records_of(good_log)
    recs[0]["workspace"] = "/tmp/\x00nul"  # a workspace no path can be
    write_chain(sessions / "nul-workspace.jsonl", recs)
    os.mkfifo(sessions / "fifo.jsonl")
    (sessions / "folder.jsonl").mkdir()
    for args in (["log", "list", "-n", "100"],
                 ["log", "list", "-n", "100", "--workspace", str(workspace)]):
        result = runner.invoke(app, args, env={"COLUMNS": "300"})
        out = _clean(result)
        assert result.exit_code == 0, out
        assert "good.jsonl" in out and "the good one" in out


def _agent(*args: str, stdin: str = "") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "agent_cli", *args], input=stdin, text=True,
                          capture_output=True, timeout=DEADLINE_S, env=env, cwd=REPO)


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "session.jsonl"
    os.mkfifo(path)
    return path


def test_log_verify_of_a_fifo_is_refused_at_once(fifo: Path) -> None:
    done = _agent("log", "verify", str(fifo))
    assert done.returncode == 2, done
    assert "not a regular file" in " ".join(done.stderr.split())
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize("output", ["text", "jsonl"])
def test_replay_of_a_fifo_is_refused_at_once(fifo: Path, output: str) -> None:
    done = _agent("replay", str(fifo), "--output", output)
    assert done.returncode != 0 and "not a regular file" in " ".join(done.stderr.split())
    assert "Traceback" not in done.stderr


def test_resume_of_a_fifo_is_refused_at_once(fifo: Path, tmp_path: Path) -> None:
    done = _agent("chat", "--provider", "scripted", "--script",
                  str(REPO / "examples" / "demo_script.json"), "--workspace", str(tmp_path),
                  "--resume", str(fifo))
    assert done.returncode != 0 and "not a regular file" in " ".join(done.stderr.split())
    assert "Traceback" not in done.stderr


def test_a_continues_pointer_to_a_fifo_is_a_warning_not_a_hang(fifo: Path, good_log: Path,
                                                               tmp_path: Path) -> None:
    recs = records_of(good_log)
    recs[0]["continues"] = str(fifo)
    for rec in recs:
        rec.pop("mac", None)
    recs[0].pop("key_id", None)
    log = tmp_path / "continues.jsonl"
    write_chain(log, recs)
    done = _agent("chat", "--provider", "scripted", "--script",
                  str(REPO / "examples" / "demo_script.json"), "--workspace", str(tmp_path),
                  "--resume", str(log))
    out = " ".join((done.stdout + done.stderr).split())
    assert done.returncode == 0, out
    assert "is missing" in out and "not a regular file" in out
    assert "Traceback" not in out


def test_log_pointing_at_a_fifo_is_refused_for_writing(fifo: Path, tmp_path: Path) -> None:
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # with a reader, open() would succeed
    try:
        done = _agent("run", "--provider", "scripted", "--script",
                      str(REPO / "examples" / "demo_script.json"), "--workspace", str(tmp_path),
                      "--log", str(fifo), "hi")
    finally:
        os.close(reader)
    out = " ".join(done.stderr.split())
    assert done.returncode != 0 and "cannot be written" in out and "regular file" in out
    assert "Traceback" not in out


def test_a_fifo_as_the_log_key_does_not_hang_a_session(tmp_path: Path) -> None:
    home = Path(os.environ["AGENT_CLI_HOME"])
    home.mkdir(parents=True, exist_ok=True)
    os.mkfifo(home / "log.key")
    done = _agent("run", "--provider", "scripted", "--script",
                  str(REPO / "examples" / "demo_script.json"), "--workspace", str(tmp_path), "hi")
    out = " ".join(done.stderr.split())
    assert done.returncode != 0 and "is not a log key" in out
    assert "Traceback" not in out
