"""The append-only JSONL session log writer: hash chain, redaction, write-ahead fsync.

Each record is one line of ASCII JSON (`ensure_ascii`), so no character inside a value can split
a record, whatever a reader treats as a line break. `hash` = sha256(previous hash + canonical JSON
of the record without `hash` and `mac`); the first record chains from the empty string. `mac` =
HMAC-SHA256 of `hash` under this user's log key (keys.py), so a line appended by someone who
recomputed the public chain but lacks the key is still caught. docs/session-log.md is the full
description; reader.py reads it back, verify.py checks it.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, Literal

from agent_cli import events as ev
from agent_cli.errors import LogError
from agent_cli.log.encoding import json_encoder, serialize  # noqa: F401 (re-exported)
from agent_cli.log.keys import key_id, log_key, record_mac
from agent_cli.log.reader import last_valid_record, open_log
from agent_cli.tools.base import canonical_json


def chain_hash(prev: str, record: dict[str, Any]) -> str:
    body = {k: v for k, v in record.items() if k not in ("hash", "mac")}
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
        with contextlib.suppress(OSError):  # a shared lock while open: undo's "still running"
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
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
