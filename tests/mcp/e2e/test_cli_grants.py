"""The `agent-cli mcp` commands as a user runs them (subprocesses): `--sandbox off` means for
`mcp list`, `tools` and `mcp accept` what it means for chat; `mcp add` writes the config that
is read and proposes the grants a command needs; `${VAR}` never reaches a server's command line.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from agent_cli.config import MCPServer, load_settings
from tests.mcp.e2e.conftest import PY
from tests.mcp.test_mcp import Run, calls, done, procs_with, use, wait_gone

pytestmark = pytest.mark.mcp

WRITER = Path(__file__).parent / "writer_server.py"


def agent(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None,
          timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([PY, "-m", "agent_cli", *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL, cwd=cwd,
                          env={**(env if env is not None else os.environ), "COLUMNS": "400"})


def writer_config(path: Path, state: Path, marker: str, extra: str = "") -> Path:
    path.write_text(f"{extra}[mcp.servers.w]\ncommand = {json.dumps(PY)}\n"
                    f"args = [{json.dumps(str(WRITER))}, \"--state-dir\", "
                    f"{json.dumps(str(state))}]\nmode = \"legacy\"\n"
                    f"env = {{ {marker} = \"1\" }}\n")
    return path


@pytest.mark.parametrize("command", [["mcp", "list"], ["tools"]])
def test_sandbox_off_means_off_for_every_command_that_starts_a_server(
        tmp_path: Path, marker: str, command: list[str]) -> None:
    state = tmp_path / "state"
    cfg = writer_config(tmp_path / "cfg.toml", state, marker)
    confined = agent(*command, "--config", str(cfg), "--workspace", str(tmp_path))
    assert confined.returncode == 1
    assert "by the kernel sandbox" in confined.stdout + confined.stderr
    assert not state.exists()
    off = agent(*command, "--config", str(cfg), "--workspace", str(tmp_path), "--sandbox", "off")
    assert off.returncode == 0, off.stdout + off.stderr
    assert "sandbox off: approved commands and MCP servers run with all your rights" in off.stdout
    assert (state / "state.json").exists()
    # The config's sandbox = "off" is the same as the flag.
    (state / "state.json").unlink()
    state.rmdir()
    cfg2 = writer_config(tmp_path / "cfg2.toml", state, marker, 'sandbox = "off"\n')
    assert agent(*command, "--config", str(cfg2), "--workspace", str(tmp_path)).returncode == 0
    assert (state / "state.json").exists()
    assert wait_gone(marker) == []


def test_mcp_accept_honours_sandbox_off(tmp_path: Path, marker: str) -> None:
    state = tmp_path / "state"
    cfg = writer_config(tmp_path / "cfg.toml", state, marker)
    refused = agent("mcp", "accept", "w", "--yes", "--config", str(cfg))
    assert refused.returncode == 1 and "by the kernel sandbox" in refused.stderr
    ok = agent("mcp", "accept", "w", "--yes", "--config", str(cfg), "--sandbox", "off")
    assert ok.returncode == 0, ok.stderr
    assert "Pinned" in ok.stdout and (state / "state.json").exists()


def test_mcp_add_writes_the_config_file_that_is_read(tmp_path: Path, marker: str) -> None:
    home = tmp_path / "home"
    user_cfg = home / ".config" / "agent-cli" / "config.toml"
    user_cfg.parent.mkdir(parents=True)
    user_cfg.write_text("max_turns = 9\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("AGENT_CLI_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME")}
    env["HOME"] = str(home)
    added = agent("mcp", "add", "time", "--env", f"{marker}=1", "--", PY, "-m",
                  "mcp_server_time", "--local-timezone", "UTC", env=env, cwd=tmp_path)
    assert added.returncode == 0, added.stderr
    assert str(user_cfg) in added.stdout
    assert "[mcp.servers.time]" in user_cfg.read_text()
    assert user_cfg.read_text().startswith("max_turns = 9\n")
    legacy = home / ".local" / "share" / "agent-cli" / "config.toml"
    assert not legacy.exists()
    listed = agent("mcp", "list", env=env, cwd=tmp_path)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert "time  ready" in listed.stdout and "No MCP servers" not in listed.stdout
    assert wait_gone(marker) == []


def test_mcp_add_proposes_the_grants_a_command_needs(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg.toml"
    data = tmp_path / "data"
    data.mkdir()
    # No terminal and no --grant: added without them, and told so.
    out = agent("mcp", "add", "db", "--config", str(cfg), "--", "mcp-server-sqlite",
                "--db-path", str(data / "test.db"))
    assert out.returncode == 0, out.stderr
    assert f'writable = ["{data}"]' in out.stdout and "--db-path" in out.stdout
    assert "Not granted" in out.stdout
    assert load_settings(cfg).mcp["servers"]["db"].writable == []
    # --grant accepts the proposal.
    out = agent("mcp", "add", "db2", "--config", str(cfg), "--grant", "--",
                "mcp-server-duckdb", f"--db-path={data / 'x.duckdb'}")
    assert out.returncode == 0, out.stderr
    assert load_settings(cfg).mcp["servers"]["db2"].writable == [str(data)]
    out = agent("mcp", "add", "ev", "--config", str(cfg), "--grant", "--", "/usr/bin/npx",
                "-y", "@modelcontextprotocol/server-everything")
    assert out.returncode == 0, out.stderr
    ev = load_settings(cfg).mcp["servers"]["ev"]
    assert (ev.writable, ev.network) == (["~/.npm"], True)
    out = agent("mcp", "add", "fetch", "--config", str(cfg), "--grant", "--", "uvx",
                "mcp-server-fetch")
    fetch = load_settings(cfg).mcp["servers"]["fetch"]
    assert (fetch.writable, fetch.network) == (["~/.cache/uv"], True)
    assert "fetch server reaches the network" in out.stdout
    # A plain command needs nothing: no question, no grant.
    out = agent("mcp", "add", "time", "--config", str(cfg), "--", PY, "-m", "mcp_server_time")
    assert "needs" not in out.stdout and "writable" not in cfg.read_text().split("time]")[1]


def test_var_in_args_is_refused_and_env_keeps_it_out_of_cmdline(
        tmp_path: Path, workspace: Path, marker: str, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = f"sk-test-{os.urandom(8).hex()}"
    monkeypatch.setenv("AGENT_CLI_TEST_SECRET", secret)
    cfg = tmp_path / "cfg.toml"
    out = agent("mcp", "add", "bad", "--config", str(cfg), "--", PY, str(WRITER), "--token",
                "${AGENT_CLI_TEST_SECRET}")
    assert out.returncode == 2 and "/proc/PID/cmdline" in out.stderr
    assert 'env = { AGENT_CLI_TEST_SECRET = "${AGENT_CLI_TEST_SECRET}" }' in out.stderr
    assert not cfg.exists()
    # Written by hand anyway: the server is not started, and its value is in no command line.
    in_args = MCPServer(command=PY, args=[str(WRITER), "--token", "${AGENT_CLI_TEST_SECRET}"],
                        env={marker: "1"}, mode="legacy")
    by_env = MCPServer(command=PY, args=[str(WRITER)], mode="legacy",
                       env={marker: "1", "TOKEN": "${AGENT_CLI_TEST_SECRET}"})
    run = Run(workspace, {"a": in_args, "e": by_env},
              [calls(use("c1", "e__env_has", {"name": "TOKEN"})), done()], answers=["y"])
    try:
        run.send()
        assert run.hub.servers["a"].state == "failed"
        assert "never expands it there" in run.hub.servers["a"].reason
        assert run.results()["c1"].content == f"TOKEN holds {len(secret)} characters"
        pids = procs_with(marker)
        assert pids
        end = time.monotonic() + 60
        while time.monotonic() < end and not any(
                str(WRITER).encode() in Path(f"/proc/{p}/cmdline").read_bytes() for p in pids):
            time.sleep(0.05)
        for pid in pids:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
            assert secret.encode() not in cmdline
        # Not in any process's command line on the machine.
        for proc in Path("/proc").iterdir():
            if proc.name.isdigit():
                try:
                    assert secret.encode() not in (proc / "cmdline").read_bytes()
                except OSError:
                    continue
    finally:
        run.close()
    assert wait_gone(marker) == []


def test_mcp_import_proposes_grants_and_takes_them_only_when_accepted(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    src = tmp_path / ".mcp.json"
    src.write_text(json.dumps({"mcpServers": {
        "fs": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem",
                                          str(project)]},
        "time": {"command": "mcp-server-time"}}}))
    cfg = tmp_path / "cfg.toml"
    out = agent("mcp", "import", str(src), "--config", str(cfg), "--yes")
    assert out.returncode == 0, out.stderr
    assert f'fs needs, confined by the sandbox: writable = ["~/.npm", "{project}"], network = ' \
           "true" in out.stdout
    assert "Not granted" in out.stdout  # --yes takes the servers, not the grants
    assert load_settings(cfg).mcp["servers"]["fs"].writable == []
    cfg2 = tmp_path / "cfg2.toml"
    out = agent("mcp", "import", str(src), "--config", str(cfg2), "--yes", "--grant")
    servers = load_settings(cfg2).mcp["servers"]
    assert (servers["fs"].writable, servers["fs"].network) == (["~/.npm", str(project)], True)
    assert (servers["time"].writable, servers["time"].network) == ([], False)


def test_mcp_add_asks_one_fresh_question_for_the_grants(tmp_path: Path) -> None:
    import sys

    import pexpect

    cfg = tmp_path / "cfg.toml"
    data = tmp_path / "data"
    data.mkdir()
    env = {**os.environ, "PROMPT_TOOLKIT_NO_CPR": "1", "TERM": "xterm-256color",
           "PYTHONUNBUFFERED": "1"}
    child = pexpect.spawn(sys.executable, ["-m", "agent_cli", "mcp", "add", "db", "--config",
                                           str(cfg), "--", "uvx", "mcp-server-sqlite",
                                           "--db-path", str(data / "x.db")],
                          env=env, dimensions=(40, 200), timeout=60)
    try:
        child.send("n\r")  # typed ahead: must not answer the question
        child.expect("because uvx downloads the server")
        child.expect(r"Grant these\? \[y/N\]")
        child.send("y\r")
        child.expect("with the grants above")
        child.expect(pexpect.EOF)
    finally:
        if child.isalive():
            child.terminate(force=True)
    db = load_settings(cfg).mcp["servers"]["db"]
    assert (db.writable, db.network) == (["~/.cache/uv", str(data)], True)
