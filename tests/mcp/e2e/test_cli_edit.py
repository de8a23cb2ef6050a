"""`agent-cli mcp remove|enable|disable NAME`: only the server's own tables change, in the
config files that are read; a form the editor does not change is left to the user."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent_cli.config import load_settings
from tests.mcp.e2e.test_cli import agent

pytestmark = pytest.mark.mcp

CONFIG = '''# my settings
max_turns = 7

[mcp.servers.time]  # the clock
command = "mcp-server-time"
args = ["--local-timezone", "UTC"]

[mcp.servers.time.env]
TZ = "UTC"

[mcp.servers."my server"]
url = "http://127.0.0.1:9/mcp"
enabled = true

[mcp.servers.keep]
command = "keep"  # stays
'''


def test_disable_enable_remove_touch_only_that_server(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(CONFIG)
    out = agent("mcp", "disable", "time", "--config", str(cfg))
    assert out.returncode == 0, out.stderr
    servers = load_settings(cfg).mcp["servers"]
    assert servers["time"].enabled is False and servers["time"].env == {"TZ": "UTC"}
    assert servers["keep"].enabled and servers["my server"].enabled
    assert cfg.read_text() == CONFIG.replace("[mcp.servers.time]  # the clock\n",
                                             "[mcp.servers.time]  # the clock\nenabled = false\n")
    out = agent("mcp", "disable", "my server", "--config", str(cfg))
    assert out.returncode == 0, out.stderr
    assert 'enabled = true' not in cfg.read_text().split('"my server"]')[1].split("[")[0]
    assert agent("mcp", "enable", "time", "--config", str(cfg)).returncode == 0
    assert load_settings(cfg).mcp["servers"]["time"].enabled is True
    out = agent("mcp", "remove", "time", "--config", str(cfg), "--yes")
    assert out.returncode == 0, out.stderr
    text = cfg.read_text()
    assert "time" not in load_settings(cfg).mcp["servers"]
    assert "TZ" not in text and "mcp-server-time" not in text  # its sub-table went too
    assert text.startswith("# my settings\nmax_turns = 7\n")
    assert '[mcp.servers.keep]\ncommand = "keep"  # stays\n' in text


def test_remove_asks_and_without_a_terminal_changes_nothing(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(CONFIG)
    out = agent("mcp", "remove", "keep", "--config", str(cfg))  # stdin is not a terminal
    assert out.returncode == 2 and "--yes" in out.stderr
    assert 'command = "keep"' in out.stdout  # the lines that would go were shown
    assert cfg.read_text() == CONFIG


def test_unknown_names_and_inline_forms_are_refused(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg.toml"
    inline = '[mcp.servers]\nsmall = { command = "x" }\n'
    cfg.write_text(inline)
    out = agent("mcp", "disable", "small", "--config", str(cfg))
    assert out.returncode == 1 and "yourself" in out.stderr and "Traceback" not in out.stderr
    assert cfg.read_text() == inline
    out = agent("mcp", "remove", "nope", "--config", str(cfg), "--yes")
    assert out.returncode == 2 and "No MCP server named 'nope'" in out.stderr


def test_remove_takes_it_out_of_every_file_that_is_read(tmp_path: Path) -> None:
    user = Path(os.environ["AGENT_CLI_HOME"]) / "config.toml"
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_text('[mcp.servers.both]\ncommand = "a"\n\n[mcp.servers.mine]\ncommand = "m"\n')
    cfg = tmp_path / "cfg.toml"
    cfg.write_text('[mcp.servers.both]\ncommand = "b"\n')
    out = agent("mcp", "disable", "both", "--config", str(cfg))  # the file that decides it
    assert out.returncode == 0 and "enabled" not in user.read_text()
    assert load_settings(cfg).mcp["servers"]["both"].enabled is False
    out = agent("mcp", "remove", "both", "--config", str(cfg), "--yes")
    assert out.returncode == 0, out.stderr
    assert "both" not in load_settings(cfg).mcp["servers"]
    assert user.read_text() == '[mcp.servers.mine]\ncommand = "m"\n'
