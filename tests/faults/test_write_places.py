"""Every other place agent-cli writes, on a real disk that refuses: pins, the undo store, MCP
config edits (`mcp add`, `mcp import`), an eval report and an HTML export sent to a file. Each
is one sentence naming the file and the cause, with no temporary file left and the old content
intact."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_cli.tools.pin_file import write_pin_file
from agent_cli.undo.store import StatCache, Store
from agent_cli.write_faults import EXIT_CODE, WriteFault
from tests.faults.conftest import SmallDisk

REPO = Path(__file__).resolve().parents[2]


def cli(*args: str, stdout: Path | None = None, home: Path | None = None,
        ) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "300"}
    if home is not None:
        env["AGENT_CLI_HOME"] = str(home)
    if stdout is None:
        return subprocess.run([sys.executable, "-m", "agent_cli", *args], env=env, cwd=REPO,
                              capture_output=True, text=True, timeout=120)
    with open(stdout, "wb") as out:
        return subprocess.run([sys.executable, "-m", "agent_cli", *args], env=env, cwd=REPO,
                              stdout=out, stderr=subprocess.PIPE, text=True, timeout=120)


def one_sentence(proc: subprocess.CompletedProcess[str], *parts: str) -> None:
    assert proc.returncode == EXIT_CODE, (proc.returncode, proc.stderr)
    said = " ".join(proc.stderr.split())
    assert "Traceback" not in said and "Exception" not in said, said
    assert said.count("error:") == 1, said
    for part in parts:
        assert part in said, (part, said)


def test_a_pin_file_on_a_full_disk_keeps_the_old_pins(disk: SmallDisk) -> None:
    pins = disk.root / "pins.json"
    write_pin_file(pins, {"version": 1, "files": {}})
    old = pins.read_bytes()
    disk.fill()
    with pytest.raises(WriteFault) as refused:
        write_pin_file(pins, {"version": 1, "files": {f"f{i}": "x" * 64 for i in range(200)}})
    assert f"the pin file {pins}" in str(refused.value) and "is full" in str(refused.value)
    assert pins.read_bytes() == old
    assert disk.debris() == ["pins.json"]


def test_the_undo_store_on_a_full_disk_is_a_sentence_and_leaves_no_temp_file(
        disk: SmallDisk) -> None:
    store = Store(disk.root / "undo")
    store.put_bytes(b"small")
    disk.fill()
    with pytest.raises(WriteFault) as refused:
        store.put_bytes(os.urandom(64 * 1024))
    assert "the undo store" in str(refused.value) and "is full" in str(refused.value)
    src = disk.root.parent / "big.bin"
    src.write_bytes(os.urandom(64 * 1024))
    fd = os.open(src, os.O_RDONLY)
    try:
        with pytest.raises(WriteFault):
            store.put_fd(fd)
    finally:
        os.close(fd)
    assert list((disk.root / "undo" / "tmp").iterdir()) == [], "a temp object was left"
    cache = StatCache(store, "ws")
    cache.entries = {(1, i): ((i, i, i), "0" * 64) for i in range(2000)}
    cache.dirty = True
    cache.save()  # a cache that cannot be saved costs a re-read later; never an error
    assert [p.name for p in (disk.root / "undo" / "statcache").iterdir()] == []


def test_mcp_add_on_a_full_disk_leaves_the_config_whole(tmp_path: Path, disk: SmallDisk) -> None:
    config = disk.root / "config.toml"
    config.write_text("# my settings\nmodel = \"m\"\n" + "# padding\n" * 300, encoding="utf-8")
    old = config.read_bytes()
    disk.fill()
    proc = cli("mcp", "add", "--config", str(config), "files", "--", "/bin/echo",
               "x" * 5000, home=tmp_path / "home")
    one_sentence(proc, "the config file", "is full")
    assert config.read_bytes() == old, "the config was cut short"
    assert disk.debris() == ["config.toml"]


def test_mcp_import_on_a_read_only_disk_is_a_sentence(tmp_path: Path, disk: SmallDisk) -> None:
    config = disk.root / "config.toml"
    config.write_text("model = \"m\"\n", encoding="utf-8")
    source = tmp_path / "claude.json"
    source.write_text(json.dumps({"mcpServers": {"a": {"command": "/bin/true"}}}),
                      encoding="utf-8")
    disk.read_only()
    proc = cli("mcp", "import", "--yes", "--config", str(config), str(source),
               home=tmp_path / "home")
    one_sentence(proc, "the config file", "read-only file system")
    assert config.read_text(encoding="utf-8") == "model = \"m\"\n"


def _a_log(tmp_path: Path) -> Path:
    from agent_cli import events as ev
    from agent_cli.log.writer import SessionLog

    path = tmp_path / "s.jsonl"
    log = SessionLog(path)
    log.write(ev.SessionStart(version="t", model="m", provider="scripted", workspace="/w",
                              tools=[], system=""))
    for i in range(200):
        log.write(ev.UserMessage(text=f"message {i} " + "z" * 200))
    log.write(ev.SessionEnd(reason="exit"))
    log.close()
    return path


def test_an_html_export_to_a_full_disk_is_a_sentence(tmp_path: Path, disk: SmallDisk) -> None:
    log = _a_log(tmp_path)
    disk.fill()
    target = disk.root / "out.html"
    disk.free()
    target.touch()
    disk.fill()
    proc = cli("replay", str(log), "-o", "html", stdout=target)
    one_sentence(proc, "the HTML export", str(target), "is full")


EVAL_TASKS = """
[[tasks]]
id = "says-hi"
prompt = "say hi"
workspace = "ws"
script = "script.json"
answer = "hi"
"""


def test_an_eval_report_to_a_full_disk_is_a_sentence(tmp_path: Path, disk: SmallDisk) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "script.json").write_text(json.dumps(
        [{"content": [{"type": "text", "text": "hi " + "h" * 9000}], "stop_reason": "end_turn"}]),
        encoding="utf-8")
    tasks = tmp_path / "tasks.toml"
    tasks.write_text(EVAL_TASKS, encoding="utf-8")
    target = disk.root / "report.json"
    target.touch()
    disk.fill()
    proc = cli("eval", str(tasks), "-o", "json", "--log-dir", str(tmp_path / "logs"),
               stdout=target)
    one_sentence(proc, "the eval report", str(target), "is full")


MCP_SERVER = '''
from mcp.server.mcpserver import MCPServer

server = MCPServer("tiny")


@server.tool(description="Echoes.")
def echo(text: str) -> str:
    return text


server.run()
'''


@pytest.mark.mcp
def test_an_mcp_server_whose_stderr_log_cannot_be_opened_fails_with_the_sentence(
        tmp_path: Path, disk: SmallDisk, home_on_disk: Path) -> None:
    from agent_cli.approval import ScriptedApprover
    from agent_cli.config import MCPServer, Settings
    from agent_cli.providers.scripted import ScriptedProvider
    from agent_cli.session import Session
    from agent_cli.tools.loader import load_tools

    script = tmp_path / "tiny.py"
    script.write_text(MCP_SERVER, encoding="utf-8")
    (home_on_disk / "mcp-logs").mkdir(parents=True)
    (home_on_disk / "sessions").mkdir()
    from agent_cli.log.keys import log_key

    log_key(create=True)
    disk.read_only()  # the session's own log is elsewhere; the server's stderr log is here
    try:
        registry, _ = load_tools([])
        settings = Settings(provider="scripted", mcp={"servers": {
            "tiny": MCPServer(command=sys.executable, args=[str(script)])}})
        ws = tmp_path / "ws"
        ws.mkdir()
        session = Session(settings, workspace=ws, provider=ScriptedProvider([]),
                          registry=registry, approver=ScriptedApprover([]),
                          log_path=tmp_path / "s.jsonl", start_mcp=True)
        assert session.mcp is not None
        session.mcp.wait_ready()
        [state] = session.mcp.snapshot()
        session.close()
    finally:
        disk.writable()
    assert state.state == "failed"
    assert "Could not open its stderr log" in state.reason
    assert "read-only file system" in state.reason
