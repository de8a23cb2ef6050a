"""`agent-cli log verify`: the hash chain, the seq numbers, the writer's byte form and the MACs of
a session log, checked line by line in one streaming pass.

docs/session-log.md gives the arithmetic (`hash` = sha256(previous hash + canonical JSON of the
record without `hash` and `mac`), `mac` = HMAC-SHA256 of `hash` under the log key) and the faults
this names: edited, dropped, inserted, reordered, forged. `trust.check_trust` is the stricter
question built on it: may this log be acted on?
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agent_cli import events as ev
from agent_cli.log.keys import key_id, log_key, record_mac
from agent_cli.log.reader import BadLine, _read_with_bytes
from agent_cli.log.writer import serialize

_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode
"""canonical_json's encoder, made once: verify encodes every record with it."""
_SERIALIZE = json.JSONEncoder(ensure_ascii=True, separators=(",", ":")).encode
"""serialize's encoder, made once (its str result is ASCII)."""


def _serialize_with_mac(record: dict[str, Any], mac: Any) -> bytes | None:
    """serialize() of `record` with `"mac": mac` appended last, from one encoding of `record`
    (which holds at least `hash`, so it is not empty); None when it cannot be encoded."""
    try:
        text = _SERIALIZE(record)
        # A hex digest needs no escapes, so it is its own encoding without an encoder call.
        value = f'"{mac}"' if type(mac) is str and mac.isascii() and mac.isalnum() else (
            _SERIALIZE(mac))
        return (text[:-1] + ',"mac":' + value + "}").encode("ascii")
    except (RecursionError, ValueError):
        return None


def _serialize_or_none(record: dict[str, Any]) -> bytes | None:
    try:
        return serialize(record)
    except (RecursionError, ValueError, UnicodeEncodeError):
        return None


REORDER_LOOKAHEAD = 4096
"""How far `verify` looks ahead for a missing seq to tell "reordered" from "dropped"."""


@dataclass
class VerifyResult:
    count: int = 0
    """Events whose hash and seq chain correctly."""
    head: str = ""
    """The last good hash: pin it elsewhere to detect a rewrite of the whole tail."""
    fault: str | None = None
    """The first integrity fault, naming the line; None when the chain holds."""
    warnings: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.fault is None


def _describe(rec: dict[str, Any]) -> str:
    seq, kind = rec.get("seq"), rec.get("type", "?")
    shown = str(seq) if isinstance(seq, int) and abs(seq) < 10**18 else "?"
    return f"seq {shown}, {kind if isinstance(kind, str) else '?'}"


def verify(path: Path, key: bytes | Literal["auto"] | None = "auto") -> VerifyResult:
    """Check the hash chain and seq numbers line by line, streaming. Stops at the first fault and
    says which line and what: edited, dropped, inserted or reordered. Crash debris (a torn last
    line, a cut line or NUL bytes that the chain steps over) is a warning, not a fault.

    `key` is the log key whose MACs are checked (default: this user's, from AGENT_CLI_HOME);
    sessions signed with another key, or none, are chain-checked only and get a warning.
    `log_trust.check_trust` is the stricter question: may this log be acted on?"""
    res = VerifyResult()
    prev_hash = ""
    expected = 1
    recent: OrderedDict[str, int] = OrderedDict()
    """The last hashes seen. An OrderedDict: dropping a plain dict's first key rescans the
    deleted slots before it each time, which cost 3 us per record on a long log."""
    pending_debris: list[BadLine] = []
    last_type = ""
    approved: set[str] = set()
    state = {"ended": False}
    local = log_key(create=False) if key == "auto" else key
    local_id = key_id(local) if local is not None else None
    signed = False
    with_bytes = _read_with_bytes(path)
    records = ((n, item) for n, item, _raw in with_bytes)  # what _classify reads ahead in
    sha256 = hashlib.sha256
    for lineno, rec, raw in with_bytes:
        if isinstance(rec, BadLine):
            if rec.debris or rec.torn:
                pending_debris.append(rec)
                continue
            res.fault = f"line {lineno}: {rec.reason}; it was inserted or overwritten"
            return res
        seq = rec.get("seq")
        claimed = rec.get("hash")
        if not isinstance(claimed, str) or not isinstance(seq, int) or isinstance(seq, bool):
            res.fault = (f"line {lineno}: a record without a valid seq and hash "
                         f"({rec.get('type', '?')}); it was inserted or edited")
            return res
        # The writer puts `mac` last. Then it comes off the record, one encoding of the rest
        # (with `hash` in place) gives the writer's line for the byte check below, and with
        # `hash` deleted the record is the chained body itself: no copies, two encodings.
        if "mac" in rec and next(reversed(rec)) == "mac":
            mac = rec.pop("mac")
            full = _serialize_with_mac(rec, mac)
        else:  # no MAC, or not last: the general form, of the record as read
            full = _serialize_or_none(rec)
            mac = rec.pop("mac", None)
        del rec["hash"]
        try:
            computed = sha256((prev_hash + _CANONICAL(rec)).encode("utf-8", "surrogatepass")
                              ).hexdigest()
        except (RecursionError, ValueError):
            res.fault = f"line {lineno} ({_describe(rec)}): nested too deeply to check"
            return res
        if computed != claimed or seq != expected:
            if pending_debris and claimed not in recent:
                bad = pending_debris[0]
                res.fault = (f"line {bad.lineno}: {bad.reason}, and the chain does not continue "
                             "over it: the record there was edited, damaged or dropped")
            else:
                res.fault = _classify(lineno, rec, seq, expected, claimed, recent, records)
            return res
        if raw != full:
            res.fault = (f"line {lineno} ({_describe(rec)}) was edited: its bytes are not the "
                         "form the writer produces, though its values still match the hash")
            return res
        for bad in pending_debris:
            res.warnings.append(f"line {bad.lineno}: {bad.reason}; the chain continues over it")
        pending_debris.clear()
        problem = _check_structure(rec, approved, state)
        if problem:
            res.fault = f"line {lineno} ({_describe(rec)}): {problem}"
            return res
        if rec.get("type") == "session_start":
            kid = rec.get("key_id")
            signed = local is not None and kid == local_id
            if not signed:
                res.warnings.append(
                    f"line {lineno}: this session was signed with another log key (id {kid}); "
                    "only its hash chain was checked" if kid else
                    f"line {lineno}: this session carries no key id; only its hash chain was "
                    "checked")
        if signed and local is not None and mac != record_mac(local, claimed):
            what = "has no MAC" if mac is None else "has a MAC that does not match"
            res.fault = (f"line {lineno} ({_describe(rec)}) {what} this user's log key: it was "
                         "forged (written or rewritten by something without the key)")
            return res
        res.count += 1
        prev_hash = claimed
        expected = seq + 1
        last_type = str(rec.get("type", ""))
        recent[claimed] = lineno
        if len(recent) > REORDER_LOOKAHEAD:
            recent.popitem(last=False)
        v = rec.get("v", 1)
        if isinstance(v, int) and v > ev.LOG_FORMAT_VERSION and not res.warnings:
            res.warnings.append(f"line {lineno}: written by a newer format (v{v}); its fields "
                                "were chained but not all understood")
    for bad in pending_debris:
        if not bad.torn:
            # A crash leaves a line without its newline; a complete bad line at the end was
            # written or edited by something else.
            res.fault = (f"line {bad.lineno}: {bad.reason}; no record follows it, so it is not "
                         "a crash's torn write: the last record was edited or damaged")
            return res
        res.warnings.append(f"line {bad.lineno}: {bad.reason}; skipped")
    res.head = prev_hash
    if res.count == 0:
        res.fault = "no log records in this file"
    elif last_type != "session_end":
        res.warnings.append("the log does not end with session_end: the session crashed, is "
                            "still running, or its last lines were removed (compare the head "
                            "hash with a copy you trust)")
    return res


def _check_structure(rec: dict[str, Any], approved: set[str],
                     state: dict[str, bool]) -> str | None:
    """A chained record must still make sense: no call runs without a recorded approval, and
    nothing but a new session follows a session's end."""
    kind = rec.get("type")
    if state["ended"] and kind != "session_start":
        return "comes after session_end, where only a new session_start may follow"
    state["ended"] = kind == "session_end"
    if kind == "session_start":
        approved.clear()
    elif kind == "approval" and rec.get("decision") == "approved":
        approved.add(str(rec.get("id")))
    elif kind == "tool_started" and str(rec.get("id")) not in approved:
        return "a tool started without a recorded approval (the approval line was removed?)"
    return None


def _classify(lineno: int, rec: dict[str, Any], seq: int, expected: int, claimed: str,
              recent: dict[str, int], rest: Iterator[tuple[int, dict[str, Any] | BadLine]]
              ) -> str:
    where = f"line {lineno} ({_describe(rec)})"
    if claimed in recent:
        return f"{where} is a copy of line {recent[claimed]}: a line was inserted"
    if seq == expected:
        return (f"{where} was edited or forged: its content does not match its hash "
                "(or the line before it was replaced)")
    if seq > expected:
        for _ in range(REORDER_LOOKAHEAD):
            nxt = next(rest, None)
            if nxt is None:
                break
            later_no, later = nxt
            if isinstance(later, dict) and later.get("seq") == expected:
                return (f"{where} is out of order: seq {expected} comes later, at line "
                        f"{later_no}; lines were reordered")
        missing = f"seq {expected}" if seq == expected + 1 else f"seq {expected} to {seq - 1}"
        return f"{where}: {missing} missing before it; line(s) were dropped"
    return (f"{where} comes after seq {expected - 1}: it was inserted here or moved "
            "(reordered)")
