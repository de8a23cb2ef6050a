"""A server's life inside a session: `/mcp` after it died, `/mcp restart NAME`, and the
automatic reconnect of an HTTP server that drops."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from rich.console import Console

from agent_cli.config import MCPServer
from agent_cli.ui.mcp_repl import repl_mcp
from tests.mcp.test_mcp import Run, done, procs_with, time_server, wait_gone

pytestmark = pytest.mark.mcp


def shown(run: Run, arg: str = "") -> str:
    out = io.StringIO()
    Console(file=out, width=200, force_terminal=False).print(repl_mcp(run.session, arg))
    return out.getvalue()


def wait_state(run: Run, name: str, state: str, limit_s: float = 60.0) -> None:
    st = run.hub.servers[name]  # type: ignore[union-attr]
    end = time.monotonic() + limit_s
    while st.state != state and time.monotonic() < end:
        time.sleep(0.05)
    assert st.state == state, f"{name} is {st.state}, not {state}"


def test_mcp_after_a_server_died_shows_its_tools_not_offered(workspace: Path,
                                                               marker: str) -> None:
    run = Run(workspace, {"time": time_server(marker)}, [done(), done()])
    try:
        run.send()
        before = shown(run)
        assert "offered" in before and "not offered" not in before
        for pid in procs_with(marker):
            os.kill(pid, signal.SIGKILL)
        wait_state(run, "time", "stopped")
        after = shown(run)
        rows = [line for line in after.splitlines() if "time__" in line and "  " in line]
        assert rows and all("not offered" in line for line in rows), after
        assert "its server is stopped" in after
        run.send("again")
        assert not [t for t in run.offered(1) if t.startswith("time__")]
    finally:
        run.close()
    assert wait_gone(marker) == []


def test_mcp_restart_brings_a_dead_stdio_server_back(workspace: Path, marker: str) -> None:
    run = Run(workspace, {"time": time_server(marker, trusted=True)}, [done(), done(), done()])
    try:
        run.send()
        first = procs_with(marker)
        for pid in first:
            os.kill(pid, signal.SIGKILL)
        wait_state(run, "time", "stopped")
        run.send("after the crash")
        assert not [t for t in run.offered(1) if t.startswith("time__")]
        said = shown(run, "restart time")
        assert "MCP server time restarted: 2 tool(s) offered." in said
        assert set(procs_with(marker)).isdisjoint(first)  # a new process
        run.send("after the restart")
        assert "time__get_current_time" in run.offered(2)
        assert "No MCP server named nope" in shown(run, "restart nope")
    finally:
        run.close()
    assert wait_gone(marker) == []


def test_mcp_restart_of_a_running_server_leaves_no_process(workspace: Path,
                                                            marker: str) -> None:
    run = Run(workspace, {"time": time_server(marker)}, [done()])
    try:
        run.send()
        before = procs_with(marker)
        assert "restarted: 2 tool(s)" in shown(run, "restart time")
        after = procs_with(marker)
        assert after and set(after).isdisjoint(before)
        assert [p for p in before if p in procs_with(marker)] == []  # the old one ended
        stopped = [n for n in run.notices() if "stopped (" in n]
        assert stopped == []  # a restart is not reported as a crash
    finally:
        run.close()
    assert wait_gone(marker) == []


def test_an_http_server_that_drops_is_connected_again(workspace: Path, tmp_path: Path,
                                                       marker: str) -> None:
    from tests.mcp.e2e.conftest import HOSTILE, PY, free_port, wait_listening
    from tests.mcp.test_mcp import calls, use

    port = free_port()

    def serve() -> subprocess.Popen[bytes]:
        proc = subprocess.Popen([PY, str(HOSTILE), "http", str(port)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                stdin=subprocess.DEVNULL, env={**os.environ, marker: "1"},
                                cwd=tmp_path)
        wait_listening(port, proc)
        return proc

    procs = [serve()]
    step = {"n": 0}

    def script(request: object) -> dict[str, object]:
        step["n"] += 1
        if step["n"] == 1:
            return calls(use("a", "web__echo", {"text": "one"}))
        if step["n"] == 2:  # the server goes away and comes back on the same port
            procs[0].kill()
            procs[0].wait(10)
            procs.append(serve())
            return calls(use("b", "web__echo", {"text": "two"}))
        if step["n"] == 3:
            wait_state(run, "web", "ready")
            return done()
        return done()

    cfg = MCPServer(url=f"http://127.0.0.1:{port}/mcp", mode="legacy", trusted=True,
                    startup_timeout_s=30)
    run = Run(workspace, {"web": cfg}, script, answers=["y", "y", "y"])
    try:
        run.send()
        res = run.results()
        assert res["a"].content == "one" and res["b"].is_error
        step["n"] = 0
        wait_state(run, "web", "ready")
        run.send("again")
        assert run.results()["a"].content == "one"  # the call after the reconnect
        tries = [n for n in run.notices() if "connecting again in 1 s (try 1 of 3)" in n]
        assert len(tries) == 1
        assert not [n for n in run.notices() if "try 2 of 3" in n]
    finally:
        run.close()
        for proc in procs:
            proc.kill()
            proc.wait(10)


def test_an_http_server_that_stays_away_costs_one_line_per_try(workspace: Path,
                                                                 tmp_path: Path,
                                                                 marker: str) -> None:
    from tests.mcp.e2e.conftest import HOSTILE, PY, free_port, wait_listening
    from tests.mcp.test_mcp import calls, use

    port = free_port()
    proc = subprocess.Popen([PY, str(HOSTILE), "http", str(port)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
                            env={**os.environ, marker: "1"}, cwd=tmp_path)
    wait_listening(port, proc)

    def script(request: object) -> dict[str, object]:
        if len(run.results()) == 0 and proc.poll() is None:
            proc.kill()
            proc.wait(10)
            return calls(use("b", "web__echo", {"text": "two"}))
        return done()

    cfg = MCPServer(url=f"http://127.0.0.1:{port}/mcp", mode="legacy", trusted=True,
                    startup_timeout_s=10)
    run = Run(workspace, {"web": cfg}, script, answers=["y"])
    try:
        run.send()
        assert run.results()["b"].is_error
        st = run.hub.servers["web"]  # type: ignore[union-attr]
        end = time.monotonic() + 90
        while not (st.task is not None and st.task.done()) and time.monotonic() < end:
            time.sleep(0.1)
        assert st.task is not None and st.task.done() and st.state == "failed"
        run.send("again")
        said = [n for n in run.notices() if n.startswith("MCP server web ")]
        for k, delay in ((1, 1), (2, 2), (3, 4)):
            assert sum(f"again in {delay} s (try {k} of 3)" in n for n in said) == 1, said
        assert sum("still unreachable after 3 tries" in n for n in said) == 1
        assert not [n for n in said if "could not start" in n]  # each try said once
    finally:
        run.close()
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)


def test_restart_does_not_start_a_server_refused_for_its_name(tmp_path: Path) -> None:
    from agent_cli.tools.mcp.hub import MCPHub
    from agent_cli.tools.registry import Registry

    hub = MCPHub({"files.a": MCPServer(command="/nonexistent/agent-cli-none"),
                  "files_a": MCPServer(command="/nonexistent/agent-cli-none")},
                 Registry(), None, home=tmp_path, session_id="s")
    try:
        hub.start()
        hub.wait_ready()
        said = hub.restart("files_a")
        assert said.startswith("MCP server files_a is not started: its name becomes")
        assert hub.servers["files_a"].task is None  # nothing was started for it
        assert "did not restart" in hub.restart("files.a")  # tried, and says why not
    finally:
        hub.close()
