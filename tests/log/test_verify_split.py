"""A log verified in two halves at once (verify_split.py) gives exactly the one-pass result.

Every log here is split (the size threshold is lowered, and the real fork runs), and the same
log is verified again in one pass; the two results (fault, warnings, count, head) and the JSONL
replay must be equal. The logs are built with the public chain arithmetic (tests/logtools.py)
and then damaged around the seam the way an editor or a forger would: a line edited, dropped,
swapped with the next, a copy of an earlier line inserted, NUL debris, a newer format, an
approval taken out and the chain recomputed, sessions signed with another key or none on either
side. Whatever the seam's line is, each damage is tried at every line near it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from agent_cli.log import verify_split
from agent_cli.log.jsonl import jsonl_in_one_pass
from agent_cli.log.keys import key_id
from agent_cli.log.verify import verify
from tests.logtools import write_chain

KEY = bytes(range(32))
OTHER = bytes(range(1, 33))


@pytest.fixture
def split(monkeypatch: pytest.MonkeyPatch) -> None:
    """Split every log, however short, on any machine running these tests."""
    monkeypatch.setattr(verify_split, "SPLIT_MIN", 0)
    monkeypatch.setattr(verify_split, "cores", lambda: 2)
    monkeypatch.setattr(verify_split, "alone", lambda: True)


def one_pass(path: Path, key: bytes | None) -> tuple[Any, ...]:
    with pytest.MonkeyPatch.context() as m:
        m.setattr(verify_split, "SPLIT_MIN", 1 << 62)
        result = verify(path, key=key)
        assert not result.split
        return outcome(result)


def outcome(result: Any) -> tuple[Any, ...]:
    return result.fault, result.warnings, result.count, result.head


def session(kid: str | None, calls: int, start_id: int = 0, pad: int = 0,
            ) -> list[dict[str, Any]]:
    start: dict[str, Any] = {"type": "session_start", "version": "t", "model": "m",
                             "provider": "scripted", "workspace": "/ws", "tools": []}
    if kid is not None:
        start["key_id"] = kid
    records = [start]
    for i in range(start_id, start_id + calls):
        cid = f"toolu_{i:04d}"
        records += [
            {"type": "user_message", "text": f"change file {i}"},
            {"type": "tool_proposed", "id": cid, "name": "write_file",
             "input": {"path": f"f{i}.py"}},
            {"type": "approval", "id": cid, "name": "write_file", "effect": "write",
             "decision": "approved", "by": "user", "args_hash": f"{i:064x}"},
            {"type": "tool_started", "id": cid, "name": "write_file"},
            {"type": "tool_result", "id": cid, "name": "write_file", "is_error": False,
             "content": "ok " * (i % 7) + "x" * pad, "duration": 0.5},
        ]
    records.append({"type": "session_end", "reason": "exit"})
    return records


def numbered(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{"v": 1, "seq": seq, "ts": 1796132909.5, **rec}
            for seq, rec in enumerate(records, start=1)]


def write(path: Path, records: list[dict[str, Any]], key: bytes | None) -> Path:
    write_chain(path, numbered(records), key)
    return path


def seam(path: Path) -> int:
    """The index (0-based) of the second half's first line for this file."""
    with path.open("rb") as f:
        size = os.fstat(f.fileno()).st_size
        cut = verify_split._next_line_start(f.fileno(), size // 2, size)
        assert cut is not None
        return verify_split._count_newlines(f.fileno(), cut)


def same_both_ways(path: Path, key: bytes | None) -> Any:
    result = verify(path, key=key)
    assert outcome(result) == one_pass(path, key)
    return result


SIGNINGS = {
    "mine": (KEY, key_id(KEY)),
    "unsigned": (None, None),
    "another key": (OTHER, key_id(OTHER)),
}


@pytest.mark.parametrize("signing", SIGNINGS)
def test_a_clean_log_is_checked_in_two_halves_with_the_one_pass_result(
        tmp_path: Path, split: None, signing: str) -> None:
    signer, kid = SIGNINGS[signing]
    log = write(tmp_path / "a.jsonl", session(kid, 40), signer)
    result = same_both_ways(log, KEY)
    assert result.ok and result.split, "the second half's check was used"
    assert result.count == len(log.read_bytes().splitlines())


def test_a_call_approved_before_the_seam_and_started_after_it_needs_no_second_look(
        tmp_path: Path, split: None) -> None:
    """The second process sees the call start but not its approval; the first half has it."""
    for padding in range(0, 4000, 20):  # move the seam until it is an approval, then its start
        records = session(key_id(KEY), 30)
        records.insert(1, {"type": "notice", "message": "m" * padding, "kind": "info"})
        log = write(tmp_path / f"a{padding}.jsonl", records, KEY)
        types = [json.loads(line)["type"] for line in log.read_bytes().splitlines()]
        at = seam(log)
        if types[at] == "approval" and types[at + 1] == "tool_started":
            break
    else:
        pytest.fail("no layout put the seam between an approval and its start")
    result = same_both_ways(log, KEY)
    assert result.ok and result.split


DAMAGES = ("edit", "drop", "swap", "copy", "nul", "newer", "unapprove", "torn-end")


def damaged(lines: list[bytes], at: int, damage: str) -> list[bytes]:
    lines = list(lines)
    if damage == "edit":
        rec = json.loads(lines[at])
        rec["ts"] = rec["ts"] + 1
        lines[at] = json.dumps(rec, separators=(",", ":")).encode()
    elif damage == "drop":
        del lines[at]
    elif damage == "swap":
        lines[at], lines[at + 1] = lines[at + 1], lines[at]
    elif damage == "copy":
        lines.insert(at + 1, lines[max(0, at - 10)])
    elif damage == "nul":
        lines.insert(at, b"\x00" * 12)
    elif damage == "torn-end":
        lines[-1] = lines[-1][: len(lines[-1]) // 2]
    return lines


def rechained(records: list[dict[str, Any]], at: int, damage: str) -> list[dict[str, Any]]:
    """Damages a forger makes with the public arithmetic (the chain is recomputed after)."""
    records = [dict(r) for r in records]
    if damage == "newer":
        records[at]["v"] = 2
    elif damage == "unapprove":
        # take out the approval of the first call started at or after `at`
        started = next(r["id"] for r in records[at:] if r.get("type") == "tool_started")
        records = [r for r in records
                   if not (r.get("type") == "approval" and r.get("id") == started)]
    return records


@pytest.mark.parametrize("damage", DAMAGES)
@pytest.mark.parametrize("signing", ["mine", "unsigned"])
def test_damage_at_every_line_near_the_seam_is_found_as_in_one_pass(
        tmp_path: Path, split: None, damage: str, signing: str) -> None:
    signer, kid = SIGNINGS[signing]
    records = numbered(session(kid, 12))
    clean = tmp_path / "clean.jsonl"
    write_chain(clean, records, signer)
    at_seam = seam(clean)
    lines = clean.read_bytes().splitlines()
    tried = 0
    for at in range(at_seam - 4, at_seam + 5):
        log = tmp_path / f"{damage}-{at}.jsonl"
        if damage in ("newer", "unapprove"):
            write_chain(log, [{k: v for k, v in r.items() if k != "seq"} | {"seq": n}
                              for n, r in enumerate(rechained(records, at, damage), start=1)],
                        signer)
        else:
            log.write_bytes(b"".join(line + b"\n" for line in damaged(lines, at, damage))
                            .rstrip(b"\n") + (b"" if damage == "torn-end" else b"\n"))
        result = same_both_ways(log, KEY)
        tried += 1
        if damage in ("edit", "drop", "swap", "copy", "unapprove"):
            assert result.fault is not None, (damage, at)
        if damage == "torn-end":
            break  # one place only: the end
    assert tried


def test_sessions_signed_differently_on_each_side_of_the_seam(tmp_path: Path,
                                                             split: None) -> None:
    for first, second in [("mine", "another key"), ("another key", "mine"),
                          ("unsigned", "mine"), ("mine", "unsigned")]:
        (k1, kid1), (k2, kid2) = SIGNINGS[first], SIGNINGS[second]
        log = tmp_path / f"{first}-{second}.jsonl"
        head = numbered(session(kid1, 12))
        prev = write_chain(log, head, k1)
        tail = [{"v": 1, "seq": n, "ts": 1796132909.5, **r}
                for n, r in enumerate(session(kid2, 12, start_id=100), start=len(head) + 1)]
        write_chain(log, tail, k2, prev=prev, mode="ab")
        result = same_both_ways(log, KEY)
        assert result.ok, result.fault
        # the seam falls in the second session's first lines or the first's last: either way the
        # second process started inside a session it did not see begin, or saw it begin
        assert len(result.warnings) == (first != "mine") + (second != "mine")


def test_a_session_begun_before_the_seam_with_another_key_is_read_on_in_one_pass(
        tmp_path: Path, split: None) -> None:
    """The second half assumes the file's first session; here the seam's session is another:
    its check is not used, and the result is still the one-pass one."""
    log = tmp_path / "a.jsonl"
    prev = write_chain(log, numbered(session(key_id(KEY), 2)), KEY)
    tail = [{"v": 1, "seq": n, "ts": 1796132909.5, **r}
            for n, r in enumerate(session(key_id(OTHER), 30, start_id=100), start=13)]
    write_chain(log, tail, OTHER, prev=prev, mode="ab")
    result = same_both_ways(log, KEY)
    assert result.ok and not result.split


@pytest.mark.parametrize(("case", "signer"), [
    ("clean", KEY), ("clean", None), ("unknown type", KEY), ("unknown type", None)])
def test_replay_jsonl_of_a_split_log_is_the_one_pass_replay(
        tmp_path: Path, split: None, monkeypatch: pytest.MonkeyPatch, case: str,
        signer: bytes | None) -> None:
    monkeypatch.setattr("agent_cli.log.verify.log_key", lambda create=False: KEY)
    records = session(key_id(KEY) if signer else None, 30)
    if case == "unknown type":  # after the seam; left out of the replay and reported
        records.insert(len(records) - 20, {"type": "no_such_event", "x": 1})
    log = write(tmp_path / "r.jsonl", records, signer)
    chunks: list[bytes] = []
    result, bad = jsonl_in_one_pass(log, chunks.append)
    with monkeypatch.context() as m:
        m.setattr(verify_split, "SPLIT_MIN", 1 << 62)
        plain: list[bytes] = []
        one, bad_one = jsonl_in_one_pass(log, plain.append)
    assert b"".join(chunks) == b"".join(plain)
    assert bad == bad_one and outcome(result) == outcome(one)
    if case == "clean":
        assert result.split and not bad
        assert b"".join(chunks) == log.read_bytes()
    else:
        # the second process would leave a line out: its check is not used, this one reads on
        assert not result.split and len(bad) == 1
        assert b"no_such_event" not in b"".join(chunks)


def test_a_forged_mac_after_the_seam_in_a_signed_session_begun_before_it_is_found(
        tmp_path: Path, split: None) -> None:
    """The file's first session is unsigned, so the second process assumes no MACs to check;
    the seam's session is signed with this user's key, and a line after the seam was rewritten
    with the public arithmetic (hash right, MAC not). The first half's state wins."""
    log = tmp_path / "a.jsonl"
    head = numbered(session(None, 2))
    prev = write_chain(log, head, None)
    tail = [{"v": 1, "seq": n, "ts": 1796132909.5, **r}
            for n, r in enumerate(session(key_id(KEY), 30), start=len(head) + 1)]
    write_chain(log, tail, KEY, prev=prev, mode="ab")
    at = seam(log)
    lines = log.read_bytes().splitlines()
    forged = json.loads(lines[at + 2])
    forged["mac"] = "0" * 64
    lines[at + 2] = json.dumps(forged, separators=(",", ":")).encode()
    log.write_bytes(b"".join(line + b"\n" for line in lines))
    result = same_both_ways(log, KEY)
    assert result.fault is not None and "MAC that does not match" in result.fault


def long_log(tmp_path: Path) -> Path:
    """An unsigned log just long enough to be split as it is (no threshold lowered)."""
    log = write(tmp_path / "long.jsonl", session(None, verify_split.SPLIT_MIN // 5000 + 20,
                                                 pad=4000), None)
    assert log.stat().st_size >= verify_split.SPLIT_MIN
    return log


def children_of(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(p) for p in text.split()]


def gone(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_killing_log_verify_ends_its_second_process_too(tmp_path: Path) -> None:
    """`log verify` of a long log forks; killed, it takes the second process with it (Linux's
    parent-death signal). The second process is stopped first, so only that signal can end it."""
    import signal
    import subprocess
    import sys
    import time

    log = long_log(tmp_path)
    repo = Path(__file__).resolve().parents[2]
    proc = subprocess.Popen([sys.executable, "-m", "agent_cli", "log", "verify", str(log)],
                            cwd=repo, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    worker = 0
    try:
        deadline = time.monotonic() + 60
        while not worker and proc.poll() is None and time.monotonic() < deadline:
            kids = children_of(proc.pid)
            worker = kids[0] if kids else 0
            time.sleep(0.005)
        assert worker, "log verify never forked its second process"
        os.kill(worker, signal.SIGSTOP)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(60)
        deadline = time.monotonic() + 60
        while not gone(worker):
            assert time.monotonic() < deadline, "the second process outlived log verify"
            time.sleep(0.05)
    finally:
        if proc.poll() is None:
            proc.kill()
        if worker and not gone(worker):
            os.kill(worker, signal.SIGKILL)


def test_log_verify_of_a_long_log_says_ok_from_both_halves(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    import subprocess
    import sys

    monkeypatch.setattr(verify_split, "alone", lambda: True)
    monkeypatch.setattr(verify_split, "cores", lambda: 2)
    log = long_log(tmp_path)
    repo = Path(__file__).resolve().parents[2]
    done = subprocess.run([sys.executable, "-m", "agent_cli", "log", "verify", str(log)],
                          cwd=repo, capture_output=True, text=True, timeout=300)
    count = len(log.read_bytes().splitlines())
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{count} events, hash chain intact" in done.stdout
    assert verify(log, key=None).split, "this log is long enough to be split"


def test_a_log_swapped_under_verify_is_checked_as_the_file_it_opened(
        tmp_path: Path, split: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Someone replaces the log (rename over its path) once verify has opened it and before the
    second process starts: a copy with the same first half and a different, well-chained second
    half. The second process reads the file verify opened, not the path again, so the answer
    is the opened file's (its count and head), and it is the one-pass answer for that file."""
    original = write(tmp_path / "a.jsonl", session(None, 30), None)
    expected = outcome(verify(original, key=KEY))
    at = seam(original)
    lines = original.read_bytes().splitlines()
    records = [json.loads(line) for line in lines]
    forged = records[: at + 1] + [
        {"v": 1, "seq": records[at]["seq"] + n, "ts": 1796132909.5, "type": "notice",
         "message": f"forged {n}", "kind": "info"} for n in range(1, 40)]
    other = tmp_path / "other.jsonl"
    write_chain(other, forged, None)
    assert other.read_bytes().splitlines()[: at + 1] == lines[: at + 1]
    count_newlines = verify_split._count_newlines

    def swap_then_count(fd: int, stop: int) -> int:
        os.replace(other, original)  # between verify's open and the fork
        return count_newlines(fd, stop)

    monkeypatch.setattr(verify_split, "_count_newlines", swap_then_count)
    result = verify(original, key=KEY)
    assert outcome(result) == expected and result.split
    assert result.count == len(lines) != len(forged)
