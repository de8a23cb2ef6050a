"""A long log verified on two cores: its second half checked in a forked process meanwhile.

`verify` is bound by one core: each line is parsed, encoded again (canonical JSON) and hashed,
about three times the cost of parsing alone. Each line's hash check needs only the line before
it, so the second half can be checked at the same time from its own first line (the "anchor"),
which `verify` itself checks as the last line of its half. What the second half cannot know is
decided by the first and compared when it gets there (`Half.adopt`):

- the anchor's hash and seq, which the second half chained on;
- whether the session there is signed with the key checked (the second half assumes what the
  first line of the file says, or the anchor if it starts a session);
- the approvals of that session: the ids of tool_starteds before the second half's first
  session_start that it saw no approval for must have been approved in the first half.

The second half's check is used only when it is clean: no fault, no bad or torn line, no record
of a newer format, and (with a `Passthrough` sink, `replay --output jsonl`) every line handed on
as its bytes. Anything else, and `verify` reads on from the anchor itself, as if there had been
no split, so the result (fault message, warnings, count, head) is the one-pass result either
way; tests/log/test_verify_split.py compares the two on logs built to differ at the seam.

The second process reads the same file (the inode `verify` opened, not the path again), only
when this process has no other thread (a fork copies only the calling thread; a lock another
held would stay held in the child), on a machine with two cores or more, for a log of at least
`SPLIT_MIN` bytes: the fork and the second read of the first half's line breaks cost about 1%.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, cast

from agent_cli.log.reader import BadLine, records_with_bytes

if TYPE_CHECKING:
    from agent_cli.log.verify import Keys, Passthrough, Sink, VerifyResult

SPLIT_MIN = 8 << 20
"""Logs shorter than this (about 16,000 events, 0.3 s to verify) are checked in one pass."""
_CHUNK = 1 << 20


def alone() -> bool:
    """No other thread in this process (forking is safe)."""
    import threading

    return threading.active_count() == 1


def cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


class Outcome:
    """What the second half's check found, sent back pickled. (A plain class: see
    verify.Chain.)"""

    def __init__(self, usable: bool, anchor: tuple[str, int] = ("", 0), signed: bool = False,
                 needed: set[str] | None = None, count: int = 0, head: str = "",
                 expected: int = 0, last_type: Any = "", warnings: list[str] | None = None,
                 start: int = 0, stop: int = 0, sessions: int = 0,
                 unsigned: list[tuple[int, str | None]] | None = None) -> None:
        self.usable = usable
        self.anchor = anchor
        """The anchor's hash and seq."""
        self.signed = signed
        """What it assumed for the session at the anchor."""
        self.needed = needed if needed is not None else set()
        self.count = count
        self.head = head
        self.expected = expected
        self.last_type = last_type
        self.warnings = warnings if warnings is not None else []
        self.start = start
        self.stop = stop
        """start..stop: the bytes of the lines it checked, after the anchor."""
        self.sessions = sessions
        self.unsigned = unsigned if unsigned is not None else []
        """The sessions it found after the anchor (VerifyResult.sessions, .unsigned)."""


class Half:
    """The forked check of a log's second half, from `verify`'s side."""

    def __init__(self, pid: int, pipe: int, anchor: int, f: IO[bytes],
                 sink: Passthrough | None) -> None:
        self.pid = pid
        self._pipe = pipe
        self.anchor = anchor
        """The line number `verify` pauses after (the second half's first line)."""
        self._f = f
        self._sink = sink

    def adopt(self, res: VerifyResult, chain: Any) -> bool:
        """Take the second half's result into `res` and `chain` (which stand at the anchor) if
        it is clean and holds with the first half; False: `verify` reads on itself."""
        outcome = self._outcome()
        if (outcome is None or not outcome.usable
                or outcome.anchor != (chain.prev_hash, chain.expected - 1)
                or outcome.signed != chain.signed or not outcome.needed <= chain.approved):
            return False
        if self._sink is not None:
            self._sink.span(self._f, outcome.start, outcome.stop)
        res.count += outcome.count
        res.warnings.extend(outcome.warnings)
        res.sessions += outcome.sessions
        res.unsigned.extend(outcome.unsigned)
        res.split = True
        if outcome.count:
            chain.prev_hash, chain.expected = outcome.head, outcome.expected
            chain.last_type = outcome.last_type
        return True

    def _outcome(self) -> Outcome | None:
        import pickle

        data = bytearray()
        while chunk := os.read(self._pipe, _CHUNK):
            data += chunk
        self._reap(kill=False)
        try:
            outcome = pickle.loads(bytes(data)) if data else None
        except Exception:  # a worker that died mid-write: read on instead
            return None
        return outcome if isinstance(outcome, Outcome) else None

    def _reap(self, kill: bool) -> None:
        if self.pid:
            if kill:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(self.pid, 0)
            self.pid = 0

    def close(self) -> None:
        self._reap(kill=True)
        if self._pipe >= 0:
            os.close(self._pipe)
            self._pipe = -1


def start(f: IO[bytes], path: Path, keys: Keys, sink: Sink | Passthrough | None) -> Half | None:
    """Fork the check of the second half of the log open as `f` (still at its start), or None
    when the log is short or the split is not safe here."""
    if not hasattr(os, "fork") or cores() < 2 or not alone():
        return None
    fd = f.fileno()
    size = os.fstat(fd).st_size
    if size < SPLIT_MIN or size < 2:
        return None  # (before any import a split needs: a short log pays for none of it)
    import pickle

    cut = _next_line_start(fd, size // 2, size)
    if cut is None:
        return None
    try:
        # Its own open file (offset) on the same inode: the path could name another file now.
        own = os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    same = os.fstat(own)
    here = os.fstat(fd)
    if (same.st_ino, same.st_dev) != (here.st_ino, here.st_dev):
        os.close(own)
        return None
    anchor = _count_newlines(fd, cut) + 1
    import pydantic_core  # noqa: F401  (the reader's parser, imported once for both processes)
    passthrough = cast("Passthrough | None", sink if hasattr(sink, "verbatim") else None)
    read_end, write_end = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the second half's process: it reports, and ends without running any cleanup
        try:
            os.close(read_end)
            _end_with(parent)
            try:
                outcome = _second_half(own, path, cut, anchor, keys, passthrough)
                data = pickle.dumps(outcome)
            except BaseException:
                data = pickle.dumps(Outcome(usable=False))
            view = memoryview(data)
            while view:
                view = view[os.write(write_end, view):]
        finally:
            os._exit(0)
    os.close(write_end)
    os.close(own)
    return Half(pid, read_end, anchor, f, passthrough)


def _end_with(parent: int) -> None:
    """Linux: this process is killed when the one that forked it ends (a `kill` of verify), so
    no half-check keeps a core busy for nobody; elsewhere it ends at its next write."""
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # it ended before the line above took effect
        os._exit(0)


def _second_half(fd: int, path: Path, cut: int, anchor: int, keys: Keys,
                 sink: Passthrough | None) -> Outcome:
    from agent_cli.log.verify import Chain, VerifyResult, _check

    signed = _first_session_signed(fd, keys)
    f = os.fdopen(fd, "rb")
    f.seek(cut)
    lines = records_with_bytes(f, path, first_lineno=anchor)
    first = next(lines, None)
    if first is None:
        return Outcome(usable=False)
    _lineno, rec, _raw = first
    if (isinstance(rec, BadLine) or type(rec.get("hash")) is not str
            or type(rec.get("seq")) is not int):
        return Outcome(usable=False)
    kind = rec.get("type")
    starts = kind == "session_start"
    if starts:
        signed = keys.local is not None and rec.get("key_id") == keys.local_id
    chain = Chain(prev_hash=rec["hash"], expected=rec["seq"] + 1, signed=signed,
                  ended=kind == "session_end", mid_session=not starts, last_type=kind)
    begin = f.tell()
    res = VerifyResult()
    records = ((n, item) for n, item, _raw in lines)
    check = _Verbatim(sink) if sink is not None else None
    _check(res, chain, keys, lines, records, check, 0)
    usable = res.fault is None and not chain.irregular and (check is None or check.all)
    return Outcome(usable=usable, anchor=(rec["hash"], rec["seq"]), signed=signed,
                   needed=chain.needed, count=res.count, head=chain.prev_hash,
                   expected=chain.expected, last_type=chain.last_type, warnings=res.warnings,
                   start=begin, stop=f.tell(), sessions=res.sessions, unsigned=res.unsigned)


class _Verbatim:
    """The sink of the second half: asks whether each line would be handed on as its bytes."""

    def __init__(self, sink: Passthrough) -> None:
        self._verbatim = sink.verbatim
        self.all = True

    def __call__(self, lineno: int, item: dict[str, Any] | BadLine, raw: bytes,
                 signed: bool) -> None:
        if isinstance(item, BadLine) or not self._verbatim(lineno, item, signed):
            self.all = False


def _first_session_signed(fd: int, keys: Keys) -> bool:
    """Whether the log's first line is a session_start signed with the key checked: what the
    second half assumes of the session it starts in (the first half says if it is so)."""
    if keys.local is None:
        return False
    first = _line_at(fd, 0)
    if first is None:
        return False
    import json

    try:
        rec = json.loads(first)
    except (ValueError, RecursionError):
        return False
    return (isinstance(rec, dict) and rec.get("type") == "session_start"
            and rec.get("key_id") == keys.local_id)


def _line_at(fd: int, offset: int, limit: int = 64 << 20) -> bytes | None:
    """The line that starts at `offset` (without its newline), read with pread (the shared
    offset of `fd` is not moved); None past `limit` bytes or without a newline."""
    parts: list[bytes] = []
    at = offset
    while at - offset < limit:
        chunk = os.pread(fd, _CHUNK, at)
        if not chunk:
            return None
        end = chunk.find(b"\n")
        if end >= 0:
            parts.append(chunk[:end])
            return b"".join(parts)
        parts.append(chunk)
        at += len(chunk)
    return None


def _next_line_start(fd: int, offset: int, size: int) -> int | None:
    """The offset of the first line that starts after `offset` (None: none does)."""
    at = offset
    while at < size:
        chunk = os.pread(fd, _CHUNK, at)
        if not chunk:
            return None
        end = chunk.find(b"\n")
        if end >= 0:
            start = at + end + 1
            return start if start < size else None
        at += len(chunk)
    return None


def _count_newlines(fd: int, stop: int) -> int:
    """The number of b"\\n" in the first `stop` bytes: the line number before offset `stop`."""
    count, at = 0, 0
    while at < stop:
        chunk = os.pread(fd, min(_CHUNK, stop - at), at)
        if not chunk:
            break
        count += chunk.count(b"\n")
        at += len(chunk)
    return count
