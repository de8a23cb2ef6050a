"""The request body encoded with each message's JSON kept between requests (providers/body_json)
is byte for byte one `json.dumps` of the whole body, request after request, as the prompt cache
needs: over a long session with cache marks, context-budget stubs, /clear, a message changed in
place, non-ASCII text and a lone surrogate."""

from __future__ import annotations

import json
import random
from typing import Any

from agent_cli.context import ContextBudget
from agent_cli.providers.anthropic import _encode, with_cache_breakpoints
from agent_cli.providers.body_json import BodyEncoder

Message = dict[str, Any]
TOOLS = [{"name": "read_file", "description": "Read a file.",
          "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}]


def _whole(body: dict[str, Any]) -> bytes:
    """What the provider sent before: one json.dumps of the whole streaming body."""
    text = json.dumps({**body, "stream": True}, ensure_ascii=False, separators=(",", ":"))
    return text.encode("utf-8", "replace")


def _body(messages: list[Message]) -> dict[str, Any]:
    return with_cache_breakpoints({"model": "claude-x", "max_tokens": 1024,
                                   "messages": messages, "tools": TOOLS,
                                   "system": "You are terse. ✓"})


def test_kept_encodings_give_the_bytes_of_one_dumps_over_a_long_session() -> None:
    rng = random.Random(5)
    encoder = BodyEncoder()
    budget = ContextBudget(40_000)
    history: list[Message] = [{"role": "user", "content": "start: naïve café ✓"}]
    reused = 0
    for i in range(300):
        call_id = f"toolu_{i:04d}"
        result = rng.choice(["ok", "é" * 300, "x" * 5_000, "bad \udcff byte", "日本語"])
        history.append({"role": "assistant", "content": [
            {"type": "text", "text": f"step {i}"},
            {"type": "tool_use", "id": call_id, "name": "read_file", "input": {"path": f"f{i}"}}]})
        history.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call_id, "content": result}]})
        if i % 61 == 30:
            history[:] = [{"role": "user", "content": f"again {i}"}]
        if i % 37 == 5 and len(history) > 3:  # changed in place: a block appended
            history[-3]["content"].append({"type": "text", "text": f"note {i}"})
        if i % 43 == 9 and len(history) > 4:  # ... or its content replaced in place
            history[-4]["content"] = [{"type": "text", "text": f"rewritten {i}"}]
        body = _body(budget(history))
        before = dict(encoder._kept)
        assert _encode(body, encoder) == _encode(body)  # bytes and the surrogate flag
        assert _encode(body, encoder)[0] == _whole(body)
        reused += sum(1 for m in body["messages"] if id(m) in before)
    assert reused > 300 * 50  # most messages came from the kept texts


def test_replaced_flag_matches_the_old_encoding() -> None:
    body = _body([{"role": "user", "content": "lone \udcff here"}])
    assert _encode(body, BodyEncoder()) == _encode(body)
    assert _encode(body)[1] is True
    plain = _body([{"role": "user", "content": "fine"}])
    assert _encode(plain, BodyEncoder()) == _encode(plain) == (_whole(plain), False)


def test_the_history_itself_growing_between_requests() -> None:
    """Without cache marks the body's list can be the history, which grows after a request:
    what was sent before must not be read from the grown list."""
    encoder = BodyEncoder()
    history: list[Message] = [{"role": "user", "content": "one"}]
    for i in range(40):
        body = {"model": "claude-x", "max_tokens": 10, "messages": history}
        assert _encode(body, encoder) == _encode(body)
        history.append({"role": "assistant", "content": [{"type": "text", "text": f"r{i}"}]})
        history.append({"role": "user", "content": f"u{i}"})
        if i % 9 == 4:  # the last message replaced by an equal copy, then one changed in place
            history[-1] = dict(history[-1])
            history[1]["content"] = [{"type": "text", "text": f"edited {i}"}]
    odd: list[Any] = [{"role": "user", "content": None}, {"role": "user", "content": 5}]
    body = {"messages": odd}
    assert _encode(body, encoder) == _encode(body)
