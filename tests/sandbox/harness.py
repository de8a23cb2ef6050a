"""What the sandbox tests share: an approved run_command through the real loop and session,
and a loopback TCP listener the test owns."""

from __future__ import annotations

import os
import socket
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agent_cli import events as ev
from agent_cli.approval import ScriptedApprover
from agent_cli.config import Settings
from agent_cli.providers.scripted import ScriptedProvider
from agent_cli.sandbox.policy import LINE, probe  # noqa: F401 (re-exported)
from agent_cli.session import Session
from agent_cli.tools.loader import load_tools
from tests.scripts import calls, done, use

SUPPORT = probe()
NO_LANDLOCK = "not sandboxed: kernel has no Landlock"


@dataclass
class Outcome:
    events: list[Any]
    panels: list[Any]
    provider: ScriptedProvider
    session: Session

    def result(self, call_id: str = "c1") -> ev.ToolResultEvent:
        return next(e for e in self.events
                    if isinstance(e, ev.ToolResultEvent) and e.id == call_id)

    def started(self, call_id: str = "c1") -> ev.ToolStarted:
        return next(e for e in self.events if isinstance(e, ev.ToolStarted) and e.id == call_id)

    def preview(self, index: int = 0) -> str:
        return str(self.panels[index].preview)

    def notices(self, kind: str = "sandbox") -> list[str]:
        return [e.message for e in self.events if isinstance(e, ev.Notice) and e.kind == kind]


def approved_commands(ws: Path, *commands: str | dict[str, Any], **settings: Any) -> Outcome:
    """Run each command as an approved run_command call of one real session; close it.
    Results reach the model whole (`redact_results = false` unless given): what a confined
    command could read must show in the result, not be hidden by the redactor, or a test that
    a secret stays out of reach could not fail."""
    uses = []
    for i, command in enumerate(commands, 1):
        args = command if isinstance(command, dict) else {"command": command}
        uses.append(use(f"c{i}", "run_command", args))
    provider = ScriptedProvider([calls(*uses), done()])
    approver = ScriptedApprover(["y"] * len(uses))
    registry, report = load_tools([])
    assert report.errors == []
    events: list[Any] = []
    settings = {"redact_results": False, **settings}
    session = Session(Settings(provider="scripted", **settings), workspace=ws, provider=provider,
                      registry=registry, approver=approver, sinks=[events.append])
    session.start()
    try:
        assert session.send("go").reason == "end_turn"
    finally:
        session.close()
    return Outcome(events, approver.seen, provider, session)


def confined(out: Outcome) -> bool:
    """True when the kernel confines; otherwise assert that the user was told it does not."""
    if SUPPORT.abi:
        return True
    assert NO_LANDLOCK in out.preview()
    assert any("not sandboxed" in n for n in out.notices())
    assert out.started().sandbox == {"mode": "none", "reason": "kernel has no Landlock"}
    return False


class Listener:
    """A loopback TCP listener the test owns; counts the connections it accepted."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.accepted = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.accepted += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(30)
        self.sock.close()


def connect_cmd(port: int) -> list[str]:
    return [sys.executable, "-c",
            f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=20); "
            "print('connected')"]


class Inbox:
    """A real listener the test owns, of one kind: `udp` (127.0.0.1), `unix` (a named socket
    at `path`), `unixdgram` (a named datagram socket at `path`) or `abstract` (an abstract unix
    name). Keeps every datagram or connection's
    first bytes it got, so a test can say exactly what reached it."""

    def __init__(self, kind: str, path: Path | None = None) -> None:
        self.kind = kind
        self.got: list[bytes] = []
        self.arrived = threading.Event()
        if kind == "udp":
            self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            self.sock.bind(("127.0.0.1", 0))
            self.address: Any = self.sock.getsockname()
        elif kind == "unixdgram":
            assert path is not None
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            self.address = str(path)
            self.sock.bind(self.address)
        else:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            if kind == "unix":
                assert path is not None
                self.address = str(path)
            else:
                self.address = "\0agent-cli-test-" + os.urandom(6).hex()
            self.sock.bind(self.address)
            self.sock.listen(8)
        self.sock.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                if self.kind in ("udp", "unixdgram"):
                    data, _ = self.sock.recvfrom(65536)
                else:
                    conn, _ = self.sock.accept()
                    conn.settimeout(20)
                    try:
                        data = b"<connected>" + conn.recv(65536)
                    except OSError:
                        data = b"<connected>"
                    conn.close()
            except OSError:
                continue
            self.got.append(data)
            self.arrived.set()

    def send_code(self, payload: str) -> str:
        """Python that sends `payload` (an expression) here, as an attacker's script would."""
        if self.kind == "udp":
            return ("import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); "
                    f"s.sendto({payload}, {tuple(self.address)!r}); print('sent')")
        return ("import socket; s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM); "
                f"s.connect({self.address!r}); s.sendall({payload}); print('sent')")

    def close(self) -> None:
        self._stop.set()
        self._thread.join(30)
        self.sock.close()
