"""Token usage and cost: per turn, per model, for the session.

A sink on the event stream: it counts `model_reply.usage` (and the usage of a /compact summary
request, carried by its notice) under the model that was asked, so a /model switch mid-session
is priced correctly. Prices come from the table shipped in the package (agent_cli/data/models.json,
the known Claude models) with config `prices` on top (USD per million tokens); the key is the model
name or a prefix of it ("gpt-4o" prices "gpt-4o-2024-08-06"). Without a price, tokens are shown and
cost is not: never a guessed number. The dollar figure of the models that have a price is still
shown, with the unpriced models' tokens named beside it.

The cost budget (`max_cost_usd`) counts every model of the session (`spent`), and a model without
a price can neither start a session under a budget nor be switched to (`budget_refusal`): its
tokens would not count, and the budget would never trip.

The same table gives each model's context window, so /usage can say how full the context was at
the last request, from the input the API reported (uncached + cache read + cache write).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from importlib import resources
from typing import Any

from agent_cli import events as ev

Usage = dict[str, int]

# Anthropic's published multipliers on the input price, used when the table has no
# cache_write / cache_read entry for the model.
CACHE_WRITE_FACTOR = 1.25
CACHE_READ_FACTOR = 0.1


DEFAULT_CONTEXT_WINDOW = 200_000


@functools.cache
def _table() -> dict[str, Any]:
    """The shipped model table (read once; stdlib json, no import cost worth counting)."""
    text = resources.files("agent_cli").joinpath("data/models.json").read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def builtin_prices() -> dict[str, dict[str, float]]:
    """Known models' list prices from the shipped table (no context_window entries)."""
    return {name: {k: float(v) for k, v in entry.items() if k != "context_window"}
            for name, entry in _table()["models"].items()}


def effective_prices(configured: Mapping[str, Mapping[str, float]]
                     ) -> dict[str, Mapping[str, float]]:
    """The shipped prices with config `prices` on top: a configured model replaces the shipped
    entry of that name whole, so a user's price is never mixed with ours."""
    merged: dict[str, Mapping[str, float]] = dict(builtin_prices())
    merged.update(configured)
    return merged


def context_window(model: str) -> int:
    """Tokens the model can take in one request: the shipped table (exact name, then the longest
    known prefix), else DEFAULT_CONTEXT_WINDOW."""
    models = _table()["models"]
    entry = models.get(model)
    if entry is None:
        best = max((k for k in models if model.startswith(k)), key=len, default=None)
        entry = models[best] if best is not None else {}
    window = entry.get("context_window") or _table().get("default_context_window")
    return int(window or DEFAULT_CONTEXT_WINDOW)


def context_tokens(usage: Mapping[str, Any]) -> int:
    """The whole prompt of one request in tokens: with caching, the API splits it into uncached
    input, cache reads and cache writes."""
    return sum(int(usage.get(k, 0) or 0) for k in (
        "input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))


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

    def __init__(self, prices: Mapping[str, Mapping[str, float]], model_of: Callable[[], str],
                 *, builtin: bool = True):
        self.prices = effective_prices(prices) if builtin else dict(prices)
        self.model_of = model_of
        self.last_context = 0
        """Prompt tokens of the last model request (0 before the first)."""
        self.last_model = ""
        self.by_model: dict[str, Usage] = {}
        self.requests = 0
        self._turn: dict[str, Usage] = {}
        self.last_turn: dict[str, Usage] = {}

    def __call__(self, event: ev.AnyEvent) -> None:
        if isinstance(event, ev.ModelReply):
            self.add(self.model_of(), event.usage)
            if context_tokens(event.usage):
                self.last_context = context_tokens(event.usage)
                self.last_model = self.model_of()
        elif isinstance(event, ev.Notice) and (done := event.compaction()) is not None:
            if done.usage:
                # counted for the session, not for the next turn's line
                self.add(done.model or self.model_of(), done.usage, turn=False)
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
        counts = self.by_model if per_model is None else per_model
        if self.unpriced(counts):
            return None
        return self.known_cost(counts)

    def known_cost(self, per_model: Mapping[str, Usage] | None = None) -> float:
        """USD of the models that have a price (all of them, when every model has one)."""
        usd = 0.0
        for model, usage in (self.by_model if per_model is None else per_model).items():
            price = price_for(self.prices, model)
            if price is not None and any(usage.values()):
                usd += cost_of(usage, price)
        return usd

    def unpriced(self, per_model: Mapping[str, Usage] | None = None) -> list[str]:
        """The models with tokens in these counts and no price."""
        return [model for model, usage in (self.by_model if per_model is None
                                           else per_model).items()
                if any(usage.values()) and price_for(self.prices, model) is None]

    def spent(self) -> float:
        """What the session's budget counts: every model's tokens at its price. (Under a budget
        every model has one: `budget_refusal` keeps the others out.)"""
        return self.known_cost()

    def budget_refusal(self, model: str, max_cost_usd: float | None) -> str | None:
        """Why `model` may not be used under the budget (a sentence), or None: a budget is set
        and neither config `prices` nor the shipped table prices the model."""
        if max_cost_usd is None or price_for(self.prices, model) is not None:
            return None
        return (f"max_cost_usd is set, but there is no price for the model {model}, so its "
                f'cost could not be counted. Add [prices."{model}"] input = ..., output = ... '
                "(USD per million tokens) to your config, use a model with a price, or use "
                "--max-tool-calls instead.")

    def money(self, counts: Mapping[str, Usage] | None = None) -> str:
        """The dollar figure of these counts (default: the session's), and the unpriced models'
        tokens beside it: `$0.0123 + 1,200 in / 80 out of X (no price)`."""
        counts = self.by_model if counts is None else counts
        parts = [fmt_cost(self.known_cost(counts))]
        parts += [f"+ {_io(counts[model])} of {model} (no price)"
                  for model in self.unpriced(counts)]
        return " ".join(parts)

    def turn_line(self) -> str:
        """The dim line after a turn: this turn's tokens and cost, then the session's. A model
        without a price keeps the figure of those that have one, its tokens named beside it."""
        turn: Usage = {}
        for usage in self.last_turn.values():
            _add(turn, usage)
        if not turn:
            return ""
        parts = [f"tokens: {_io(turn)}"]
        if self.any_priced(self.last_turn):
            parts.append(self.money(self.last_turn))
        elif self.any_priced(self.by_model):
            parts.append("no price for " + ", ".join(self.unpriced(self.last_turn)))
        session = f"session {_io(self.total())}"
        if self.any_priced(self.by_model):
            session += f" · {self.money(self.by_model)}"
        return " · ".join(parts) + "  (" + session + ")"

    def any_priced(self, counts: Mapping[str, Usage] | None = None) -> bool:
        """Whether some model with tokens in these counts (default: the session's) has a price."""
        counts = self.by_model if counts is None else counts
        return any(any(u.values()) and price_for(self.prices, m) is not None
                   for m, u in counts.items())

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
        lines.append(
            f"session: {self.requests} request{'s' if self.requests != 1 else ''}, "
            f"{_io(total)}{_cache(total)}"
            + (f" · {self.money(self.by_model)}" if self.any_priced(self.by_model) else "")
        )
        if self.unpriced():
            lines.append("(add [prices.\"MODEL\"] input/output USD per million tokens to your "
                         "config to see cost)")
        ctx = self.context_line()
        if ctx:
            lines.append(ctx)
        return "\n".join(lines)

    def context_share(self) -> float | None:
        """The last request's prompt as a share of its model's window (None before any)."""
        if not self.last_context:
            return None
        return self.last_context / context_window(self.last_model or self.model_of())

    def context_line(self) -> str:
        share = self.context_share()
        if share is None:
            return ""
        window = context_window(self.last_model or self.model_of())
        return (f"context: {self.last_context:,} of {window:,} tokens at the last request "
                f"({share:.1%} of the window)")


def _io(usage: Mapping[str, int]) -> str:
    return f"{usage.get('input_tokens', 0):,} in / {usage.get('output_tokens', 0):,} out"


def _cache(usage: Mapping[str, int]) -> str:
    write = usage.get("cache_creation_input_tokens", 0)
    read = usage.get("cache_read_input_tokens", 0)
    if not (write or read):
        return ""
    return f" (cache: {write:,} written, {read:,} read)"
