"""Secrets never reach the model, checked on the wire: what the fake Messages API and the fake
OpenAI endpoint recorded is what a real API would have been sent.

The attacker's angle is the model itself (or whoever reads the provider's logs): a tool that
fails quoting a connection string, or a `read_file .env`, must not hand it the password or key.
Errors are always redacted before the model; results are by default, with a mark the model reads
and a line the person sees; `redact_results = false` sends results whole (errors still not).
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from agent_cli import events as ev
from agent_cli.approval import NonInteractiveApprover
from agent_cli.config import Settings
from agent_cli.providers.anthropic import AnthropicProvider
from agent_cli.session import Session
from agent_cli.tools import Tool, ToolContext
from agent_cli.tools.loader import load_tools
from tests.fakes.anthropic_server import FakeAnthropic, text_reply, tool_reply
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.openai_server import text_reply as oa_text
from tests.fakes.openai_server import tool_reply as oa_tool
from tests.providers.test_anthropic_e2e import run_env_in_process

PASSWORD = "hunter2" + "pass"
ANTHROPIC_KEY = "sk-ant-api03-" + "Zq7Xw2Lk9Pm4Rt6Yv8Bn1Cd3Fg5Hj0Ks" * 2
GROQ_KEY = "gsk_" + "aB3dE5gH7jK9mN1pQ2xY" * 2 + "aB3dE5gH7jK9"


class _NoArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _connect(_args: _NoArgs, _ctx: ToolContext) -> str:
    raise ConnectionError(f"could not connect to postgres://app:{PASSWORD}@db/prod "
                          f"(client key {ANTHROPIC_KEY})")


CONNECT = Tool(name="db_connect", description="Connect to the database.", args=_NoArgs,
               effect="read", run=_connect)


def _session(fake: FakeAnthropic, workspace: Path, tmp_path: Path,
             **settings: Any) -> tuple[Session, list[Any]]:
    registry, report = load_tools([])
    registry.add(CONNECT)
    provider = AnthropicProvider("claude-test", api_key="test-key", base_url=fake.base_url,
                                 retry_cap_s=0.05)
    seen: list[Any] = []
    session = Session(Settings(**settings), workspace=workspace, provider=provider,
                      registry=registry, approver=NonInteractiveApprover(),
                      sinks=[seen.append], log_path=tmp_path / "s.jsonl", load_report=report)
    session.start()
    return session, seen


def _sent(fake: FakeAnthropic | FakeOpenAI) -> str:
    return "\n".join(r.raw_body.decode("utf-8") for r in fake.requests)


def test_an_error_quoting_secrets_reaches_the_model_redacted(workspace: Path,
                                                             tmp_path: Path) -> None:
    with FakeAnthropic() as fake:
        fake.add(tool_reply(("toolu_1", "db_connect", {})), text_reply("I could not connect."))
        # Even with results sent whole, an error text is redacted.
        session, seen = _session(fake, workspace, tmp_path, redact_results=False)
        session.send("connect")
        session.close()
        sent = _sent(fake)
    assert PASSWORD not in sent and ANTHROPIC_KEY not in sent
    result = json.loads(fake.requests[1].raw_body)["messages"][-1]["content"][0]
    assert result["is_error"] is True
    assert "postgres://app:[REDACTED:url_password]@db/prod" in result["content"]
    assert "[REDACTED:anthropic]" in result["content"]
    assert "agent-cli hid 2 secrets from this result" in result["content"]
    shown = [e for e in seen if isinstance(e, ev.ToolResultEvent)]
    assert shown[0].hidden == ["url_password", "anthropic"]
    assert PASSWORD in shown[0].whole(), "the person's own /show still has it"
    logged = (tmp_path / "s.jsonl").read_text()
    assert PASSWORD not in logged and ANTHROPIC_KEY not in logged


def run_cli(args: list[str], env_extra: dict[str, str | None]) -> subprocess.CompletedProcess[str]:
    """`agent-cli run ARGS` with `env_extra`, in this process (the SDK is imported once)."""
    return run_env_in_process(args, env_extra)


def test_read_file_of_a_dotenv_is_hidden_and_the_person_is_told(workspace: Path) -> None:
    (workspace / ".env").write_text(f"DEBUG=1\nGROQ_API_KEY={GROQ_KEY}\n")
    with FakeAnthropic() as fake:
        fake.add(tool_reply(("toolu_1", "read_file", {"path": ".env"})), text_reply("Read it."))
        proc = run_cli(["read .env", "--workspace", str(workspace)],
                       {"ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "test-key"})
        sent = _sent(fake)
    assert proc.returncode == 0, proc.stderr
    assert GROQ_KEY not in sent
    result = json.loads(fake.requests[1].raw_body)["messages"][-1]["content"][0]
    assert "GROQ_API_KEY=[REDACTED:groq]" in result["content"]
    assert "DEBUG=1" in result["content"]
    err = " ".join(proc.stderr.split())
    assert "agent-cli hid 1 secret from the model: groq (config redact_results = false" in err
    assert GROQ_KEY not in proc.stdout + proc.stderr


def test_redact_results_false_sends_the_file_whole(workspace: Path, tmp_path: Path) -> None:
    (workspace / ".env").write_text(f"GROQ_API_KEY={GROQ_KEY}\n")
    config = tmp_path / "c.toml"
    config.write_text("redact_results = false\n")
    with FakeOpenAI() as fake:
        fake.add(oa_tool(("call_1", "read_file", {"path": ".env"})), oa_text("Read it."))
        proc = run_cli(["read .env", "--workspace", str(workspace), "--config", str(config),
                        "--provider", "openai", "--model", "gpt-test"],
                       {"OPENAI_BASE_URL": fake.v1_url, "OPENAI_API_KEY": "sk-test-key"})
        sent = _sent(fake)
    assert proc.returncode == 0, proc.stderr
    assert GROQ_KEY in sent
    assert "hid" not in proc.stderr


def test_openai_wire_hides_it_by_default(workspace: Path) -> None:
    (workspace / ".env").write_text(f"GROQ_API_KEY={GROQ_KEY}\n")
    with FakeOpenAI() as fake:
        fake.add(oa_tool(("call_1", "read_file", {"path": ".env"})), oa_text("Read it."))
        proc = run_cli(["read .env", "--workspace", str(workspace), "--provider", "openai",
                        "--model", "gpt-test"],
                       {"OPENAI_BASE_URL": fake.v1_url, "OPENAI_API_KEY": "sk-test-key"})
        sent = _sent(fake)
    assert proc.returncode == 0, proc.stderr
    assert GROQ_KEY not in sent and "[REDACTED:groq]" in sent


def test_the_chat_says_how_to_see_it() -> None:
    """The chat's renderer names the `/show N` of the result (results counted as shown)."""
    from rich.console import Console

    from agent_cli.ui.render import Renderer

    console = Console(record=True, width=200, color_system=None)
    render = Renderer(console, repl=True)
    render(ev.ToolResultEvent(id="t1", name="multiply", is_error=False, content="42"))
    render(ev.ToolResultEvent(id="t2", name="read_file", is_error=False,
                              content="K=[REDACTED:aws_secret]", hidden=["aws_secret"]))
    text = console.export_text()
    assert "agent-cli hid 1 secret from the model: aws_secret; `/show 2` shows it to you" in text
