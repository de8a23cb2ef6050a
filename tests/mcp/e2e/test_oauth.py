"""OAuth sign-in, offline: a loopback protected MCP server that is its own authorization server
(the mcp SDK's server-side auth support, oauth_server.py). The whole flow: the 401 and
discovery, dynamic registration, PKCE and the token (`agent-cli mcp login`, with a "browser"
that follows the URL), a session that uses the kept token, a refresh of an expired one, and a
revoked sign-in that asks for `mcp login` again. Tokens stay in one 0600 file."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from agent_cli.config import MCPServer
from tests.mcp.e2e.conftest import PY, free_port, wait_listening
from tests.mcp.test_mcp import Run, calls, done, use

pytestmark = pytest.mark.mcp
SERVER = Path(__file__).parent / "oauth_server.py"
LIFETIME_S = 3600
"""The access tokens' lifetime. Long: a session must never meet the end of it by chance (a token
that expires between the client's check and the server's answers 401, and the SDK asks for a new
sign-in, not a refresh; under load that happened). The test ends it on purpose (`expire`)."""


@pytest.fixture
def protected(tmp_path: Path) -> Iterator[str]:
    port = free_port()
    with open(tmp_path / "oauth-server.log", "wb") as log:
        proc = subprocess.Popen([PY, str(SERVER), str(port), str(LIFETIME_S)], stdout=log,
                                stderr=log, stdin=subprocess.DEVNULL, cwd=tmp_path)
    try:
        wait_listening(port, proc)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(10)


def expire(base: str, kept: Path) -> None:
    """The kept access token's lifetime is over, for the server and for the client: what
    `LIFETIME_S` seconds of waiting would do."""
    urllib.request.urlopen(urllib.request.Request(f"{base}/test/expire-all", method="POST"),
                           timeout=10).read()
    data = json.loads(kept.read_text())
    data["expires_at"] = time.time() - 1
    kept.write_text(json.dumps(data))


def counts(base: str) -> dict[str, int]:
    with urllib.request.urlopen(f"{base}/test/counts", timeout=10) as r:
        return dict(json.loads(r.read()))


def session(workspace: Path, base: str, text: str) -> Run:
    cfg = MCPServer(url=f"{base}/mcp", mode="legacy", trusted=True, startup_timeout_s=30)
    run = Run(workspace, {"prot": cfg}, [calls(use("s1", "prot__secret_echo", {"text": text})),
                                         done()], answers=["y"])
    run.send()
    return run


def test_login_session_refresh_and_revoked(workspace: Path, tmp_path: Path,
                                           protected: str) -> None:
    home = Path(os.environ["AGENT_CLI_HOME"])
    cfg = tmp_path / "cfg.toml"
    cfg.write_text(f'[mcp.servers.prot]\nurl = "{protected}/mcp"\n')
    browser = tmp_path / "browser"
    browser.write_text(f"#!{sys.executable}\nimport sys, urllib.request\n"
                       "urllib.request.urlopen(sys.argv[1], timeout=30).read()\n")
    browser.chmod(0o755)
    # before any sign-in: the 401 becomes the one line that says what to do
    run = session(workspace, protected, "x")
    try:
        st = run.hub.servers["prot"]  # type: ignore[union-attr]
        assert st.state == "failed" and "it answered 401" in st.reason
        assert "agent-cli mcp login prot" in st.reason
    finally:
        run.close()
    signing_in = time.time()
    out = subprocess.run([PY, "-m", "agent_cli", "mcp", "login", "prot", "--config", str(cfg)],
                         capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL,
                         env={**os.environ, "BROWSER": str(browser), "COLUMNS": "80"})
    assert out.returncode == 0, out.stdout + out.stderr
    assert "code_challenge_method=S256" in out.stdout  # PKCE, in the URL shown on one line
    assert "Signed in to prot (1 tools)" in out.stdout
    seen = counts(protected)
    assert seen["registered"] == 1 and seen["codes"] == 1
    kept = home / "mcp-oauth" / "prot.json"
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600
    assert stat.S_IMODE(kept.parent.stat().st_mode) == 0o700
    token = json.loads(kept.read_text())["tokens"]["access_token"]
    # kept with the end of the token's lifetime, as the server gave it
    assert signing_in + LIFETIME_S <= json.loads(kept.read_text())["expires_at"] <= (
        time.time() + LIFETIME_S)
    assert token not in out.stdout + out.stderr
    # a session uses the kept sign-in
    run = session(workspace, protected, "signed in")
    try:
        assert run.results()["s1"].content == "signed in"
    finally:
        run.close()
    logs = [p for p in home.rglob("*") if p.is_file() and p != kept]
    assert logs and not [p for p in logs if token in p.read_text(errors="replace")]
    # the access token expires: the next session refreshes it first (no new sign-in)
    expire(protected, kept)
    run = session(workspace, protected, "refreshed")
    try:
        assert run.results()["s1"].content == "refreshed"
    finally:
        run.close()
    seen = counts(protected)
    assert seen["refreshed"] == 1 and seen["codes"] == 1 and seen["registered"] == 1
    assert json.loads(kept.read_text())["tokens"]["access_token"] != token  # rotated, kept
    # revoked: the session does not open a browser; it says to sign in again
    urllib.request.urlopen(urllib.request.Request(f"{protected}/test/revoke-all",
                                                  method="POST"), timeout=10).read()
    run = session(workspace, protected, "revoked")
    try:
        st = run.hub.servers["prot"]  # type: ignore[union-attr]
        assert st.state == "failed"
        assert "agent-cli mcp login prot" in st.reason, st.reason
        mine = [n for n in run.notices("mcp_error") if n.startswith("MCP server prot ")]
        assert len(mine) == 1
    finally:
        run.close()
