"""Token usage and cost: per turn, per model, for the session.

A sink on the event stream: it counts `model_reply.usage` (and the usage of a /compact summary
request, carried by its notice) under the model that was asked, so a /model switch mid-session
is priced correctly. Cost needs the model in config `prices` (USD per million tokens); the key is
the model name or a prefix of it ("gpt-4o" prices "gpt-4o-2024-08-06"). Without a price, tokens are
shown and cost is not: never a guessed number.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from agent_cli import events as ev

Usage = dict[str, int]

# Anthropic's published multipliers on the input price, used when the table has no
# cache_write / cache_read entry for the model.
CACHE_WRITE_FACTOR = 1.25
CACHE_READ_FACTOR = 0.1


def price_for(prices: Mapping[str, Mapping[str, float]], model: str) -> Mapping[str, float] | None:
    """Exact name first, then the longest configured name the model starts with."""
    if model in prices:
        return prices[model]
    best = max((k for k in prices if k and model.startswith(k)), key=len, default=None)
    return prices[best] if best is not None else None


def cost_of(usage: Mapping[str, int], price: Mapping[str, float]) -> float:
    """USD for `usage` at `price` (per million tokens)."""
    inp = float(price.get("input", 0.0))
    out = float(price.get("output", 0.0))
    write = float(price.get("cache_write", inp * CACHE_WRITE_FACTOR))
    read = float(price.get("cache_read", inp * CACHE_READ_FACTOR))
    return (
        usage.get("input_tokens", 0) * inp
        + usage.get("output_tokens", 0) * out
        + usage.get("cache_creation_input_tokens", 0) * write
        + usage.get("cache_read_input_tokens", 0) * read
    ) / 1_000_000


def _add(total: Usage, usage: Mapping[str, Any]) -> None:
    for k, v in usage.items():
        if isinstance(v, int) and not isinstance(v, bool):
            total[k] = total.get(k, 0) + v


def fmt_cost(usd: float) -> str:
    return f"${usd:.4f}" if usd < 1 else f"${usd:,.2f}"


class UsageMeter:
    """Counts tokens from the events; answers totals, cost and the line shown after a turn."""

    def __init__(self, prices: Mapping[str, Mapping[str, float]], model_of: Callable[[], str]):
        self.prices = prices
        self.model_of = model_of
        self.by_model: dict[str, Usage] = {}
        self.requests = 0
        self._turn: dict[str, Usage] = {}
        self.last_turn: dict[str, Usage] = {}

    def __call__(self, event: ev.AnyEvent) -> None:
        if isinstance(event, ev.ModelReply):
            self.add(self.model_of(), event.usage)
        elif isinstance(event, ev.Notice) and event.kind == "compact":
            usage = getattr(event, "usage", None)
            if isinstance(usage, dict):
                # counted for the session, not for the next turn's line
                self.add(str(getattr(event, "model", None) or self.model_of()), usage, turn=False)
        elif isinstance(event, ev.TurnEnd):
            self.last_turn, self._turn = self._turn, {}

    def add(self, model: str, usage: Mapping[str, Any], *, turn: bool = True) -> None:
        self.requests += 1
        _add(self.by_model.setdefault(model, {}), usage)
        if turn:
            _add(self._turn.setdefault(model, {}), usage)

    def total(self) -> Usage:
        out: Usage = {}
        for usage in self.by_model.values():
            _add(out, usage)
        return out

    def cost(self, per_model: Mapping[str, Usage] | None = None) -> float | None:
        """USD for these counts, or None when some model with tokens has no price."""
        usd = 0.0
        for model, usage in (self.by_model if per_model is None else per_model).items():
            if not any(usage.values()):
                continue
            price = price_for(self.prices, model)
            if price is None:
                return None
            usd += cost_of(usage, price)
        return usd

    def turn_line(self) -> str:
        """The dim line after a turn: this turn's tokens (and cost), then the session's."""
        turn: Usage = {}
        for usage in self.last_turn.values():
            _add(turn, usage)
        if not turn:
            return ""
        parts = [f"tokens: {_io(turn)}"]
        turn_cost = self.cost(self.last_turn)
        if turn_cost is not None:
            parts.append(fmt_cost(turn_cost))
        session = f"session {_io(self.total())}"
        total_cost = self.cost()
        if total_cost is not None:
            session += f" · {fmt_cost(total_cost)}"
        return " · ".join(parts) + "  (" + session + ")"

    def report(self) -> str:
        """What /usage prints: per model, the total, and the cost where prices are known."""
        if not self.by_model:
            return "No model requests yet in this session."
        lines = []
        for model, usage in self.by_model.items():
            price = price_for(self.prices, model)
            cost = fmt_cost(cost_of(usage, price)) if price is not None else "no price configured"
            lines.append(f"{model}: {_io(usage)}{_cache(usage)} · {cost}")
        total = self.total()
        total_cost = self.cost()
        lines.append(
            f"session: {self.requests} request{'s' if self.requests != 1 else ''}, "
            f"{_io(total)}{_cache(total)}"
            + (f" · {fmt_cost(total_cost)}" if total_cost is not None else "")
        )
        if total_cost is None:
            lines.append("(add [prices.\"MODEL\"] input/output USD per million tokens to your "
                         "config to see cost)")
        return "\n".join(lines)


def _io(usage: Mapping[str, int]) -> str:
    return f"{usage.get('input_tokens', 0):,} in / {usage.get('output_tokens', 0):,} out"


def _cache(usage: Mapping[str, int]) -> str:
    write = usage.get("cache_creation_input_tokens", 0)
    read = usage.get("cache_read_input_tokens", 0)
    if not (write or read):
        return ""
    return f" (cache: {write:,} written, {read:,} read)"
