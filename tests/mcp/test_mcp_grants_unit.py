"""The pieces behind the sandbox line and the proposed grants, on the words real programs print.

The strings below are what the programs print when Landlock refuses them (Python, Node, git,
SQLite, a refused connect); the end-to-end tests (e2e/test_grants.py) make real servers print
them. Proposals are read from command lines as the servers' READMEs give them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_cli.config import MCPServer
from agent_cli.sandbox.diagnose import NETWORK, WRITE, sandbox_cause
from agent_cli.tools.mcp.grants import package_runner, propose, runner_line, sandbox_hint
from agent_cli.tools.mcp.review import inside_own_state, review


@pytest.mark.parametrize(("text", "expected"), [
    ("PermissionError: [Errno 13] Permission denied: '/home/u/.claude-server-commander'",
     (WRITE, "/home/u/.claude-server-commander")),
    ("Error: EACCES: permission denied, mkdir '/home/u/.npm/_cacache'",
     (WRITE, "/home/u/.npm/_cacache")),
    ("fatal: Unable to create '/src/p/.git/index.lock': Permission denied",
     (WRITE, "/src/p/.git/index.lock")),
    ("OSError: [Errno 30] Read-only file system: '/x/y'", (WRITE, "/x/y")),
    ("sqlite3.OperationalError: unable to open database file", (WRITE, None)),
    ("touch: cannot touch '/etc/x': Permission denied", (WRITE, "/etc/x")),
    ("/var/data/out.txt: Permission denied", (WRITE, "/var/data/out.txt")),
    ("Error: connect EACCES 140.82.112.3:443", (NETWORK, None)),
    ("npm error code EAI_AGAIN", (NETWORK, None)),
    ("httpx.ConnectError: [Errno 111] Connection refused", (NETWORK, None)),
    ("  File \"socket.py\", line 1, in create_connection\n    sock.connect(sa)\n"
     "PermissionError: [Errno 13] Permission denied", (NETWORK, None)),
    ("PermissionError: [Errno 13]\n    Permission denied:\n    '/tmp/a/very/lo\n    ng/name.txt'",
     (WRITE, "/tmp/a/very/long/name.txt")),
    ("    db = sqlite3.connect(path)\nsqlite3.OperationalError: unable to open database file",
     (WRITE, None)),
    ("everything is fine", None),
    ("", None),
])
def test_sandbox_cause_reads_the_words_programs_print(text: str,
                                                      expected: tuple[str, str] | None) -> None:
    assert sandbox_cause(text) == expected


@pytest.mark.parametrize(("command", "args", "kind"), [
    ("npx", ["-y", "@modelcontextprotocol/server-everything"], "npx"),
    ("/usr/local/bin/npx", ["-y", "x"], "npx"),
    ("/home/u/.bun/bin/bunx", ["x"], "bunx"),
    ("uvx", ["mcp-server-fetch"], "uvx"),
    ("/usr/bin/uv", ["tool", "run", "mcp-server-time"], "uv tool run"),
    ("pipx", ["run", "mcp-server-time"], "pipx run"),
])
def test_package_runners_are_recognised_also_by_absolute_path(command: str, args: list[str],
                                                              kind: str) -> None:
    runner = package_runner(command, args)
    assert runner is not None and runner.name == kind


@pytest.mark.parametrize(("command", "args"), [
    ("pipx", ["install", "x"]), ("uv", ["run", "x"]), ("mcp-server-time", []),
    ("/opt/npx-tools/server", []), (None, []),
])
def test_other_commands_are_not_runners(command: str | None, args: list[str]) -> None:
    assert package_runner(command, args) is None


def test_runner_cache_follows_the_servers_env() -> None:
    runner = package_runner("npx", ["-y", "x"], {"npm_config_cache": "/data/npm"})
    assert runner is not None and runner.caches == ("/data/npm",)


def test_runner_line_names_exactly_the_missing_grants() -> None:
    bare = MCPServer(command="npx", args=["-y", "@modelcontextprotocol/server-everything"])
    line = runner_line("ev", bare)
    assert line is not None and 'writable = ["~/.npm"] and network = true' in line
    half = bare.model_copy(update={"network": True})
    line = runner_line("ev", half)
    assert line is not None and 'writable = ["~/.npm"]' in line and "network = true" not in line
    full = bare.model_copy(update={"network": True, "writable": ["~/.npm"]})
    assert "granted by its config" in (runner_line("ev", full) or "")
    assert runner_line("ev", bare.model_copy(update={"sandbox": "off"})) is None


def test_proposals_for_real_server_command_lines(tmp_path: Path) -> None:
    db = tmp_path / "data" / "test.db"
    db.parent.mkdir()
    sqlite = propose("uvx", ["mcp-server-sqlite", "--db-path", str(db)])
    assert sqlite.writable == ["~/.cache/uv", str(db.parent)] and sqlite.network
    git = propose("mcp-server-git", ["--repository", str(tmp_path)])
    assert git.writable == [str(tmp_path)] and not git.network
    fs = propose("npx", ["-y", "@modelcontextprotocol/server-filesystem", str(tmp_path)])
    assert fs.writable == ["~/.npm", str(tmp_path)]
    assert propose("mcp-server-fetch", []).network
    assert not propose("mcp-server-time", ["--local-timezone", "UTC"])
    # Never the root, the home folder, or agent-cli's own state.
    import os

    home = Path(os.environ["AGENT_CLI_HOME"])
    assert not propose("srv", ["--dir", "/", "--root", str(Path.home()), "--db",
                               str(home / "x.db")])


def test_sandbox_hint_only_when_the_denied_path_is_outside_what_it_may_write(
        tmp_path: Path) -> None:
    cfg = MCPServer(command="srv", writable=[str(tmp_path / "granted")])
    denied = "PermissionError: [Errno 13] Permission denied: '{}'"
    hint = sandbox_hint("s", cfg, denied.format("/elsewhere/f.txt"), cwd=str(tmp_path / "cwd"))
    assert hint is not None and "writing /elsewhere/f.txt was refused" in hint
    assert f'writable = ["{tmp_path / "granted"}", "/elsewhere"] in [mcp.servers.s]' in hint
    for inside in (tmp_path / "cwd" / "a", tmp_path / "granted" / "b"):
        assert sandbox_hint("s", cfg, denied.format(inside), cwd=str(tmp_path / "cwd")) is None
    # SQLite names no file: the path comes from the server's --db-path.
    db = MCPServer(command="mcp-server-sqlite", args=["--db-path", "/data/x.db"])
    hint = sandbox_hint("db", db, "unable to open database file")
    assert hint is not None and 'writable = ["/data"]' in hint
    net = sandbox_hint("f", MCPServer(command="x"), "connect EACCES 1.2.3.4:443")
    assert net is not None and "network = true in [mcp.servers.f]" in net
    assert sandbox_hint("f", MCPServer(command="x", network=True),
                        "connect EACCES 1.2.3.4:443") is None


def test_own_state_is_recognised_through_a_link(tmp_path: Path) -> None:
    import os

    home = Path(os.environ["AGENT_CLI_HOME"])
    link = tmp_path / "innocent"
    link.symlink_to(home)
    assert inside_own_state(link / "sub") is not None
    assert inside_own_state(tmp_path) is None


def test_review_calls_out_each_var_and_the_file_grant_keys(tmp_path: Path) -> None:
    raw = {"command": "srv", "env": {"A": "plain", "B": "${GITHUB_TOKEN}"}, "trusted": True}
    entry = {"command": "srv", "env": {"A": "plain", "B": "${GITHUB_TOKEN}"}}
    rv = review("s", entry, raw, tmp_path / ".mcp.json")
    assert ("env.A", "plain") in rv.fields and ("env.B", "${GITHUB_TOKEN}") in rv.fields
    assert any("GITHUB_TOKEN (a secret-shaped name)" in c for c in rv.callouts)
    assert any(c.startswith("trusted in the file is ignored") for c in rv.callouts)
    assert rv.refused is None


def test_review_calls_out_code_loading_env_and_relative_commands(tmp_path: Path) -> None:
    entry = {"command": "./bin/server", "env": {"NODE_OPTIONS": "--require /tmp/x.js",
                                                "LANG": "C"}}
    rv = review("s", entry, entry, tmp_path / ".mcp.json")
    assert any(c.startswith("env.NODE_OPTIONS makes the server") for c in rv.callouts)
    assert not any("LANG" in c for c in rv.callouts)
    assert any("'./bin/server' is a relative path" in c for c in rv.callouts)
