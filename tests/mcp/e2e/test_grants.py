"""Confined MCP servers that need more than their cwd, started from config through the real
Session: without the grant, the user and the model get one line naming the sandbox, the denied
path and the setting; with it, the server works.

Real servers: mcp-server-git (PyPI) on a repository outside its cwd, and a FastMCP server
(writer_server.py) that creates a state folder at start, writes where it is told and connects
to a loopback port. Grants used: `cwd`, `network = true` and `sandbox = "off"`, which this
branch enforces; `writable` is proposed by the line and written by `mcp add`.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_cli.config import MCPServer
from tests.mcp.e2e.conftest import PY
from tests.mcp.test_mcp import Run, calls, done, git_server, repo, staged, use, wait_gone

pytestmark = pytest.mark.mcp
__all__ = ["repo"]  # the fixture, imported for this module

WRITER = Path(__file__).parent / "writer_server.py"


def writer(marker: str, *args: str, **kw: Any) -> MCPServer:
    return MCPServer(command=PY, args=[str(WRITER), *args], env={marker: "1"}, mode="legacy",
                     **kw)


def sandbox_notices(run: Run) -> list[str]:
    return [n for n in run.notices("mcp_error") if "by the kernel sandbox" in n]


def test_git_outside_its_cwd_names_the_sandbox_and_works_unconfined(
        workspace: Path, marker: str, repo: Path) -> None:
    # As other clients configure it: only --repository, no cwd. The server starts in a neutral
    # folder, so the sandbox refuses .git/index.lock.
    plain = git_server(marker, repo, cwd=None)
    run = Run(workspace, {"git": plain},
              [calls(use("c1", "git__git_reset", {"repo_path": str(repo)})), done()],
              answers=["y"])
    try:
        run.send()
        result = run.results()["c1"]
        assert staged(repo) == ["a.txt"]  # nothing changed
        assert "Permission denied" in result.content, result.content
        # The model is told the server is confined, and what would allow it.
        assert "by the kernel sandbox" in result.content
        assert f'writable = ["{repo}/.git"]' in result.content
        assert "[mcp.servers.git]" in result.content
        notes = sandbox_notices(run)
        assert len(notes) == 1 and f'writable = ["{repo}/.git"]' in notes[0]
    finally:
        run.close()
    off = Run(workspace, {"git": git_server(marker, repo, cwd=None, sandbox="off")},
              [calls(use("c1", "git__git_reset", {"repo_path": str(repo)})), done()],
              answers=["y"])
    try:
        off.send()
        assert not off.results()["c1"].is_error, off.results()["c1"].content
        assert staged(repo) == []
        assert not sandbox_notices(off)
        assert any('sandbox = "off": NOT confined' in n for n in off.notices())
    finally:
        off.close()
    assert wait_gone(marker) == []


def test_a_server_that_dies_creating_its_state_folder_says_so(workspace: Path, marker: str,
                                                                tmp_path: Path) -> None:
    state = tmp_path / "dot-server-commander"
    run = Run(workspace, {"w": writer(marker, "--state-dir", str(state))}, [done()])
    try:
        run.send()
        st = run.hub.servers["w"]
        assert st.state == "failed"
        assert "before the handshake" in st.reason
        assert "by the kernel sandbox" in st.reason
        assert f"writing {state} was refused" in st.reason
        assert f'writable = ["{tmp_path}"]' in st.reason and "[mcp.servers.w]" in st.reason
        assert "mode = \"legacy\"" not in st.reason
    finally:
        run.close()
    assert not state.exists()
    ok = Run(workspace, {"w": writer(marker, "--state-dir", str(state), sandbox="off")},
             [done()])
    try:
        ok.send()
        assert ok.hub.servers["w"].state == "ready"
        assert (state / "state.json").exists()
    finally:
        ok.close()
    assert wait_gone(marker) == []


def test_a_write_into_the_workspace_is_explained_and_the_path_named(workspace: Path,
                                                                    marker: str) -> None:
    target = workspace / "notes.txt"
    run = Run(workspace, {"w": writer(marker)},
              [calls(use("c1", "w__write", {"path": str(target), "text": "hi"})), done()],
              answers=["y"])
    try:
        run.send()
        result = run.results()["c1"]
        assert result.is_error and not target.exists()
        assert f"writing {target} was refused" in result.content
        assert f'writable = ["{workspace}"]' in result.content
        assert len(sandbox_notices(run)) == 1
    finally:
        run.close()
    # A write the sandbox allows (its cwd) is no occasion for the line.
    cwd = workspace.parent / "server-home"
    cwd.mkdir()
    inside = Run(workspace, {"w": writer(marker, cwd=str(cwd))},
                 [calls(use("c1", "w__write", {"path": str(cwd / "x"), "text": "hi"})), done()],
                 answers=["y"])
    try:
        inside.send()
        assert not inside.results()["c1"].is_error
        assert (cwd / "x").read_text() == "hi"
        assert not sandbox_notices(inside)
    finally:
        inside.close()
    # A result that is data saying "Permission denied" (a file's text) is not a denial.
    said = Run(workspace, {"w": writer(marker)},
               [calls(use("c1", "w__echo", {"text": "Permission denied: '/etc/shadow'"})),
                done()], answers=["y"])
    try:
        said.send()
        assert said.results()["c1"].content == "Permission denied: '/etc/shadow'"
        assert not sandbox_notices(said)
    finally:
        said.close()


@pytest.fixture
def listener() -> Iterator[int]:
    """A loopback TCP server that greets every connection."""
    srv = socket.create_server(("127.0.0.1", 0))
    srv.settimeout(0.5)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except OSError:
                continue
            with conn:
                conn.sendall(b"hello from the listener\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield int(srv.getsockname()[1])
    stop.set()
    thread.join(5)
    srv.close()


def test_a_refused_connect_names_network_true(workspace: Path, marker: str,
                                             listener: int) -> None:
    script = [calls(use("c1", "w__connect", {"port": listener})), done()]
    run = Run(workspace, {"w": writer(marker)}, script, answers=["y"])
    try:
        run.send()
        result = run.results()["c1"]
        assert result.is_error and "hello" not in result.content
        assert "the process has no network" in result.content
        assert "network = true in [mcp.servers.w]" in result.content
    finally:
        run.close()
    net = Run(workspace, {"w": writer(marker, network=True)}, script, answers=["y"])
    try:
        net.send()
        assert "hello from the listener" in net.results()["c1"].content
        assert not sandbox_notices(net)
    finally:
        net.close()
    assert wait_gone(marker) == []


def fake_runner(tmp_path: Path, name: str) -> Path:
    """A program named like a package runner that never answers (as npx does while it cannot
    reach the registry): a real process, recognised by its name only."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\nexec sleep 300\n")
    path.chmod(0o755)
    return path


@pytest.mark.parametrize(("runner", "args", "grant"), [
    ("npx", ["-y", "@modelcontextprotocol/server-everything"], 'writable = ["~/.npm"]'),
    ("uvx", ["mcp-server-fetch"], 'writable = ["~/.cache/uv"]'),
    ("pipx", ["run", "mcp-server-time"], 'writable = ["~/.local/share/pipx", "~/.cache/pipx"]'),
])
def test_a_package_runner_is_recognised_at_start_and_on_timeout(
        workspace: Path, marker: str, tmp_path: Path, runner: str, args: list[str],
        grant: str) -> None:
    program = fake_runner(tmp_path, runner)  # an absolute path: recognised by its name
    cfg = MCPServer(command=str(program), args=args, env={marker: "1"}, startup_timeout_s=3)
    run = Run(workspace, {"pkg": cfg}, [done()])
    try:
        run.send()
        start = [n for n in run.notices() if n.startswith("MCP server pkg runs through")]
        assert len(start) == 1 and f"{grant} and network = true" in start[0]
        st = run.hub.servers["pkg"]
        assert st.state == "failed" and "within 3 s" in st.reason
        assert grant in st.reason and "network = true" in st.reason
        assert "legacy" not in st.reason  # the wrong advice is gone
    finally:
        run.close()
    assert wait_gone(marker) == []


def test_a_silent_server_in_mode_auto_still_gets_the_legacy_hint(workspace: Path, marker: str,
                                                                  tmp_path: Path) -> None:
    program = fake_runner(tmp_path, "my-server")
    run = Run(workspace, {"s": MCPServer(command=str(program), env={marker: "1"},
                                         startup_timeout_s=3)}, [done()])
    try:
        run.send()
        assert 'try mode = "legacy"' in run.hub.servers["s"].reason
        assert not [n for n in run.notices() if "package cache" in n]
    finally:
        run.close()


def test_a_server_that_answered_gets_no_legacy_hint(workspace: Path, marker: str) -> None:
    # mode "auto": it answers discovery (or the handshake) and then hangs listing its tools;
    # "try mode = legacy" would send the user the wrong way.
    # The timeout leaves a loaded machine ample time to start Python and answer the handshake.
    cfg = MCPServer(command=PY, args=[str(WRITER), "--hang-list"], env={marker: "1"},
                    startup_timeout_s=20)
    run = Run(workspace, {"s": cfg}, [done()])
    try:
        run.send()
        st = run.hub.servers["s"]
        assert st.state == "failed" and "within 20 s" in st.reason
        assert st.heard and "legacy" not in st.reason
    finally:
        run.close()
    assert wait_gone(marker) == []


def test_a_database_outside_its_cwd_names_the_db_folder(workspace: Path, marker: str,
                                                        tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    db = data / "notes.db"
    run = Run(workspace, {"db": writer(marker, "--db-path", str(db))}, [done()])
    try:
        run.send()
        st = run.hub.servers["db"]
        assert st.state == "failed" and "before the handshake" in st.reason
        assert f'writable = ["{data}"] in [mcp.servers.db]' in st.reason
    finally:
        run.close()
    assert not db.exists()
    # The grant that line names is a folder the server may write: its cwd is one today.
    ok = Run(workspace, {"db": writer(marker, "--db-path", str(db), cwd=str(data))}, [done()])
    try:
        ok.send()
        assert ok.hub.servers["db"].state == "ready"
        assert db.exists()
    finally:
        ok.close()
    assert wait_gone(marker) == []
