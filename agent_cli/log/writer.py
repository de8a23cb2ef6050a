"""The append-only JSONL session log writer: hash chain, redaction, write-ahead fsync.

Each record is one line of ASCII JSON (`ensure_ascii`), so no character inside a value can split
a record, whatever a reader treats as a line break. `hash` = sha256(previous hash + canonical JSON
of the record without `hash` and `mac`); the first record chains from the empty string. `mac` =
HMAC-SHA256 of `hash` under this user's log key (keys.py), so a line appended by someone who
recomputed the public chain but lacks the key is still caught. docs/session-log.md is the full
description; reader.py reads it back, verify.py checks it.

A record is written with `os.write` on the descriptor, whole or not at all: a refused write (a
full disk, a read-only mount) is cut back to the size the file had before it, so no half line
is left. What happens to the record then is the rule in docs/session-log.md, "When the log
cannot be written": one that would start something is not kept (and that thing does not
happen); any other is kept in memory, chained, and written first when the log takes writes
again.
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
from typing import Any, Literal

from agent_cli import events as ev
from agent_cli.errors import LogError
from agent_cli.log.encoding import json_encoder, serialize  # noqa: F401 (re-exported)
from agent_cli.log.keys import key_id, log_key, record_mac
from agent_cli.log.reader import last_valid_record, open_log
from agent_cli.tools.base import canonical_json
from agent_cli.write_faults import RETRY, LogUnwritable, append_whole, fault


def chain_hash(prev: str, record: dict[str, Any]) -> str:
    body = {k: v for k, v in record.items() if k not in ("hash", "mac")}
    data = (prev + canonical_json(body)).encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()


def _needs_fsync(event: ev.Event) -> bool:
    """Write-ahead: a write call's proposal and decision reach the disk before it runs."""
    if isinstance(event, ev.Approval):
        return event.effect != "read"
    return isinstance(event, ev.TurnEnd | ev.SessionEnd | ev.SessionStart)


STARTERS = (ev.SessionStart, ev.UserMessage, ev.Approval, ev.ToolStarted)
"""Records that start something (the session, a turn, a call): when one cannot be written it is
not kept, and what it would start does not happen."""


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
        self.retry = RETRY
        """What a fault's sentence tells the user to do once the cause is fixed (the chat says
        "press Enter to retry, or Ctrl-D to leave")."""
        self.held: list[bytes] = []
        """Records chained but not yet on disk (the log refused them), oldest first."""
        self._error: OSError | None = None
        self._refused_start = False
        from agent_cli.private_files import open_private, private_dir

        private_dir(path.parent, own=False)
        existed = os.path.lexists(path)
        try:
            fd = open_private(path, os.O_WRONLY | os.O_APPEND)
        except (OSError, ValueError) as e:
            if isinstance(e, OSError) and e.errno != errno.ENXIO:
                raise fault(e, path, what="the session log") from None
            reason = ("it is a FIFO or socket, not a regular file" if isinstance(e, OSError)
                      else str(e))
            raise LogError(f"The session log {path} cannot be written ({reason}); name a "
                           "regular file with --log, or leave --log out.") from None
        self._fd: int | None = fd
        self._created = not existed
        """This writer made the file: if nothing ever lands in it, closing removes it."""
        self._lock = threading.Lock()
        with contextlib.suppress(OSError):  # a shared lock while open: undo's "still running"
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        if os.fstat(fd).st_size > 0:
            tail = last_valid_record(path)
            if tail is not None:
                seq = tail.get("seq", 0)
                self.seq = seq if isinstance(seq, int) and not isinstance(seq, bool) else 0
                self.prev_hash = str(tail.get("hash", ""))
            with open_log(path) as f:
                f.seek(-1, os.SEEK_END)
                if f.read(1) != b"\n":
                    self.held.append(b"\n")  # a torn last line: the next record starts afresh

    @property
    def fault(self) -> LogUnwritable | None:
        """Why records are waiting in memory (None when everything written is on disk)."""
        if not self.held or self._error is None:
            return None
        return self._unwritable(self._error, dropped=False)

    def __call__(self, event: ev.AnyEvent) -> None:
        if isinstance(event, ev.TextDelta | ev.ToolOutputDelta | ev.ApprovalNeeded):
            return  # transient: what they carry is in the model_reply / tool_result / approval
        self.write(event)

    def write(self, event: ev.Event) -> dict[str, Any]:
        """Append one record, whole. Raises LogUnwritable when the log refused it (see the
        module docstring for what is kept); a record kept in memory behind an earlier refusal
        raises nothing: that refusal already stopped what was running."""
        record = event.model_dump(mode="json")
        landed: list[bytes] = []
        try:
            # One writer at a time: a background thread (an MCP server's notice) must not
            # interleave seq numbers and hashes with the loop's events.
            with self._lock:
                if self._fd is None:
                    # A late notice (an MCP server stopping after the session ended) is not
                    # part of the session; the file is sealed by session_end.
                    return record
                if isinstance(event, ev.SessionEnd) and self._refused_start:
                    return record  # a session that never started has nothing to end
                starts = isinstance(event, STARTERS)
                self._drain(landed)
                if self.held and starts:
                    raise self._unwritable(self._error, dropped=True)
                record, data = self._chain(record)
                if self.held:
                    self._commit(record, data)  # behind the records waiting: in order
                    return record
                try:
                    self._land(data, fsync=self.fsync and _needs_fsync(event))
                except OSError as e:
                    self._error = e
                    if starts:
                        self._refused_start = self._refused_start or isinstance(
                            event, ev.SessionStart)
                        raise self._unwritable(e, dropped=True) from None
                    self._commit(record, data)
                    raise self._unwritable(e, dropped=False) from None
                self._advance(record)
                landed.append(data)
                return record
        finally:
            if self.mirror is not None:
                for line in landed:
                    if line != b"\n":
                        self.mirror(line.decode("ascii"))

    def _chain(self, record: dict[str, Any]) -> tuple[dict[str, Any], bytes]:
        """Give `record` its seq, hash and mac after the last record (on disk or held); the
        writer's state moves only once the record is written or kept (`_advance`)."""
        record["seq"] = self.seq + 1
        if self.redactor is not None:
            record = self.redactor.value(record)
        if self.key is not None and record.get("type") == "session_start":
            record["key_id"] = key_id(self.key)
        record["hash"] = chain_hash(self.prev_hash, record)
        if self.key is not None:
            record["mac"] = record_mac(self.key, record["hash"])
        return record, serialize(record) + b"\n"

    def _advance(self, record: dict[str, Any]) -> None:
        self.seq = record["seq"]
        self.prev_hash = record["hash"]

    def _commit(self, record: dict[str, Any], data: bytes) -> None:
        """Keep a chained record in memory, to be written before anything after it."""
        self._advance(record)
        self.held.append(data)

    def _land(self, data: bytes, *, fsync: bool) -> None:
        """Write `data` at the end, whole: a refused write leaves no partial line."""
        assert self._fd is not None
        append_whole(self._fd, data, fsync=fsync)

    def _drain(self, landed: list[bytes]) -> None:
        """Write the records held in memory, oldest first, as far as the log takes them."""
        while self.held:
            try:
                self._land(self.held[0], fsync=self.fsync)
            except OSError as e:
                self._error = e
                return
            landed.append(self.held.pop(0))

    def _unwritable(self, e: OSError | None, *, dropped: bool) -> LogUnwritable:
        err = e if e is not None else OSError(errno.EIO, os.strerror(errno.EIO))
        base = fault(err, self.path, what="the session log", retry=self.retry)
        message = str(base)
        waiting = sum(1 for d in self.held if d != b"\n")
        if waiting:
            message += (f" ({waiting} record{'s' if waiting != 1 else ''} of this session "
                        f"{'are' if waiting != 1 else 'is'} kept in memory and will be written "
                        "first.)")
        return LogUnwritable(message, path=self.path, errno_=err.errno, dropped=dropped)

    def close(self) -> None:
        """Write what is held (a last try), fsync and close. A file this writer made and never
        wrote to is removed. Raises LogUnwritable when held records could not be written: they
        are lost, and the sentence says so."""
        with self._lock:
            fd = self._fd
            if fd is None:
                return
            landed: list[bytes] = []
            self._drain(landed)
            lost = sum(1 for d in self.held if d != b"\n")
            if self.fsync:
                with contextlib.suppress(OSError):
                    os.fsync(fd)
            empty = os.fstat(fd).st_size == 0
            os.close(fd)
            self._fd = None
            if empty and self._created:
                with contextlib.suppress(OSError):
                    self.path.unlink()
        if self.mirror is not None:
            for line in landed:
                if line != b"\n":
                    self.mirror(line.decode("ascii"))
        if lost:
            base = fault(self._error or OSError(errno.EIO, "I/O error"), self.path,
                         what="the session log", retry="start a new session")
            raise LogUnwritable(f"{base} The last {lost} record{'s' if lost != 1 else ''} of "
                                "this session could not be written and are lost.",
                                path=self.path, errno_=base.errno, dropped=True)
