"""The one trust check for records that act (`undo`, `--reuse-approvals`): a log is trusted only
when its chain verifies without a single warning and every session in it was signed with this
user's log key (design.md section 5).

Minimal version on the undo branch; it has the API the shared trust check keeps.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from agent_cli.errors import LogError


@dataclass(frozen=True)
class LogTrust:
    trusted: bool
    reason: str
    """Why not (or "signed with your key; the chain verifies"), one sentence for the user."""


def check_trust(path: Path, key: bytes | None = None) -> LogTrust:
    """Trusted iff `log verify` finds no fault and no warning, and each session_start names this
    user's key (whose MAC then covers every record)."""
    from agent_cli.session_log import (
        key_id,
        log_key,
        read_records,
        record_mac,
        verify,
    )

    local = key if key is not None else log_key(create=False)
    if local is None:
        return LogTrust(False, "there is no log key on this machine, so no log can be shown to "
                        "be yours")
    try:
        result = verify(path)
    except LogError as e:
        return LogTrust(False, str(e))
    if result.fault is not None:
        return LogTrust(False, f"the log does not verify: {result.fault}")
    if result.warnings:
        return LogTrust(False, f"the log verifies only with a warning: {result.warnings[0]}")
    want = key_id(local)
    for _lineno, rec in read_records(path):
        if not isinstance(rec, dict):
            return LogTrust(False, "the log has a damaged line")
        if rec.get("type") == "session_start" and rec.get("key_id") != want:
            return LogTrust(False, "a session in it was not signed with your log key")
        if rec.get("mac") != record_mac(local, str(rec.get("hash"))):
            return LogTrust(False, f"record seq {rec.get('seq')} is not signed with your log key")
    return LogTrust(True, "signed with your log key; the chain verifies")
