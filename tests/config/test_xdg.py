"""Where agent-cli keeps its files: XDG base directories, AGENT_CLI_HOME over everything."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_cli.config import load_settings, locations

pytestmark = pytest.mark.skipif(sys.platform in ("win32", "darwin"),
                                reason="XDG directories are the Linux/Unix layout")


@pytest.fixture
def no_home(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.delenv("AGENT_CLI_HOME", raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    monkeypatch.delenv("XDG_DATA_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    return tmp_path / "user"


def test_defaults_are_dot_config_and_dot_local_share(no_home: Path) -> None:
    where = locations()
    assert where.config_file == no_home / ".config" / "agent-cli" / "config.toml"
    assert where.data == no_home / ".local" / "share" / "agent-cli"


def test_xdg_variables_move_config_and_data(no_home: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    where = locations()
    assert where.config_file == tmp_path / "cfg" / "agent-cli" / "config.toml"
    assert where.data == tmp_path / "data" / "agent-cli"


def test_relative_xdg_values_are_ignored(no_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The XDG specification: a relative path is invalid and must be ignored (it would otherwise
    put agent-cli's own files in whatever folder it runs in, usually the workspace)."""
    monkeypatch.setenv("XDG_CONFIG_HOME", "relative/cfg")
    monkeypatch.setenv("XDG_DATA_HOME", "relative/data")
    where = locations()
    assert where.config_file == no_home / ".config" / "agent-cli" / "config.toml"
    assert where.data == no_home / ".local" / "share" / "agent-cli"


def test_agent_cli_home_overrides_everything(no_home: Path, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("AGENT_CLI_HOME", str(tmp_path / "sandbox"))
    where = locations()
    assert where.config_file == tmp_path / "sandbox" / "config.toml"
    assert where.data == tmp_path / "sandbox"
    assert where.own_paths() == (tmp_path / "sandbox",)


def test_own_paths_cover_both_xdg_folders(no_home: Path) -> None:
    assert locations().own_paths() == (no_home / ".local" / "share" / "agent-cli",
                                       no_home / ".config" / "agent-cli")


def test_settings_come_from_the_xdg_config_file(no_home: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    cfg = tmp_path / "cfg" / "agent-cli" / "config.toml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text('model = "from-xdg"\n')
    assert load_settings().model == "from-xdg"


def test_a_config_left_in_the_old_place_is_still_read(no_home: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Older versions read DATA/config.toml; an upgrade must not silently drop it. Once the XDG
    file exists, it alone is read."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "cfg"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    legacy = tmp_path / "data" / "agent-cli" / "config.toml"
    legacy.parent.mkdir(parents=True)
    legacy.write_text('model = "legacy"\n')
    assert load_settings().model == "legacy"
    new = tmp_path / "cfg" / "agent-cli" / "config.toml"
    new.parent.mkdir(parents=True)
    new.write_text('model = "new"\n')
    assert load_settings().model == "new"


def test_a_real_run_reads_xdg_config_and_logs_under_xdg_data(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"content": [{"type": "text", "text": "done"}],
                                   "stop_reason": "end_turn"}]))
    cfg = tmp_path / "cfg" / "agent-cli" / "config.toml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text('model = "model-from-xdg-config"\n')
    ws = tmp_path / "ws"
    ws.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "AGENT_CLI_HOME"}
    env.update(HOME=str(tmp_path / "user"), XDG_CONFIG_HOME=str(tmp_path / "cfg"),
               XDG_DATA_HOME=str(tmp_path / "data"))
    proc = subprocess.run([sys.executable, "-m", "agent_cli", "run", "hi", "--script",
                           str(script), "--workspace", str(ws)], env=env, cwd=ws,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    [log] = (tmp_path / "data" / "agent-cli" / "sessions").glob("*.jsonl")
    start = json.loads(log.read_text().splitlines()[0])
    assert start["model"] == "model-from-xdg-config"
    assert (tmp_path / "data" / "agent-cli" / "log.key").is_file()
    assert not (tmp_path / "user").exists()
