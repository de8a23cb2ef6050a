"""`replay --output jsonl` of a whole log in one streaming pass of `verify` (`jsonl_in_one_pass`).

Its own module, apart from show.py, so that this path imports no event model unless a record
needs one (a record of a session not signed with this user's key, or of an unknown type): the
models are most of a short command's start-up. show.py re-exports the function.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_cli.log.reader import BadLine, to_event

if TYPE_CHECKING:
    from agent_cli.log.verify import VerifyResult

KNOWN_TYPES = frozenset((
    "session_start", "user_message", "model_reply", "tool_proposed", "tool_invalid", "approval",
    "tool_started", "tool_result", "error", "interrupt", "turn_end", "notice", "session_end",
    "effects", "undo",
))
"""The `type` of every event model (a record of another type is not a known event), written out
so the check needs no model; tests/log/test_verify_speed_rules.py holds it equal to the models'."""


def jsonl_in_one_pass(path: Path, write: Callable[[bytes], Any]) -> tuple[VerifyResult,
                                                                            list[str]]:
    """`replay --output jsonl` of a whole log in the one streaming pass of `verify`: each line
    that verifies is written as the bytes it has, which verify has just proved to be the writer's
    form, so `serialize` of the parsed record would give them again (and `run --output jsonl`
    printed the same line). A line of a session signed with this user's key needs no event
    model either: this user's agent-cli wrote it from one (a record of a type this version does
    not know still goes through it). Any other record is validated as `show` does, and one that
    is not a known event is left out and reported. Returns the verify result and the reports of
    lines left out; when the result has a fault, what was written is not the replay (the caller
    drops it and shows the log the ordinary way, after its warning)."""
    from agent_cli.log.verify import verify

    out = _Lines(write)
    result = verify(path, sink=out)
    out.flush()
    return result, out.bad


class _Lines:
    """The replay's lines as verify hands them on (a `verify.Sink`)."""

    def __init__(self, write: Callable[[bytes], Any]) -> None:
        self._write = write
        self.bad: list[str] = []
        self._out = bytearray()
        """Lines gathered and written 1 MB at a time: one C-level append per line."""

    def __call__(self, lineno: int, item: dict[str, Any] | BadLine, raw: bytes,
                 signed: bool) -> None:
        if type(item) is BadLine:
            self.bad.append(f"line {lineno}: {item.reason}")
            return
        assert not isinstance(item, BadLine)
        reason = self._left_out(lineno, item, signed)
        if reason is not None:
            self.bad.append(f"line {lineno}: {reason}")
            return
        out = self._out
        out.extend(raw)
        out.append(10)  # b"\n"
        if len(out) >= 1 << 20:
            self.flush()

    @staticmethod
    def _left_out(lineno: int, rec: dict[str, Any], signed: bool) -> str | None:
        """Why this verified record is left out of the replay; None: it is written as it is."""
        kind = rec.get("type")
        if signed and type(kind) is str and kind in KNOWN_TYPES:
            return None
        checked = to_event(lineno, rec)
        return checked.reason if isinstance(checked, BadLine) else None

    def flush(self) -> None:
        if self._out:
            self._write(bytes(self._out))
            self._out.clear()
