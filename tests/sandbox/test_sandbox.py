"""The kernel sandbox with real processes on the real kernel: an approved run_command through the
real loop and session, then what happened on disk, on a loopback socket the test owns, and in
the log. Where the kernel has no Landlock, each test asserts the warning path instead: the panel
says "not sandboxed" and nothing claims a confinement that is not there.
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from agent_cli import events as ev
from agent_cli.approval import ScriptedApprover
from agent_cli.config import Settings
from agent_cli.providers.scripted import ScriptedProvider
from agent_cli.sandbox import landlock
from agent_cli.sandbox.policy import LINE, NETWORK_ALLOWED, Sandbox, Support
from agent_cli.session import Session
from agent_cli.tools.base import Tool, ToolContext
from agent_cli.tools.loader import load_tools
from agent_cli.tools.procs import run_process, scrubbed_env
from tests.sandbox.harness import (
    NO_LANDLOCK,
    SUPPORT,
    Listener,
    approved_commands,
    confined,
    connect_cmd,
)
from tests.scripts import done, tool_use

# --------------------------------------------------------------------------- writes


def test_outside_write_refused_and_nothing_appears(workspace: Path, outside: Path) -> None:
    out = approved_commands(workspace, f"touch {outside}/x; echo made > {outside}/y")
    if not confined(out):
        return
    res = out.result()
    assert res.is_error and "Permission denied" in res.content
    assert list(outside.iterdir()) == []
    assert LINE in out.preview()
    record = out.started().sandbox
    assert record is not None and record["mode"] == "workspace"
    assert record["network"] is False and record["landlock_abi"] == SUPPORT.abi
    assert str(workspace.resolve()) in record["writes"]


def test_workspace_and_tmpdir_writes_work(workspace: Path) -> None:
    out = approved_commands(
        workspace, 'touch inside.txt && echo hi > "$TMPDIR/t" && cat "$TMPDIR/t" && '
                   'mkdir -p sub/deeper && mv inside.txt sub/deeper/ && echo "TMP=$TMPDIR"')
    res = out.result()
    assert not res.is_error, res.content
    assert (workspace / "sub" / "deeper" / "inside.txt").exists()
    if not confined(out):
        return
    tmp = res.content.split("TMP=")[1].strip()
    assert Path(tmp).name.startswith("agent-cli-tmp-")
    assert str(out.started().sandbox["writes"][1]) == tmp  # type: ignore[index]
    assert not Path(tmp).exists()  # the session's temporary folder went with it


def test_sandbox_off_lets_the_outside_write_happen(workspace: Path, outside: Path) -> None:
    out = approved_commands(workspace, f"touch {outside}/x", sandbox="off")
    assert not out.result().is_error, out.result().content
    assert (outside / "x").exists()
    assert "sandbox: OFF" in out.preview()
    assert out.started().sandbox == {"mode": "off"}
    assert out.notices() and "sandbox off" in out.notices()[0]
    assert out.provider.requests[0].system == Settings().system_prompt  # no sandbox note


def test_a_symlink_or_hard_link_out_of_the_workspace_does_not_open_a_way(
        workspace: Path, outside: Path) -> None:
    (outside / "target.txt").write_text("original\n")
    (workspace / "door").symlink_to(outside)
    out = approved_commands(
        workspace, "echo through-symlink > door/new.txt",
        f"ln {outside}/target.txt hard && echo changed > hard",
        "echo changed > door/target.txt")
    if not confined(out):
        return
    for cid in ("c1", "c2", "c3"):
        assert out.result(cid).is_error, out.result(cid).content
    assert sorted(p.name for p in outside.iterdir()) == ["target.txt"]
    assert (outside / "target.txt").read_text() == "original\n"


# --------------------------------------------------------------------------- network


def test_tcp_connect_refused_then_allowed_with_network(workspace: Path,
                                                       listener: Listener) -> None:
    out = approved_commands(workspace, {"command": connect_cmd(listener.port)},
                            {"command": connect_cmd(listener.port), "network": True})
    allowed = out.result("c2")
    assert not allowed.is_error and "connected" in allowed.content, allowed.content
    assert out.preview(1).splitlines()[0] == NETWORK_ALLOWED
    if not confined(out):
        return
    refused = out.result("c1")
    assert refused.is_error and "PermissionError" in refused.content, refused.content
    assert listener.accepted == 1  # only the call that asked for network got through
    assert NETWORK_ALLOWED not in out.preview(0) and LINE in out.preview(0)
    assert out.started("c2").sandbox["network"] is True  # type: ignore[index]


def test_tcp_bind_refused(workspace: Path) -> None:
    code = ("import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(); "
            "print('listening')")
    out = approved_commands(workspace, {"command": [sys.executable, "-c", code]})
    if not confined(out):
        return
    assert out.result().is_error and "PermissionError" in out.result().content


# --------------------------------------------------------------------------- other processes


def test_no_signal_and_no_ptrace_outside_the_sandbox(workspace: Path) -> None:
    me = os.getpid()
    mem = [sys.executable, "-c", f"open('/proc/{me}/mem', 'rb'); print('mem opened')"]
    out = approved_commands(workspace, f"kill -0 {me} && echo signalled", {"command": mem})
    off = approved_commands(workspace, f"kill -0 {me} && echo signalled", {"command": mem},
                            sandbox="off")
    assert "signalled" in off.result("c1").content  # the same calls work unconfined
    assert "mem opened" in off.result("c2").content
    if not confined(out):
        return
    assert "mem opened" not in out.result("c2").content
    assert "PermissionError" in out.result("c2").content
    if SUPPORT.abi >= 6:
        assert out.result("c1").is_error and "signalled" not in out.result("c1").content
    else:
        assert "signals to other processes not blocked" in out.preview(0)


def test_a_plugin_using_the_process_helper_is_confined_too(workspace: Path,
                                                           outside: Path) -> None:
    """run_process without a sandbox argument, in a plugin's run, gets the running session's."""
    registry, _ = load_tools([])
    ran: list[Any] = []

    class _NoArgs(BaseModel):
        pass

    def toucher(args: _NoArgs, ctx: ToolContext) -> str:
        ran.append(run_process(["touch", str(outside / "x")], cwd=str(workspace),
                               env=scrubbed_env(), timeout_s=30))
        return "touched"

    registry.add(Tool("toucher", "Touches a file outside (test).", _NoArgs, toucher,
                      effect="read"))
    session = Session(Settings(provider="scripted"), workspace=workspace,
                      provider=ScriptedProvider([tool_use("t1", "toucher", {}), done()]),
                      registry=registry, approver=ScriptedApprover([]))
    session.start()
    try:
        session.send("touch")
    finally:
        session.close()
    (res,) = ran
    if SUPPORT.abi:
        assert res.returncode != 0 and b"Permission denied" in res.head
        assert not (outside / "x").exists()
    else:
        assert session.sandbox.panel_lines(False)[0].startswith(NO_LANDLOCK)
    after = run_process(["touch", str(outside / "y")], cwd=str(workspace), env=scrubbed_env(),
                        timeout_s=30)
    assert after.returncode == 0  # once the session is closed, nothing is left installed


# --------------------------------------------------------------------------- weaker kernels


def test_unsupported_kernel_is_said_at_start_and_on_every_panel(
        workspace: Path, outside: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_CLI_SANDBOX_PROBE", "unsupported")
    out = approved_commands(workspace, f"touch {outside}/x", "true")
    assert out.notices() == ["not sandboxed: kernel has no Landlock. Approved commands and MCP "
                             "servers run with all your rights."]
    for i in (0, 1):
        assert NO_LANDLOCK in out.preview(i) and LINE not in out.preview(i)
    assert (outside / "x").exists()  # honest: it really was not confined
    assert out.started().sandbox == {"mode": "none", "reason": "kernel has no Landlock"}
    assert "confined by the operating system" not in str(out.provider.requests[0].system)


def test_an_old_abi_says_which_part_is_missing(workspace: Path, outside: Path,
                                               listener: Listener,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_CLI_SANDBOX_PROBE", "abi:3,noseccomp")
    out = approved_commands(workspace, {"command": connect_cmd(listener.port)},
                            f"touch {outside}/x")
    if not confined(out):
        return
    assert "not confined: no network rules: Landlock ABI 3" in out.preview(0)
    assert LINE not in out.preview(0)  # never "no network" where it is not blocked
    assert "sandbox: writes limited to the workspace" in out.preview(0)
    assert out.notices() and "no network rules: Landlock ABI 3" in out.notices()[0]
    assert "connected" in out.result("c1").content  # ABI 3 cannot block it, and says so
    assert out.result("c2").is_error and not (outside / "x").exists()  # writes still confined
    assert out.started().sandbox["landlock_abi"] == 3  # type: ignore[index]


def test_an_old_abi_with_the_socket_filter_still_has_no_network(
        workspace: Path, listener: Listener, monkeypatch: pytest.MonkeyPatch) -> None:
    """Landlock ABI 3 has no TCP rules, but the seccomp filter refuses the socket itself."""
    monkeypatch.setenv("AGENT_CLI_SANDBOX_PROBE", "abi:3")
    out = approved_commands(workspace, {"command": connect_cmd(listener.port)})
    if not confined(out) or not SUPPORT.seccomp:
        return
    assert LINE in out.preview(0) and "no network rules" not in out.preview(0)
    assert "PermissionError" in out.result("c1").content and listener.accepted == 0


def test_gaps_by_abi() -> None:
    assert Support(7).gaps(False) == []
    assert Support(5).gaps(False) == ["signals to other processes not blocked: Landlock ABI 5"]
    assert "no network rules: Landlock ABI 2" in Support(2, seccomp=False).gaps(False)
    assert "no network rules: Landlock ABI 2" not in Support(2).gaps(False)  # the filter
    assert Support(7, seccomp=False).gaps(False) == [
        "UDP, unix and other sockets not blocked: no seccomp filter here"]
    assert "no network rules: Landlock ABI 2" not in Support(2).gaps(True)
    assert Support(0, "kernel has no Landlock").gaps(False) == []
    assert landlock.fs_handled(1) == (1 << 13) - 1
    assert landlock.fs_handled(3) == (1 << 15) - 1
    assert landlock.fs_handled(5) == (1 << 16) - 1
    assert landlock.net_handled(3, False) == 0 and landlock.net_handled(4, True) == 0
    assert landlock.scoped(5) == 0 and landlock.scoped(6) == 3


# --------------------------------------------------------------------------- the model


def test_the_model_is_told_once_what_is_blocked(workspace: Path, outside: Path) -> None:
    out = approved_commands(workspace, f"touch {outside}/x")
    if not confined(out):
        return
    systems = [r.system for r in out.provider.requests]
    note = "Commands you run are confined by the operating system"
    assert all(str(s).count(note) == 1 for s in systems)
    start = next(e for e in out.events if isinstance(e, ev.SessionStart))
    assert note in str(start.system)  # the log records the prompt that was really sent


# --------------------------------------------------------------------------- agent-cli itself

CHILD = textwrap.dedent("""
    import os, subprocess, sys
    from agent_cli.sandbox import selfguard
    hidden = selfguard.hide_secrets() if sys.argv[1] == "hide" else selfguard.guard_self()
    print("HIDDEN", sorted(hidden))
    print("SDK-STILL-SEES", os.environ.get("FAKE_SERVICE_TOKEN"))
    sys.stdout.flush()
    subprocess.run(["sh", "-c", "tr '\\\\0' '\\\\n' < /proc/$PPID/environ; echo EXIT=$?"])
""")


def _guarded_child(mode: str, secret: str) -> str:
    env = dict(os.environ, FAKE_SERVICE_TOKEN=secret, SANDBOX_CANARY="canary-visible")
    return subprocess.run([sys.executable, "-c", CHILD, mode], env=env, capture_output=True,
                          text=True, timeout=60, check=True).stdout


def test_secret_values_are_overwritten_in_the_initial_environment_block() -> None:
    secret = "uniq" + os.urandom(8).hex() + "zz"
    shown = _guarded_child("hide", secret)
    hidden_line = next(line for line in shown.splitlines() if line.startswith("HIDDEN"))
    assert "'FAKE_SERVICE_TOKEN'" in hidden_line and "SANDBOX_CANARY" not in hidden_line
    assert f"SDK-STILL-SEES {secret}" in shown  # Python's copy keeps it for the SDK
    environ = shown.split("SDK-STILL-SEES", 1)[1].split("\n", 1)[1]
    assert "SANDBOX_CANARY=canary-visible" in environ  # the read worked...
    assert "FAKE_SERVICE_TOKEN=" in environ and secret not in environ  # ...and holds no value


def test_guard_self_makes_the_process_undumpable() -> None:
    secret = "uniq" + os.urandom(8).hex() + "zz"
    shown = _guarded_child("guard", secret)
    assert secret not in shown.split("SDK-STILL-SEES", 1)[1].split("\n", 1)[1]
    code = ("import ctypes; from agent_cli.sandbox.selfguard import guard_self; guard_self(); "
            "print(ctypes.CDLL(None).prctl(3, 0, 0, 0, 0))")  # PR_GET_DUMPABLE
    flag = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60, check=True).stdout.strip()
    assert flag == "0"
    if os.geteuid() != 0:  # root keeps CAP_SYS_PTRACE; anyone else is refused the files
        assert "EXIT=0" not in shown
    assert ctypes.CDLL(None).prctl(3, 0, 0, 0, 0) == 1  # this test process was left alone


# --------------------------------------------------------------------------- the wrapper


def test_exec_wrapper_confines_and_refuses_to_run_unconfined(workspace: Path,
                                                             outside: Path) -> None:
    box = Sandbox("workspace", workspace)
    try:
        argv, tmp = box.wrap(["sh", "-c", f'touch {outside}/x; touch in.txt "$TMPDIR/t"; '
                                          'echo "TMP=$TMPDIR"'],
                             writable=str(workspace), network=False, name="t")
        done_ = subprocess.run(argv, cwd=workspace, capture_output=True, text=True, timeout=60)
        if not box.enforced:
            assert argv[0] == "sh"  # nothing to wrap with, and the panel says so
            return
        assert "Permission denied" in done_.stderr and not (outside / "x").exists()
        assert (workspace / "in.txt").exists() and tmp is not None and (tmp / "t").exists()
        assert f"TMP={tmp}" in done_.stdout
        forged = tmp / "forged.json"
        forged.write_text('{"abi": 1, "rules": [["/", "rw"]], "network": true}')
        for policy in (["{not json", "0" * 64], [str(forged), "0" * 64], [argv[6], argv[7]]):
            # not a file, a file whose hash is not the one agent-cli wrote, one already used
            bad = subprocess.run([*argv[:5], "--policy", *policy, "--", "true"],
                                 capture_output=True, text=True, timeout=60)
            assert bad.returncode == 126 and "was not started" in bad.stderr, policy
    finally:
        box.close()
