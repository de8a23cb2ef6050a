"""No noise: a tools/list_changed with nothing new says nothing, and a server that declares the
resources capability but lists no resource gets no resource tools until it lists one."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from agent_cli.config import MCPServer
from tests.mcp.e2e.conftest import PY
from tests.mcp.e2e.test_real_servers import npm
from tests.mcp.test_mcp import Run, calls, done, use, wait_gone

pytestmark = pytest.mark.mcp
WRITER = Path(__file__).parent / "writer_server.py"


def wait_relists(run: Run, name: str, count: int, limit_s: float = 60.0) -> None:
    st = run.hub.servers[name]  # type: ignore[union-attr]
    end = time.monotonic() + limit_s
    while st.relists < count and time.monotonic() < end:
        time.sleep(0.05)
    assert st.relists >= count, f"{name} was listed again {st.relists} time(s), not {count}"


def test_a_list_changed_with_nothing_new_prints_nothing(workspace: Path, marker: str) -> None:
    cfg = MCPServer(command=PY, args=[str(WRITER)], env={marker: "1"}, mode="legacy",
                    trusted=True)
    run = Run(workspace, {"w": cfg}, [calls(use("n1", "w__nudge", {})), done(), done()],
              answers=["y"])
    try:
        run.send()
        assert run.results()["n1"].content == "nudged"
        wait_relists(run, "w", 1)
        run.send("again")  # the notices queued since are drained into this turn
        assert not [n for n in run.notices() if "changed its tools" in n]
    finally:
        run.close()
    assert wait_gone(marker) == []


def test_server_everything_session_has_no_change_line(workspace: Path, marker: str) -> None:
    # server-everything registers its conditional tools after the handshake: a list_changed
    # that (for a client without roots/sampling) adds nothing.
    run = Run(workspace, {"all": npm("mcp-server-everything", marker)}, [done(), done()])
    try:
        run.send()
        wait_relists(run, "all", 1)
        run.send("again")
        assert not [n for n in run.notices() if "changed its tools" in n]
        assert "all__list_resources" in run.offered(1)  # it does list resources
    finally:
        run.close()
    assert wait_gone(marker) == []


def test_resource_tools_only_once_the_server_lists_a_resource(workspace: Path,
                                                                marker: str) -> None:
    cfg = MCPServer(command=PY, args=[str(WRITER)], env={marker: "1"}, mode="legacy",
                    trusted=True)
    run = Run(workspace, {"w": cfg},
              [calls(use("a1", "w__add_note", {})), done(), done()], answers=["y"])
    try:
        run.send()
        st = run.hub.servers["w"]  # type: ignore[union-attr]
        assert st.client.server_capabilities.resources is not None  # declared, lists none
        first = run.offered(0)
        assert "w__echo" in first
        assert "w__list_resources" not in first and "w__read_resource" not in first
        wait_relists(run, "w", 1)  # resources/list_changed: looked at again
        run.send("again")
        later = run.offered(2)
        assert "w__list_resources" in later and "w__read_resource" in later
        added = [n for n in run.notices() if "changed its tools" in n]
        assert len(added) == 1 and "w__list_resources" in added[0]
    finally:
        run.close()
    assert wait_gone(marker) == []
