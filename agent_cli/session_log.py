"""The append-only JSONL session log: writer (hash chain, redaction, write-ahead fsync) and a
tolerant reader.

Each record is one line of ASCII JSON (`ensure_ascii`), so no character inside a value can split
a record, whatever a reader treats as a line break. `hash` = sha256(previous hash + canonical JSON
of the record without `hash` and `mac`); the first record chains from the empty string. `mac` =
HMAC-SHA256 of `hash` under this user's log key (AGENT_CLI_HOME/log.key), so a line appended by
someone who recomputed the public chain but lacks the key is still caught. docs/session-log.md
is the full description.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import json
import math
import os
import secrets
import stat
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

from pydantic import ValidationError

from agent_cli import events as ev
from agent_cli.errors import LogError
from agent_cli.tools.base import canonical_json


def chain_hash(prev: str, record: dict[str, Any]) -> str:
    body = {k: v for k, v in record.items() if k not in ("hash", "mac")}
    data = (prev + canonical_json(body)).encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()


KEY_FILE = "log.key"


def record_mac(key: bytes, record_hash: str) -> str:
    # hmac.digest is the one-shot OpenSSL path: the same HMAC, without building an object per
    # record (a third of verify's MAC cost on a long log).
    return hmac.digest(key, record_hash.encode("ascii"), "sha256").hex()


def key_id(key: bytes) -> str:
    """Names a key without revealing it (session_start.key_id)."""
    return hashlib.sha256(b"agent-cli log key id\x00" + key).hexdigest()[:16]


def log_key(create: bool = False) -> bytes | None:
    """This user's log key (AGENT_CLI_HOME/log.key, 0600), made on first use when `create`."""
    from agent_cli.config import home
    from agent_cli.private_files import private_dir, tighten_file

    path = home() / KEY_FILE
    if os.path.lexists(path):
        try:
            with open_log(path) as f:  # regular files only: a FIFO here must not hang start-up
                key = bytes.fromhex(f.read(4096).decode("ascii").strip())
            if len(key) < 16:
                raise ValueError("too short")
        except (LogError, ValueError, UnicodeDecodeError):
            raise LogError(f"{path} is not a log key (a file of 64 hex characters); move it "
                           "away and a new one is made at the next session.") from None
        tighten_file(path)
        return key
    if not create:
        return None
    private_dir(path.parent)
    tmp = path.with_name(f".{KEY_FILE}.{secrets.token_hex(4)}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as f:
        f.write(secrets.token_hex(32) + "\n")
        f.flush()
        os.fsync(f.fileno())
    try:
        os.link(tmp, path)  # atomic: whoever links first wins, the other reads theirs
    except FileExistsError:
        pass
    finally:
        tmp.unlink()
    return log_key(create=False)


def serialize(record: dict[str, Any]) -> bytes:
    """The one byte form of a record: compact ASCII JSON in field order. `log verify` checks
    every line against it, so even an edit that keeps the values (an escape's case) is seen."""
    return json.dumps(record, ensure_ascii=True, separators=(",", ":")).encode("ascii")


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


def _needs_fsync(event: ev.Event) -> bool:
    """Write-ahead: a write call's proposal and decision reach the disk before it runs."""
    if isinstance(event, ev.Approval):
        return event.effect != "read"
    return isinstance(event, ev.TurnEnd | ev.SessionEnd | ev.SessionStart)


class SessionLog:
    """An event sink that appends to one JSONL file. `--log` naming an existing file continues its
    chain."""

    def __init__(self, path: Path, *, redactor: Any = None, fsync: bool = True,
                 key: bytes | Literal["auto"] | None = "auto") -> None:
        self.path = path
        self.redactor = redactor
        self.fsync = fsync
        self.key = log_key(create=True) if key == "auto" else key
        self.seq = 0
        self.prev_hash = ""
        self.mirror: Callable[[str], None] | None = None
        """Called with each line as written (`run --output jsonl` prints the log as it grows)."""
        from agent_cli.private_files import open_private, private_dir

        private_dir(path.parent, own=False)
        try:
            fd = open_private(path, os.O_WRONLY | os.O_APPEND)
        except (OSError, ValueError) as e:
            if isinstance(e, OSError) and e.errno == errno.ENXIO:
                reason = "it is a FIFO or socket, not a regular file"
            elif isinstance(e, OSError):
                reason = e.strerror or str(e)
            else:
                reason = str(e)
            raise LogError(f"The session log {path} cannot be written ({reason}); name a "
                           "regular file with --log, or leave --log out.") from None
        self._f: IO[bytes] = os.fdopen(fd, "ab")
        fresh_line = False
        if os.fstat(fd).st_size > 0:
            tail = last_valid_record(path)
            if tail is not None:
                seq = tail.get("seq", 0)
                self.seq = seq if isinstance(seq, int) and not isinstance(seq, bool) else 0
                self.prev_hash = str(tail.get("hash", ""))
            with open_log(path) as f:
                f.seek(-1, os.SEEK_END)
                fresh_line = f.read(1) != b"\n"
        self._lock = threading.Lock()
        if fresh_line:
            self._f.write(b"\n")

    def __call__(self, event: ev.AnyEvent) -> None:
        if isinstance(event, ev.TextDelta | ev.ToolOutputDelta):
            return  # transient: what they carry is in the model_reply / tool_result that follows
        self.write(event)

    def write(self, event: ev.Event) -> dict[str, Any]:
        record = event.model_dump(mode="json")
        # One writer at a time: a background thread (an MCP server's notice) must not interleave
        # seq numbers and hashes with the loop's events.
        with self._lock:
            if self._f.closed:
                # A late notice (an MCP server stopping after the session ended) is not part of
                # the session; the file is sealed by session_end.
                return record
            self.seq += 1
            record["seq"] = self.seq
            if self.redactor is not None:
                record = self.redactor.value(record)
            if self.key is not None and record.get("type") == "session_start":
                record["key_id"] = key_id(self.key)
            record["hash"] = chain_hash(self.prev_hash, record)
            if self.key is not None:
                record["mac"] = record_mac(self.key, record["hash"])
            data = serialize(record) + b"\n"
            self._f.write(data)
            self._f.flush()
            if self.fsync and _needs_fsync(event):
                os.fsync(self._f.fileno())
            self.prev_hash = record["hash"]
        if self.mirror is not None:
            self.mirror(data.decode("ascii"))
        return record

    def close(self) -> None:
        with self._lock:
            if not self._f.closed:
                self._f.flush()
                if self.fsync:
                    os.fsync(self._f.fileno())
                self._f.close()


@dataclass
class BadLine:
    lineno: int
    reason: str
    torn: bool = False
    """The last line, with no newline after it: a crash mid-write."""
    debris: bool = False
    """Looks like what a crash leaves (a cut record, NUL bytes), not like an inserted line."""


_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)


def open_log(path: Path) -> IO[bytes]:
    """Open a log for reading, refusing at once anything that is not a regular file.

    Every reader goes through here. A FIFO opened the ordinary way blocks until someone writes
    to it (a hang at `log verify`, or at `chat --resume` whose `continues` points at one), and a
    device can stream for ever; opening non-blocking and checking the descriptor's own type
    (fstat, not a stat of the name that could be swapped) closes the whole class."""
    try:
        fd = os.open(path, os.O_RDONLY | _NONBLOCK | _CLOEXEC)
    except FileNotFoundError:
        raise LogError(f"Log file {path} not found; check the path (agent-cli log list shows "
                       "recent sessions).") from None
    except IsADirectoryError:
        raise LogError(f"{path} is a folder; give a .jsonl log file.") from None
    except PermissionError:
        raise LogError(f"Log file {path} cannot be read (permission denied).") from None
    except OSError as e:
        raise LogError(f"Log file {path} cannot be opened ({e.strerror}).") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise LogError(f"{path} is a folder; give a .jsonl log file.")
        if not stat.S_ISREG(mode):
            raise LogError(f"{path} is not a regular file (a FIFO, socket or device); a session "
                           "log is a regular .jsonl file, so it is not read.")
        if _NONBLOCK:
            os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def iter_lines(path: Path) -> Iterator[tuple[int, bytes, bool]]:
    """Yield (line number, raw bytes, ends with newline), splitting on b"\\n" only. Streams."""
    with open_log(path) as f:
        for lineno, raw in enumerate(f, start=1):
            yield lineno, raw.rstrip(b"\n"), raw.endswith(b"\n")


_PAD = b" \r\t\x00"


def _parse_line(lineno: int, raw: bytes, complete: bool) -> Iterator[dict[str, Any] | BadLine]:
    """One physical line: a record, or a report, or (NUL bytes glued before a record by a crash)
    both."""
    body = raw.strip(_PAD)
    if not body:
        if raw:
            yield BadLine(lineno, "blank or NUL-filled line (a crash left a hole); skipped",
                          torn=not complete, debris=True)
        return
    if raw.lstrip(b" \t").startswith(b"\x00"):
        yield BadLine(lineno, "NUL bytes before the record (a crash left a hole); skipped them",
                      torn=not complete, debris=True)
    try:
        # Raw UTF-8 lines from other writers are accepted; invalid bytes become lone surrogates.
        record = json.loads(body.decode("utf-8", "surrogateescape"))
    except RecursionError:
        yield BadLine(lineno, "not a log record: nested too deeply to read (no record agent-cli "
                      "writes nests like that)")
        return
    except json.JSONDecodeError as e:
        yield _not_json(lineno, body, complete, e)
        return
    except ValueError:  # (a number with more digits than Python converts)
        yield BadLine(lineno, "not a log record: holds a number too large to read")
        return
    if not isinstance(record, dict):
        yield BadLine(lineno, "not a log record (JSON, but not an object)", torn=not complete)
        return
    yield record


def _not_json(lineno: int, body: bytes, complete: bool, e: json.JSONDecodeError) -> BadLine:
    """A line that is not JSON: a crash's torn or cut record, or something that never was one."""
    cut = body.startswith(b"{") and not _whole_object_then_junk(body)
    if not complete and cut:
        what = "torn record (the writer died mid-line)"
    elif cut:
        what = "cut record from an earlier crash"
    else:
        what = "not a log record"
    return BadLine(lineno, f"{what}: not JSON ({e.msg} at column {e.colno})",
                   torn=not complete and cut, debris=cut)


def _whole_object_then_junk(body: bytes) -> bool:
    """A crash leaves a prefix of a record; a whole object followed by more bytes is an edit."""
    try:
        json.JSONDecoder().raw_decode(body.decode("utf-8", "surrogateescape"))
    except (ValueError, RecursionError):
        return False
    return True


def read_records(path: Path) -> Iterator[tuple[int, dict[str, Any] | BadLine]]:
    """Raw JSON records in file order; bad lines are reported in place, never fatal. Streams."""
    for lineno, item, _raw in _read_with_bytes(path):
        yield lineno, item


def _read_with_bytes(path: Path) -> Iterator[tuple[int, dict[str, Any] | BadLine, bytes]]:
    loads = json.loads
    try:
        with open_log(path) as f:
            for lineno, line in enumerate(f, start=1):
                complete = line.endswith(b"\n")
                raw = line[:-1] if complete else line
                # The common case in one step: a line that is one JSON object with nothing
                # around it (no padding to strip, no NUL bytes). _parse_line gives the same
                # answer for it, through more steps; every other line still goes there.
                if raw[:1] == b"{" and raw[-1:] == b"}":
                    try:
                        record = loads(raw.decode("utf-8", "surrogateescape"))
                    except (ValueError, RecursionError):
                        record = None
                    if type(record) is dict:
                        yield lineno, record, raw
                        continue
                for item in _parse_line(lineno, raw, complete):
                    yield lineno, item, raw.lstrip(b"\x00")
    except IsADirectoryError:  # (a folder opened on a system that allows it, then read)
        raise LogError(f"{path} is a folder; give a .jsonl log file.") from None
    except OSError as e:
        raise LogError(f"Log file {path} could not be read to the end ({e.strerror}).") from None


def to_event(lineno: int, rec: dict[str, Any]) -> ev.Event | BadLine:
    """One record as its event model, or a BadLine naming the line: every reader must survive
    any single record (a `ts` too large for a date, a value nested too deeply)."""
    try:
        event = ev.EVENT_ADAPTER.validate_python(rec)
    except ValidationError as e:
        errors = e.errors(include_url=False)
        first = errors[0] if errors else {"loc": (), "msg": "invalid"}
        loc = ".".join(str(p) for p in first["loc"])
        return BadLine(lineno, f"not a known event ({loc}: {first['msg']})")
    except (RecursionError, ValueError, TypeError, OverflowError) as e:
        return BadLine(lineno, f"not a known event ({type(e).__name__})")
    if not math.isfinite(event.ts) or not TS_MIN <= event.ts <= TS_MAX:
        return BadLine(lineno, "not a known event (ts: not a time between the years 1970 and "
                       "9999)")
    return event


TS_MIN = 0.0
TS_MAX = 253402300799.0
"""The times a log can hold (1970 to the end of 9999): every reader formats `ts` as a date, and
a value outside this range cannot be one (time.gmtime raises on it)."""


def read_events(path: Path) -> Iterator[tuple[int, ev.Event | BadLine]]:
    """Events in file order, each parsed by the one TypeAdapter; bad lines reported in place."""
    for lineno, rec in read_records(path):
        if isinstance(rec, BadLine):
            yield lineno, rec
        else:
            yield lineno, to_event(lineno, rec)


def last_valid_record(path: Path) -> dict[str, Any] | None:
    """The last well-formed record, read from the end so appends stay cheap on long logs."""
    chunk = 1 << 16
    with open_log(path) as f:
        size = os.fstat(f.fileno()).st_size
        pos = size
        buf = b""
        while pos > 0:
            step = min(chunk, pos)
            pos -= step
            f.seek(pos)
            buf = f.read(step) + buf
            lines = buf.split(b"\n")
            # the first piece may be partial unless we reached the start of the file
            candidates = lines if pos == 0 else lines[1:]
            for raw in reversed(candidates):
                body = raw.strip(_PAD)
                if not body:
                    continue
                try:
                    rec = json.loads(body.decode("utf-8", "surrogateescape"))
                except (ValueError, RecursionError):
                    continue
                if isinstance(rec, dict) and "hash" in rec:
                    return rec
            buf = lines[0] if pos > 0 else b""
    return None


# -- integrity ---------------------------------------------------------------------------------

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
