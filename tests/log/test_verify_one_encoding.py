"""`log verify` decides the byte check of a common line from one encoding (its length and its
count of `:`, with every float checked where it is written). These tests hold it to the exact
rule it replaces: a line is the writer's only when it equals `serialize(json.loads(line))`.

Every mutation here keeps the values (so the hash chain still holds) and changes only how they
are written: whitespace, `\\/`, `-0`, a repeated key, a float written another way, and the same
with the length made up elsewhere. verify must call exactly those lines edited that the exact
rule calls edited.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agent_cli import events as ev
from agent_cli.log.keys import mac_function, record_mac
from agent_cli.log.verify import verify
from agent_cli.log.writer import SessionLog, serialize

KEY = bytes(range(32))


def _canonical(raw: bytes) -> str:
    return json.dumps(json.loads(raw), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@pytest.fixture
def log(tmp_path: Path) -> Path:
    path = tmp_path / "s.jsonl"
    w = SessionLog(path, fsync=False, key=KEY)
    w.write(ev.SessionStart(version="t", model="m", provider="scripted", workspace="/ws/a",
                            tools=[]))
    w.write(ev.UserMessage(text="plain text with a path src/a.py and 0.5 in it"))
    w.write(ev.UserMessage(text="caf\u00e9 \x1b[31m red"))
    w.write(ev.ToolProposed(id="toolu_1", name="calc", input={"x": 0.1, "n": 0, "big": 1e16}))
    w.write(ev.ToolResultEvent(id="toolu_1", name="calc", is_error=False, content="a/b",
                               duration=100000.0))
    w.write(ev.ToolResultEvent(id="toolu_2", name="calc", is_error=False, content="ok",
                               duration=0.0001))
    w.write(ev.TurnEnd(reason="end_turn", usage={"input_tokens": 0, "output_tokens": 7}))
    w.write(ev.SessionEnd())
    w.close()
    return path


_FLOAT = re.compile(rb"(?<=[:,\[])-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?(?=[,\]}])")


def _respellings(token: bytes) -> list[bytes]:
    """Other ways to write the number `token` (same value)."""
    x = float(token)
    if b"." not in token and b"e" not in token.lower():
        return [b"-0"] if token == b"0" else []
    out = {repr(x).upper(), f"{x:.17e}", f"{x:.20f}".rstrip("0"), f"{x:e}", f"{x:g}",
           repr(x) + "0", repr(x).replace("e+", "e"), repr(x).replace("e-0", "e-")}
    return [s.encode() for s in out if s and float(s) == x and s.encode() != token]


def mutations(raw: bytes) -> list[bytes]:
    """Value-keeping rewrites of one line, some of the writer's length."""
    out = [raw.replace(b":", b": ", 1), raw.replace(b",", b" ,", 1),
           raw.replace(b"/", b"\\/", 1), raw.replace(b'{"v":1,', b'{"v":1,"v":1,', 1)]
    for m in _FLOAT.finditer(raw):
        for alt in _respellings(m.group()):
            line = raw[:m.start()] + alt + raw[m.end():]
            out.append(line)
            missing = len(raw) - len(line)
            if missing > 0:  # a shorter spelling, its length made up with whitespace
                out.append(line.replace(b":", b":" + b" " * missing, 1))
            elif missing < 0 and b'"seq":' in line:  # a longer one, paid for by a shorter key?
                out.append(line.replace(b'{"v":1,', b'{"v":1,"v":1,', 1))
    # a repeated key whose first value is written short, the length made up by the repeat
    out.append(re.sub(rb'"ts":([0-9.]+)', lambda m: b'"ts":1e9,"ts":' + m.group(1), raw,
                      count=1))
    return [line for line in out if line != raw]


def test_every_value_keeping_rewrite_is_judged_as_the_exact_rule_judges_it(
        log: Path, tmp_path: Path) -> None:
    lines = log.read_bytes().split(b"\n")[:-1]
    assert verify(log, key=KEY).ok
    checked = edited = 0
    for i, raw in enumerate(lines):
        for line in mutations(raw):
            try:
                same_values = _canonical(line) == _canonical(raw)
            except ValueError:
                continue
            if not same_values:
                continue
            target = tmp_path / "m.jsonl"
            target.write_bytes(b"".join(x + b"\n" for x in [*lines[:i], line, *lines[i + 1:]]))
            result = verify(target, key=KEY)
            writer_form = line == serialize(json.loads(line))
            assert result.ok is writer_form, (line, result.fault)
            if not writer_form:
                assert result.fault is not None and f"line {i + 1} " in result.fault
                assert "was edited" in result.fault
                edited += 1
            checked += 1
    assert checked > 60 and edited > 50  # the rewrites reached every kind of line


def test_a_shorter_float_made_up_with_whitespace_is_an_edit(log: Path) -> None:
    """The case a length alone would miss: `100000.0` written `1e5`, five spaces elsewhere."""
    lines = log.read_bytes().split(b"\n")[:-1]
    i = next(n for n, x in enumerate(lines) if b'"duration":100000.0' in x)
    line = lines[i].replace(b'"duration":100000.0', b'"duration":1e5').replace(
        b'"id":', b'"id":     ', 1)
    assert len(line) == len(lines[i])
    lines[i] = line
    log.write_bytes(b"".join(x + b"\n" for x in lines))
    result = verify(log, key=KEY)
    assert result.fault is not None and f"line {i + 1} " in result.fault
    assert "was edited" in result.fault


def test_the_mac_with_its_pads_made_once_is_the_hmac() -> None:
    for key in (b"k" * 16, KEY, b"x" * 64, b"y" * 65, bytes(100)):
        mac = mac_function(key)
        for h in ("", "0" * 64, "abc"):
            assert mac(h) == record_mac(key, h)
