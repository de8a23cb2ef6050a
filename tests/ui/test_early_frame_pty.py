"""`agent-cli chat` on a terminal draws its prompt before typer parses the command line.

cli/main.py draws it (ui/startup.py `draw_early`) when the words alone say the chat will start
with a prompt, and the chat takes that frame over. What the early frame must not do: stay on the
screen under an error, leave the terminal in raw mode when the command ends early (a usage error,
SIGTERM while parsing), or change what typer says and the exit code. Checked in a real pty; a
shell around the command runs `stty -a` after it, so the terminal's mode is seen as the next
program finds it.
"""

from __future__ import annotations

import os
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_cli.cli import main as cli_main

pexpect = pytest.importorskip("pexpect")

pytestmark = pytest.mark.pty

REPO = Path(__file__).resolve().parents[2]
PROMPT = "›".encode()
ERASE = b"\r\x1b[K"
TIMEOUT = 60


def pty_env() -> dict[str, str]:
    env = dict(os.environ)  # AGENT_CLI_HOME is this test's temp folder (conftest)
    env.update(PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm-256color", PYTHONUNBUFFERED="1")
    return env


def in_shell(*args: str, python_flags: tuple[str, ...] = ()) -> Any:
    """agent-cli ARGS in a pty, then its exit status and the terminal's mode."""
    command = shlex.join([sys.executable, *python_flags, "-m", "agent_cli", *args])
    return pexpect.spawn("/bin/sh", ["-c", f"{command}; echo EXIT=$?; stty -a"], env=pty_env(),
                         cwd=str(REPO), dimensions=(40, 120), timeout=TIMEOUT)


def exit_and_mode(child: Any) -> tuple[int, bytes, bytes]:
    """(the exit status, what the command printed, the terminal's mode after it)."""
    child.expect(rb"EXIT=(\d+)")
    code, printed = int(child.match.group(1)), bytes(child.before)
    child.expect(pexpect.EOF)
    return code, printed, bytes(child.before)


def restored(mode: bytes) -> bool:
    words = mode.split()
    return b"echo" in words and b"icanon" in words and b"isig" in words


def piped(*args: str) -> subprocess.CompletedProcess[str]:
    """The same command with no terminal: typer's own output, no early frame."""
    return subprocess.run([sys.executable, "-m", "agent_cli", *args], cwd=REPO, input="",
                          capture_output=True, text=True, timeout=TIMEOUT, env=pty_env())


def test_the_prompt_is_on_screen_before_typer_is_imported() -> None:
    """-X importtime writes each import to stderr as it finishes; stdout and stderr are the same
    pty, so where the prompt stands among those lines says when it was drawn."""
    child = pexpect.spawn(sys.executable, [
        "-X", "importtime", "-m", "agent_cli", "chat", "--script",
        str(REPO / "examples" / "demo_script.json")], env=pty_env(), cwd=str(REPO),
        dimensions=(40, 120), timeout=TIMEOUT)
    try:
        child.expect(re.escape(b"Ctrl-D to leave."))
        shown = bytes(child.before)
        child.send(b"\x04")
        child.expect(pexpect.EOF)
        child.close()
    finally:
        if child.isalive():
            child.terminate(force=True)
    assert child.exitstatus == 0
    typer_at = re.search(rb"import time:[^\n]*\|\s+typer[.\r]", shown)  # typer or a part
    assert typer_at is not None, "typer was imported (the chat parses its options with it)"
    drawn_at = shown.find(PROMPT)
    assert 0 <= drawn_at < typer_at.start(), "the prompt came after typer's import"


@pytest.mark.parametrize("args", [
    ["chat", "--bogus"],
    ["chat", "--workspace", "/nonexistent/folder"],
    ["chat", "--demo", "--provider", "anthropic"],
    ["chat", "--model"],
])
def test_an_error_after_the_early_prompt_reads_as_without_it(args: list[str]) -> None:
    child = in_shell(*args)
    child.expect(PROMPT)  # drawn first
    code, printed, after = exit_and_mode(child)
    plain = piped(*args)
    assert code == plain.returncode != 0
    # the prompt was erased before the first character of the error, which is typer's own text
    shown = (PROMPT + printed).replace(b"\r\n", b"\n")
    assert shown.startswith(PROMPT + b" " + ERASE), shown[:80]
    said = shown[len(PROMPT + b" " + ERASE):].decode("utf-8", "replace")
    said = re.sub(r"\x1b\[[0-9;]*m", "", said)  # (the colour a terminal gets)
    assert said.split("EXIT=")[0].strip() == plain.stderr.strip()
    assert restored(after), after


def test_sigterm_while_the_command_line_is_parsed_leaves_the_terminal_as_it_was() -> None:
    child = in_shell("chat", "--script", str(REPO / "examples" / "demo_script.json"))
    child.expect(PROMPT)  # the early frame: typer is being imported and parses now
    os.kill(_agent_pid(child.pid), signal.SIGTERM)
    code, _printed, after = exit_and_mode(child)
    assert code == 143
    assert restored(after), after


def _agent_pid(shell: int) -> int:
    """The agent-cli process the shell started (its only child)."""
    import time

    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        try:
            kids = Path(f"/proc/{shell}/task/{shell}/children").read_text().split()
        except OSError:
            kids = []
        if kids:
            return int(kids[0])
        time.sleep(0.01)
    pytest.fail("the shell started no agent-cli")


@pytest.mark.parametrize(("args", "prompt"), [
    (["chat"], "› "),
    (["chat", "--script", "s.json", "--read-only"], "read-only › "),
    (["chat", "--demo"], "› "),
    (["chat", "--help"], None),
    (["chat", "-h"], None),
    (["chat", "-qh"], None),
    (["chat", "--resume"], None),
    (["chat", "--resume=abc"], None),
    (["chat", "--continue"], None),
    (["chat", "--last"], None),
    (["chat", "--", "--help"], "› "),
    (["run", "go"], None),
])
def test_which_command_lines_get_the_early_prompt(args: list[str], prompt: str | None,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_main, "_on_terminal", lambda: True)
    assert cli_main._early_prompt(args) == prompt
    monkeypatch.setattr(cli_main, "_on_terminal", lambda: False)
    assert cli_main._early_prompt(args) is None


def test_closing_the_terminal_at_the_first_prompt_ends_with_129() -> None:
    """The terminal hangs up (its window closed) while the prompt is drawn and typer parses:
    SIGHUP, and the terminal gone under the frame's erase (EIO). Wherever it lands, early or in
    the chat, the process ends itself with 128 + SIGHUP."""
    child = pexpect.spawn(sys.executable, [
        "-m", "agent_cli", "chat", "--script", str(REPO / "examples" / "demo_script.json")],
        env=pty_env(), cwd=str(REPO), dimensions=(40, 120), timeout=TIMEOUT)
    child.expect(PROMPT)
    os.close(child.child_fd)  # the master side gone: the kernel hangs the terminal up
    child.child_fd = -1
    _pid, status = os.waitpid(child.pid, 0)
    child.terminated = True
    assert os.waitstatus_to_exitcode(status) == 128 + signal.SIGHUP


HOLD_EDITOR = '''
import sys

# Python starts, then waits here until the test has seen its first key echoed: that key is in the
# terminal before anything is drawn, however the two processes are scheduled.
with open({start!r}) as gate:
    gate.read()


class _HoldTheLineEditor:
    """Holds the first import of prompt_toolkit until the test writes to its FIFO: the line
    editor cannot exist before then, so whatever is echoed meanwhile is the terminal's echo."""

    def find_spec(self, name, path=None, target=None):
        if name == "prompt_toolkit":
            sys.meta_path.remove(self)
            open({mark!r}, "w").close()
            with open({fifo!r}) as gate:
                gate.read()
        return None


sys.meta_path.insert(0, _HoldTheLineEditor())
'''


def test_a_key_typed_right_after_start_is_echoed_before_the_editor_exists(
        tmp_path: Path) -> None:
    """A person types as soon as they press Enter: a key written at once (before anything is
    drawn) and one typed at the first frame both show after the prompt while prompt_toolkit
    cannot even be imported (a meta-path hook holds it on a FIFO), and both reach the line
    editor once it runs, to be sent as one line."""
    import json
    import time

    from tests import scripts

    hook = tmp_path / "hook"
    hook.mkdir()
    fifo, mark = tmp_path / "editor.fifo", tmp_path / "editor-import-held"
    start = tmp_path / "start.fifo"
    os.mkfifo(fifo)
    os.mkfifo(start)
    (hook / "sitecustomize.py").write_text(
        HOLD_EDITOR.format(mark=str(mark), fifo=str(fifo), start=str(start)), encoding="utf-8")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([scripts.text("ANSWER-ONE")]), encoding="utf-8")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    env = dict(pty_env(), PYTHONPATH=str(hook))
    child = pexpect.spawn(sys.executable, ["-m", "agent_cli", "chat", "--script", str(script),
                                           "--workspace", str(workspace)],
                          env=env, cwd=str(REPO), dimensions=(40, 120), timeout=TIMEOUT)
    try:
        child.send(b"k")  # at t=0
        # The kernel echoes it (the shell's mode) before agent-cli draws anything: sent while
        # the frame took the terminal raw for a moment to read what was typed, it would be
        # neither read nor echoed (the editor draws it later) and this test would wait in vain.
        child.expect(b"k")
        with open(start, "w") as gate:
            gate.write("go")
        child.expect(PROMPT)
        child.expect(b"k")  # after the prompt
        child.send(b"j")
        child.expect(b"j")
        deadline = time.monotonic() + TIMEOUT
        while not mark.exists():  # (the editor's import is held: nothing above was its echo)
            assert time.monotonic() < deadline, "prompt_toolkit was never imported"
            time.sleep(0.05)
        assert child.isalive()
        with open(fifo, "w") as gate:
            gate.write("go")
        child.expect(re.escape(b"Ctrl-D to leave."))
        child.expect(PROMPT + b" kj")
        child.send(b"\r")
        child.expect(b"ANSWER-ONE")
        child.expect(PROMPT)
        child.send(b"\x04")
        child.expect(pexpect.EOF)
        child.close()
    finally:
        if child.isalive():
            child.terminate(force=True)
    assert child.exitstatus == 0
    [log] = (Path(os.environ["AGENT_CLI_HOME"]) / "sessions").glob("*.jsonl")
    said = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
    assert [e["text"] for e in said if e["type"] == "user_message"] == ["kj"]
