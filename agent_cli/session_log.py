"""The append-only JSONL session log: writer (hash chain, redaction, write-ahead fsync) and a
tolerant reader.

Each record is one line of ASCII JSON (`ensure_ascii`), so no character inside a value can split
a record, whatever a reader treats as a line break. `hash` = sha256(previous hash + canonical JSON
of the record without `hash`); the first record chains from the empty string.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from pydantic import ValidationError

from agent_cli import events as ev
from agent_cli.errors import LogError
from agent_cli.tools.base import canonical_json


def chain_hash(prev: str, record: dict[str, Any]) -> str:
    body = {k: v for k, v in record.items() if k != "hash"}
    data = (prev + canonical_json(body)).encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()


def _needs_fsync(event: ev.Event) -> bool:
    """Write-ahead: a write call's proposal and decision reach the disk before it runs."""
    if isinstance(event, ev.Approval):
        return event.effect != "read"
    return isinstance(event, ev.TurnEnd | ev.SessionEnd | ev.SessionStart)


class SessionLog:
    """An event sink that appends to one JSONL file. `--log` naming an existing file continues its
    chain."""

    def __init__(self, path: Path, *, redactor: Any = None, fsync: bool = True) -> None:
        self.path = path
        self.redactor = redactor
        self.fsync = fsync
        self.seq = 0
        self.prev_hash = ""
        self.mirror: Callable[[str], None] | None = None
        """Called with each line as written (`run --output jsonl` prints the log as it grows)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        fresh_line = False
        if path.exists() and path.stat().st_size > 0:
            tail = last_valid_record(path)
            if tail is not None:
                self.seq = int(tail.get("seq", 0))
                self.prev_hash = str(tail.get("hash", ""))
            with open(path, "rb") as f:
                f.seek(-1, os.SEEK_END)
                fresh_line = f.read(1) != b"\n"
        self._f: IO[bytes] = open(path, "ab")  # noqa: SIM115 - lives as long as the session
        if fresh_line:
            self._f.write(b"\n")

    def __call__(self, event: ev.AnyEvent) -> None:
        if isinstance(event, ev.TextDelta):
            return
        self.write(event)

    def write(self, event: ev.Event) -> dict[str, Any]:
        self.seq += 1
        record = event.model_dump(mode="json")
        record["seq"] = self.seq
        if self.redactor is not None:
            record = self.redactor.value(record)
        record["hash"] = chain_hash(self.prev_hash, record)
        self.prev_hash = record["hash"]
        line = json.dumps(record, ensure_ascii=True, separators=(",", ":")) + "\n"
        self._f.write(line.encode("ascii"))
        self._f.flush()
        if self.fsync and _needs_fsync(event):
            os.fsync(self._f.fileno())
        if self.mirror is not None:
            self.mirror(line)
        return record

    def close(self) -> None:
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


def iter_lines(path: Path) -> Iterator[tuple[int, bytes, bool]]:
    """Yield (line number, raw bytes, ends with newline), splitting on b"\\n" only. Streams."""
    with open(path, "rb") as f:
        lineno = 0
        for raw in f:
            lineno += 1
            complete = raw.endswith(b"\n")
            yield lineno, raw.rstrip(b"\n"), complete


def read_records(path: Path) -> Iterator[tuple[int, dict[str, Any] | BadLine]]:
    """Raw JSON records; bad lines are reported in place, never fatal."""
    try:
        lines = iter_lines(path)
        for lineno, raw, complete in lines:
            if not raw.strip(b" \r\t\x00"):
                if raw:
                    yield lineno, BadLine(lineno, "blank or NUL-filled line")
                continue
            try:
                record = json.loads(raw.decode("utf-8", "surrogateescape"))
            except (json.JSONDecodeError, UnicodeDecodeError) as e:
                yield lineno, BadLine(lineno, f"not JSON ({e.msg if hasattr(e, 'msg') else e})",
                                      torn=not complete)
                continue
            if not isinstance(record, dict):
                yield lineno, BadLine(lineno, "not a JSON object")
                continue
            yield lineno, record
    except FileNotFoundError:
        raise LogError(f"Log file {path} not found.") from None
    except IsADirectoryError:
        raise LogError(f"{path} is a folder; give a .jsonl log file.") from None


def read_events(path: Path) -> Iterator[tuple[int, ev.Event | BadLine]]:
    for lineno, rec in read_records(path):
        if isinstance(rec, BadLine):
            yield lineno, rec
            continue
        try:
            yield lineno, ev.EVENT_ADAPTER.validate_python(rec)
        except ValidationError as e:
            first = e.errors(include_url=False)[0]
            yield lineno, BadLine(lineno, f"not a known event ({first['msg']})")


def last_valid_record(path: Path) -> dict[str, Any] | None:
    """The last well-formed record, read from the end so appends stay cheap on long logs."""
    size = path.stat().st_size
    chunk = 1 << 16
    with open(path, "rb") as f:
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
                if not raw.strip():
                    continue
                try:
                    rec = json.loads(raw)
                except (json.JSONDecodeError, UnicodeDecodeError):
                    continue
                if isinstance(rec, dict) and "hash" in rec:
                    return rec
            buf = lines[0] if pos > 0 else b""
    return None
