"""The shortcut `log verify` takes on a common line decides exactly what the general check decides.

The general check (the record encoded whole and compared with the line) is the rule; the
shortcut proves the same from one canonical encoding (its length and its count of `:`) when the
line's floats are shown to be written as `repr` writes them (`_floats_as_written`: every float a
top-level field found spelled as repr spells it, and none below the top level).

Here logs are built with the public chain arithmetic (as a forger would), with floats at every
depth, strings holding `"ts":`, quotes, backslashes, colons and dots, then rewritten in ways that
keep every value (so the chain still holds): floats spelled otherwise at any depth and of the
same length, whitespace, `\\/`, repeated keys. verify with its shortcuts must give exactly the
result (fault, warnings, count, head) of verify with the general check on every line.
"""

from __future__ import annotations

import json
import math
import random
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_cli import events as ev
from agent_cli.log import verify as verify_module
from agent_cli.log.jsonl import KNOWN_TYPES
from agent_cli.log.keys import key_id, record_mac
from agent_cli.log.verify import verify
from agent_cli.log.writer import chain_hash, serialize

KEY = bytes(range(32))


def general_only(monkeypatch: pytest.MonkeyPatch) -> None:
    """verify with every line sent to the general check: the exact rule."""
    monkeypatch.setattr(verify_module, "_floats_as_written", lambda record, raw: False)


def results_of(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Any, Any]:
    fast = verify(path, key=KEY)
    with monkeypatch.context() as m:
        general_only(m)
        exact = verify(path, key=KEY)
    return ((fast.fault, fast.warnings, fast.count, fast.head),
            (exact.fault, exact.warnings, exact.count, exact.head))


def build(records: list[dict[str, Any]]) -> list[bytes]:
    """The writer's lines for these records: seq, hash and MAC by the public arithmetic."""
    lines, prev = [], ""
    for seq, body in enumerate(records, start=1):
        record = {"v": 1, "seq": seq, "ts": body.pop("ts", 1796132909.0975337), **body}
        if record.get("type") == "session_start":
            record["key_id"] = key_id(KEY)
        record["hash"] = chain_hash(prev, record)
        record["mac"] = record_mac(KEY, record["hash"])
        prev = record["hash"]
        lines.append(serialize(record))
    return lines


def write(path: Path, lines: list[bytes]) -> Path:
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path


# -- values ----------------------------------------------------------------------------------

_TRICKY_TEXT = st.sampled_from(['"ts":1.5,', 'a\\"ts', ':', '.', 'e+1', '1.0e2', '\\', '/',
                                'x"y', "Infinity", "NaN", ",", "}", "{", "]", " "])
_text = st.one_of(st.text(alphabet=st.characters(min_codepoint=32, max_codepoint=126),
                          max_size=12), _TRICKY_TEXT)
_float = st.one_of(st.floats(allow_nan=False, allow_infinity=False),
                   st.sampled_from([100.0, 0.1, 1e16, 1e-05, 0.30000000000000004, -0.0,
                                    1796132909.0975337, 5e-324, 1e22]))
_scalar = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20), _float, _text)
_value = st.recursive(_scalar, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(_text, inner, max_size=4)), max_leaves=12)
_body = st.fixed_dictionaries(
    {"type": st.sampled_from(["user_message", "model_reply", "tool_result", "notice"])},
    optional={"ts": _float, "text": _text, "input": _value, "duration": _float,
              "usage": st.dictionaries(_text, _value, max_size=3), "ts\"": _float})


def _respell_float(token: bytes, rng: random.Random) -> bytes | None:
    """Another JSON spelling of the float `token`, the same length when one is found."""
    x = float(token)
    if not math.isfinite(x):
        return None
    same_length = []
    mantissa, _, exponent = f"{x:.16e}".partition("e")
    for delta in (-2, -1, 1, 2):
        digits = mantissa.replace(".", "").replace("-", "")
        alt_int = int(digits) + delta
        if alt_int <= 0:
            continue
        alt = ("-" if x < 0 else "") + str(alt_int)[0] + "." + str(alt_int)[1:] + "e" + exponent
        for text in (alt, repr(float(alt)) if float(alt) == x else ""):
            if text and float(text) == x and text.encode() != token:
                same_length.append(text)
    others = [repr(x).upper(), repr(x) + "0", f"{x:.17e}", repr(x).replace("e+", "e"),
              f"{x:.20f}".rstrip("0"), *same_length]
    choices = [t.encode() for t in others if t and float(t) == x and t.encode() != token
               and len(t) == len(token)] or [t.encode() for t in others
                                             if t and float(t) == x and t.encode() != token]
    return rng.choice(choices) if choices else None


def rewrites(line: bytes, rng: random.Random) -> list[bytes]:
    """Value-keeping rewrites of one line: every float token respelled (at any depth), padded to
    the line's length where it got shorter; whitespace; `\\/`; a repeated key."""
    out = []
    # float tokens as the canonical ASCII encoder writes them: after : , or [, before , ] }
    for m in re.finditer(rb"(?<=[:,\[])-?\d+(?:\.\d+)?(?:e[-+]\d+)?(?=[,\]}])", line):
        if b"." not in m.group() and b"e" not in m.group():
            continue
        alt = _respell_float(m.group(), rng)
        if alt is None:
            continue
        new = line[:m.start()] + alt + line[m.end():]
        out.append(new)
        if len(new) < len(line):
            out.append(new.replace(b'"type":', b'"type":' + b" " * (len(line) - len(new)), 1))
    out += [line.replace(b",", b" ,", 1), line.replace(b"/", b"\\/", 1),
            line.replace(b'{"v":1,', b'{"v":1,"v":1,', 1),
            line.replace(b'"seq":', b'"ts":1e9,"seq":', 1)]
    return [x for x in out if x != line]


def _canonical(line: bytes) -> str:
    return json.dumps(json.loads(line), sort_keys=True, separators=(",", ":"))


def same_values(a: bytes, b: bytes) -> bool:
    try:
        return _canonical(a) == _canonical(b)
    except ValueError:
        return False


@settings(max_examples=120, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(bodies=st.lists(_body, min_size=1, max_size=4), seed=st.integers(0, 2**32))
def test_the_shortcut_judges_every_value_keeping_rewrite_as_the_general_check(
        bodies: list[dict[str, Any]], seed: int, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    records = [{"type": "session_start", "version": "t", "model": "m", "provider": "p",
                "workspace": "/w", "tools": []}, *bodies, {"type": "session_end"}]
    lines = build(records)
    path = tmp_path / "log.jsonl"
    fast, exact = results_of(write(path, lines), monkeypatch)
    assert fast == exact and fast[0] is None
    i = rng.randrange(len(lines))
    for line in rewrites(lines[i], rng):
        forged = write(path, [*lines[:i], line, *lines[i + 1:]])
        fast, exact = results_of(forged, monkeypatch)
        assert fast == exact, line
        if same_values(line, lines[i]) and line != serialize(json.loads(line)):
            assert fast[0] is not None and "was edited" in fast[0], line


def _same_length_ts(ts: float) -> bytes:
    """A spelling of ts of repr's length that is not repr's (17 digits, the last one moved)."""
    text = repr(ts)
    for delta in (1, -1, 2, -2, 3, -3):
        alt = text[:-1] + str(int(text[-1]) + delta)
        if alt[-1:].isdigit() and len(alt) == len(text) and float(alt) == ts and alt != text:
            return alt.encode()
    raise AssertionError(f"no other spelling of {ts!r} of the same length")


@pytest.mark.parametrize("where", ["ts", "nested", "nested_list", "duration"])
def test_a_float_spelled_otherwise_at_the_same_length_is_an_edit(
        where: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The cases a length and a count of `:` cannot see, at each place a float can stand. Each
    fails if the matching part of the shortcut is weakened: a top-level float taken as written
    without finding its repr spelling (ts, duration), the walk for nested floats skipped
    (nested, nested_list)."""
    ts = 1796132909.0975337
    body: dict[str, Any] = {"type": "tool_result", "ts": ts, "content": "a/b.py: 0.5"}
    if where in ("nested", "nested_list"):
        body["input"] = {"x": 100.0} if where == "nested" else {"x": [1, [100.0]]}
    if where == "duration":
        body["duration"] = 100.0
    lines = build([{"type": "session_start", "version": "t", "model": "m", "provider": "p",
                    "workspace": "/w", "tools": []}, body, {"type": "session_end"}])
    if where == "ts":
        line = lines[1].replace(b'"ts":' + repr(ts).encode(), b'"ts":' + _same_length_ts(ts))
    else:
        line = lines[1].replace(b"100.0", b"1.0e2")
    assert line != lines[1] and len(line) == len(lines[1]) and same_values(line, lines[1])
    fast, exact = results_of(write(tmp_path / "l.jsonl", [lines[0], line, lines[2]]), monkeypatch)
    assert fast == exact
    assert fast[0] is not None and fast[0].startswith("line 2 ") and "was edited" in fast[0]


def test_a_key_ending_in_ts_holding_the_same_spelling_proves_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`"ts":T` found in the line must be the top-level ts: a nested key `a"ts` with the float
    written as repr writes it, beside a top-level ts written otherwise, is an edit."""
    ts = 1796132909.0975337
    lines = build([{"type": "notice", "ts": ts, "x": {'a"ts': ts}}])
    line = lines[0].replace(b'"ts":' + repr(ts).encode() + b',"type"',
                            b'"ts":' + _same_length_ts(ts) + b',"type"', 1)
    assert line != lines[0] and same_values(line, lines[0])
    fast, exact = results_of(write(tmp_path / "l.jsonl", [line]), monkeypatch)
    assert fast == exact and fast[0] is not None and "was edited" in fast[0]


def test_what_verify_writes_out_equals_the_event_models() -> None:
    """verify and the one-pass JSONL replay import no event model; the two facts they need from
    events.py are written out, and held equal here."""
    from typing import get_args

    assert verify_module.LOG_FORMAT_VERSION == ev.LOG_FORMAT_VERSION
    union = get_args(ev.Event)[0]
    models = frozenset(m.model_fields["type"].default for m in get_args(union))
    assert models == KNOWN_TYPES


def _signed_line(record: dict[str, Any], prev: str = "") -> bytes:
    """One record as the writer would write it in this field order, hash and MAC by the public
    arithmetic."""
    record = dict(record)
    record["hash"] = chain_hash(prev, record)
    record["mac"] = record_mac(KEY, record["hash"])
    return serialize(record)


def test_ts_is_proved_only_where_the_writer_puts_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A record whose ts is not the field after seq (another writer's order: the line is still
    its own serialize): its ts respelled at the same length is an edit."""
    ts = 1796132909.0975337
    line = _signed_line({"v": 1, "seq": 1, "type": "notice", "ts": ts, "kind": "k"})
    assert verify(write(tmp_path / "ok.jsonl", [line]), key=KEY).fault is None
    forged = line.replace(repr(ts).encode(), _same_length_ts(ts))
    assert len(forged) == len(line) and same_values(forged, line)
    fast, exact = results_of(write(tmp_path / "l.jsonl", [forged]), monkeypatch)
    assert fast == exact and fast[0] is not None and "was edited" in fast[0]


def test_a_repeated_ts_paid_for_by_a_shorter_ts_is_an_edit(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first of two top-level `ts` keys stands where the writer puts ts; the real ts, later,
    is written short (`1e9` for `1000000000.0`), which pays for the repeat exactly: the length
    alone cannot see it."""
    line = _signed_line({"v": 1, "seq": 1, "ts": 1e9, "type": "notice", "x": {"ts": "a"}})
    head = b'{"v":1,"seq":1,"ts":1000000000.0,'
    assert line.startswith(head)
    forged = line.replace(head, b'{"v":1,"seq":1,"ts":"a",', 1).replace(
        b',"hash":', b',"ts":1e9,"hash":', 1)
    assert len(forged) == len(line) and same_values(forged, line)
    fast, exact = results_of(write(tmp_path / "l.jsonl", [forged]), monkeypatch)
    assert fast == exact and fast[0] is not None and "was edited" in fast[0]
