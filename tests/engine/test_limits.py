"""The seeds' limits (issue 18 items 6-8): repeated identical calls, session budgets, a tool
timeout whose effect is unknown, and answers cut by max_tokens or refused. Exit codes are read
from `agent-cli run` against the real SDK and the loopback fake."""

from __future__ import annotations

import io
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel
from rich.console import Console

from agent_cli import events as ev
from agent_cli.approval import ScriptedApprover
from agent_cli.config import Settings
from agent_cli.providers.scripted import ScriptedProvider
from agent_cli.session import Session, session_scope
from agent_cli.tools.base import Tool, ToolContext
from agent_cli.tools.loader import load_tools
from agent_cli.ui.repl import run_repl
from tests.fakes.anthropic_server import FakeAnthropic, text_reply, tool_reply
from tests.providers.test_anthropic_e2e import no_traceback
from tests.providers.test_anthropic_e2e import run_in_process as run_cli
from tests.scripts import calls, done, use


def session_with(replies: list[dict[str, Any]], tmp_path: Path, *, tools: list[Tool] = (),
                 answers: list[str] = (), **extra: Any) -> tuple[Session, list[Any],
                                                                ScriptedProvider]:
    settings = Settings(provider="scripted", script="x", **extra)
    registry, report = load_tools([])
    assert not report.errors
    for tool in tools:
        registry.add(tool)
    provider = ScriptedProvider(replies)
    seen: list[Any] = []
    session = Session(settings, workspace=tmp_path, provider=provider,
                      registry=session_scope(settings, registry),
                      approver=ScriptedApprover(list(answers)), sinks=[seen.append],
                      log_path=tmp_path / "log" / "s.jsonl")
    session.start()
    return session, seen, provider


def results(seen: list[Any]) -> dict[str, ev.ToolResultEvent]:
    return {e.id: e for e in seen if isinstance(e, ev.ToolResultEvent)}


# --------------------------------------------------------------------------- item 6


def test_the_same_successful_call_is_pointed_out_then_stops(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("A")
    replies = [calls(use(f"r{i}", "read_file", {"path": "a.txt"})) for i in range(1, 6)]
    session, seen, provider = session_with([*replies, done()], ws)
    result = session.send("read it")
    out = results(seen)
    assert out["r1"].content == "A" and out["r2"].content == "A"
    assert out["r3"].content.startswith("A\n\n[agent-cli note: this is the same read_file call "
                                         "with the same input 3 times in a row")
    assert not out["r3"].is_error
    # the note reached the model with the result (the 4th request's history)
    sent = provider.requests[3].messages[-1]["content"][0]["content"]
    assert "[agent-cli note:" in sent
    # ignored once more: the turn stops, as for repeated failures
    assert "r4" in out and "r5" not in out
    assert result.reason == "repeated_failure"
    assert result.message == ("Stopped: read_file was called 4 times in a row with the same "
                              "input. Say how to proceed.")


def test_a_different_call_in_between_resets_the_count(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("A")
    replies = [calls(use("r1", "read_file", {"path": "a.txt"})),
               calls(use("r2", "read_file", {"path": "a.txt"})),
               calls(use("l1", "list_dir", {"path": "."})),
               calls(use("r3", "read_file", {"path": "a.txt"})),
               done()]
    session, seen, _ = session_with(replies, tmp_path)
    assert session.send("go").reason == "end_turn"
    assert not any("agent-cli note" in e.content for e in results(seen).values())


def test_max_tool_calls_ends_the_session_with_exit_8(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("A")
    with FakeAnthropic() as fake:
        fake.add(tool_reply(("c1", "read_file", {"path": "a.txt"}),
                            ("c2", "list_dir", {"path": "."}),
                            ("c3", "read_file", {"path": "a.txt"})),
                 text_reply("never asked for"))
        proc = run_cli(["--workspace", str(tmp_path), "--max-tool-calls", "2", "go"], fake)
        no_traceback(proc)
        assert proc.returncode == 8, proc.stdout + proc.stderr
        assert len(fake.requests) == 1
    said = " ".join((proc.stdout + proc.stderr).split())
    assert "Session budget reached: 2 of 2 tool calls (max_tool_calls) used" in said
    assert "not run: the session's budget of 2 tool calls" in said


def test_max_cost_usd_ends_the_session_with_exit_8(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("A")
    cfg = tmp_path / "cfg.toml"
    cfg.write_text('max_cost_usd = 0.01\n[prices."claude-sonnet-5-5"]\ninput = 100000.0\n'
                   'output = 100000.0\n')
    with FakeAnthropic() as fake:
        fake.add(tool_reply(("c1", "read_file", {"path": "a.txt"})), text_reply("never"))
        proc = run_cli(["--config", str(cfg), "--workspace", str(tmp_path), "go"], fake)
        no_traceback(proc)
        assert proc.returncode == 8, proc.stdout + proc.stderr
        assert len(fake.requests) == 1  # the call ran; the next request was not made
    said = " ".join((proc.stdout + proc.stderr).split())
    assert "(max_cost_usd); the session ends here" in said


def test_a_cost_budget_that_cannot_be_counted_is_refused(tmp_path: Path) -> None:
    """(The default model has a price in the shipped table: tests/adversarial/test_budget_cost.)"""
    proc = run_cli(["--workspace", str(tmp_path), "--max-cost-usd", "1", "--model",
                    "unpriced-model", "go"], None)
    no_traceback(proc)
    assert proc.returncode == 2
    assert "there is no price for the model unpriced-model" in " ".join(proc.stderr.split())


def test_the_repl_ends_when_the_budget_is_spent(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("A")
    replies = [calls(use("c1", "read_file", {"path": "a.txt"})), done("never")]
    session, seen, provider = session_with(replies, tmp_path, max_tool_calls=1)
    lines = iter(["first", "second"])
    read_count = []

    def read() -> str:
        read_count.append(1)
        return next(lines)

    buf = io.StringIO()
    run_repl(session, Console(file=buf, width=100), read)
    assert len(read_count) == 1  # the REPL did not ask for a second message
    assert len(provider.requests) == 1
    assert any(isinstance(e, ev.Notice) and e.kind == "budget" for e in seen)


# --------------------------------------------------------------------------- item 7


class _PutArgs(BaseModel):
    path: str


def slow_writer(verify_result: str | None) -> Tool:
    def run(args: _PutArgs, ctx: ToolContext) -> str:
        (ctx.workspace / args.path).write_text("partial")
        deadline = time.monotonic() + 60
        while not ctx.cancel.is_set() and time.monotonic() < deadline:
            time.sleep(0.02)
        return "finished"

    def verify(args: _PutArgs, ctx: ToolContext, raw: Any) -> str | None:
        assert (ctx.workspace / args.path).exists()
        return verify_result

    return Tool(name="slow_put", description="Writes slowly.", args=_PutArgs, run=run,
                effect="write", verify=verify, timeout_s=0.3)


@pytest.mark.parametrize(("found", "said"), [
    (None, "Checked after the timeout: the intended effect is in place."),
    ("the file holds 7 bytes, not 12", "Checked after the timeout: the file holds 7 bytes"),
])
def test_a_timed_out_write_says_its_effect_is_unknown_and_verifies(
        tmp_path: Path, found: str | None, said: str) -> None:
    replies = [calls(use("w1", "slow_put", {"path": "out.txt"})), done()]
    session, seen, _ = session_with(replies, tmp_path, tools=[slow_writer(found)], answers=["y"])
    session.send("write")
    out = results(seen)["w1"]
    assert out.is_error
    assert out.content.startswith("timed out after 0.3 s; its effect is unknown")
    assert said in out.content


# --------------------------------------------------------------------------- item 8


@pytest.mark.parametrize(("stop", "code", "said"), [
    ("max_tokens", 6, "The reply was cut off at the output limit (max_tokens 8192)"),
    ("refusal", 9, "The model declined to answer this request (stop reason: refusal)"),
])
def test_cut_or_refused_answers_are_announced_with_their_exit_code(
        tmp_path: Path, stop: str, code: int, said: str) -> None:
    with FakeAnthropic() as fake:
        fake.add({"content": [{"type": "text", "text": "The answer is"}], "stop_reason": stop})
        proc = run_cli(["--workspace", str(tmp_path), "go"], fake)
        no_traceback(proc)
        assert proc.returncode == code, proc.stdout + proc.stderr
        fake.add({"content": [{"type": "text", "text": "The answer is"}], "stop_reason": stop})
        jsonl = run_cli(["--workspace", str(tmp_path), "--output", "jsonl", "go"], fake)
    assert said in " ".join((proc.stdout + proc.stderr).split())  # notices: stderr
    assert jsonl.returncode == code
    assert said in " ".join(jsonl.stderr.split())  # the person watching stderr is told too
    assert f'"kind":"{stop}"' in jsonl.stdout.replace(" ", "")  # and it is a logged notice
