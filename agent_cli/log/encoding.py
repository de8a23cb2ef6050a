"""The byte forms of a log record: the writer's line (`serialize`) and the stdlib encoders made once
(`json_encoder`).

Apart from writer.py so that what only reads and checks a log (verify, the one-pass JSONL replay)
imports neither the event models nor the tool contract that the writer needs; writer.py re-exports
both names.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any


def _no_default(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def json_encoder(*, sort_keys: bool, ascii_only: bool) -> Callable[[Any], str]:
    """One of the stdlib's JSON encodings (compact separators), made once: the writer, verify and
    the JSONL replay encode every record, and `json.dumps` or `JSONEncoder.encode` would build
    the C encoder again for each call. The output is theirs byte for byte (same C encoder, same
    string escaper); only the circular-reference check is off, which a record never needs (it
    is parsed JSON, or an event's JSON dump)."""
    from json import encoder as stdlib

    make = getattr(stdlib, "c_make_encoder", None)  # (the C accelerator, where there is one)
    if make is None:  # (a Python without the C accelerator)
        return json.JSONEncoder(sort_keys=sort_keys, ensure_ascii=ascii_only,
                                separators=(",", ":")).encode
    escape = stdlib.encode_basestring_ascii if ascii_only else stdlib.encode_basestring
    encode = make(None, _no_default, escape, None, ":", ",", sort_keys, False, True)
    join = "".join
    return lambda value: join(encode(value, 0))


_ascii_json = json_encoder(sort_keys=False, ascii_only=True)


def serialize(record: dict[str, Any]) -> bytes:
    """The one byte form of a record: compact ASCII JSON in field order. `log verify` checks
    every line against it, so even an edit that keeps the values (an escape's case) is seen."""
    return _ascii_json(record).encode("ascii")
