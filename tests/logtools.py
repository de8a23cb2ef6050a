"""Building logs in tests: the writer's own arithmetic, used the way a user's machine or an
attacker would use it.

`sign_as_mine` turns a recording made elsewhere (tests/data) into one this test's user made: the
key id, every args_hash and every MAC made with this user's key, the chain recomputed. `forge`
writes records with the PUBLIC chain arithmetic only (sha256 over the previous hash and the
record): exactly what someone without the key can do.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent_cli.log.keys import key_id, log_key, record_mac
from agent_cli.log.writer import chain_hash, serialize
from agent_cli.tools.base import args_digest


def records_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_bytes().splitlines() if line.strip()]


def my_key() -> bytes:
    key = log_key(create=True)
    assert key is not None
    return key


def write_chain(path: Path, records: list[dict[str, Any]], key: bytes | None = None,
                prev: str = "", mode: str = "wb") -> str:
    """Chain (and, with a key, sign) `records` after `prev`; returns the last hash."""
    with open(path, mode) as f:
        for rec in records:
            rec = {k: v for k, v in rec.items() if k not in ("hash", "mac")}
            rec["hash"] = chain_hash(prev, rec)
            if key is not None:
                rec["mac"] = record_mac(key, rec["hash"])
            f.write(serialize(rec) + b"\n")
            prev = rec["hash"]
    return prev


def sign_as_mine(src: Path, dst: Path, key: bytes | None = None) -> Path:
    """A copy of `src` as if this user's agent-cli had recorded it."""
    key = key or my_key()
    out = []
    for rec in records_of(src):
        rec = dict(rec)
        if rec.get("type") == "session_start":
            rec["key_id"] = key_id(key)
        if rec.get("type") == "approval" and rec.get("args") is not None:
            rec["args_hash"] = args_digest(key, rec["args"])
        out.append(rec)
    write_chain(dst, out, key)
    return dst
