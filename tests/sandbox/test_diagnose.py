"""Say it: a confined command that fails the sandbox's way is followed by one line naming the
sandbox, the denied path and the setting that would allow it; the model gets the same line in
the result. A refusal that is not the sandbox's (a path the record allows) gets no line."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agent_cli.sandbox.capabilities import Capabilities
from agent_cli.sandbox.diagnose import explain
from tests.sandbox.harness import approved_commands, confined


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "home"
    (folder / ".ssh").mkdir(parents=True)
    (folder / ".ssh" / "id_rsa").write_text("fake-key\n")
    monkeypatch.setenv("HOME", str(folder))
    return folder


def last_line(content: str) -> str:
    return content.rstrip().splitlines()[-1]


def test_each_refusal_is_named_with_its_setting(workspace: Path, outside: Path,
                                                home: Path) -> None:
    connect = [sys.executable, "-c",
               "import socket; socket.create_connection(('127.0.0.1', 9), timeout=5)"]
    out = approved_commands(workspace, f"touch {outside}/x", f"cat {home}/.ssh/id_rsa",
                            {"command": connect},
                            f"echo 'cat: {workspace}/mine: Permission denied' >&2; exit 1",
                            "exit 3")
    if not confined(out):
        return
    write = last_line(out.result("c1").content)
    assert write.startswith(f"sandbox: writing {outside}/x was refused by the kernel sandbox")
    assert "--sandbox off" in write
    read = last_line(out.result("c2").content)
    assert read.startswith(f"sandbox: {home}/.ssh/id_rsa is out of reach")
    assert f'sandbox_read_allow = ["{home}/.ssh/id_rsa"]' in read
    net = last_line(out.result("c3").content)
    assert net.startswith("sandbox: the process has no network") and "network: true" in net
    assert "sandbox:" not in out.result("c4").content  # a path it may touch: not the sandbox
    assert "sandbox:" not in out.result("c5").content  # a plain failure: nothing to say
    # The model reads the same result, so it is told the command was confined.
    sent = str(out.provider.requests[1].messages)
    assert "refused by the kernel sandbox" in sent


def test_no_line_when_the_sandbox_is_off(workspace: Path, home: Path) -> None:
    out = approved_commands(workspace, "echo 'x: /etc/shadow: Permission denied' >&2; exit 1",
                            sandbox="off")
    assert "sandbox:" not in out.result().content


def test_a_server_is_told_its_own_settings() -> None:
    caps = Capabilities("workspace", read=("/",), read_denied=("/home/u/.ssh",),
                        write=("/srv/s",), network=False, name="git")
    line = explain("fatal: Unable to create '/repo/.git/index.lock': Permission denied", caps)
    assert line is not None and 'writable = ["/repo/.git"] in [mcp.servers.git]' in line
    line = explain("Error: getaddrinfo EACCES registry.npmjs.org", caps)
    assert line is not None and "network = true in [mcp.servers.git]" in line
    line = explain("ls: cannot open directory '/home/u/new': Permission denied", caps)
    assert line is not None and line.startswith("sandbox: access to /home/u/new was refused")
    line = explain("open /home/u/.ssh/config: permission denied", caps)
    assert line is not None and "sandbox_read_allow" in line
    assert explain("all good", caps) is None
    assert explain("Permission denied", Capabilities("off")) is None


def test_npm_names_the_path_on_a_line_of_its_own() -> None:
    """What an `npm install` run by a confined server prints (mcp-server-fetch's HTML library
    runs one on first use): the code and the path on separate lines."""
    caps = Capabilities("workspace", read=("/",), write=("/srv/fetch",), network=True,
                        name="fetch")
    npm = ("npm error code EACCES\nnpm error syscall open\n"
           "npm error path /home/u/.npm/_cacache/tmp/3f2a\nnpm error errno EACCES\n")
    line = explain(npm, caps)
    assert line is not None
    assert "writing /home/u/.npm/_cacache/tmp/3f2a was refused" in line
    assert 'writable = ["/home/u/.npm/_cacache/tmp"] in [mcp.servers.fetch]' in line
