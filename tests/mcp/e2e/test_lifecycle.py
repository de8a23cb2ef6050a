"""A server's life inside a session: `/mcp` after it died, `/mcp restart NAME`, and the
automatic reconnect of an HTTP server that drops."""

from __future__ import annotations

import io
import os
import signal
import time
from pathlib import Path

import pytest
from rich.console import Console

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
