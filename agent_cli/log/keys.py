"""This user's log key and what is made with it: the MAC that signs each record, and the key id a
session names.

The key (AGENT_CLI_HOME/log.key, 32 random bytes as hex, 0600) is what tells "this user's agent-cli
wrote it" from "someone recomputed the public hash chain" (docs/session-log.md, "The log key").
"""

from __future__ import annotations

import errno
import hashlib
import os
from collections.abc import Callable

from agent_cli.errors import LogError
from agent_cli.log.reader import open_log

KEY_FILE = "log.key"


def record_mac(key: bytes, record_hash: str) -> str:
    import hmac  # (here, not at the top: `log verify` needs only mac_function)

    # hmac.digest is the one-shot OpenSSL path: the same HMAC, without building an object per
    # record (a third of verify's MAC cost on a long log).
    return hmac.digest(key, record_hash.encode("ascii"), "sha256").hex()


def mac_function(key: bytes) -> Callable[[str], str]:
    """`record_mac` under one key, for checking many records: the key's two padded blocks are
    hashed once (RFC 2104 HMAC-SHA256, the same digest as `hmac.digest`), so each record costs
    two short SHA-256 updates instead of a fresh HMAC set-up."""
    block = hashlib.sha256(key).digest() if len(key) > 64 else key
    block = block.ljust(64, b"\x00")
    inner = hashlib.sha256(bytes(b ^ 0x36 for b in block))
    outer = hashlib.sha256(bytes(b ^ 0x5C for b in block))

    def mac(record_hash: str) -> str:
        i = inner.copy()
        i.update(record_hash.encode("ascii"))
        o = outer.copy()
        o.update(i.digest())
        return o.hexdigest()

    return mac


def key_id(key: bytes) -> str:
    """Names a key without revealing it (session_start.key_id)."""
    return hashlib.sha256(b"agent-cli log key id\x00" + key).hexdigest()[:16]


def log_key(create: bool = False) -> bytes | None:
    """This user's log key (AGENT_CLI_HOME/log.key, 0600), made on first use when `create`."""
    from agent_cli.locations import home
    from agent_cli.private_files import private_dir, tighten_file

    path = home() / KEY_FILE
    if os.path.lexists(path):
        try:
            with open_log(path) as f:  # regular files only: a FIFO here must not hang start-up
                key = bytes.fromhex(f.read(4096).decode("ascii").strip())
            if len(key) < 16:
                raise ValueError("too short")
        except (LogError, ValueError, UnicodeDecodeError) as e:
            cause = e.__context__
            if isinstance(cause, OSError) and cause.errno in (errno.EMFILE, errno.ENFILE):
                from agent_cli.write_faults import fault

                raise fault(cause, path, what="the log key", doing="open") from None
            raise LogError(f"{path} is not a log key (a file of 64 hex characters); move it "
                           "away and a new one is made at the next session.") from None
        tighten_file(path)
        return key
    if not create:
        return None
    import secrets

    from agent_cli.write_faults import write_atomic, writing

    with writing(path.parent, "agent-cli's data folder"):
        private_dir(path.parent)
    # Whole or not at all, and no temporary file left on any failure (a full disk, say);
    # linked, not renamed, into place: whoever links first wins, the other reads theirs.
    write_atomic(path, (secrets.token_hex(32) + "\n").encode("ascii"), what="the log key",
                 exclusive=True)
    return log_key(create=False)
