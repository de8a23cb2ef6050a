"""verify's fast path (mac cut off the record, one encoding for the byte check) gives the same
verdicts as the plain definition on lines in every layout, and its reorder window still works
past its size on a long log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_cli import events as ev
from agent_cli.log.keys import record_mac
from agent_cli.log.verify import REORDER_LOOKAHEAD, verify
from agent_cli.log.writer import SessionLog

KEY = bytes(range(32))


def write_log(path: Path, calls: int) -> list[bytes]:
    log = SessionLog(path, fsync=False, key=KEY)
    log.write(ev.SessionStart(version="t", model="m", provider="scripted", workspace="/ws",
                              tools=[]))
    for i in range(calls):
        log.write(ev.UserMessage(text=f"é {i} \u2028 \x7f"))
    log.write(ev.SessionEnd())
    log.close()
    return path.read_bytes().splitlines(keepends=True)


def rewrite(path: Path, lines: list[bytes]) -> None:
    path.write_bytes(b"".join(lines))


def relayout(line: bytes, order: list[str]) -> bytes:
    rec = json.loads(line)
    moved = {k: rec.pop(k) for k in order if k in rec}
    out = {**moved, **rec} if order and order[0] == "first" else {**rec, **moved}
    return json.dumps(out, separators=(",", ":")).encode() + b"\n"


def test_the_writers_layout_verifies_with_the_key(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    write_log(path, 5)
    res = verify(path, key=KEY)
    assert res.ok and res.count == 7 and not res.warnings


@pytest.mark.parametrize("order", [["mac", "hash"], ["hash"], ["first", "mac"]])
def test_other_layouts_take_the_general_path_with_the_same_verdicts(tmp_path: Path,
                                                                    order: list[str]) -> None:
    """Key order is not part of the byte form (the hash is over sorted keys, the byte check
    re-encodes in the order read), so a line with `mac` elsewhere than last verifies, as it
    always did; an escape spelled differently in the same line is still an edit."""
    path = tmp_path / "s.jsonl"
    lines = write_log(path, 5)
    lines[3] = relayout(lines[3], order)  # the values (and so the hash) are unchanged
    rewrite(path, lines)
    res = verify(path, key=KEY)
    assert res.ok and res.count == 7
    lines[3] = lines[3].replace(b"\\u00e9", b"\\u00E9")
    assert b"\\u00E9" in lines[3]
    rewrite(path, lines)
    res = verify(path, key=KEY)
    assert res.fault is not None and "line 4" in res.fault and "was edited" in res.fault


def test_a_line_without_its_mac_chains_but_is_caught_by_the_key(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    lines = write_log(path, 5)
    rec = json.loads(lines[2])
    del rec["mac"]
    lines[2] = json.dumps(rec, separators=(",", ":")).encode() + b"\n"
    rewrite(path, lines)
    res = verify(path, key=KEY)
    assert res.fault is not None and "line 3" in res.fault and "has no MAC" in res.fault
    other = verify(path, key=bytes(32))  # another user's key: chain and bytes only
    assert other.ok and other.count == 7


def test_a_null_or_wrong_mac_in_the_last_place_is_a_forgery(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    lines = write_log(path, 5)
    for value, what in ((None, "has no MAC"), (record_mac(bytes(32), "x"), "does not match")):
        rec = json.loads(lines[2])
        rec["mac"] = value
        edited = [*lines]
        edited[2] = json.dumps(rec, separators=(",", ":")).encode() + b"\n"
        rewrite(path, edited)
        res = verify(path, key=KEY)
        assert res.fault is not None and "line 3" in res.fault and what in res.fault


def test_reordering_is_named_far_past_the_reorder_window(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    lines = write_log(path, REORDER_LOOKAHEAD * 2)
    n = len(lines) - 10
    lines[n], lines[n + 1] = lines[n + 1], lines[n]
    rewrite(path, lines)
    res = verify(path, key=KEY)
    assert res.fault is not None and f"line {n + 1}" in res.fault
    assert "out of order" in res.fault
    dup = [*lines[: n], lines[n - 3], *lines[n:]]  # a copy of a recent line: inserted
    rewrite(path, dup)
    res = verify(path, key=KEY)
    assert res.fault is not None and f"copy of line {n - 2}" in res.fault
