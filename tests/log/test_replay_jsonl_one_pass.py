"""`replay --output jsonl` verifies and prints in one pass (log.show.jsonl_in_one_pass): each line
that verifies is printed as the bytes it has. These hold it to what `run --output jsonl` printed,
to the warning that comes first when the chain fails, and to the records it still leaves out."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_cli.cli.app import app
from agent_cli.log import show as rp
from tests.fakes.anthropic_server import FakeAnthropic, text_reply, tool_reply
from tests.logtools import my_key, records_of, sign_as_mine, write_chain
from tests.scripts import split_runner

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data"
runner = split_runner()  # the tests read stdout alone: warnings go to stderr


def agent_cli(*args: str, fake: FakeAnthropic | None = None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="200", ANTHROPIC_API_KEY="test-key")
    if fake is not None:
        env["ANTHROPIC_BASE_URL"] = fake.base_url
    return subprocess.run([sys.executable, "-m", "agent_cli", *args], env=env, cwd=REPO,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)


def test_replay_jsonl_prints_what_run_jsonl_printed(workspace: Path, tmp_path: Path) -> None:
    """docs/session-log.md: `run --output jsonl` prints the session's events; a replay of its
    log prints the same bytes (non-ASCII text and floats included), from the signed log."""
    log = tmp_path / "run.jsonl"
    with FakeAnthropic() as fake:
        fake.add(tool_reply(("toolu_1", "multiply", {"a": 6.5, "b": 7}),
                            ("toolu_2", "write_file", {"path": "x.txt", "content": "\u00e9\u2028"}),
                            text="Multiplying \u00e9"),
                 text_reply("45.5, caf\u00e9 \u2603 / \\ \"q\""))
        run = agent_cli("run", "multiply", "--workspace", str(workspace), "--output", "jsonl",
                        "--log", str(log), fake=fake)
    assert "Traceback" not in run.stderr, run.stderr
    assert run.stdout and run.stdout == log.read_text(encoding="ascii")
    replay = agent_cli("replay", str(log), "--output", "jsonl")
    assert replay.returncode == 0, replay.stderr
    assert replay.stdout == run.stdout
    assert "warning" not in replay.stderr  # signed with this user's key throughout


def test_a_signed_log_with_a_torn_last_line_prints_every_record(tmp_path: Path) -> None:
    log = sign_as_mine(DATA / "session_edit.jsonl", tmp_path / "mine.jsonl")
    whole = log.read_bytes()
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(whole + b'{"v":1,"seq":99,"ts":17')
    result = runner.invoke(app, ["replay", str(torn), "--output", "jsonl"])
    assert result.exit_code == 0, result.output
    assert result.stdout.encode("ascii") == whole
    assert "torn record" in result.stderr and "skipped" in result.stderr
    assert "does not verify" not in result.stderr


@pytest.mark.parametrize("signed", [True, False])
def test_a_chained_record_that_is_no_event_is_still_left_out(tmp_path: Path,
                                                               signed: bool) -> None:
    """A record of a type no event model has (appended by another program, chained and, here,
    even signed) is reported and left out, as the per-record path always did."""
    records = records_of(DATA / "session_edit.jsonl")
    records.insert(3, {"v": 1, "seq": 0, "ts": 1.5, "type": "bogus", "text": "x"})
    for n, rec in enumerate(records, start=1):
        rec["seq"] = n
    log = tmp_path / "odd.jsonl"
    write_chain(log, records, my_key() if signed else None)
    result = runner.invoke(app, ["replay", str(log), "--output", "jsonl"])
    assert result.exit_code == 0, result.output
    printed = [json.loads(line) for line in result.stdout.splitlines()]
    assert [r["seq"] for r in printed] == [n for n in range(1, len(records) + 1) if n != 4]
    assert "line 4: not a known event" in result.stderr
    assert "does not verify" not in result.stderr


def test_a_log_that_fails_warns_before_any_record_and_still_shows_them(tmp_path: Path) -> None:
    log = sign_as_mine(DATA / "session_edit.jsonl", tmp_path / "mine.jsonl")
    lines = log.read_bytes().split(b"\n")[:-1]
    lines[5] = lines[5].replace(b'"seq":6', b'"seq":6 ')  # values kept, bytes not the writer's
    edited = tmp_path / "edited.jsonl"
    edited.write_bytes(b"".join(line + b"\n" for line in lines))
    proc = agent_cli("replay", str(edited), "--output", "jsonl")
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.startswith("warning: the hash chain of this log does not verify")
    assert "line 6" in proc.stderr.splitlines()[0] or "line 6" in " ".join(proc.stderr.split())
    out = proc.stdout.splitlines()
    assert len(out) == len(lines)  # the ordinary replay: every known event, re-serialised
    assert out[5].encode("ascii") == lines[5].replace(b'"seq":6 ', b'"seq":6')


def test_the_one_pass_gives_verify_the_same_verdict(tmp_path: Path) -> None:
    """The sink sees exactly the lines verify passes; the result is verify's own."""
    from agent_cli.log.verify import verify

    log = sign_as_mine(DATA / "session_edit.jsonl", tmp_path / "mine.jsonl")
    chunks: list[bytes] = []
    result, bad = rp.jsonl_in_one_pass(log, chunks.append)
    plain = verify(log)
    assert (result.count, result.head, result.fault, result.warnings) == (
        plain.count, plain.head, plain.fault, plain.warnings)
    assert bad == [] and b"".join(chunks) == log.read_bytes()
