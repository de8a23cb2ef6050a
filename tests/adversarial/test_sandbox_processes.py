"""Family: processes an approved command leaves behind. `setsid env -i sh -c '... sleep 120' &`
starts a new session (out of the process group) with the environment wiped (no marker to find
it by): it must still end when run_command returns, because the command is PID 1 of a PID
namespace of its own and the kernel ends every process of it when PID 1 exits.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from agent_cli.sandbox import pidns
from tests.sandbox.harness import approved_commands, confined


def _alive_with(token: str) -> list[int]:
    """Running processes whose command line holds `token` (this machine's /proc)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/cmdline", "rb") as f:
                cmd = f.read()
            with open(f"/proc/{name}/stat", "rb") as f:
                state = f.read().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if token.encode() in cmd and state not in (b"Z", b"X"):
            found.append(int(name))
    return found


def _escape(token: str) -> str:
    return (f"setsid env -i sh -c 'echo up > started; sleep 120; echo {token}' & "
            "while [ ! -s started ]; do sleep 0.05; done; echo launched")


def test_a_setsid_env_wiped_background_process_ends_with_the_command(workspace: Path) -> None:
    token = "escapee-" + os.urandom(6).hex()
    out = approved_commands(workspace, _escape(token))
    try:
        assert "launched" in out.result().content, out.result().content
        if not confined(out):
            return
        assert pidns.available(), "CI runs as root: the PID namespace must be there"
        deadline = time.monotonic() + 30
        while _alive_with(token) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _alive_with(token) == []
        assert "processes it starts in a new session" not in out.preview()
    finally:
        for pid in _alive_with(token):
            os.kill(pid, 9)


def test_without_a_pid_namespace_the_panel_says_so(workspace: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pidns, "_AVAILABLE", False)
    token = "escapee-" + os.urandom(6).hex()
    out = approved_commands(workspace, _escape(token))
    try:
        if not confined(out):
            return
        assert ("not confined: processes it starts in a new session are ended by a marker in "
                "their environment only") in out.preview()
        assert any("no PID namespace" in n for n in out.notices())  # and at start
        gaps = out.started().sandbox["gaps"]  # type: ignore[index]
        assert any("no PID namespace" in gap for gap in gaps)
        assert _alive_with(token), "without the namespace the wiped-marker process survives"
    finally:
        for pid in _alive_with(token):
            os.kill(pid, 9)
