"""Family: forged session logs. `replay --rerun --reuse-approvals` runs a recorded call without a
panel when the log says the user approved it, so a log must prove it is this user's own.

The attacker works as attackers do: they have agent-cli too, record a session on their own machine
(their own log key) in which `touch PWNED` was approved, and then
  - strip the signatures and re-chain it with the PUBLIC arithmetic (an unsigned log),
  - append it to the victim's own signed log (a foreign-key session inside a trusted file),
  - claim the victim's key id (public: it is in every log) with their own MACs, or none,
  - rewrite the approvals' args_hash as the old unkeyed sha256 of the arguments, which is all
    the previous format needed to match.
Every one must be refused with the reason, and nothing may run. A clean log of the user's own
(the control) is reused, so the refusals are not a rerun that never works.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agent_cli import events as ev
from agent_cli.approval import ScriptedApprover
from agent_cli.cli.app import app
from agent_cli.config import Settings
from agent_cli.log.keys import key_id
from agent_cli.log.reader import read_events
from agent_cli.log.trust import check_trust
from agent_cli.log.verify import verify
from agent_cli.providers.scripted import ScriptedProvider
from agent_cli.session import Session, load_registry
from agent_cli.tools.base import sha256_json
from tests.logtools import my_key, records_of, write_chain

runner = CliRunner()
EVIL = ["touch", "PWNED"]


def _record(home: Path, workspace: Path, log: Path, command: list[str]) -> None:
    """A real session under AGENT_CLI_HOME=`home`, in which the user approved `command`."""
    old = os.environ["AGENT_CLI_HOME"]
    os.environ["AGENT_CLI_HOME"] = str(home)
    try:
        settings = Settings(provider="scripted")
        registry, _ = load_registry(settings)
        replies = [{"content": [{"type": "tool_use", "id": "toolu_evil", "name": "run_command",
                                 "input": {"command": command}}], "stop_reason": "tool_use"},
                   {"content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn"}]
        s = Session(settings, workspace=workspace, provider=ScriptedProvider(replies),
                    registry=registry, approver=ScriptedApprover(["y"]), log_path=log)
        s.start()
        s.send("go")
        s.close()
    finally:
        os.environ["AGENT_CLI_HOME"] = old


@pytest.fixture
def attacker_log(tmp_path: Path) -> Path:
    """The attacker's own recording: `touch PWNED` approved, signed with THEIR key."""
    ws = tmp_path / "attacker-ws"
    ws.mkdir()
    log = tmp_path / "attacker.jsonl"
    _record(tmp_path / "attacker-home", ws, log, EVIL)
    assert (ws / "PWNED").exists()
    return log


@pytest.fixture
def victim_ws(tmp_path: Path) -> Path:
    ws = tmp_path / "victim-ws"
    ws.mkdir()
    return ws


def _old_style(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What matched before args_hash was keyed: the plain sha256 of the shown arguments."""
    out = []
    for rec in records:
        rec = dict(rec)
        if rec.get("type") == "approval" and rec.get("args") is not None:
            rec["args_hash"] = sha256_json(rec["args"])
        out.append(rec)
    return out


def _unsigned(src: Path, dst: Path) -> Path:
    recs = []
    for rec in _old_style(records_of(src)):
        rec.pop("key_id", None)
        recs.append(rec)
    write_chain(dst, recs)
    return dst


def _rerun(log: Path, ws: Path) -> Any:
    return runner.invoke(app, ["replay", str(log), "--rerun", "--reuse-approvals",
                               "--workspace", str(ws)], env={"COLUMNS": "300"})


def _assert_refused(result: Any, ws: Path, *reason: str) -> None:
    assert result.exit_code == 1, result.output
    out = " ".join(result.output.split())
    assert "--reuse-approvals refused" in out, out
    assert "Nothing was run" in out
    for part in reason:
        assert part in out, (part, out)
    assert "Traceback" not in result.output
    assert not (ws / "PWNED").exists(), "the recorded command ran from an untrusted log"


def test_control_a_clean_log_of_my_own_reuses_its_approvals(tmp_path: Path,
                                                              victim_ws: Path) -> None:
    log = tmp_path / "mine.jsonl"
    rec_ws = tmp_path / "rec-ws"
    rec_ws.mkdir()
    _record(Path(os.environ["AGENT_CLI_HOME"]), rec_ws, log, EVIL)
    trust = check_trust(log)
    assert trust.trusted, trust.reason
    assert trust.events == len(records_of(log)) and trust.head == records_of(log)[-1]["hash"]
    result = _rerun(log, victim_ws)
    assert result.exit_code == 0, result.output
    assert (victim_ws / "PWNED").exists(), "the user's own approval is reused"


def test_an_unsigned_log_built_with_the_public_chain_is_refused(
        tmp_path: Path, attacker_log: Path, victim_ws: Path) -> None:
    my_key()  # the victim has a key, as every user who ran a session does
    forged = _unsigned(attacker_log, tmp_path / "unsigned.jsonl")
    assert verify(forged).ok, "the public arithmetic alone makes a chain that verifies"
    trust = check_trust(forged)
    assert not trust.trusted and "carries no key id" in trust.reason
    _assert_refused(_rerun(forged, victim_ws), victim_ws, "no key id")


def test_a_foreign_key_session_appended_to_my_own_log_is_refused(
        tmp_path: Path, attacker_log: Path, victim_ws: Path) -> None:
    mine = tmp_path / "mine.jsonl"
    rec_ws = tmp_path / "rec-ws"
    rec_ws.mkdir()
    _record(Path(os.environ["AGENT_CLI_HOME"]), rec_ws, mine, ["true"])
    assert check_trust(mine).trusted
    # The attacker's session, chained on after the victim's last hash (as a resumed --log does).
    prev = records_of(mine)[-1]["hash"]
    seq = records_of(mine)[-1]["seq"]
    theirs = []
    for i, rec in enumerate(_old_style(records_of(attacker_log)), start=1):
        rec["seq"] = seq + i
        theirs.append(rec)
    write_chain(mine, theirs, key=bytes(32), prev=prev, mode="ab")  # signed, with THEIR key
    assert verify(mine).ok
    trust = check_trust(mine)
    assert not trust.trusted and "another log key" in trust.reason
    _assert_refused(_rerun(mine, victim_ws), victim_ws, "another log key")


@pytest.mark.parametrize("mac", ["none", "wrong-key"])
def test_claiming_my_key_id_without_my_key_is_refused(tmp_path: Path, attacker_log: Path,
                                                       victim_ws: Path, mac: str) -> None:
    mine = key_id(my_key())  # public: every log of the victim's carries it
    recs = []
    for rec in _old_style(records_of(attacker_log)):
        if rec.get("type") == "session_start":
            rec["key_id"] = mine
        recs.append(rec)
    forged = tmp_path / "claims-mine.jsonl"
    write_chain(forged, recs, key=None if mac == "none" else os.urandom(32))
    trust = check_trust(forged)
    assert not trust.trusted and "forged" in trust.reason
    _assert_refused(_rerun(forged, victim_ws), victim_ws, "forged")


def test_a_torn_last_line_is_not_trusted_even_on_my_own_log(tmp_path: Path,
                                                             victim_ws: Path) -> None:
    log = tmp_path / "mine.jsonl"
    rec_ws = tmp_path / "rec-ws"
    rec_ws.mkdir()
    _record(Path(os.environ["AGENT_CLI_HOME"]), rec_ws, log, EVIL)
    with open(log, "ab") as f:
        f.write(b'{"v":1,"seq":99,"type":"sess')
    assert verify(log).ok and verify(log).warnings
    _assert_refused(_rerun(log, victim_ws), victim_ws, "without a single warning", "torn")


def test_old_unkeyed_args_hashes_are_never_matched(tmp_path: Path, victim_ws: Path) -> None:
    """A log of my own, signed, whose approvals carry the old sha256 form: trusted as a log, but
    its approvals match no call (the hash is keyed now), so the call is asked again (and denied
    without a terminal)."""
    log = tmp_path / "mine.jsonl"
    rec_ws = tmp_path / "rec-ws"
    rec_ws.mkdir()
    _record(Path(os.environ["AGENT_CLI_HOME"]), rec_ws, log, EVIL)
    write_chain(log, _old_style(records_of(log)), key=my_key())
    assert check_trust(log).trusted
    result = _rerun(log, victim_ws)
    assert not (victim_ws / "PWNED").exists()
    assert "now fails" in result.output


def test_without_a_log_key_nothing_is_trusted(attacker_log: Path) -> None:
    trust = check_trust(attacker_log)
    assert not trust.trusted and "no log key" in trust.reason


def test_a_fifo_is_refused_at_once(tmp_path: Path) -> None:
    my_key()
    fifo = tmp_path / "log.jsonl"
    os.mkfifo(fifo)
    start = time.monotonic()
    trust = check_trust(fifo)
    assert time.monotonic() - start < 10
    assert not trust.trusted and "not a regular file" in trust.reason


def _spliced(tmp_path: Path) -> Path:
    """The user once approved `touch PWNED` (in some old session): the attacker lifts those
    records, args_hash (made with the user's key) included, into an unsigned log of their own."""
    genuine = tmp_path / "old-session.jsonl"
    rec_ws = tmp_path / "old-ws"
    rec_ws.mkdir()
    _record(Path(os.environ["AGENT_CLI_HOME"]), rec_ws, genuine, EVIL)
    recs = records_of(genuine)
    for rec in recs:
        rec.pop("key_id", None)
    spliced = tmp_path / "spliced.jsonl"
    write_chain(spliced, recs)
    return spliced


def test_a_genuine_approval_spliced_into_an_unsigned_log_is_refused(
        tmp_path: Path, victim_ws: Path) -> None:
    spliced = _spliced(tmp_path)
    assert verify(spliced).ok
    _assert_refused(_rerun(spliced, victim_ws), victim_ws, "no key id")


def test_the_log_is_checked_and_read_from_one_snapshot(tmp_path: Path, victim_ws: Path) -> None:
    """Replacing the file after the check cannot smuggle records in: rerun reads the copy it
    checked. (The replacement happens right after the check, from inside it.)"""
    log = tmp_path / "mine.jsonl"
    rec_ws = tmp_path / "rec-ws"
    rec_ws.mkdir()
    _record(Path(os.environ["AGENT_CLI_HOME"]), rec_ws, log, ["true"])
    evil = _spliced(tmp_path)
    import agent_cli.log.verify as sl

    real_verify = sl.verify

    def swapping_verify(path: Path, key: Any = "auto") -> Any:
        result = real_verify(path, key)
        os.replace(evil, log)  # the original path now holds the forgery
        return result

    sl.verify = swapping_verify
    try:
        result = _rerun(log, victim_ws)
    finally:
        sl.verify = real_verify
    assert result.exit_code == 0, result.output
    assert not (victim_ws / "PWNED").exists()
    assert json.loads(log.read_bytes().splitlines()[0])["type"] == "session_start"


def test_rerun_log_of_a_trusted_rerun_is_itself_trusted(tmp_path: Path, victim_ws: Path) -> None:
    log = tmp_path / "mine.jsonl"
    rec_ws = tmp_path / "rec-ws"
    rec_ws.mkdir()
    _record(Path(os.environ["AGENT_CLI_HOME"]), rec_ws, log, ["true"])
    out = tmp_path / "rerun.jsonl"
    result = runner.invoke(app, ["replay", str(log), "--rerun", "--reuse-approvals",
                                 "--workspace", str(victim_ws), "--rerun-log", str(out)])
    assert result.exit_code == 0, result.output
    assert check_trust(out).trusted
    approvals = [e for _, e in read_events(out) if isinstance(e, ev.Approval)]
    assert [a.by for a in approvals] == ["recording"]


def test_log_verify_says_whether_the_log_is_trusted(tmp_path: Path, attacker_log: Path) -> None:
    mine = tmp_path / "mine.jsonl"
    rec_ws = tmp_path / "rec-ws"
    rec_ws.mkdir()
    _record(Path(os.environ["AGENT_CLI_HOME"]), rec_ws, mine, ["true"])
    ok = runner.invoke(app, ["log", "verify", str(mine)], env={"COLUMNS": "300"})
    assert ok.exit_code == 0 and "Signed with your log key throughout" in ok.output
    forged = _unsigned(attacker_log, tmp_path / "unsigned.jsonl")
    other = runner.invoke(app, ["log", "verify", str(forged)], env={"COLUMNS": "300"})
    assert other.exit_code == 0, "the chain itself is intact"
    assert "Not trusted for --reuse-approvals or undo" in other.output
    assert "carries no key id" in other.output


def test_a_redacted_password_cannot_be_recovered_from_args_hash(tmp_path: Path) -> None:
    """The log redacts the password in the arguments but keeps args_hash. With an unkeyed
    sha256, hashing a few guesses finds it; with the HMAC, a guess can only be checked by someone
    holding the log key, which no tool can read."""
    from agent_cli.tools.base import args_digest

    ws = tmp_path / "ws"
    ws.mkdir()
    log = tmp_path / "s.jsonl"
    settings = Settings(provider="scripted")
    registry, _ = load_registry(settings)
    args = {"path": ".env", "content": "DB_PASSWORD=hunter2\n"}
    replies = [{"content": [{"type": "tool_use", "id": "toolu_w", "name": "write_file",
                             "input": args}], "stop_reason": "tool_use"},
               {"content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn"}]
    s = Session(settings, workspace=ws, provider=ScriptedProvider(replies), registry=registry,
                approver=ScriptedApprover(["y"]), log_path=log)
    s.start()
    s.send("go")
    s.close()
    [approval] = [e for _, e in read_events(log) if isinstance(e, ev.Approval)]
    assert approval.args is not None and "hunter2" not in json.dumps(approval.args)
    assert b"hunter2" not in log.read_bytes()
    guesses = ["password", "123456", "hunter2", "letmein"]
    shown = {"path": ".env", "content": "DB_PASSWORD={}\n"}
    tried = [{k: v.format(g) for k, v in shown.items()} for g in guesses]
    assert all(sha256_json(t) != approval.args_hash for t in tried), "unkeyed guesses miss"
    assert args_digest(my_key(), tried[2]) == approval.args_hash  # only the key holder can check
