"""`agent-cli log verify`: the hash chain, the seq numbers, the writer's byte form and the MACs of
a session log, checked line by line in one streaming pass.

docs/session-log.md gives the arithmetic (`hash` = sha256(previous hash + canonical JSON of the
record without `hash` and `mac`), `mac` = HMAC-SHA256 of `hash` under the log key) and the faults
this names: edited, dropped, inserted, reordered, forged. `trust.check_trust` is the stricter
question built on it: may this log be acted on?
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agent_cli.log.encoding import json_encoder
from agent_cli.log.keys import key_id, log_key, mac_function
from agent_cli.log.reader import BadLine, open_log, records_with_bytes

LOG_FORMAT_VERSION = 1
"""events.LOG_FORMAT_VERSION, written out so that verify does not build the event models
(tests/log/test_verify_speed_rules.py holds the two equal)."""

_canonical = json_encoder(sort_keys=True, ascii_only=False)
"""canonical_json: sorted keys, every character as itself (the hash is over its UTF-8)."""
_canonical_ascii = json_encoder(sort_keys=True, ascii_only=True)
"""The same with ASCII escapes: identical output for a record of printable ASCII."""
_serialize = json_encoder(sort_keys=False, ascii_only=True)
"""writer.serialize's form (field order, ASCII)."""


def _writer_form(record: dict[str, Any]) -> bytes | None:
    """The line the writer produces for `record`; None when it cannot be encoded."""
    try:
        return _serialize(record).encode("ascii")
    except (RecursionError, ValueError):
        return None


def _simple(value: Any) -> bool:
    """A hash or MAC as the writer writes it: hex, its own JSON encoding between quotes."""
    return type(value) is str and value.isascii() and value.isalnum()


def _floats_as_written(record: dict[str, Any], raw: bytes) -> bool:
    """Whether every float of the record is a top-level field written as `repr` writes it
    (`"ts":1796122451.9576025,`), and no float sits deeper. False sends the line to the general
    check, which encodes it whole.

    Where the match is found it is that field: a `"` inside a JSON string is always escaped,
    so `"name":` can only be a key, and no nested object holds a float."""
    for name, value in record.items():
        kind = type(value)
        if kind is float:
            if not name.isidentifier() or not name.isascii():
                return False
            token = f'"{name}":{value!r}'.encode("ascii")
            at = raw.find(token)
            if at < 0 or raw[at + len(token):at + len(token) + 1] not in (b",", b"}"):
                return False
        elif (kind is dict or kind is list) and value:
            stack = [value]
            while stack:
                item = stack.pop()
                kind = type(item)
                if kind is dict:
                    stack.extend(item.values())
                elif kind is list:
                    stack.extend(item)
                elif kind is float:
                    return False
    return True


def _writer_length(body: str, claimed: str, mac: str | None) -> int:
    """The length of the writer's line for a record whose body encodes to `body` (canonical,
    ASCII), with `"hash":claimed` and `"mac":mac` among its fields.

    Why, for a line that passed the fast path's tests, the length and the count of `:` decide
    the byte check without a second encoding: the line is ASCII with no \\u escape and no DEL,
    every float in it is written as `repr` writes it (_floats_as_written), and the writer's line
    holds the very tokens of the canonical body plus `hash` and `mac`, in another order of
    fields. Every other way to write the same values is longer (`-0` for 0, `\\/` for /,
    whitespace between tokens) or adds a `:` (a repeated key, whose earlier value the parser
    drops). So a line of the writer's length and the writer's count of `:` is the writer's
    line, byte for byte."""
    # ,"hash":"<hex>"  and  ,"mac":"<hex>"  (the body holds `seq`, so it is not empty)
    return len(body) + 10 + len(claimed) + (9 + len(mac) if mac is not None else 0)


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
    sessions: int = 0
    """Sessions (session_start records) checked."""
    unsigned: list[tuple[int, str | None]] = field(default_factory=list)
    """Every session checked that is not signed with the key checked: (its line, the key id it
    carries, None for none). What "signed throughout" is decided on (log/trust.signature), over
    the whole file, never from its first session."""
    crash_marks: int = 0
    """How many of the warnings are what a crash leaves (a torn last line, no session_end, the
    torn line followed by an `undo` or a new session appended afterwards): log/trust.py lets
    undo act on a log whose only warnings these are."""

    @property
    def ok(self) -> bool:
        return self.fault is None


def _describe(rec: dict[str, Any]) -> str:
    seq, kind = rec.get("seq"), rec.get("type", "?")
    shown = str(seq) if isinstance(seq, int) and abs(seq) < 10**18 else "?"
    return f"seq {shown}, {kind if isinstance(kind, str) else '?'}"


Sink = Callable[[int, "dict[str, Any] | BadLine", bytes, bool], None]
"""What `verify(sink=...)` hands on, in file order: (line number, the record (its `hash` and
`mac` taken out) or a skipped line, the line's bytes, whether its session is signed with the key
checked). Only lines that passed every check reach it; a fault ends the stream."""


class Chain:
    """Where a check of the log stands after the lines it has read: what the next line must
    continue. (A plain class: a dataclass costs a log verify's start-up about a millisecond
    per class to build.)"""

    __slots__ = ("approved", "ended", "expected", "last_type", "pending_debris", "prev_hash",
                 "recent", "signed")

    def __init__(self, prev_hash: str = "", expected: int = 1, signed: bool = False,
                 ended: bool = False, last_type: Any = "") -> None:
        self.prev_hash = prev_hash
        self.expected = expected
        """The seq the next record must have."""
        self.signed = signed
        """The current session is signed with the key checked (its MACs are checked)."""
        self.ended = ended
        """The last record was a session_end: only a session_start may follow."""
        self.approved: set[str] = set()
        """The ids approved in the current session (a tool_started needs one)."""
        self.last_type = last_type
        self.recent: OrderedDict[str, int] = OrderedDict()
        """The last hashes seen. An OrderedDict: dropping a plain dict's first key rescans the
        deleted slots before it each time, which cost 3 us per record on a long log."""
        self.pending_debris: list[BadLine] = []


class Keys:
    """The key whose MACs `verify` checks, in the forms the loop uses."""

    __slots__ = ("local", "local_id", "mac_of")

    def __init__(self, local: bytes | None) -> None:
        self.local = local
        self.local_id = key_id(local) if local is not None else None
        self.mac_of: Callable[[str], str] | None = (
            mac_function(local) if local is not None else None)


def verify(path: Path, key: bytes | Literal["auto"] | None = "auto",
           sink: Sink | None = None) -> VerifyResult:
    """Check the hash chain and seq numbers line by line, streaming. Stops at the first fault and
    says which line and what: edited, dropped, inserted or reordered. Crash debris (a torn last
    line, a cut line or NUL bytes that the chain steps over) is a warning, not a fault.

    `key` is the log key whose MACs are checked (default: this user's, from AGENT_CLI_HOME);
    sessions signed with another key, or none, are chain-checked only and get a warning.
    `log_trust.check_trust` is the stricter question: may this log be acted on?

    `sink`, when given, receives every line as it is checked (see `Sink`), so a reader that
    shows the log (`replay --output jsonl`) needs no second pass over it."""
    res = VerifyResult()
    keys = Keys(log_key(create=False) if key == "auto" else key)
    chain = Chain()
    with open_log(path) as f:
        with_bytes = records_with_bytes(f, path)
        records = ((n, item) for n, item, _raw in with_bytes)  # what _classify reads ahead in
        _check(res, chain, keys, with_bytes, records, sink)
        if res.fault is not None:
            return res
    return _finish(res, chain)


def _check(res: VerifyResult, chain: Chain, keys: Keys,
           with_bytes: Iterator[tuple[int, dict[str, Any] | BadLine, bytes]],
           records: Iterator[tuple[int, dict[str, Any] | BadLine]], sink: Sink | None) -> None:
    """Check lines from `with_bytes` against `chain`, updating both it and `res`, to the end of
    the lines or the first fault (`res.fault`)."""
    # The chain's fields as locals for the loop (stored back wherever it returns).
    prev_hash, expected, recent = chain.prev_hash, chain.expected, chain.recent
    pending_debris, last_type, signed = chain.pending_debris, chain.last_type, chain.signed
    prev_bytes = prev_hash.encode("ascii")
    local, local_id, mac_of = keys.local, keys.local_id, keys.mac_of
    sha256 = hashlib.sha256
    lookahead = REORDER_LOOKAHEAD
    current = LOG_FORMAT_VERSION
    canonical_ascii = _canonical_ascii
    floats_as_written = _floats_as_written
    for lineno, rec, raw in with_bytes:
        if isinstance(rec, BadLine):
            if rec.debris or rec.torn:
                pending_debris.append(rec)
                if sink is not None:
                    sink(lineno, rec, raw, False)
                continue
            res.fault = f"line {lineno}: {rec.reason}; it was inserted or overwritten"
            break
        seq = rec.get("seq")
        claimed = rec.get("hash")
        # (exact types: a parsed record holds no subclasses, and a bool is no seq)
        if type(claimed) is not str or type(seq) is not int:
            res.fault = (f"line {lineno}: a record without a valid seq and hash "
                         f"({rec.get('type', '?')}); it was inserted or edited")
            break
        # (`hash` needs no such test: the length is used only once it equals a hex digest.)
        mac = rec.get("mac", "0")
        # (`mac` as the writer writes it: hex, its own JSON encoding between quotes; the line
        # is ASCII, so isalnum means [0-9A-Za-z])
        if (raw.isascii() and b"\\u" not in raw and b"\x7f" not in raw
                and type(mac) is str and mac.isalnum() and floats_as_written(rec, raw)):
            # The common line: one encoding, the canonical body; the byte check follows from
            # it (see _writer_length for why the length then decides).
            mac = rec.pop("mac", None)
            del rec["hash"]
            try:
                # No \\u escape, no DEL, no byte past ASCII: every character of the record is
                # one both canonical encoders write alike, and the ASCII one is faster.
                text = canonical_ascii(rec)
            except (RecursionError, ValueError):
                res.fault = f"line {lineno} ({_describe(rec)}): nested too deeply to check"
                break
            computed = sha256(prev_bytes + text.encode("ascii")).hexdigest()
            # _writer_length, inlined: ,"hash":"<hex>" and ,"mac":"<hex>"
            if mac is None:
                writer_form = (len(raw) == len(text) + 10 + len(claimed)
                               and raw.count(b":") == text.count(":") + 1)
            else:
                writer_form = (len(raw) == len(text) + 19 + len(claimed) + len(mac)
                               and raw.count(b":") == text.count(":") + 2)
        else:
            # Any other line: the writer's form by encoding the record as read (`hash` and
            # `mac` in place); then without them the record is the chained body itself.
            full = _writer_form(rec)
            mac = rec.pop("mac", None)
            del rec["hash"]
            try:
                body = _canonical(rec).encode("utf-8", "surrogatepass")
            except (RecursionError, ValueError):
                res.fault = f"line {lineno} ({_describe(rec)}): nested too deeply to check"
                break
            computed = sha256(prev_bytes + body).hexdigest()
            writer_form = full is not None and raw == full
        if computed != claimed or seq != expected:
            if pending_debris and claimed not in recent:
                bad = pending_debris[0]
                res.fault = (f"line {bad.lineno}: {bad.reason}, and the chain does not continue "
                             "over it: the record there was edited, damaged or dropped")
            else:
                res.fault = _classify(lineno, rec, seq, expected, claimed, recent, records)
            break
        if not writer_form:
            res.fault = (f"line {lineno} ({_describe(rec)}) was edited: its bytes are not the "
                         "form the writer produces, though its values still match the hash")
            break
        kind = rec.get("type")
        if pending_debris:
            for bad in pending_debris:
                res.warnings.append(f"line {bad.lineno}: {bad.reason}; the chain continues "
                                    "over it")
                if bad.torn or kind in ("undo", "session_start"):
                    res.crash_marks += 1
            pending_debris.clear()
        if chain.ended or (type(kind) is str and kind in _STRUCTURAL):
            problem = _check_structure(rec, chain)
            if problem:
                res.fault = f"line {lineno} ({_describe(rec)}): {problem}"
                break
        if kind == "session_start":
            kid = rec.get("key_id")
            signed = local is not None and kid == local_id
            res.sessions += 1
            if not signed:
                res.unsigned.append((lineno, kid if type(kid) is str else None))
                res.warnings.append(
                    f"line {lineno}: this session was signed with another log key (id {kid}); "
                    "only its hash chain was checked" if kid else
                    f"line {lineno}: this session carries no key id; only its hash chain was "
                    "checked")
        if signed and mac_of is not None and mac != mac_of(claimed):
            what = "has no MAC" if mac is None else "has a MAC that does not match"
            res.fault = (f"line {lineno} ({_describe(rec)}) {what} this user's log key: it was "
                         "forged (written or rewritten by something without the key)")
            break
        if sink is not None:
            sink(lineno, rec, raw, signed)
        res.count += 1
        prev_hash = claimed
        prev_bytes = claimed.encode("ascii")  # (it equals a hex digest computed above)
        expected = seq + 1
        last_type = kind
        recent[claimed] = lineno
        if len(recent) > lookahead:
            recent.popitem(last=False)
        v = rec.get("v", 1)
        if v != current and type(v) is int and v > current and not res.warnings:
            res.warnings.append(f"line {lineno}: written by a newer format (v{v}); its "
                                "fields were chained but not all understood")
    chain.prev_hash, chain.expected, chain.last_type = prev_hash, expected, last_type
    chain.signed = signed


def _finish(res: VerifyResult, chain: Chain) -> VerifyResult:
    """What only the end of the file decides: debris after the last record, the head, and a log
    that does not end its session."""
    for bad in chain.pending_debris:
        if not bad.torn:
            # A crash leaves a line without its newline; a complete bad line at the end was
            # written or edited by something else.
            res.fault = (f"line {bad.lineno}: {bad.reason}; no record follows it, so it is not "
                         "a crash's torn write: the last record was edited or damaged")
            return res
        res.warnings.append(f"line {bad.lineno}: {bad.reason}; skipped")
        res.crash_marks += 1
    res.head = chain.prev_hash
    if res.count == 0:
        res.fault = "no log records in this file"
    elif chain.last_type != "session_end" and not (chain.ended and chain.last_type == "undo"):
        res.warnings.append("the log does not end with session_end: the session crashed, is "
                            "still running, or its last lines were removed (compare the head "
                            "hash with a copy you trust)")
        res.crash_marks += 1
    return res


_STRUCTURAL = frozenset(("session_start", "session_end", "approval", "tool_started"))
"""The types _check_structure looks at; after a session_end it looks at every record."""


def _check_structure(rec: dict[str, Any], chain: Chain) -> str | None:
    """A chained record must still make sense: no call runs without a recorded approval, and
    nothing but a new session or an `undo` (agent-cli undo, after the session it undid)
    follows a session's end."""
    kind = rec.get("type")
    if chain.ended and kind not in ("session_start", "undo"):
        return "comes after session_end, where only a new session_start or an undo may follow"
    chain.ended = kind == "session_end" or (chain.ended and kind == "undo")
    if kind == "session_start":
        chain.approved = set()
    elif kind == "approval" and rec.get("decision") == "approved":
        chain.approved.add(str(rec.get("id")))
    elif kind == "tool_started" and str(rec.get("id")) not in chain.approved:
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
