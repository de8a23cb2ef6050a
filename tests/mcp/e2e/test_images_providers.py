"""An MCP image result reaches the model as an image in each provider's own format: the real
anthropic SDK and the OpenAI-compatible provider, each against its loopback fake, with the
hostile FastMCP server's `picture` tool (a one-pixel PNG). Asserted on what the fake received."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_cli.approval import ScriptedApprover
from agent_cli.config import MCPServer, Settings
from agent_cli.providers.anthropic import AnthropicProvider
from agent_cli.session import Session, make_provider
from agent_cli.tools.loader import load_tools
from tests.fakes import anthropic_server as fa
from tests.fakes import openai_server as fo
from tests.mcp.e2e.conftest import HOSTILE, PY

pytestmark = pytest.mark.mcp


def hostile(marker: str) -> dict[str, MCPServer]:
    return {"hostile": MCPServer(command=PY, args=[str(HOSTILE)], env={marker: "1"},
                                 mode="legacy")}


def session(settings: Settings, provider: Any, workspace: Path, tmp_path: Path) -> Session:
    registry, _ = load_tools([])
    s = Session(settings, workspace=workspace, provider=provider, registry=registry,
                approver=ScriptedApprover(["y"]), log_path=tmp_path / "s.jsonl", start_mcp=True)
    s.start()
    return s


@pytest.fixture
def fake_anthropic() -> Iterator[fa.FakeAnthropic]:
    with fa.FakeAnthropic() as server:
        yield server


@pytest.fixture
def fake_openai() -> Iterator[fo.FakeOpenAI]:
    with fo.FakeOpenAI() as server:
        yield server


def test_anthropic_gets_an_image_block_in_the_tool_result(
        fake_anthropic: fa.FakeAnthropic, workspace: Path, tmp_path: Path, marker: str) -> None:
    fake_anthropic.add(fa.tool_reply(("toolu_01", "hostile__picture", {})),
                       fa.text_reply("A dot."))
    provider = AnthropicProvider("claude-test", api_key="test-key",
                                 base_url=fake_anthropic.base_url, retry_cap_s=0.05)
    s = session(Settings(mcp={"servers": hostile(marker)}), provider, workspace, tmp_path)
    try:
        assert s.send("show me").reason == "end_turn"
    finally:
        s.close()
    last = fake_anthropic.requests[1].body["messages"][-1]
    result = next(b for b in last["content"] if b["type"] == "tool_result")
    text, image = result["content"]
    assert text["type"] == "text" and "[image 1: image/png" in text["text"]
    assert "iVBOR" not in text["text"]
    assert image == {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                 "data": image["source"]["data"]}}
    assert image["source"]["data"].startswith("iVBOR")
    assert "iVBOR" not in (tmp_path / "s.jsonl").read_text()  # the log keeps the description


def test_openai_gets_image_url_parts_after_the_tool_messages(
        fake_openai: fo.FakeOpenAI, workspace: Path, tmp_path: Path, marker: str) -> None:
    fake_openai.add(fo.tool_reply(("call_1", "hostile__picture", {})), fo.text_reply("A dot."))
    settings = Settings(provider="openai", model="gpt-test", base_url=fake_openai.v1_url,
                        api_key="sk-test-key", retries=0, mcp={"servers": hostile(marker)})
    s = session(settings, make_provider(settings), workspace, tmp_path)
    try:
        assert s.send("show me").reason == "end_turn"
    finally:
        s.close()
    messages = fake_openai.requests[1].body["messages"]
    tool = next(m for m in messages if m["role"] == "tool")
    assert "[image 1: image/png" in tool["content"] and "iVBOR" not in tool["content"]
    after = messages[messages.index(tool) + 1]
    assert after["role"] == "user"
    kinds = [p["type"] for p in after["content"]]
    assert kinds == ["text", "image_url"]
    assert after["content"][1]["image_url"]["url"].startswith("data:image/png;base64,iVBOR")
