"""Streamable HTTP and SSE transports against a real FastMCP server on a loopback port this
test picked, started by a fixture that waits for it to listen (no fixed sleeps)."""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_cli.config import MCPServer
from tests.mcp.test_mcp import Run, calls, done, use

pytestmark = pytest.mark.mcp


def test_a_call_over_http_or_sse_with_a_header_from_the_environment(
        workspace: Path, http_server: tuple[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    kind, url = http_server
    monkeypatch.setenv("AGENT_CLI_TEST_HTTP_TOKEN", "Bearer t0ken")
    server = MCPServer(type=kind, url=url, headers={"X-Token": "${AGENT_CLI_TEST_HTTP_TOKEN}"},
                       mode="legacy", trusted=True)
    run = Run(workspace, {"web": server},
              [calls(use("e1", "web__echo", {"text": "over the wire"}),
                     use("h1", "web__seen_header", {}),
                     use("r1", "web__read_resource", {"uri": "note://hello"})), done()],
              answers=["y", "y"])
    try:
        assert run.send().reason == "end_turn"
        res = run.results()
        assert (res["e1"].is_error, res["e1"].content) == (False, "over the wire")
        assert res["h1"].content == "Bearer t0ken"  # the header, expanded, reached the server
        assert "hello from a resource" in res["r1"].content
        snap = run.hub.snapshot()[0]  # type: ignore[union-attr]
        assert snap.state == "ready" and snap.command == f"{kind} {url}"
        assert "t0ken" not in repr(snap)  # the token is never shown
        # it answered: a start timeout would not get the "try mode = legacy" hint
        assert run.hub.servers["web"].heard  # type: ignore[union-attr]
    finally:
        run.close()


def test_an_http_server_that_is_not_there_costs_one_line(workspace: Path) -> None:
    from tests.mcp.e2e.conftest import free_port

    url = f"http://127.0.0.1:{free_port()}/mcp"
    run = Run(workspace, {"gone": MCPServer(url=url, mode="legacy", startup_timeout_s=20)},
              [calls(use("m1", "multiply", {"a": 2, "b": 3})), done()])
    try:
        run.send()
        mine = [n for n in run.notices("mcp_error") if n.startswith("MCP server gone ")]
        assert len(mine) == 1 and "could not start" in mine[0] and "\n" not in mine[0]
        assert "Traceback" not in mine[0]
        assert run.results()["m1"].content == "6"
    finally:
        run.close()


def test_a_server_needs_command_or_url() -> None:
    with pytest.raises(ValueError, match="needs command"):
        MCPServer()
    with pytest.raises(ValueError, match="needs url"):
        MCPServer(type="sse", command="x")
    assert MCPServer(url="http://127.0.0.1:1/mcp").transport == "http"
    assert MCPServer(command="x", type="stdio").transport == "stdio"
