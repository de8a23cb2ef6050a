"""run_command with real processes: background sleepers, 50 MB of output, stdin readers,
environment dumps, timeouts and Ctrl-C. After each, no process of the command is left running."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from agent_cli import events as ev
from agent_cli.approval import Gate, ScriptedApprover
from agent_cli.cancel import CancelToken
from agent_cli.loop import Limits, Loop
from agent_cli.providers.scripted import ScriptedProvider
from agent_cli.tools.base import ToolContext, ToolOutput
from agent_cli.tools.loader import load_tools
from agent_cli.tools.procs import (
    CappedBuffer,
    is_running,
    is_secret_var,
    run_process,
    scrubbed_env,
)
from agent_cli.tools.registry import Registry

# --------------------------------------------------------------------------- helpers


@pytest.fixture(scope="module")
def tools() -> Registry:
    registry, report = load_tools([])
    assert report.errors == []
    return registry


def ctx(ws: Path, timeout_s: float = 30, cap: int = 30_000) -> ToolContext:
    return ToolContext(workspace=ws, timeout_s=timeout_s, output_cap=cap)


def run(tools: Registry, ws: Path, command: Any, c: ToolContext | None = None,
        **kw: Any) -> ToolOutput:
    tool = tools.get("run_command")
    assert tool is not None
    args = tool.args.model_validate({"command": command, **kw})
    out = tool.run(args, c or ctx(ws))
    assert isinstance(out, ToolOutput)
    return out


def body(out: ToolOutput) -> str:
    """The output without the first status line."""
    return out.content.split("\n", 1)[1]


def group_members(pgid: int) -> list[int]:
    """Live (non-zombie) processes in a process group, from /proc."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            raw = Path(f"/proc/{name}/stat").read_bytes()
        except OSError:
            continue
        fields = raw[raw.rfind(b")") + 2:].split()
        if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            found.append(int(name))
    return found


def wait_for(path: Path, limit_s: float = 20.0) -> None:
    """Wait until a file the command writes exists (a sync point, not a timing assertion)."""
    deadline = time.monotonic() + limit_s
    while not path.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} never appeared")
        time.sleep(0.01)


needs_proc = pytest.mark.skipif(not os.path.isdir("/proc/self"),
                                reason="process checks read /proc (Linux)")

# --------------------------------------------------------------------------- basics


def test_argv_runs_without_a_shell_and_string_runs_through_sh(tools: Registry,
                                                              workspace: Path) -> None:
    out = run(tools, workspace, ["echo", "$HOME", "a|b"])
    assert body(out) == "$HOME a|b\n" and not out.is_error
    out = run(tools, workspace, "printf 'one\\ntwo\\nthree\\n' | wc -l")
    assert body(out).strip() == "3"
    assert out.content.startswith("[exit code 0; ")


def test_preview_shows_the_shell_and_the_limits(tools: Registry, workspace: Path) -> None:
    tool = tools.get("run_command")
    assert tool is not None and tool.preview is not None
    args = tool.args.model_validate({"command": "ls | head", "timeout_s": 600})
    shown = tool.preview(args, ctx(workspace, timeout_s=120)) or ""
    assert "through the shell: /bin/sh -c 'ls | head'" in shown
    assert "limit  120 s" in shown and "capped" in shown
    args = tool.args.model_validate({"command": ["ls", "-la"]})
    shown = tool.preview(args, ctx(workspace)) or ""
    assert "directly: ls -la" in shown and str(os.path.realpath(workspace)) in shown


def test_runs_in_the_workspace(tools: Registry, workspace: Path) -> None:
    assert body(run(tools, workspace, ["pwd"])).strip() == os.path.realpath(workspace)


def test_non_zero_exit_is_an_error_with_the_output(tools: Registry, workspace: Path) -> None:
    out = run(tools, workspace, "echo to-out; echo to-err >&2; exit 7")
    assert out.is_error
    assert out.content.startswith("[exit code 7; ")
    assert "to-out\n" in out.content and "to-err\n" in out.content


def test_killed_by_a_signal_is_named(tools: Registry, workspace: Path) -> None:
    out = run(tools, workspace, "kill -9 $$")
    assert out.is_error and "killed by SIGKILL" in out.content


def test_missing_program_is_a_clear_error(tools: Registry, workspace: Path) -> None:
    out = run(tools, workspace, ["no-such-program-here"])
    assert out.is_error and "could not start 'no-such-program-here'" in out.content


def test_invalid_commands_are_rejected_by_validation(tools: Registry) -> None:
    from agent_cli.tools.registry import CallRejected

    bad: dict[str, Any]
    for bad in ({"command": ""}, {"command": []}, {"command": ["ls", 3]},
                {"command": "ls", "timeout_s": 0}, {"command": "ls", "cwd": "/"}):
        with pytest.raises(CallRejected):
            tools.validate("c", "run_command", bad)


def test_invalid_utf8_output_is_replaced(tools: Registry, workspace: Path) -> None:
    out = run(tools, workspace, "printf 'ok\\377\\376end'")
    assert body(out) == "ok\ufffd\ufffdend"


# --------------------------------------------------------------------------- no waiting for input


def test_stdin_is_closed(tools: Registry, workspace: Path) -> None:
    out = run(tools, workspace, ["cat"])
    assert not out.is_error and body(out) == "(no output)"
    out = run(tools, workspace, 'read line; echo "got[$line] status $?"')
    assert body(out).strip() == "got[] status 1"


def test_editors_and_pagers_end_at_once(tools: Registry, workspace: Path) -> None:
    out = run(tools, workspace, '$EDITOR f.txt; echo "editor $?"; echo hi | $PAGER; '
              'echo "$GIT_TERMINAL_PROMPT"')
    assert body(out) == "editor 0\nhi\n0\n"


def test_no_controlling_terminal(tools: Registry, workspace: Path) -> None:
    out = run(tools, workspace, "echo x > /dev/tty; echo status $?")
    assert "status 1" in out.content or "status 2" in out.content


# --------------------------------------------------------------------------- environment


def test_environment_has_no_secrets(tools: Registry, workspace: Path,
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    planted = {
        "ANTHROPIC_API_KEY": "sk-ant-api03-" + "a" * 40,
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9",
        "OPENAI_ORG": "org-planted-1",
        "AWS_REGION": "eu-west-1",
        "GITHUB_TOKEN": "ghp_" + "b" * 36,
        "MY_SERVICE_SECRET": "s3",
        "DB_PASSWORD": "hunter2",
        "PGPASSWD": "hunter3",
        "SOME_CREDENTIALS_FILE": "/creds/file.json",
        "stripe_key": "rk_live_abcdefgh",
        "DATABASE_URL": "postgres://admin:pa55word@db.local/app",
    }
    for k, v in planted.items():
        monkeypatch.setenv(k, v)
    monkeypatch.setenv("HARMLESS_SETTING", "visible")
    out = run(tools, workspace, ["env"])
    names = {line.split("=", 1)[0] for line in body(out).splitlines() if "=" in line}
    for k, v in planted.items():
        assert k not in names
        assert v not in out.content
    assert "HARMLESS_SETTING" in names and "PATH" in names
    for line in ("GIT_TERMINAL_PROMPT=0", "EDITOR=true", "VISUAL=true", "GIT_EDITOR=true",
                 "PAGER=cat"):
        assert line in body(out).splitlines()


def test_secret_names_by_word_and_prefix() -> None:
    for name in ("API_KEY", "x_token", "Password", "AWS_DEFAULT_REGION", "OPENAI_BASE_URL",
                 "MY_PRIVATE_THING", "GCP_CREDENTIALS"):
        assert is_secret_var(name)
    for name in ("PATH", "HOME", "LANG", "GIT_AUTHOR_NAME", "TERM"):
        assert not is_secret_var(name, "plain")
    env = scrubbed_env({"PATH": "/bin", "API_KEY": "x", "EDITOR": "vim"})
    assert env["PATH"] == "/bin" and "API_KEY" not in env and env["EDITOR"] == "true"


# --------------------------------------------------------------------------- output cap


def test_50_mb_of_output_keeps_head_and_tail(tools: Registry, workspace: Path) -> None:
    out = run(tools, workspace,
              "printf 'FIRST-LINE\\n'; head -c 50000000 /dev/zero | tr '\\0' a; "
              "printf '\\nLAST-LINE\\n'", c=ctx(workspace, cap=30_000))
    total = len("FIRST-LINE\n") + 50_000_000 + len("\nLAST-LINE\n")
    assert f"output {total:,} bytes" in out.content
    m = re.search(r"\[\.\.\. ([\d,]+) bytes cut from the middle of the output \(([\d,]+) bytes",
                  out.content)
    assert m is not None
    cut = int(m.group(1).replace(",", ""))
    assert int(m.group(2).replace(",", "")) == total
    assert body(out).startswith("FIRST-LINE\naaaa")
    assert out.content.endswith("aaaa\nLAST-LINE\n")
    note_end = out.content.index("...]\n", m.end()) + len("...]\n")
    kept = out.content[:m.start()].count("a") + out.content[note_end:].count("a")
    assert kept + cut == 50_000_000  # nothing lost silently: kept + cut = all
    assert len(out.content) < 30_000  # fits the loop's cap, so the loop cuts nothing more


def test_capped_buffer_keeps_exact_head_and_tail() -> None:
    buf = CappedBuffer(5, 5)
    for i in range(1000):
        buf.add(bytes([48 + i % 10]) * 7)
    head, tail = buf.parts()
    assert head == b"00000" and tail == b"99999"
    assert buf.total == 7000 and buf.cut == 6990
    assert len(buf.tail) <= 2 * 5 + 7  # the ring never grows past twice its size (+1 chunk)


def test_memory_stays_bounded_while_capping_300_mb(tmp_path: Path) -> None:
    """A child Python runs a command that prints 300 MB; its peak memory grows by far less."""
    script = textwrap.dedent("""
        import resource, sys
        from agent_cli.tools.procs import run_process, scrubbed_env
        env = scrubbed_env()
        run_process(["true"], cwd=".", env=env, timeout_s=30)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        res = run_process(["head", "-c", "300000000", "/dev/zero"], cwd=".", env=env,
                          timeout_s=120)
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        print(res.total_bytes, res.cut_bytes, before, after)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=tmp_path, timeout=300, check=True)
    total, cut, before, after = (int(x) for x in done.stdout.split())
    assert total == 300_000_000 and cut > 299_000_000
    kib = 1 if sys.platform.startswith("linux") else 1024  # ru_maxrss unit: KiB on Linux
    assert (after - before) / kib < 32 * 1024  # the 300 MB never sat in memory


# --------------------------------------------------------------------------- no process left


@needs_proc
def test_background_sleeper_is_ended_when_the_command_returns(tools: Registry,
                                                              workspace: Path) -> None:
    out = run(tools, workspace, "sleep 300 & echo $!; echo $$")
    sleeper, leader = (int(x) for x in body(out).split())
    assert not out.is_error and "ended 1 process" in out.content
    assert not is_running(sleeper)
    assert group_members(leader) == []


@needs_proc
def test_process_that_left_the_group_is_ended_too(tools: Registry, workspace: Path) -> None:
    code = "import os, time; os.setsid(); time.sleep(300)"
    out = run(tools, workspace, [sys.executable, "-c",
                                 "import subprocess, sys; p = subprocess.Popen([sys.executable, "
                                 f"'-c', {code!r}]); print(p.pid)"])
    escaped = int(body(out).strip())
    assert not is_running(escaped)


@needs_proc
def test_timeout_kills_the_whole_group(tools: Registry, workspace: Path) -> None:
    out = run(tools, workspace, "sleep 300 & echo $!; echo $$; sleep 300", timeout_s=1)
    sleeper, leader = (int(x) for x in body(out).split())
    assert out.is_error and out.content.startswith("[timed out after 1 s")
    assert not is_running(sleeper)
    assert group_members(leader) == []


@needs_proc
def test_timeout_kills_children_that_ignore_sigterm(tools: Registry, workspace: Path) -> None:
    out = run(tools, workspace, "(trap '' TERM; sleep 300) & echo $!; echo $$; wait",
              timeout_s=1)
    stubborn, leader = (int(x) for x in body(out).split())
    assert out.is_error and "timed out" in out.content
    assert not is_running(stubborn)
    assert group_members(leader) == []


def test_timeout_is_capped_by_the_session(tools: Registry, workspace: Path) -> None:
    out = run(tools, workspace, ["sleep", "300"], c=ctx(workspace, timeout_s=1), timeout_s=600)
    assert out.is_error and out.content.startswith("[timed out after 1 s")


@needs_proc
def test_cancel_kills_the_group_promptly(tools: Registry, workspace: Path) -> None:
    c = ctx(workspace, timeout_s=300)
    box: dict[str, ToolOutput] = {}
    t = threading.Thread(target=lambda: box.update(out=run(
        tools, workspace, "echo $$ > leader; sleep 300 & sleep 300", c=c)))
    t.start()
    wait_for(workspace / "leader")
    leader = int((workspace / "leader").read_text())
    c.cancel.set()
    t.join(30)
    assert not t.is_alive()
    assert box["out"].is_error and "interrupted after running" in box["out"].content
    assert group_members(leader) == []


@needs_proc
def test_a_cancel_in_the_loop_reports_interrupted_not_denied(tools: Registry,
                                                             workspace: Path) -> None:
    """A cancel (what the front end makes of Ctrl-C) while a command runs: its process group
    is ended, the call is "interrupted", the next one is "not run"."""
    calls = [{"type": "tool_use", "id": "r1", "name": "run_command",
              "input": {"command": "echo $$ > leader; sleep 300"}},
             {"type": "tool_use", "id": "r2", "name": "run_command",
              "input": {"command": ["echo", "never"]}}]
    provider = ScriptedProvider([{"content": calls, "stop_reason": "tool_use"}])
    events: list[ev.AnyEvent] = []
    loop = Loop(provider, tools, Gate(ScriptedApprover(["y", "y"])), events.append,
                workspace=workspace, limits=Limits(tool_timeout_s=300))

    token = CancelToken()

    def press_ctrl_c() -> None:
        wait_for(workspace / "leader")
        token.cancel()

    presser = threading.Thread(target=press_ctrl_c)
    presser.start()
    history: list[dict[str, Any]] = []
    result = loop.run_turn(history, "go", token)
    presser.join()
    assert result.reason == "interrupted"
    first, second = history[2]["content"]
    assert first["is_error"] and "interrupted by the user after running" in first["content"]
    assert "denied" not in first["content"]
    assert second["is_error"] and "not run" in second["content"]
    leader = int((workspace / "leader").read_text())
    # The loop gave the tool its grace period; the group is gone by the time it returned.
    assert group_members(leader) == []


def test_loop_result_carries_exit_code_and_output(tools: Registry, workspace: Path) -> None:
    calls = [{"type": "tool_use", "id": "r1", "name": "run_command",
              "input": {"command": "echo built; exit 2"}}]
    provider = ScriptedProvider([{"content": calls, "stop_reason": "tool_use"},
                                 {"content": [{"type": "text", "text": "ok"}]}])
    events: list[ev.AnyEvent] = []
    approver = ScriptedApprover(["y"])
    loop = Loop(provider, tools, Gate(approver), events.append, workspace=workspace)
    history: list[dict[str, Any]] = []
    loop.run_turn(history, "go")
    (block,) = history[2]["content"]
    assert block["is_error"] and "exit code 2" in block["content"] and "built" in block["content"]
    assert "/bin/sh -c" in (approver.seen[0].preview or "")


def test_run_process_direct_result_fields(workspace: Path) -> None:
    res = run_process(["sh", "-c", "printf abc"], cwd=str(workspace), env=scrubbed_env(),
                      timeout_s=30)
    assert (res.returncode, res.total_bytes, res.cut_bytes, res.timed_out, res.cancelled) == \
        (0, 3, 0, False, False)
    assert res.text() == "abc" and res.duration_s >= 0


@pytest.mark.parametrize("pidfd", [True, False], ids=["pidfd", "no-pidfd"])
def test_the_exit_is_seen_after_the_output_closed(workspace: Path, pidfd: bool,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A command that closes its output and goes on: its exit is waited for (on a pidfd in the
    same selector as the output; without one, as Popen.wait does), with its status, and no
    descriptor is left open."""
    from agent_cli.tools import procs

    opened: list[int] = []
    exit_fd = procs._exit_fd
    monkeypatch.setattr(procs, "_exit_fd", lambda pid: opened.append(
        exit_fd(pid) if pidfd else -1) or opened[-1])
    res = run_process(["sh", "-c", "printf early; exec >&- 2>&-; sleep 0.3; exit 3"],
                      cwd=str(workspace), env=scrubbed_env(), timeout_s=60)
    assert (res.returncode, res.text(), res.timed_out) == (3, "early", False)
    [fd] = opened
    assert (fd >= 0) == pidfd
    try:
        target = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        target = "closed"
    assert target != "anon_inode:[pidfd]"


@needs_proc
def test_commands_still_running_are_ended_when_the_agent_exits(tmp_path: Path) -> None:
    """The tool thread is a daemon: if the agent process exits mid-command, an exit hook still
    ends the command's group."""
    script = textwrap.dedent("""
        import sys, threading, time
        from pathlib import Path
        from agent_cli.tools.procs import run_process, scrubbed_env
        threading.Thread(target=run_process, daemon=True, kwargs=dict(
            argv=["sh", "-c", "sleep 300 & echo $! > sleeper; echo $$ > leader; sleep 300"],
            cwd=".", env=scrubbed_env(), timeout_s=600)).start()
        while not Path("leader").exists() or not Path("sleeper").exists():
            time.sleep(0.01)
        time.sleep(0.05)
        sys.exit(0)
    """)
    subprocess.run([sys.executable, "-c", script], cwd=tmp_path, timeout=120, check=True)
    leader = int((tmp_path / "leader").read_text())
    sleeper = int((tmp_path / "sleeper").read_text())
    assert not is_running(sleeper)
    assert group_members(leader) == []
