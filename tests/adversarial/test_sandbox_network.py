"""Family: network doors an approved command without `network: true` would use. Each door is a
real listener on this machine (UDP on 127.0.0.1, a named unix socket outside the workspace, an
abstract unix socket), reached by a real program the model asked to run and the user approved,
through the real loop and session. None may be reached; with `network: true` the loopback
doors (UDP here, TCP in tests/sandbox) are, so the refusal is the sandbox's and not a broken
test. `make test` and a shell pipeline are run as the attacker would hide them.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sandbox.harness import LINE, SUPPORT, Inbox, approved_commands, confined

KINDS = ("udp", "unix", "abstract")


@pytest.fixture(params=KINDS)
def inbox(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Inbox]:
    outside = tmp_path / "out"
    outside.mkdir()
    box = Inbox(request.param, outside / "in.sock")
    yield box
    box.close()


def secret_cmd(inbox: Inbox, token: str) -> list[str]:
    return [sys.executable, "-c", inbox.send_code(repr(token.encode()))]


def test_no_door_without_network(workspace: Path, inbox: Inbox) -> None:
    token = "stolen-" + inbox.kind
    out = approved_commands(workspace, {"command": secret_cmd(inbox, token)})
    if not confined(out):
        return
    res = out.result()
    assert SUPPORT.seccomp, "this machine should have the socket filter"
    assert res.is_error and "PermissionError" in res.content, res.content
    assert "sent" not in res.content.splitlines()[-1:]
    assert inbox.got == []
    assert LINE in out.preview()
    assert out.started().sandbox["network"] is False  # type: ignore[index]


def test_make_test_cannot_reach_a_named_socket_outside(workspace: Path, tmp_path: Path) -> None:
    """The issue's case: `make test` whose recipe sends to a unix socket outside."""
    box = Inbox("unix", tmp_path / "s.sock")
    try:
        (workspace / "send.py").write_text(box.send_code("b'from-make'") + "\n")
        (workspace / "Makefile").write_text(f"test:\n\t{sys.executable} send.py\n")
        out = approved_commands(workspace, "make test")
    finally:
        box.close()
    if not confined(out):
        return
    assert out.result().is_error and "Permission denied" in out.result().content
    assert box.got == []


def test_a_datagram_socket_pair_cannot_be_pointed_outside(workspace: Path,
                                                          tmp_path: Path) -> None:
    """socketpair is allowed (pipes between a program's own processes), but a unix datagram
    socket can be re-pointed at any named socket by connect or sendto: a datagram pair is
    refused, and so is a plain unix datagram socket."""
    box = Inbox("unixdgram", tmp_path / "d.sock")
    pair = ("import socket; a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); "
            f"a.sendto(b'via-pair', {box.address!r}); print('sent')")
    plain = ("import socket; s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM); "
             f"s.sendto(b'via-socket', {box.address!r}); print('sent')")
    try:
        out = approved_commands(workspace, {"command": [sys.executable, "-c", pair]},
                                {"command": [sys.executable, "-c", plain]},
                                {"command": [sys.executable, "-c", pair], "network": True})
        granted = box.arrived.wait(30)
    finally:
        box.close()
    assert granted and box.got[-1] == b"via-pair"  # the trick works where not refused
    if not confined(out):
        return
    for cid in ("c1", "c2"):
        assert "PermissionError" in out.result(cid).content, out.result(cid).content
    assert box.got == [b"via-pair"]  # only the call with network got through


def test_udp_reaches_loopback_when_network_is_granted(workspace: Path) -> None:
    box = Inbox("udp")
    try:
        out = approved_commands(workspace, {"command": secret_cmd(box, "allowed"),
                                            "network": True})
        assert box.arrived.wait(30), out.result().content
    finally:
        box.close()
    assert box.got == [b"allowed"]
    assert out.preview().splitlines()[0] == "network: ALLOWED for this command"


def test_a_named_socket_outside_is_reached_when_network_is_granted(workspace: Path,
                                                                   tmp_path: Path) -> None:
    """Named unix sockets are part of what `network: true` grants (nothing else can say which
    socket file belongs to whom); the refusal above is the filter's, not the test's."""
    box = Inbox("unix", tmp_path / "g.sock")
    try:
        out = approved_commands(workspace, {"command": secret_cmd(box, "granted"),
                                            "network": True})
        assert box.arrived.wait(30), out.result().content
    finally:
        box.close()
    assert box.got == [b"<connected>granted"]


def test_what_still_works_without_network(workspace: Path) -> None:
    """Real tools keep working: socketpair, asyncio, subprocess pipes, getaddrinfo of
    localhost, git and a Python test run."""
    code = ("import asyncio, socket, subprocess; a, b = socket.socketpair(); a.send(b'x'); "
            "assert b.recv(1) == b'x'; asyncio.run(asyncio.sleep(0)); "
            "socket.getaddrinfo('localhost', 80); "
            "print(subprocess.run(['echo', 'piped'], capture_output=True, text=True).stdout)")
    (workspace / "test_ok.py").write_text(
        "import unittest\n\nclass T(unittest.TestCase):\n    def test_ok(self):\n"
        "        self.assertTrue(True)\n")
    out = approved_commands(workspace, {"command": [sys.executable, "-c", code]},
                            "git init -q . && git add test_ok.py && git -c user.name=t "
                            "-c user.email=t@t commit -qm x && git log --oneline | wc -l",
                            {"command": [sys.executable, "-m", "unittest", "-q"]})
    for cid in ("c1", "c2", "c3"):
        assert not out.result(cid).is_error, out.result(cid).content
    assert "piped" in out.result("c1").content
