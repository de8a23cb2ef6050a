"""Family: what agent-cli keeps on disk is private. Session logs, the log key, pins, server logs
and the prompt history are created 0600 in folders made 0700 (a shared machine's other users
must not read what was typed or what tools returned); files an older version left 0644 are
tightened; and the history is redacted like the log, so a pasted key is not kept verbatim.

Real processes with the usual umask (022), real files, real prompt-toolkit history.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from agent_cli.redact import Redactor
from agent_cli.tools.mcp.pins import PinStore
from agent_cli.tools.trust import PluginPins
from agent_cli.ui.history import RedactedFileHistory
from tests.conftest import REPO

SECRET = "sk-ant-api03-" + "Q" * 40
GH = "ghp_" + "a1B2" * 9


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _agent(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "AGENT_CLI_HOME": str(home)}
    return subprocess.run([sys.executable, "-m", "agent_cli", *args], text=True,
                          capture_output=True, timeout=120, env=env, cwd=REPO,
                          preexec_fn=lambda: os.umask(0o022))


def _run(home: Path, ws: Path, *extra: str) -> None:
    done = _agent(home, "run", "--provider", "scripted", "--script",
                  str(REPO / "examples" / "demo_script.json"), "--workspace", str(ws), *extra,
                  "hi")
    assert "Traceback" not in done.stderr, done.stderr


def test_a_session_makes_its_files_0600_in_folders_0700(tmp_path: Path) -> None:
    home = tmp_path / "fresh" / "agent-cli"
    ws = tmp_path / "ws"
    ws.mkdir()
    _run(home, ws)
    assert _mode(home) == 0o700
    assert _mode(home / "sessions") == 0o700
    assert _mode(home / "log.key") == 0o600
    [log] = list((home / "sessions").glob("*.jsonl"))
    assert _mode(log) == 0o600


def test_too_open_files_and_folders_of_our_own_are_tightened(tmp_path: Path) -> None:
    home = tmp_path / "agent-cli"
    (home / "sessions").mkdir(parents=True)
    os.chmod(home, 0o755)
    os.chmod(home / "sessions", 0o755)
    (home / "log.key").write_text(os.urandom(32).hex() + "\n")
    os.chmod(home / "log.key", 0o644)
    old_log = tmp_path / "elsewhere" / "old.jsonl"
    old_log.parent.mkdir()
    old_log.write_text("")
    os.chmod(old_log, 0o644)
    os.chmod(old_log.parent, 0o755)
    ws = tmp_path / "ws"
    ws.mkdir()
    _run(home, ws, "--log", str(old_log))
    assert _mode(home) == 0o700 and _mode(home / "sessions") == 0o700
    assert _mode(home / "log.key") == 0o600
    assert _mode(old_log) == 0o600
    assert _mode(old_log.parent) == 0o755, "a folder that is not agent-cli's own is left alone"
    new_dir = tmp_path / "new" / "logs"
    _run(home, ws, "--log", str(new_dir / "s.jsonl"))
    assert _mode(new_dir) == 0o700 and _mode(new_dir / "s.jsonl") == 0o600


def test_plugin_and_mcp_pins_are_private(tmp_path: Path) -> None:
    os.umask(0o022)
    plugin = tmp_path / "p.py"
    plugin.write_text("x = 1\n")
    pins = PluginPins(tmp_path / "h1" / "plugin-pins.json")
    pins.trust(plugin)
    assert _mode(tmp_path / "h1") == 0o700 and _mode(tmp_path / "h1" / "plugin-pins.json") == 0o600
    store = PinStore(tmp_path / "h2" / "mcp-pins.json")
    store.accept("srv", {"t": {"name": "t", "description": "d", "inputSchema": {}}})
    assert _mode(tmp_path / "h2") == 0o700 and _mode(tmp_path / "h2" / "mcp-pins.json") == 0o600


def test_history_is_redacted_and_private(tmp_path: Path) -> None:
    os.umask(0o022)
    path = tmp_path / "home" / "history"
    history = RedactedFileHistory(path, Redactor.from_config([r"hunter\d+"]))
    history.store_string(f"use the key {SECRET} please")
    history.store_string("my password is hunter22\nand a second line")
    data = path.read_text()
    assert SECRET not in data and "hunter22" not in data
    assert "[REDACTED:anthropic]" in data and "[REDACTED:custom]" in data
    assert _mode(path) == 0o600 and _mode(path.parent) == 0o700
    # prompt-toolkit reads it back as two entries, newest first
    again = RedactedFileHistory(path, Redactor.from_config([]))
    assert list(again.load_history_strings()) == [
        "my password is [REDACTED:custom]\nand a second line",
        "use the key [REDACTED:anthropic] please"]


def test_an_old_verbatim_history_is_scrubbed_when_opened(tmp_path: Path) -> None:
    from prompt_toolkit.history import FileHistory

    path = tmp_path / "history"
    old = FileHistory(str(path))  # what earlier versions wrote: verbatim, 0644
    old.store_string("ls")
    old.store_string(f"export GITHUB_TOKEN={GH}")
    os.chmod(path, 0o644)
    RedactedFileHistory(path)
    data = path.read_text()
    assert GH not in data and "[REDACTED" in data and "+ls" in data
    assert _mode(path) == 0o600


@pytest.mark.parametrize("kind", ["fifo", "folder"])
def test_a_history_that_is_not_a_file_does_not_stop_the_chat(tmp_path: Path, kind: str) -> None:
    from agent_cli.ui.repl import open_history

    path = tmp_path / "history"
    if kind == "fifo":
        os.mkfifo(path)
    else:
        path.mkdir()
    history = open_history(path)
    assert type(history).__name__ == "InMemoryHistory"


@pytest.mark.pty
def test_the_chat_writes_a_redacted_history(tmp_path: Path) -> None:
    """Through the real REPL in a pty: a pasted key never reaches the history file."""
    import json
    import re

    import pexpect

    home = tmp_path / "home"
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"content": [{"type": "text", "text": "NOTED-IT"}],
                                   "stop_reason": "end_turn"}]))
    env = {**os.environ, "AGENT_CLI_HOME": str(home), "TERM": "xterm", "COLUMNS": "100",
           "PROMPT_TOOLKIT_NO_CPR": "1"}
    child = pexpect.spawn(sys.executable, ["-m", "agent_cli", "chat", "--provider", "scripted",
                                           "--script", str(script), "--workspace", str(tmp_path)],
                          env=env, cwd=str(REPO), timeout=60)
    paste_on = re.escape(b"\x1b[?2004h")
    try:
        child.expect(paste_on)
        child.send(f"remember {SECRET}\r")
        child.expect(b"NOTED-IT")
        child.expect(paste_on)
        child.send("/quit\r")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    data = (home / "history").read_text()
    assert "remember [REDACTED:anthropic]" in data and SECRET not in data
    assert _mode(home / "history") == 0o600
