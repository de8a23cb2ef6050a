"""Shared pieces of the MCP tests in this folder: the marker fixture (every server started here
carries it, so a test can prove none is left behind), the hostile FastMCP server, and where the
pinned npm reference servers are installed."""

from __future__ import annotations

import contextlib
import http.server
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

HERE = Path(__file__).parent
HOSTILE = HERE / "hostile_server.py"
NPM_BIN = HERE.parents[1] / "npm" / "node_modules" / ".bin"
PY = sys.executable


def need_npm_server(name: str) -> Path:
    """The installed reference server `name`. Missing: a failure in CI (`.ci/run` installs them,
    so a missing one is a broken install step), a skip on a developer's machine that has not run
    `npm install --prefix tests/npm`."""
    path = NPM_BIN / name
    if path.exists():
        return path
    why = (f"{name} is not installed: run `npm ci --prefix tests/npm` (needs node and npm; "
           ".ci/run does this)")
    if os.environ.get("CI") == "true":
        pytest.fail(why)
    pytest.skip(why + "; skipped only outside CI")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_listening(port: int, proc: subprocess.Popen[bytes], limit_s: float = 60.0) -> None:
    """Poll until something accepts connections on the port (or the process died)."""
    end = time.monotonic() + limit_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise AssertionError(f"the test server exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1.0):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"nothing listened on port {port} within {limit_s:g} s")


@pytest.fixture(params=["http", "sse"])
def http_server(request: pytest.FixtureRequest, marker: str,
                tmp_path: Path) -> Iterator[tuple[str, str]]:
    """The hostile server over streamable HTTP or SSE on a free loopback port: (type, url)."""
    kind = request.param
    port = free_port()
    log = open(tmp_path / f"{kind}-server.log", "wb")  # noqa: SIM115
    proc = subprocess.Popen([PY, str(HOSTILE), kind, str(port)], stdout=log, stderr=log,
                            stdin=subprocess.DEVNULL, env={**os.environ, marker: "1"},
                            cwd=tmp_path)
    try:
        wait_listening(port, proc)
        path = "/mcp" if kind == "http" else "/sse"
        yield kind, f"http://127.0.0.1:{port}{path}"
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        log.close()


def answer(handler: http.server.BaseHTTPRequestHandler, body: bytes,
           content_type: str | None = None) -> None:
    """A 200 with `body` (the loopback pages the MCP tests serve)."""
    handler.send_response(200)
    if content_type is not None:
        handler.send_header("Content-Type", content_type)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


@contextlib.contextmanager
def loopback_http(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    """A threaded HTTP server on 127.0.0.1 with `handler`; yields its base URL."""
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}"
    finally:
        srv.shutdown()
        srv.server_close()
