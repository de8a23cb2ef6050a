"""`agent-cli mcp import` keeps what other clients' keys mean: Gemini CLI's httpUrl/url,
tool lists, `"disabled": true`, and one line per key that was not imported."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agent_cli.config import load_settings
from tests.mcp.e2e.test_cli import agent

pytestmark = pytest.mark.mcp


def test_gemini_settings_keep_their_transports_and_tool_lists(tmp_path: Path) -> None:
    folder = tmp_path / ".gemini"
    folder.mkdir()
    src = folder / "settings.json"
    src.write_text(json.dumps({"theme": "Default", "mcpServers": {
        "remote": {"httpUrl": "http://127.0.0.1:9/mcp", "headers": {"X-A": "1"},
                   "includeTools": ["a", "b"], "excludeTools": ["b"], "timeout": 5000,
                   "trust": True},
        "events": {"url": "http://127.0.0.1:9/sse"},
        "local": {"command": "python3", "args": ["-m", "x"], "excludeTools": ["rm"]},
    }}))
    cfg = tmp_path / "cfg.toml"
    out = agent("mcp", "import", str(src), "--config", str(cfg), "--yes")
    assert out.returncode == 0, out.stdout + out.stderr
    servers = load_settings(cfg).mcp["servers"]
    remote, events, local = servers["remote"], servers["events"], servers["local"]
    assert remote.transport == "http" and remote.url == "http://127.0.0.1:9/mcp"
    assert remote.enabled_tools == ["a", "b"] and remote.disabled_tools == ["b"]
    assert not remote.trusted  # trust is a grant: never imported
    assert events.transport == "sse"  # Gemini CLI's url is SSE
    assert local.disabled_tools == ["rm"] and local.enabled_tools is None
    shown = out.stdout
    assert "enabled_tools = a b" in shown and "disabled_tools = b" in shown  # in the review
    assert "not imported: timeout" in shown  # the one key dropped, said once
    assert shown.count("not imported: timeout") == 1
    assert "trust in the file is ignored" in shown


def test_cline_roo_kiro_windsurf_keys(tmp_path: Path) -> None:
    src = tmp_path / "mcp_settings.json"  # Cline / Roo Code / Kiro / Windsurf shapes
    src.write_text(json.dumps({"mcpServers": {
        "off": {"command": "python3", "args": ["-m", "x"], "disabled": True,
                "alwaysAllow": ["t"], "disabledTools": ["drop"]},
        "on": {"command": "python3", "disabled": False, "autoApprove": []},
        "roo": {"type": "streamable-http", "url": "http://127.0.0.1:9/mcp",
                "disabledTools": ["x", "y"], "watchPaths": ["a"]},
        "surf": {"serverUrl": "http://127.0.0.1:9/mcp", "disabledTools": ["z"]},
        "plain": {"url": "http://127.0.0.1:9/mcp"},
    }}))
    cfg = tmp_path / "cfg.toml"
    out = agent("mcp", "import", str(src), "--config", str(cfg), "--yes")
    assert out.returncode == 0, out.stdout + out.stderr
    servers = load_settings(cfg).mcp["servers"]
    assert servers["off"].enabled is False and servers["off"].disabled_tools == ["drop"]
    assert servers["on"].enabled is True
    assert servers["roo"].transport == "http" and servers["roo"].disabled_tools == ["x", "y"]
    assert servers["surf"].url == "http://127.0.0.1:9/mcp"
    assert servers["surf"].disabled_tools == ["z"]
    assert servers["plain"].transport == "http"  # not a Gemini file: url is HTTP
    assert "enabled = false" in out.stdout
    assert out.stdout.count("not imported: watchPaths") == 1
    assert "not imported: disabled" not in out.stdout  # it was imported, as enabled = false
