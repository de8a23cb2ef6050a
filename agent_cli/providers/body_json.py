"""The request body's JSON, with each message's encoding kept between requests.

Every request sends the whole history again, so encoding the body whole grows with the session
(about 0.5 ms for the 80 KB of a 300-call turn, on every request: quadratic over a turn). The
messages of one request are mostly the same objects as the last request's (the history only
grows; the context budget hands back its cached stubs). So each message is encoded on its own and
its text kept, keyed by identity and checked (the same object, with the same content object of
the same length). Messages that are new or changed are encoded afresh, for example the last two
user messages, which carry the moving cache marks as fresh copies. The texts are joined the way
`json.dumps` joins them, so the bytes are those of one `json.dumps` of the whole body, which is
what the prompt cache needs (tests/providers/test_body_json.py compares them over a long session).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["BodyEncoder", "dumps"]

_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"))


def dumps(value: Any) -> str:
    """`json.dumps(value, ensure_ascii=False, separators=(",", ":"))`, encoder made once."""
    return _ENCODER.encode(value)


def _length(content: Any) -> int:
    try:
        return len(content)
    except TypeError:
        return -1


class BodyEncoder:
    """body -> its JSON text, reusing the text of every message seen at the last request."""

    def __init__(self) -> None:
        self._kept: dict[int, tuple[Any, Any, int, str]] = {}
        """id(message) -> (message, its content, the content's length, its JSON)."""

    def __call__(self, body: dict[str, Any]) -> str:
        pieces: list[str] = []
        for key, value in body.items():
            if key == "messages" and isinstance(value, list):
                text = "[" + ",".join(self._messages(value)) + "]"
            else:
                text = dumps(value)
            pieces.append(dumps(key) + ":" + text)
        return "{" + ",".join(pieces) + "}"

    def _messages(self, messages: list[Any]) -> list[str]:
        kept = self._kept
        now: dict[int, tuple[Any, Any, int, str]] = {}
        out: list[str] = []
        for msg in messages:
            content = msg.get("content") if isinstance(msg, dict) else None
            length = _length(content)
            hit = kept.get(id(msg))
            if hit is not None and hit[0] is msg and hit[1] is content and hit[2] == length:
                text = hit[3]
            else:
                text = dumps(msg)
            now[id(msg)] = (msg, content, length, text)
            out.append(text)
        self._kept = now  # only the messages of this request: the rest can go
        return out
