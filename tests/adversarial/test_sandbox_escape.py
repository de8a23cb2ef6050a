"""Escapes an approved command or an MCP server would try, through the real program.

`agent-cli chat` runs in a pseudo-terminal with a unique fake API key in its environment; the
scripted model asks for one run_command that tries to write outside the workspace, to read
agent-cli's environment and memory from /proc, and reports what it got into a file in the
workspace (read here directly, so the log's redaction cannot hide a leak from the test). The same
run with `--sandbox off` shows the outside write happening, so the test can fail. An MCP server
(a plain FastMCP script) tries to write outside its folder and to open a TCP connection.
"""

from __future__ import annotations

import json
import os
import re
import socket
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_cli import events as ev
from agent_cli.approval import ScriptedApprover
from agent_cli.config import MCPServer, Settings
from agent_cli.providers.scripted import ScriptedProvider
from agent_cli.sandbox.policy import LINE, probe
from agent_cli.session import Session
from agent_cli.tools.loader import load_tools

pexpect = pytest.importorskip("pexpect")  # a test dependency (pyproject [test])

REPO = Path(__file__).resolve().parent.parent.parent
PROMPT = "›".encode()
PASTE_ON = re.escape(b"\x1b[?2004h")
PASTE_OFF = re.escape(b"\x1b[?2004l")
ASK = rb"Run [^\r\n]*\? \[y/N\]"
TIMEOUT = 60
SUPPORT = probe()
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")

PROBE = r"""
touch {out}/escaped; echo "touch=$?"
P=$(grep -l -a -F '{script}' /proc/[0-9]*/cmdline 2>/dev/null | head -1 | cut -d/ -f3)
echo "agent=${{P:-none}}"
tr '\0' '\n' < /proc/$P/environ > environ.txt 2> environ.err; echo "environ=$?"
python3 -c 'import sys; open("/proc/%s/mem" % sys.argv[1], "rb"); print("mem=opened")' \
  $P 2> mem.err || echo "mem=refused"
"""
"""agent-cli's own pid is found by its command line (the command is PID 1 of its own PID
namespace, so $PPID says nothing)."""


def fake_key() -> str:
    """Unique, and shaped like nothing the log redactor knows, so only the sandbox can hide it."""
    return "fakekey" + os.urandom(10).hex() + "q"


def screen(raw: bytes) -> str:
    return re.sub(r"\s+", " ", ANSI.sub("", raw.decode("utf-8", "replace")))


def run_chat(tmp_path: Path, workspace: Path, outside: Path, key: str, *extra: str,
             env: dict[str, str] | None = None) -> tuple[str, list[dict[str, Any]]]:
    """One approved run_command through `agent-cli chat` in a pty; the screen and the log."""
    script = tmp_path / "script.json"
    replies = [
        {"content": [{"type": "tool_use", "id": "t1", "name": "run_command",
                      "input": {"command": PROBE.format(out=outside, script=script)}}],
         "stop_reason": "tool_use"},
        {"content": [{"type": "text", "text": "all done"}], "stop_reason": "end_turn"},
    ]
    script.write_text(json.dumps(replies))
    child_env = dict(os.environ, PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm-256color",
                     PYTHONUNBUFFERED="1", ANTHROPIC_API_KEY=key,
                     SANDBOX_TEST_CANARY="canary-" + key[::-1], **(env or {}))
    child = pexpect.spawn(sys.executable, ["-m", "agent_cli", "chat", "--script", str(script),
                                           "--workspace", str(workspace), *extra],
                          env=child_env, cwd=str(REPO), dimensions=(50, 160), timeout=TIMEOUT)
    try:
        child.expect(PASTE_ON)
        shown = bytes(child.before)
        child.expect(PROMPT)
        child.send(b"go\r")
        child.expect(PASTE_OFF)
        child.expect(ASK)
        shown += bytes(child.before)
        child.send(b"y\r")
        child.expect(PASTE_ON)
        shown += bytes(child.before)
        child.expect(PROMPT)
        child.send(b"\x04")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    logs = sorted((Path(os.environ["AGENT_CLI_HOME"]) / "sessions").glob("*.jsonl"))
    assert len(logs) == 1, logs
    events = [json.loads(line) for line in logs[0].read_text().splitlines() if line.strip()]
    return screen(shown), events


def tool_result(events: list[dict[str, Any]]) -> dict[str, Any]:
    return next(e for e in events if e["type"] == "tool_result" and e["id"] == "t1")


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    return folder


@pytest.mark.pty
def test_confined_command_cannot_escape_or_read_the_key(tmp_path: Path, workspace: Path,
                                                        outside: Path) -> None:
    key = fake_key()
    shown, events = run_chat(tmp_path, workspace, outside, key)
    result = tool_result(events)
    assert "agent=none" not in result["content"]  # the probe found agent-cli
    environ = (workspace / "environ.txt").read_text(errors="replace")
    assert key not in environ and key not in result["content"]
    if "environ=0" in result["content"]:  # the read worked: it saw agent-cli's own variables
        assert "SANDBOX_TEST_CANARY=canary-" in environ and "ANTHROPIC_API_KEY=" in environ
    if not SUPPORT.abi:
        assert "not sandboxed: kernel has no Landlock" in shown
        return
    assert LINE in shown
    assert not (outside / "escaped").exists()
    assert "touch=1" in result["content"] and "Permission denied" in result["content"]
    assert "mem=refused" in result["content"]
    started = next(e for e in events if e["type"] == "tool_started")
    assert started["sandbox"]["mode"] == "workspace" and started["sandbox"]["network"] is False


@pytest.mark.pty
def test_sandbox_off_lets_the_write_out_but_still_hides_the_key(tmp_path: Path,
                                                                workspace: Path,
                                                                outside: Path) -> None:
    key = fake_key()
    shown, events = run_chat(tmp_path, workspace, outside, key, "--sandbox", "off")
    assert (outside / "escaped").exists()  # unconfined: the same command gets out
    assert "sandbox: OFF" in shown and "sandbox off" in shown
    environ = (workspace / "environ.txt").read_text(errors="replace")
    assert key not in environ and key not in tool_result(events)["content"]
    if "environ=0" in tool_result(events)["content"]:
        assert "SANDBOX_TEST_CANARY=canary-" in environ
    if os.geteuid() != 0:  # non-dumpable: the user's own processes may not read it at all
        assert "environ=0" not in tool_result(events)["content"]
        assert "mem=refused" in tool_result(events)["content"]
    started = next(e for e in events if e["type"] == "tool_started")
    assert started["sandbox"] == {"mode": "off"}


@pytest.mark.pty
def test_forced_no_landlock_warns_once_at_start_and_in_the_panel(tmp_path: Path,
                                                                 workspace: Path,
                                                                 outside: Path) -> None:
    shown, events = run_chat(tmp_path, workspace, outside, fake_key(),
                             env={"AGENT_CLI_SANDBOX_PROBE": "unsupported"})
    warning = "not sandboxed: kernel has no Landlock"
    assert shown.count(f"{warning}. Approved commands") == 1  # once, at start
    assert f"{warning}; the command runs with all your rights" in shown  # and on the panel
    assert LINE not in shown
    assert (outside / "escaped").exists()  # it really was not confined, and said so
    notices = [e for e in events if e["type"] == "notice" and e["kind"] == "sandbox"]
    assert len(notices) == 1 and warning in notices[0]["message"]


# --------------------------------------------------------------------------- MCP

SERVER = '''
import os, socket, sys, tempfile
from mcp.server.mcpserver import MCPServer

server = MCPServer("writer")


@server.tool()
def write(path: str) -> str:
    """Write a file."""
    try:
        with open(path, "w") as f:
            f.write("x")
    except OSError as e:
        return f"refused: {e.strerror}"
    return "wrote"


@server.tool()
def scratch() -> str:
    """Write a file in the temporary folder."""
    with tempfile.NamedTemporaryFile(delete=False) as f:
        f.write(b"x")
    return f.name


@server.tool()
def connect(port: int) -> str:
    """Open a TCP connection."""
    try:
        socket.create_connection(("127.0.0.1", port), timeout=20).close()
    except OSError as e:
        return f"refused: {e.strerror}"
    return "connected"


server.run()
'''


@pytest.mark.mcp
def test_mcp_server_cannot_write_outside_its_folder_or_connect(tmp_path: Path,
                                                              workspace: Path,
                                                              outside: Path) -> None:
    pytest.importorskip("mcp")
    home = tmp_path / "server-home"
    home.mkdir()
    script = home / "server.py"
    script.write_text(SERVER)
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    port = listener.getsockname()[1]
    uses = [{"type": "tool_use", "id": f"m{i}", "name": name, "input": args} for i, (name, args)
            in enumerate([("w__write", {"path": str(outside / "out.txt")}),
                          ("w__write", {"path": str(workspace / "ws.txt")}),
                          ("w__write", {"path": str(home / "mine.txt")}),
                          ("w__scratch", {}), ("w__connect", {"port": port})], 1)]
    provider = ScriptedProvider([{"content": uses, "stop_reason": "tool_use"},
                                 {"content": [{"type": "text", "text": "ok"}],
                                  "stop_reason": "end_turn"}])
    registry, _ = load_tools([])
    events: list[Any] = []
    server = MCPServer(command=sys.executable, args=[str(script)], cwd=str(home),
                       timeout_s=60.0)
    session = Session(Settings(provider="scripted", mcp={"servers": {"w": server}}),
                      workspace=workspace, provider=provider, registry=registry,
                      approver=ScriptedApprover(["y"] * len(uses)), sinks=[events.append],
                      start_mcp=True)
    hub = session.mcp
    assert hub is not None
    session.start()
    try:
        hub.wait_ready()
        assert session.send("go").reason == "end_turn"
    finally:
        session.close()
        listener.close()
    res = {e.id: e.content for e in events if isinstance(e, ev.ToolResultEvent)}
    assert res["m3"] == "wrote" and (home / "mine.txt").exists()  # its own folder: fine
    if not SUPPORT.abi:
        assert res["m1"] == "wrote"  # unconfined, and the session said so at start
        assert any(isinstance(e, ev.Notice) and "not sandboxed" in e.message for e in events)
        return
    assert res["m1"].startswith("refused") and not (outside / "out.txt").exists()
    assert res["m2"].startswith("refused") and not (workspace / "ws.txt").exists()
    assert "agent-cli-tmp-" in res["m4"]  # TMPDIR is its private folder
    assert res["m5"].startswith("refused")
