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

    known = KNOWN_TYPES
    bad: list[str] = []
    out = bytearray()
    """Lines gathered and written 1 MB at a time: one C-level append per line, not two writes."""

    def take(lineno: int, item: dict[str, Any] | BadLine, raw: bytes, signed: bool) -> None:
        if type(item) is BadLine:
            bad.append(f"line {lineno}: {item.reason}")
            return
        assert not isinstance(item, BadLine)
        kind = item.get("type")
        if not (signed and type(kind) is str and kind in known):
            checked = to_event(lineno, item)
            if isinstance(checked, BadLine):
                bad.append(f"line {lineno}: {checked.reason}")
                return
        out.extend(raw)
        out.append(10)  # b"\n"
        if len(out) >= 1 << 20:
            write(bytes(out))
            out.clear()

    result = verify(path, sink=take)
    if out:
        write(bytes(out))
    return result, bad
