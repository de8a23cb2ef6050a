"""The one trust check for session logs: may agent-cli act on what this log says?

Showing a log (`replay`) and checking it (`log verify`) work on any log. Acting on one is another
matter: `replay --rerun --reuse-approvals` runs calls without a panel because the log says the user
approved them, and `undo` rewrites files to the state a log recorded. A log is data from disk; the
hash chain alone proves nothing, since anyone can compute it (it is public arithmetic). What proves
"this user's agent-cli wrote it" is the MAC each record carries, made with this user's log key
(AGENT_CLI_HOME/log.key, which no tool can read: tools/paths.py refuses agent-cli's own state).

So a log is trusted only when ALL of these hold, and the first that does not is the reason:

- it is a regular file that can be read (never a FIFO or device);
- this user has a log key;
- `verify.verify` with that key finds no fault AND not a single warning: no torn or cut line,
  no NUL debris, no session signed with another key or with none (a foreign session appended to
  the user's own log), no record of a newer format, and the last session ended (`session_end`);
- every session in it is signed with this key (`key_id` matches) and every record carries a MAC
  that matches (verify turns a missing or wrong MAC in a signed session into a fault).

Undo alone also acts on a log whose session crashed (`after_crash=True`): its only warnings may
then be what a crash leaves (a torn last line, no session_end; verify counts them in
`crash_marks`), every record up to the tear still verifying and signed with this key, and
`LogTrust.crashed` says so. Reusing approvals never accepts that.

Callers (rerun's --reuse-approvals, undo) call `check_trust(path)` and refuse with
`LogTrust.reason` when `trusted` is false. To act on exactly the bytes that were checked, read the
log from `trusted_copy` (a private snapshot taken before the check), not from the original path,
which could be rewritten between the check and the use.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from agent_cli.errors import LogError

if TYPE_CHECKING:
    from agent_cli.log.verify import VerifyResult

__all__ = ["LogTrust", "Signature", "check_trust", "judge", "signature", "trusted_copy"]


@dataclass(frozen=True)
class LogTrust:
    """The answer of `check_trust`."""

    trusted: bool
    """True only when every record is signed with this user's key on a chain that verifies
    from the first line to the last without a single warning."""
    reason: str
    """A sentence for the user: why the log is (not) trusted. Refusals quote it."""
    events: int = 0
    """Records checked (all of them when trusted)."""
    head: str = ""
    """The last record's hash when trusted: names exactly the content that was trusted."""
    problems: tuple[str, ...] = field(default_factory=tuple)
    """The fault and every warning `log verify` reported, for a detailed refusal."""
    crashed: bool = False
    """Trusted with `after_crash`: the log ends torn or without session_end."""


def check_trust(path: Path, key: bytes | None = None, *, after_crash: bool = False) -> LogTrust:
    """Decide whether the log at `path` may be acted on (approvals reused, effects undone).

    `key` is the log key to check against; None means this user's own key from AGENT_CLI_HOME
    (the normal case; tests and tools pass one explicitly). Never raises for a bad log: an
    unreadable, forged or foreign one is simply not trusted, with the reason. `after_crash`
    (undo only): a crash's torn or missing end is no reason to refuse."""
    from agent_cli.log.keys import log_key
    from agent_cli.log.verify import verify

    if key is None:
        try:
            key = log_key(create=False)
        except LogError as e:
            return LogTrust(False, f"{e} Without this user's log key no log can be trusted.")
    if key is None:
        return LogTrust(False, "there is no log key on this machine yet (AGENT_CLI_HOME/log.key), "
                               "so no log here can be shown to be this user's own.")
    try:
        result = verify(path, key=key)
    except LogError as e:
        return LogTrust(False, str(e))
    except (OSError, ValueError, RecursionError) as e:  # a reader must never take the caller down
        return LogTrust(False, f"{path} could not be checked ({type(e).__name__}).")
    return judge(result, after_crash=after_crash)


def judge(result: VerifyResult, *, after_crash: bool = False) -> LogTrust:
    """The trust rule over a finished `verify(path, key=...)` run (which checked the MACs with
    that key): `log verify` uses it to say whether the log it just checked is trusted, without
    reading the file twice."""
    problems = tuple(([result.fault] if result.fault else []) + list(result.warnings))
    if result.fault is not None:
        fault = result.fault.rstrip(".")  # a fault may end its own sentence
        return LogTrust(False, f"the log fails `agent-cli log verify`: {fault}.",
                        result.count, problems=problems)
    if after_crash and result.warnings and result.crash_marks == len(result.warnings):
        return LogTrust(True, f"the session crashed (its log ends torn or without "
                              f"session_end); every one of its {result.count} records up to "
                              "there is signed with this user's log key and the chain is "
                              "intact.", result.count, result.head, problems, crashed=True)
    if result.warnings:
        more = f" (and {len(result.warnings) - 1} more)" if len(result.warnings) > 1 else ""
        return LogTrust(False, "only a log that verifies without a single warning is trusted, "
                               f"and this one has: {result.warnings[0]}{more}.",
                        result.count, problems=problems)
    return LogTrust(True, f"every one of its {result.count} records is signed with this user's "
                          "log key and the chain is intact.", result.count, result.head)


@dataclass(frozen=True)
class Signature:
    """Whose key signed a log, over the whole file: what a log's reader is told (the HTML
    export's header, `replay`'s banner). One answer for every place that says it."""

    throughout: bool
    """Every session of the file is signed with this user's log key, on a chain that verifies
    to the end (so every record's MAC was checked)."""
    sentence: str
    """What to show: the claim, or which sessions break it."""


def signature(result: VerifyResult, key: bytes | None) -> Signature:
    """The signature claim of a finished `verify(path, key=key)` run (`key`: the one it checked
    the MACs with; None when this user has none). Counted over every session verify read, so
    one unsigned or foreign session anywhere in the file withdraws "signed throughout"."""
    from agent_cli.log.keys import key_id

    if result.fault is not None:
        return Signature(False, "no signature is claimed: the chain does not verify to the end "
                                "of the file, so what follows the fault was not checked")
    if result.sessions == 0:
        return Signature(False, "not signed: the file holds no session")
    if key is None:
        return Signature(False, "not checked against a key: there is no log key on this "
                                "machine, so only the hash chain was checked")
    kid = key_id(key)
    n = result.sessions
    if not result.unsigned:
        both = "its one session" if n == 1 else f"all {n} sessions"
        return Signature(True, f"signed with this user's log key (id {kid}) throughout: {both}, "
                               "every record's MAC checked")
    bad = len(result.unsigned)
    which = "; ".join(f"line {line}: " + (f"signed with another log key (id {other})" if other
                                           else "carries no key id")
                      for line, other in result.unsigned[:3])
    more = f"; and {bad - 3} more" if bad > 3 else ""
    if bad == n:
        return Signature(False, f"not signed with this user's log key (id {kid}): {which}{more}; "
                                "only the hash chain was checked")
    verb = "is" if bad == 1 else "are"
    return Signature(False, f"NOT signed throughout: {bad} of its {n} sessions {verb} not signed "
                            f"with this user's log key (id {kid}) ({which}{more}); only their "
                            "hash chain was checked")


@contextmanager
def trusted_copy(path: Path) -> Iterator[Path]:
    """A private copy of the log (0600, in a 0700 temporary folder), removed afterwards. Check
    and use the copy: the original could be rewritten between a check and a read of it."""
    from agent_cli.log.reader import open_log

    folder = Path(tempfile.mkdtemp(prefix="agent-cli-log-"))
    try:
        copy = folder / "log.jsonl"
        with open_log(path) as src:
            fd = os.open(copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
        yield copy
    finally:
        shutil.rmtree(folder, ignore_errors=True)
