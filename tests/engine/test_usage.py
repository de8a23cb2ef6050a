"""Usage and cost: per turn and per session, priced from config, across a /model switch; the dim
line after a turn in the REPL, /usage, and the log."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from agent_cli import events as ev
from agent_cli.config import Settings
from agent_cli.providers.scripted import ScriptedProvider
from agent_cli.session import Session
from agent_cli.tools.registry import Registry
from agent_cli.ui.commands import dispatch
from agent_cli.ui.repl import run_repl
from agent_cli.usage import UsageMeter, cost_of, price_for
from tests.scripts import make_session, started

PRICES = {"model-a": {"input": 3.0, "output": 15.0}, "gpt-4o": {"input": 2.5, "output": 10.0}}


def answer(text: str, inp: int, out: int) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "stop_reason": "end_turn",
            "usage": {"input_tokens": inp, "output_tokens": out}}


def priced_session(replies: list[dict[str, Any]], tmp_path: Path, workspace: Path,
                   prices: dict[str, dict[str, float]] | None = None,
                   model: str = "model-a") -> tuple[Session, ScriptedProvider, list[Any]]:
    """A started session over `replies` with these prices, no tools; (session, provider, events)."""
    provider = ScriptedProvider(replies, model=model)
    settings = Settings(provider="scripted", model=model, prices=prices or {})
    session, seen = started(make_session(workspace, log=tmp_path / "s.jsonl", settings=settings,
                                         provider=provider, registry=Registry()))
    return session, provider, seen


def test_price_lookup_exact_then_longest_prefix() -> None:
    prices = {"gpt-4o": {"input": 1.0}, "gpt-4o-mini": {"input": 0.1}, "gpt": {"input": 9.0}}
    assert price_for(prices, "gpt-4o") == {"input": 1.0}
    assert price_for(prices, "gpt-4o-mini-2024-07-18") == {"input": 0.1}
    assert price_for(prices, "gpt-4o-2024-08-06") == {"input": 1.0}
    assert price_for(prices, "claude-x") is None


def test_cost_per_million_tokens_with_cache_counters() -> None:
    usage = {"input_tokens": 1_000_000, "output_tokens": 100_000,
             "cache_creation_input_tokens": 1_000_000, "cache_read_input_tokens": 1_000_000}
    assert cost_of(usage, {"input": 3.0, "output": 15.0}) == pytest.approx(3 + 1.5 + 3.75 + 0.3)
    assert cost_of(usage, {"input": 3.0, "output": 15.0, "cache_write": 1.0, "cache_read": 0.0}) \
        == pytest.approx(3 + 1.5 + 1.0)


def test_turn_and_session_totals_with_cost(tmp_path: Path, workspace: Path) -> None:
    session, _, _ = priced_session([answer("one", 1000, 200), answer("two", 3000, 400)],
                                 tmp_path, workspace, PRICES)
    session.send("first")
    assert session.usage.turn_line() == (
        "tokens: 1,000 in / 200 out · $0.0060  (session 1,000 in / 200 out · $0.0060)")
    session.send("second")
    line = session.usage.turn_line()
    assert line.startswith("tokens: 3,000 in / 400 out · $0.0150")
    assert line.endswith("(session 4,000 in / 600 out · $0.0210)")
    report = str(dispatch(session, "/usage"))
    assert "model-a: 4,000 in / 600 out · $0.0210" in report
    assert "session: 2 requests, 4,000 in / 600 out · $0.0210" in report
    assert "context:" in report
    session.close()
    log = [json.loads(x) for x in session.log_path.read_text().splitlines()]
    assert [r["usage"] for r in log if r["type"] == "model_reply"] == [
        {"input_tokens": 1000, "output_tokens": 200}, {"input_tokens": 3000, "output_tokens": 400}]
    assert [r["usage"] for r in log if r["type"] == "turn_end"] == [
        {"input_tokens": 1000, "output_tokens": 200}, {"input_tokens": 3000, "output_tokens": 400}]


def test_without_a_price_tokens_are_shown_and_cost_is_not(tmp_path: Path,
                                                          workspace: Path) -> None:
    session, _, _ = priced_session([answer("x", 10, 5)], tmp_path, workspace, {}, model="mystery")
    session.send("hi")
    assert "$" not in session.usage.turn_line()
    report = str(dispatch(session, "/usage"))
    assert "mystery: 10 in / 5 out · no price configured" in report
    assert "[prices." in report


def test_model_switch_mid_session_is_logged_used_and_priced(tmp_path: Path,
                                                            workspace: Path) -> None:
    session, provider, seen = priced_session(
        [answer("a", 1_000_000, 0), answer("b", 1_000_000, 0)], tmp_path, workspace, PRICES)
    session.send("on model-a")
    assert dispatch(session, "/model gpt-4o-2024-08-06") is None
    assert "gpt-4o-2024-08-06" in str(dispatch(session, "/model"))
    assert "Usage" in str(dispatch(session, "/model two words"))
    session.send("on gpt-4o")

    assert [r.model for r in provider.requests] == ["model-a", "gpt-4o-2024-08-06"]
    assert session.usage.cost() == pytest.approx(3.0 + 2.5)
    notes = [e for e in seen if isinstance(e, ev.Notice) and e.kind == "model"]
    assert len(notes) == 1 and "from model-a to gpt-4o-2024-08-06" in notes[0].message
    session.close()
    log = [json.loads(x) for x in session.log_path.read_text().splitlines()]
    assert any(r["type"] == "notice" and r["kind"] == "model" for r in log)


def test_meter_reads_only_events() -> None:
    meter = UsageMeter(PRICES, lambda: "model-a")
    meter(ev.ModelReply(content=[], stop_reason="end_turn", usage={"input_tokens": 5}))
    meter(ev.TurnEnd(reason="end_turn", usage={"input_tokens": 5}))
    meter(ev.TextDelta("ignored"))
    assert meter.total() == {"input_tokens": 5}
    assert meter.turn_line().startswith("tokens: 5 in / 0 out")


def test_repl_prints_a_dim_usage_line_after_each_turn(tmp_path: Path, workspace: Path) -> None:
    session, _, _ = priced_session([answer("hello", 1234, 56)], tmp_path, workspace, PRICES)
    lines = iter(["hi", "/usage"])

    def read() -> str:
        try:
            return next(lines)
        except StopIteration:
            raise EOFError from None

    buf = io.StringIO()
    console = Console(file=buf, width=200, force_terminal=True, color_system="standard")
    run_repl(session, console, read)
    out = buf.getvalue()
    assert "\x1b[2mtokens: 1,234 in / 56 out · $0.0045" in out  # dim
    assert "session: 1 request, 1,234 in / 56 out" in out
