"""Streamable HTTP sessions end with the DELETE the spec asks for (bounded when the server
hangs it), and a url configured without `type` that is an SSE endpoint is reached over SSE
(the spec's backwards-compatibility fallback); typed `http`, it says to set type = "sse".
Against server-everything (pinned in tests/npm) and the FastMCP hostile server."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_cli.config import MCPServer
from tests.mcp.e2e.conftest import HOSTILE, PY, free_port, need_npm_server, wait_listening
from tests.mcp.test_mcp import Run, calls, done, use

pytestmark = pytest.mark.mcp


def wait_text(path: Path, text: str, limit_s: float = 60.0) -> str:
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        seen = path.read_text(errors="replace") if path.exists() else ""
        if text in seen:
            return seen
        time.sleep(0.05)
    raise AssertionError(f"{text!r} not in {path} within {limit_s:g} s")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


@pytest.fixture
def everything(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[str, Path]]:
    """server-everything over the transport named by the test's parameter: (url, its log)."""
    kind = request.param
    port = free_port()
    log_path = tmp_path / f"everything-{kind}.log"
    with open(log_path, "wb") as log:
        proc = subprocess.Popen([str(need_npm_server("mcp-server-everything")), kind],
                                stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                                env={**os.environ, "PORT": str(port)}, cwd=tmp_path)
        try:
            wait_listening(port, proc)
            path = "/mcp" if kind == "streamableHttp" else "/sse"
            yield f"http://127.0.0.1:{port}{path}", log_path
        finally:
            stop(proc)


@pytest.mark.parametrize("everything", ["streamableHttp"], indirect=True)
def test_the_session_ends_with_a_delete(workspace: Path, everything: tuple[str, Path]) -> None:
    url, log = everything
    run = Run(workspace, {"all": MCPServer(url=url, trusted=True, startup_timeout_s=30)},
              [calls(use("e1", "all__echo", {"message": "hi"})), done()])
    try:
        run.send()
        assert "hi" in run.results()["e1"].content
        assert "session termination" not in log.read_text()
    finally:
        run.close()
    seen = wait_text(log, "Received session termination request for session")
    assert seen.count("Received session termination request") == 1


@pytest.mark.parametrize("everything", ["sse"], indirect=True)
def test_an_sse_url_without_type_falls_back_to_sse(workspace: Path,
                                                   everything: tuple[str, Path]) -> None:
    url, _ = everything
    run = Run(workspace, {"all": MCPServer(url=url, trusted=True, startup_timeout_s=30)},
              [calls(use("e1", "all__echo", {"message": "over sse"})), done()])
    try:
        run.send()
        st = run.hub.servers["all"]  # type: ignore[union-attr]
        assert st.state == "ready" and st.via_sse
        assert "over sse" in run.results()["e1"].content
        said = [n for n in run.notices() if "is an SSE endpoint" in n]
        assert len(said) == 1 and 'set type = "sse"' in said[0] and "404" in said[0]
    finally:
        run.close()


@pytest.mark.parametrize("everything", ["sse"], indirect=True)
def test_an_sse_url_typed_http_says_to_set_type_sse(workspace: Path,
                                                    everything: tuple[str, Path]) -> None:
    url, _ = everything
    run = Run(workspace, {"all": MCPServer(type="http", url=url, startup_timeout_s=30)},
              [done()])
    try:
        run.send()
        st = run.hub.servers["all"]  # type: ignore[union-attr]
        assert st.state == "failed" and not st.via_sse
        assert 'this looks like an SSE endpoint, set type = "sse"' in st.reason
        mine = [n for n in run.notices("mcp_error") if n.startswith("MCP server all ")]
        assert len(mine) == 1
    finally:
        run.close()


@pytest.mark.parametrize("slow", [False, True])
def test_fastmcp_sees_the_delete_and_a_hung_one_is_bounded(workspace: Path, tmp_path: Path,
                                                           marker: str, slow: bool) -> None:
    port = free_port()
    record = tmp_path / "methods.txt"
    env = {**os.environ, marker: "1", "HOSTILE_METHODS": str(record)}
    if slow:
        env["HOSTILE_SLOW_DELETE"] = "1"
    with open(tmp_path / "server.log", "wb") as log:
        proc = subprocess.Popen([PY, str(HOSTILE), "http", str(port)], stdout=log, stderr=log,
                                stdin=subprocess.DEVNULL, env=env, cwd=tmp_path)
    try:
        wait_listening(port, proc)
        cfg = MCPServer(url=f"http://127.0.0.1:{port}/mcp", mode="legacy", trusted=True)
        run = Run(workspace, {"web": cfg}, [calls(use("e1", "web__echo", {"text": "x"})),
                                            done()], answers=["y"])
        try:
            run.send()
            assert run.results()["e1"].content == "x"
        finally:
            began = time.monotonic()
            run.close()
            took = time.monotonic() - began
        methods = wait_text(record, "DELETE").split()
        assert methods.count("DELETE") == 1 and methods[0] == "POST"
        if slow:  # the goodbye is bounded (GOODBYE_S), well inside the hub's stop grace
            from agent_cli.tools.mcp.serve import GOODBYE_S
            from agent_cli.tools.mcp.state import STOP_GRACE_S

            # unbounded, close would wait out STOP_GRACE_S and then cancel the server task
            assert GOODBYE_S + 1 < STOP_GRACE_S - 1
            assert took < STOP_GRACE_S - 1, took
    finally:
        stop(proc)
