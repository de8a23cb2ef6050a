"""Secrets never reach the log: every shape, in every place a secret can enter a session (a file a
tool reads, the user's message, a tool's input, the model's text), plus patterns from config; and
HTTP headers are never logged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_cli.approval import ScriptedApprover
from agent_cli.cli.app import app
from agent_cli.config import Settings
from agent_cli.log.verify import verify
from agent_cli.providers.scripted import ScriptedProvider
from agent_cli.session import Session, load_registry
from tests.fakes.anthropic_server import FakeAnthropic, Reply, text_reply
from tests.scripts import text, tool_use

PRIVATE_BODY = "MIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun"

# kind -> (text holding the secret, the secret value that must not reach the log)
SECRETS: dict[str, tuple[str, str]] = {
    "anthropic": ("key sk-ant-api03-Zq7xT2mN9bV4cL8kJ3hG6fD1sA5pO0iU here",
                  "sk-ant-api03-Zq7xT2mN9bV4cL8kJ3hG6fD1sA5pO0iU"),
    "openai": ("openai sk-proj-Qw3rTy7uIo9pAs1dFg5hJk2lZx4cVb8nM6 ok",
               "sk-proj-Qw3rTy7uIo9pAs1dFg5hJk2lZx4cVb8nM6"),
    "github": ("token ghp_aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gH3jK5 end",
               "ghp_aB3dE5gH7jK9mN1pQ3sT5vX7zA9cE1gH3jK5"),
    "slack": ("slack xoxb-2048-4096-Zy9Xw8Vu7Ts6Rq5 end", "xoxb-2048-4096-Zy9Xw8Vu7Ts6Rq5"),
    "aws": ("id AKIAZ7Q2R4T6Y8U0W3E5 end", "AKIAZ7Q2R4T6Y8U0W3E5"),
    "aws_secret": ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYq9Zt3Lk0Vw",
                   "wJalrXUtnFEMI/K7MDENG/bPxRfiCYq9Zt3Lk0Vw"),
    "private_key": ("-----BEGIN RSA PRIVATE KEY-----\n" + PRIVATE_BODY
                    + "\n-----END RSA PRIVATE KEY-----", PRIVATE_BODY),
    "bearer": ("Authorization: Bearer eyQ9.tok-en_77aa88bb99", "eyQ9.tok-en_77aa88bb99"),
    "env_password": ("DB_PASSWORD=hunter2hunter2x", "hunter2hunter2x"),
    "env_token": ("Github_Token: p4ssw0rdish-value-42", "p4ssw0rdish-value-42"),
    "env_key": ("export STRIPE_API_KEY='rk_live_51Habc123def456'", "rk_live_51Habc123def456"),
}


def _all_secrets(suffix: str) -> str:
    return "\n".join(t for t, _ in SECRETS.values()) + suffix


def _run(workspace: Path, log: Path, tools: Path, prompt: str, replies: list[dict[str, object]],
         settings: Settings | None = None) -> None:
    settings = settings or Settings(provider="scripted")
    registry, _ = load_registry(settings, [tools])
    s = Session(settings, workspace=workspace, provider=ScriptedProvider(replies),
                registry=registry, approver=ScriptedApprover(["y"] * 5), log_path=log)
    s.start()
    s.send(prompt)
    s.close()


def _assert_clean(log: Path) -> str:
    raw = log.read_text(encoding="ascii")
    decoded = "\n".join(json.dumps(json.loads(line), ensure_ascii=False)
                        for line in raw.splitlines())
    for kind, (_, secret) in SECRETS.items():
        assert secret not in raw and secret not in decoded, kind
    assert verify(log).ok
    return decoded


@pytest.mark.parametrize("place", ["file_read_by_a_tool", "user_message", "tool_input"])
def test_every_secret_shape_is_redacted_before_disk(place: str, workspace: Path, tmp_path: Path,
                                                    tools: Path) -> None:
    log = tmp_path / "s.jsonl"
    secrets = _all_secrets("")
    if place == "file_read_by_a_tool":
        (workspace / "config.env").write_text(secrets, encoding="utf-8")
        replies = [tool_use("toolu_r", "read_file", {"path": "config.env"}), text("read it")]
        prompt = "show me config.env"
    elif place == "user_message":
        replies = [text("noted")]
        prompt = "here are my keys:\n" + secrets
    else:
        replies = [tool_use("toolu_w", "echo_write", {"text": secrets}, "Echoing " + secrets),
                   text("done")]
        prompt = "echo them"
    _run(workspace, log, tools, prompt, replies)
    decoded = _assert_clean(log)
    for kind in ("anthropic", "openai", "github", "slack", "aws", "private_key", "bearer",
                 "env"):
        assert f"[REDACTED:{kind}]" in decoded, kind
    if place == "tool_input":
        # proposal, approval args, the model's text and the tool's echo are all redacted
        events = [json.loads(line) for line in log.read_text().splitlines()]
        kinds = {e["type"] for e in events if "[REDACTED:" in json.dumps(e)}
        assert {"model_reply", "tool_proposed", "approval", "tool_result"} <= kinds


def test_extra_patterns_from_config_are_redacted(workspace: Path, tmp_path: Path) -> None:
    (tmp_path / "c.toml").write_text('redact_patterns = ["ACME-[0-9]{6}"]\n', encoding="utf-8")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([text("the ticket ACME-424242 is closed")]), encoding="utf-8")
    log = tmp_path / "s.jsonl"
    result = CliRunner().invoke(app, ["run", "what about ACME-123456?", "--script", str(script),
                                      "--workspace", str(workspace), "--config",
                                      str(tmp_path / "c.toml"), "--log", str(log)])
    assert result.exit_code == 0, result.output
    raw = log.read_text()
    assert "ACME-123456" not in raw and "ACME-424242" not in raw
    assert raw.count("[REDACTED:custom]") == 2


@pytest.mark.parametrize("status", [200, 401, 500])
def test_http_headers_and_the_api_key_are_never_logged(status: int, workspace: Path,
                                                       tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-ant-api03-HeaderKey0123456789abcdefXYZ"
    log = tmp_path / "s.jsonl"
    config = tmp_path / "c.toml"
    config.write_text("retries = 0\n", encoding="utf-8")
    with FakeAnthropic() as fake:
        fake.add(text_reply("hello") if status == 200 else Reply(status=status))
        monkeypatch.setenv("ANTHROPIC_API_KEY", key)
        result = CliRunner().invoke(app, ["run", "hi", "--provider", "anthropic", "--base-url",
                                          fake.base_url, "--workspace", str(workspace),
                                          "--log", str(log), "--config", str(config),
                                          "--model", "claude-test"])
        assert fake.requests, result.output
        sent = fake.requests[0].headers
    assert key in (sent.get("authorization", "") + sent.get("x-api-key", ""))
    raw = log.read_text().lower()
    assert key.lower() not in raw
    for header in ("authorization", "anthropic-version", "user-agent", "content-type",
                   "x-stainless", "request-id", "bearer"):
        assert header not in raw, header
    assert verify(log).ok


def test_a_bad_pattern_in_config_is_one_sentence(workspace: Path, tmp_path: Path) -> None:
    (tmp_path / "c.toml").write_text('redact_patterns = ["("]\n', encoding="utf-8")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([text("hi")]), encoding="utf-8")
    result = CliRunner().invoke(app, ["run", "hi", "--script", str(script), "--workspace",
                                      str(workspace), "--config", str(tmp_path / "c.toml")])
    said = " ".join(result.output.split())
    assert result.exit_code == 2 and "redact_patterns" in said
    assert result.exception is None or isinstance(result.exception, SystemExit)
