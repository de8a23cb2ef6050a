"""tool_choice on the real wire: what each request carries, and what the host runs.

A forced choice (`any`, `required`, a named tool) is sent with the first request of a turn and
then auto again (config `tool_choice_after_call = "keep"` keeps it). The fakes here obey the
choice the way the real APIs do: a forced request is answered with a call, an auto one with text.
Against such an API a choice sent on every request would never let the model answer. And the
host holds the model to the choice: a call outside it is refused like an unknown tool.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.fakes.anthropic_server import FakeAnthropic, text_reply, tool_reply
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.openai_server import text_reply as oa_text
from tests.fakes.openai_server import tool_reply as oa_tool
from tests.providers.test_anthropic_e2e import run_env_in_process


def run_cli(args: list[str], env_extra: dict[str, str | None]) -> subprocess.CompletedProcess[str]:
    """`agent-cli run ARGS` with `env_extra`, in this process (the SDK is imported once)."""
    return run_env_in_process(args, env_extra)


def obeying_anthropic(body: dict[str, Any]) -> dict[str, Any]:
    """Answers like the API that obeys tool_choice: forced -> a multiply call (its input varies,
    as a model's does), otherwise the answer in text."""
    choice = body.get("tool_choice", {})
    n = sum(1 for m in body["messages"] if m["role"] == "assistant")
    if choice.get("type") in ("any", "tool"):
        return tool_reply((f"toolu_{n}", "multiply", {"a": 6 + n, "b": 7}))
    return text_reply("6 x 7 = 42.")


def obeying_openai(body: dict[str, Any]) -> dict[str, Any]:
    choice = body.get("tool_choice")
    n = sum(1 for m in body["messages"] if m["role"] == "assistant")
    if choice == "required" or isinstance(choice, dict):
        return oa_tool((f"call_{n}", "multiply", {"a": 6 + n, "b": 7}))
    return oa_text("6 x 7 = 42.")


def anthropic_env(fake: FakeAnthropic) -> dict[str, str]:
    return {"ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "test-key"}


def openai_env(fake: FakeOpenAI) -> dict[str, str]:
    return {"OPENAI_BASE_URL": fake.v1_url, "OPENAI_API_KEY": "sk-test-key"}


def test_a_named_choice_is_sent_first_then_auto_and_the_run_ends_normally(
        workspace: Path) -> None:
    with FakeAnthropic(responder=obeying_anthropic) as fake:
        proc = run_cli(["multiply 6 by 7", "--workspace", str(workspace),
                        "--tool-choice", "multiply"], anthropic_env(fake))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "6 x 7 = 42."
    choices = [r.body["tool_choice"] for r in fake.requests]
    assert choices == [{"type": "tool", "name": "multiply"}, {"type": "auto"}]


def test_any_is_sent_first_then_auto_and_a_second_turn_is_forced_again(
        workspace: Path, tmp_path: Path) -> None:
    """`any` applies to the first request of each turn (a session of two turns, in-process)."""
    from agent_cli.approval import NonInteractiveApprover
    from agent_cli.config import Settings
    from agent_cli.providers.anthropic import AnthropicProvider
    from agent_cli.session import Session
    from agent_cli.tools.loader import load_tools

    with FakeAnthropic(responder=obeying_anthropic) as fake:
        registry, report = load_tools([])
        provider = AnthropicProvider("claude-test", api_key="test-key", base_url=fake.base_url)
        session = Session(Settings(tool_choice="any"), workspace=workspace, provider=provider,
                          registry=registry, approver=NonInteractiveApprover(),
                          log_path=tmp_path / "s.jsonl", load_report=report)
        session.start()
        first = session.send("multiply")
        second = session.send("again")
        session.close()
    assert (first.reason, second.reason) == ("end_turn", "end_turn")
    assert [r.body["tool_choice"]["type"] for r in fake.requests] == ["any", "auto", "any",
                                                                      "auto"]


def test_keep_sends_it_on_every_request(workspace: Path, tmp_path: Path) -> None:
    config = tmp_path / "c.toml"
    config.write_text('tool_choice_after_call = "keep"\n')
    with FakeAnthropic(responder=obeying_anthropic) as fake:
        proc = run_cli(["multiply", "--workspace", str(workspace), "--tool-choice", "any",
                        "--config", str(config), "--max-turns", "3"], anthropic_env(fake))
    assert proc.returncode == 3, proc.stderr  # forced every time: the model never answers
    assert [r.body["tool_choice"]["type"] for r in fake.requests] == ["any"] * 3


def test_openai_required_is_sent_first_then_auto(workspace: Path) -> None:
    with FakeOpenAI(responder=obeying_openai) as fake:
        proc = run_cli(["multiply", "--workspace", str(workspace), "--tool-choice", "any",
                        "--provider", "openai", "--model", "gpt-test"], openai_env(fake))
    assert proc.returncode == 0, proc.stderr
    assert [r.body["tool_choice"] for r in fake.requests] == ["required", "auto"]


def test_a_call_outside_a_named_choice_is_refused_not_run(workspace: Path) -> None:
    """The API named multiply; the server answered with write_file and read_file anyway."""
    (workspace / "notes.txt").write_text("private\n")
    with FakeAnthropic() as fake:
        fake.add(tool_reply(("toolu_1", "read_file", {"path": "notes.txt"}),
                            ("toolu_2", "multiply", {"a": 2, "b": 3})),
                 text_reply("done"))
        proc = run_cli(["go", "--workspace", str(workspace), "--tool-choice", "multiply",
                        "--output", "jsonl"], anthropic_env(fake))
    assert proc.returncode == 0, proc.stderr
    results = [b for b in fake.requests[1].body["messages"][-1]["content"]
               if b["type"] == "tool_result"]
    assert results[0]["is_error"] is True
    assert "required a call to multiply" in results[0]["content"]
    assert "private" not in json.dumps(results)
    assert results[1]["content"] == "6" and not results[1].get("is_error")
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    by_id = [e["type"] for e in events if e.get("id") == "toolu_1"]
    assert by_id == ["tool_proposed", "tool_invalid", "tool_result"]  # no approval, no run


def test_with_none_every_call_is_refused(workspace: Path) -> None:
    with FakeOpenAI() as fake:
        fake.add(oa_tool(("call_1", "multiply", {"a": 2, "b": 3})), oa_text("ok"))
        proc = run_cli(["go", "--workspace", str(workspace), "--tool-choice", "none",
                        "--provider", "openai", "--model", "gpt-test", "--output", "jsonl"],
                       openai_env(fake))
    assert proc.returncode == 0, proc.stderr
    assert [r.body["tool_choice"] for r in fake.requests] == ["none", "none"]
    answer = [m for m in fake.requests[1].body["messages"] if m["role"] == "tool"]
    assert "tool_choice none" in answer[0]["content"]
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    assert not [e for e in events if e["type"] == "tool_started"]
