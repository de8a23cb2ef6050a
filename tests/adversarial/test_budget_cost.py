"""Family: limits enforced where the effect happens, part two: the cost budget.

`max_cost_usd = 0.30`, then `/model other-model`, a model with no price: its tokens counted for
nothing and the budget never tripped ($0.80 spent). The budget counts every model of the session;
under a budget, a model without a price can neither start a session nor be switched to; the
shipped price table is a price (so `--max-cost-usd` works on the default model); and without a
budget, the line after each turn keeps the dollar figure of the models it can price.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_cli import events as ev
from agent_cli.approval import ScriptedApprover
from agent_cli.config import Settings
from agent_cli.providers.scripted import ScriptedProvider
from agent_cli.session import Session
from agent_cli.tools.loader import load_tools
from agent_cli.ui.commands import cmd_model
from tests.fakes.anthropic_server import FakeAnthropic, text_reply
from tests.providers.test_anthropic_e2e import no_traceback
from tests.providers.test_anthropic_e2e import run_in_process as run_cli
from tests.scripts import text

MILLION = {"input_tokens": 1_000_000, "output_tokens": 0}
"""One reply's usage: $0.20 at the prices below."""
PRICES = {"model-a": {"input": 0.2, "output": 0.0}, "model-b": {"input": 0.2, "output": 0.0}}


def _session(tmp_path: Path, replies: list[dict[str, Any]], **settings: Any) -> Session:
    s = Settings(provider="scripted", script="x", **settings)
    registry, _ = load_tools([])
    session = Session(s, workspace=tmp_path, registry=registry, approver=ScriptedApprover([]),
                      provider=ScriptedProvider(replies, model="model-a"),
                      log_path=tmp_path / "log.jsonl")
    session.start()
    return session


def _spend(n: int) -> list[dict[str, Any]]:
    return [dict(text(f"answer {i}"), usage=MILLION) for i in range(n)]


def test_switching_to_an_unpriced_model_under_a_budget_is_refused(tmp_path: Path) -> None:
    session = _session(tmp_path, _spend(5), prices=PRICES, max_cost_usd=0.30)
    session.send("one")
    shown = cmd_model(session, "other-model")
    assert session.provider.model == "model-a", "not switched"
    assert shown is not None and "no price for the model other-model" in str(shown)
    assert session.send("two").reason == "end_turn"
    session.close()
    assert not any(isinstance(e, ev.Notice) and e.kind == "model"
                   for e in _events(session)), "no switch was logged"
    assert all(e.model == "model-a" for e in _events(session) if isinstance(e, ev.ModelReply)
               and e.model)


def test_the_budget_counts_every_model_of_the_session(tmp_path: Path) -> None:
    session = _session(tmp_path, _spend(5), prices=PRICES, max_cost_usd=0.30)
    assert session.send("on model a").reason == "end_turn"  # $0.20
    assert cmd_model(session, "model-b") is None  # priced: allowed
    assert session.send("on model b").reason == "end_turn"  # $0.40 in all
    third = session.send("one more")
    assert third.reason == "budget", "$0.40 of $0.30: the next request is not made"
    assert "$0.4000 spent of $0.3000" in (third.message or "")
    session.close()


def test_the_shipped_price_table_is_a_price(tmp_path: Path) -> None:
    """`--max-cost-usd` on the default model, which only the shipped table prices."""
    with FakeAnthropic() as fake:
        fake.add(text_reply("fine"))
        proc = run_cli(["--workspace", str(tmp_path), "--max-cost-usd", "0.5", "go"], fake)
    no_traceback(proc)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "fine" in proc.stdout


def test_an_unpriced_model_under_a_budget_is_refused_at_start(tmp_path: Path) -> None:
    proc = run_cli(["--workspace", str(tmp_path), "--max-cost-usd", "0.5", "--model",
                    "my-local-model", "go"], None)
    no_traceback(proc)
    assert proc.returncode == 2
    assert "no price for the model my-local-model" in " ".join(proc.stderr.split())


def test_the_turn_line_keeps_the_dollars_it_knows_after_an_unpriced_switch(
        tmp_path: Path) -> None:
    session = _session(tmp_path, _spend(3), prices=PRICES)  # no budget: any model may be used
    session.send("priced")
    assert "$0.2000" in session.usage.turn_line()
    assert cmd_model(session, "other-model") is None
    session.send("unpriced")
    line = session.usage.turn_line()
    assert "$0.2000" in line, line
    assert "other-model (no price)" in line
    assert "$0.2000" in session.usage.report()
    session.close()


def _events(session: Session) -> list[ev.AnyEvent]:
    from agent_cli.log.reader import read_events

    return [e for _, e in read_events(session.log_path)]
