"""The tolerant reader of session logs: records in file order, a bad line reported in place and
never fatal, and every file opened so that a FIFO or a device cannot hang or flood a reader.

Streams: one line at a time, so memory stays flat on a long log. docs/session-log.md describes the
format; the writer is writer.py.
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from agent_cli.errors import LogError

if TYPE_CHECKING:
    from agent_cli import events as ev


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
    """(line number, record or BadLine, the line's bytes without its newline), streaming."""
    with open_log(path) as f:
        yield from records_with_bytes(f, path)


def records_with_bytes(f: IO[bytes], path: Path, first_lineno: int = 1,
                       ) -> Iterator[tuple[int, dict[str, Any] | BadLine, bytes]]:
    """`_read_with_bytes` of a log already open (`open_log`), from where `f` stands, whose first
    line there is line `first_lineno` of the file; `path` names it in errors."""
    from pydantic_core import from_json

    loads = json.loads
    try:
        for lineno, line in enumerate(f, start=first_lineno):
            complete = line.endswith(b"\n")
            raw = line[:-1] if complete else line
            # The common case in one step: a line that is one JSON object with nothing
            # around it (no padding to strip, no NUL bytes). _parse_line gives the same
            # answer for it, through more steps; every other line still goes there.
            if raw[:1] == b"{" and raw[-1:] == b"}":
                # pydantic-core's parser (public API, already a dependency) reads a line in
                # half the time of the stdlib's and gives the same values for every line it
                # accepts. What it refuses and the stdlib reads (a lone surrogate escape,
                # invalid UTF-8, a BOM, deeper nesting) takes the stdlib's path below.
                try:
                    record = from_json(raw)
                except ValueError:
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
    any single record (a `ts` too large for a date, a value nested too deeply).

    The event models are imported here, not at the top: `log verify` and the one-pass JSONL
    replay of a signed log read no record through them, and building them is most of a short
    command's start-up."""
    from pydantic import ValidationError

    from agent_cli import events as ev

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

