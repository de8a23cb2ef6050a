"""The context budget sizes only new messages (cached by position): what it sends, and what it
reports, must equal a budget that sizes the whole history afresh, over a long session with
/clear, a replaced last message and a message changed in place."""

from __future__ import annotations

import json
import random
from typing import Any

from agent_cli.context import ContextBudget

Message = dict[str, Any]


def _exchange(i: int, rng: random.Random) -> list[Message]:
    call_id = f"toolu_{i:04d}"
    result = "r" * rng.choice([10, 200, 3_000, 20_000])
    return [
        {"role": "assistant", "content": [
            {"type": "text", "text": f"step {i}"},
            {"type": "tool_use", "id": call_id, "name": "read_file", "input": {"path": f"f{i}"}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call_id, "content": result},
        ]},
    ]


def _fresh(history: list[Message], budget: int) -> tuple[str, tuple[int, int, int, int]]:
    b = ContextBudget(budget)
    out = b(history)
    return json.dumps(out), (b.last_full_chars, b.last_sent_chars, b.last_elided, b.last_dropped)


def _check(cached: ContextBudget, history: list[Message], budget: int) -> None:
    out = cached(history)
    stats = (cached.last_full_chars, cached.last_sent_chars, cached.last_elided,
             cached.last_dropped)
    assert (json.dumps(out), stats) == _fresh(history, budget)
    assert cached.last_full_chars == len(json.dumps(history, ensure_ascii=False))


def test_cached_sizes_equal_the_uncached_computation_over_a_long_session() -> None:
    rng = random.Random(21)
    budget = 60_000
    cached = ContextBudget(budget)
    history: list[Message] = [{"role": "user", "content": "start"}]
    for i in range(400):
        history += _exchange(i, rng)
        _check(cached, history, budget)
        if i % 97 == 50:  # /clear
            history[:] = [{"role": "user", "content": f"again {i}"}]
            _check(cached, history, budget)
        if i % 41 == 7:  # the last message replaced by a new object (add_user_text)
            last = history[-1]
            history[-1] = {**last, "content": [*last["content"],
                                               {"type": "text", "text": "and more" * 50}]}
            _check(cached, history, budget)
        if i % 53 == 11:  # a message changed in place: a block appended to its content
            history[-1]["content"].append({"type": "text", "text": "appended" * 300})
            _check(cached, history, budget)
        if i % 67 == 13 and len(history) > 2:  # ... or its content replaced in place
            history[-2]["content"] = [{"type": "text", "text": "rewritten " * 400}]
            _check(cached, history, budget)


def test_a_changed_early_message_is_sized_again() -> None:
    cached = ContextBudget(10**9)
    history: list[Message] = [{"role": "user", "content": "a"}]
    rng = random.Random(1)
    for i in range(20):
        history += _exchange(i, rng)
    _check(cached, history, 10**9)
    history[3] = {"role": "assistant", "content": [{"type": "text", "text": "x" * 5_000}]}
    _check(cached, history, 10**9)
    del history[5:9]
    _check(cached, history, 10**9)
