"""`--debug` / `-v` / `--debug-file FILE`: what is sent, shown exactly (redacted), checked against
what the fakes recorded; and Anthropic `strict` for the tools whose schema qualifies."""

from __future__ import annotations

import json
import re
import stat
import subprocess
from pathlib import Path
from typing import Any

from tests.fakes.anthropic_server import FakeAnthropic, text_reply, tool_reply
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.openai_server import text_reply as oa_text
from tests.providers.test_anthropic_e2e import run_env_in_process

KEY = "sk-ant-api03-" + "Zq7Xw2Lk9Pm4Rt6Yv8Bn1Cd3Fg5Hj0Ks" * 2
RECORD = re.compile(r"^--- agent-cli debug \d\d:\d\d:\d\d (.+?) ---$", re.MULTILINE)


def run_cli(args: list[str], env_extra: dict[str, str | None]) -> subprocess.CompletedProcess[str]:
    """`agent-cli run ARGS` with `env_extra`, in this process (the SDK is imported once)."""
    return run_env_in_process(args, env_extra, columns=None)


def records(text: str) -> list[tuple[str, Any]]:
    """(what, JSON document) for every debug record in `text`."""
    heads = list(RECORD.finditer(text))
    out = []
    for i, m in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(text)
        doc, _ = json.JSONDecoder().raw_decode(text[m.end():end].strip())
        out.append((m.group(1), doc))
    return out


def test_debug_prints_each_request_body_as_sent_and_each_reply(workspace: Path) -> None:
    with FakeAnthropic() as fake:
        base = fake.base_url
        fake.add(tool_reply(("toolu_1", "multiply", {"a": 6, "b": 7})), text_reply("42."))
        proc = run_cli([f"multiply 6 by 7, my key is {KEY}", "--workspace", str(workspace),
                        "-v"], {"ANTHROPIC_BASE_URL": fake.base_url,
                                "ANTHROPIC_API_KEY": "test-key"})
    assert proc.returncode == 0, proc.stderr
    got = records(proc.stderr)
    assert [w.split(" anthropic")[0] for w, _ in got] == ["request 1", "reply 1", "request 2",
                                                           "reply 2"]
    assert got[0][0] == f"request 1 anthropic POST {base}/v1/messages"
    sent = fake.requests[0].body
    shown = got[0][1]
    # Exactly the wire body (the tool schemas, cache marks, tool_choice), the key redacted.
    assert shown["tools"] == sent["tools"] and shown["tool_choice"] == sent["tool_choice"]
    assert shown["system"] == sent["system"]
    assert json.dumps(shown).replace("[REDACTED:anthropic]", KEY) == json.dumps(
        {k: v for k, v in sent.items() if k != "stream"})
    assert KEY not in proc.stderr and "test-key" not in proc.stderr
    assert got[1][1]["content"][0]["name"] == "multiply"
    assert got[3][1]["stop_reason"] == "end_turn"


def test_debug_file_is_private_and_shows_openai_strict_schemas(workspace: Path,
                                                               tmp_path: Path) -> None:
    out = tmp_path / "debug.txt"
    with FakeOpenAI() as fake:
        v1 = fake.v1_url
        fake.add(oa_text("hi"))
        proc = run_cli(["hello", "--workspace", str(workspace), "--provider", "openai",
                        "--model", "gpt-test", "--debug-file", str(out)],
                       {"OPENAI_BASE_URL": fake.v1_url, "OPENAI_API_KEY": "sk-test-key"})
    assert proc.returncode == 0, proc.stderr
    assert "agent-cli debug" not in proc.stderr
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    (what, body), (_, reply) = records(out.read_text())
    assert what == f"request 1 openai POST {v1.rstrip('/')}/chat/completions"
    assert body["tools"] == fake.requests[0].body["tools"]
    assert any(t["function"].get("strict") for t in body["tools"])
    assert reply["content"] == [{"type": "text", "text": "hi"}]


def test_anthropic_strict_for_tools_whose_schema_qualifies(workspace: Path) -> None:
    with FakeAnthropic() as fake:
        fake.add(text_reply("ok"))
        proc = run_cli(["hi", "--workspace", str(workspace)],
                       {"ANTHROPIC_BASE_URL": fake.base_url, "ANTHROPIC_API_KEY": "test-key"})
    assert proc.returncode == 0, proc.stderr
    tools = {t["name"]: t for t in fake.requests[0].body["tools"]}
    # read_file(path): every property required, no others, no bounds -> strict.
    assert tools["read_file"].get("strict") is True
    # multiply has numeric bounds, edit_file an optional argument: sent as they are.
    assert "strict" not in tools["multiply"] and "strict" not in tools["edit_file"]
    for name, tool in tools.items():
        if tool.get("strict"):
            schema = tool["input_schema"]
            assert schema["additionalProperties"] is False, name
            assert set(schema["required"]) == set(schema["properties"]), name
