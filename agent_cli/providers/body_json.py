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
from collections.abc import Iterator
from itertools import islice, repeat
from operator import eq, is_
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
    """body -> its JSON text, reusing the text of every message seen at an earlier request.

    The messages of one request are mostly the last request's, in the same places: the common
    prefix (the same message objects, with the same content objects of the same lengths) is
    found by comparisons that run in C, so a request costs the few messages after it, not a
    Python step per message of the history. Those few are looked up by identity (a context
    budget's stub, a message met before) or encoded."""

    def __init__(self) -> None:
        self._kept: dict[int, tuple[Any, Any, int, str]] = {}
        """id(message) -> (message, its content, the content's length, its JSON)."""
        self._last: list[Any] = []
        """The last request's messages, their contents, lengths and texts, in order."""
        self._contents: list[Any] = []
        self._lengths: list[int] = []
        self._texts: list[str] = []

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
        try:  # in C: every message a dict, every content sized (text or a list of blocks)
            contents: list[Any] = list(map(dict.get, messages, repeat("content")))
            lengths = list(map(len, contents))
        except TypeError:
            contents = [m.get("content") if isinstance(m, dict) else None for m in messages]
            lengths = [_length(c) for c in contents]
        k = min(len(messages), len(self._last))
        k = _same_prefix(map(is_, messages, self._last), k)
        k = _same_prefix(map(is_, contents, self._contents), k)
        k = _same_prefix(map(eq, lengths, self._lengths), k)
        texts = self._texts[:k]
        kept = self._kept
        for i in range(k, len(messages)):
            msg, content, length = messages[i], contents[i], lengths[i]
            hit = kept.get(id(msg))
            if hit is not None and hit[0] is msg and hit[1] is content and hit[2] == length:
                texts.append(hit[3])
            else:
                text = dumps(msg)
                kept[id(msg)] = (msg, content, length, text)
                texts.append(text)
        if len(kept) > 2 * len(messages) + 64:  # forget messages no longer sent
            self._kept = {id(m): (m, c, n, t)
                          for m, c, n, t in zip(messages, contents, lengths, texts, strict=True)}
        # copies: the caller's list may be the history itself, which grows after this
        self._last, self._contents, self._lengths, self._texts = (
            messages[:], contents, lengths, texts)
        return texts


def _same_prefix(flags: Iterator[bool], limit: int) -> int:
    """How many of the first `limit` flags are true before the first false one (in C)."""
    got = list(islice(flags, limit))
    try:
        return got.index(False)
    except ValueError:
        return len(got)
