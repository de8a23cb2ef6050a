"""The real REPL in a pseudo-terminal: what a person types, what they see, what lands on disk.

Each test spawns `python -m agent_cli chat --script FILE --workspace TMP` under pexpect, types like
a person (Enter is "\\r" in a terminal; "\\n" is Ctrl-J, which inserts a newline), and then checks
the workspace and the session log. Timeouts are generous; nothing here asserts on time.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pexpect = pytest.importorskip("pexpect")  # a test dependency (pyproject [test]); not at runtime

from agent_cli.log.keys import log_key  # noqa: E402
from agent_cli.tools.base import args_digest  # noqa: E402


def _key() -> bytes:
    key = log_key()
    assert key is not None
    return key

pytestmark = pytest.mark.pty

REPO = Path(__file__).resolve().parents[2]
PROMPT = "›".encode()
PASTE_ON = re.escape(b"\x1b[?2004h")
PASTE_OFF = re.escape(b"\x1b[?2004l")
ASK = rb"Run [^\r\n]*\? \[y/N\]"
TIMEOUT = 20

SLOW_PLUGIN = '''
import time
from pydantic import BaseModel
from agent_cli.tools import Tool


class Args(BaseModel):
    path: str


def run(args, ctx):
    time.sleep(30)  # deliberately ignores ctx.cancel: Ctrl-C must not depend on the tool
    return "slept"


TOOL = Tool(name="slow_read", description="Reads very slowly.", args=Args, effect="read", run=run)
'''

GATE_PLUGIN = '''
import time
from pathlib import Path
from pydantic import BaseModel
from agent_cli.tools import Tool


class Args(BaseModel):
    path: str


def run(args, ctx):
    gate = Path(ctx.workspace) / args.path
    for _ in range(1000):
        if gate.exists() or ctx.cancel.is_set():
            return "gate open"
        time.sleep(0.02)
    return "gate never opened"


TOOL = Tool(name="wait_gate", description="Waits until a file exists.", args=Args, effect="read",
            run=run)
'''


# --------------------------------------------------------------------------- helpers


def text(t: str, stop: str = "end_turn") -> dict[str, Any]:
    return {"content": [{"type": "text", "text": t}], "stop_reason": stop}


def tool_use(call_id: str, name: str, args: dict[str, Any], say: str = "") -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": say}] if say else []
    content.append({"type": "tool_use", "id": call_id, "name": name, "input": args})
    return {"content": content, "stop_reason": "tool_use"}


class Chat:
    """One `agent-cli chat` in a pty, driven like a person would."""

    def __init__(self, child: Any) -> None:
        self.child = child

    def prompt(self) -> bytes:
        """Wait for a fresh REPL prompt; return what was printed before it.

        prompt-toolkit switches bracketed paste on when a prompt starts and off when the line is
        accepted, which tells a new prompt apart from the redraw of one being typed into."""
        self.child.expect(PASTE_ON)
        shown = bytes(self.child.before)
        self.child.expect(PROMPT)
        return shown

    def say(self, line: str) -> None:
        """Type a line and Enter; return once the prompt has accepted it."""
        self.child.send(line.encode() + b"\r")
        self.child.expect(PASTE_OFF)

    def expect(self, pattern: bytes) -> bytes:
        self.child.expect(pattern)
        return bytes(self.child.before)

    def approved_turn(self, message: str, answer: bytes, panels: int = 1) -> None:
        """Send `message`, say y at each of its `panels`, wait for `answer` and the next
        prompt: one turn whose write calls the person approves."""
        self.say(message)
        for _ in range(panels):
            self.expect(ASK)
            self.say("y")
        self.expect(answer)
        self.prompt()

    def quit(self) -> int:
        """Ctrl-D at the prompt; return the exit status."""
        self.child.send(b"\x04")
        self.child.expect(pexpect.EOF)
        self.child.close()
        status: int = self.child.exitstatus
        return status


def chat_args(script: Path, workspace: Path, *extra: str) -> list[str]:
    return ["-m", "agent_cli", "chat", "--script", str(script), "--workspace", str(workspace),
            *extra]


def pty_env() -> dict[str, str]:
    env = dict(os.environ)  # AGENT_CLI_HOME is this test's temp folder (conftest)
    env.update(PROMPT_TOOLKIT_NO_CPR="1", TERM="xterm-256color", PYTHONUNBUFFERED="1")
    return env


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Any]:
    children: list[Any] = []

    def start(replies: list[dict[str, Any]], workspace: Path, *extra: str,
              shell: str | None = None) -> Chat:
        script = tmp_path / "script.json"
        script.write_text(json.dumps(replies), encoding="utf-8")
        args = chat_args(script, workspace, *extra)
        if shell is None:
            child = pexpect.spawn(sys.executable, args, env=pty_env(), cwd=str(REPO),
                                  dimensions=(40, 120), timeout=TIMEOUT)
        else:
            child = pexpect.spawn("/bin/sh", ["-c", shell, "sh", sys.executable, *args],
                                  env=pty_env(), cwd=str(REPO), dimensions=(40, 120),
                                  timeout=TIMEOUT)
        children.append(child)
        return Chat(child)

    yield start
    for child in children:
        if child.isalive():
            child.terminate(force=True)


def session_events() -> list[dict[str, Any]]:
    folder = Path(os.environ["AGENT_CLI_HOME"]) / "sessions"
    logs = sorted(folder.glob("*.jsonl"))
    assert len(logs) == 1, logs
    return [json.loads(line) for line in logs[0].read_text().splitlines() if line.strip()]


def of_type(events: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [e for e in events if e["type"] == kind]


# --------------------------------------------------------------------------- approval


def test_yes_runs_the_write_shown_escaped(spawn: Any, workspace: Path) -> None:
    content = "first \x1b[2K line [bold]not bold[/bold]\n"
    args = {"path": "notes/out.txt", "content": content}
    chat = spawn([tool_use("toolu_w1", "write_file", args, "Writing it."), text("ALL-DONE")],
                 workspace)
    chat.prompt()
    chat.say("please write the note")
    panel = chat.expect(ASK)
    # (the live region above it, spinner and streamed text, erases its own lines with ESC [2K;
    # the panel is what follows the answer's final print)
    panel = panel.rsplit(b"Writing it.", 1)[-1]
    assert b"write_file" in panel
    assert b"notes/out.txt" in panel
    assert b"\\x1b" in panel  # the escape is shown as a visible token ...
    assert b"\x1b[2K" not in panel  # ... and never reaches the terminal raw
    assert b"[bold]not bold[/bold]" in panel  # markup in a value is shown literally
    assert b"Hidden or control characters" in panel
    chat.say("y")
    chat.expect(b"ALL-DONE")
    chat.prompt()
    assert chat.quit() == 0

    assert (workspace / "notes" / "out.txt").read_text(encoding="utf-8") == content
    events = session_events()
    [approval] = of_type(events, "approval")
    assert approval["decision"] == "approved"
    assert approval["by"] == "user"
    assert approval["args_hash"] == args_digest(_key(), args)
    [result] = of_type(events, "tool_result")
    assert result["id"] == "toolu_w1" and result["is_error"] is False
    history = (Path(os.environ["AGENT_CLI_HOME"]) / "history").read_text(encoding="utf-8")
    assert "please write the note" in history  # the prompt history persists under the home
    assert "+y\n" not in history  # approval answers are never one Up-arrow away


@pytest.mark.parametrize(
    ("keys", "follow_up", "reason"),
    [
        (b"n use tmp/ instead\r", None, "use tmp/ instead"),
        (b"n\r", b"use tmp/ instead\r", "use tmp/ instead"),
        (b"\r", None, None),  # Enter alone denies
        (b"sure\r", None, "sure"),  # anything but y/yes denies; the word is the reason
        (b"\x03", None, "the user stopped the turn at the panel"),  # Ctrl-C denies, ends turn
        (b"\x04", None, None),  # EOF denies
    ],
    ids=["inline-reason", "follow-up-reason", "enter", "other-word", "ctrl-c", "ctrl-d"],
)
def test_anything_but_yes_denies(spawn: Any, workspace: Path, keys: bytes,
                                 follow_up: bytes | None, reason: str | None) -> None:
    args = {"path": "out.txt", "content": "should not exist\n"}
    chat = spawn([tool_use("toolu_w1", "write_file", args), text("Understood, not writing.")],
                 workspace)
    chat.prompt()
    chat.say("write it")
    chat.expect(ASK)
    chat.child.send(keys)
    if follow_up is not None:
        chat.expect(b"Reason \\(optional\\):")
        chat.child.send(follow_up)
    chat.expect(b"Denied")
    if keys != b"\x03":  # Ctrl-C at a panel ends the turn; any other denial goes on
        chat.expect(b"Understood, not writing.")
    chat.prompt()
    assert chat.quit() == 0

    assert not (workspace / "out.txt").exists()
    events = session_events()
    [approval] = of_type(events, "approval")
    assert approval["decision"] == "denied"
    assert approval["by"] == "user"
    assert approval["args_hash"] == args_digest(_key(), args)
    assert approval["reason"] == reason
    [result] = of_type(events, "tool_result")
    assert result["is_error"] is True
    assert "denied" in result["content"]
    if reason:  # what the model gets back in the next request
        assert reason in result["content"]
    assert len(of_type(events, "model_reply")) == (1 if keys == b"\x03" else 2)


def test_keys_typed_with_the_message_do_not_answer_the_panel(spawn: Any,
                                                             workspace: Path) -> None:
    """`msg<Enter>y<Enter>` in one burst: the `y` was typed before the panel existed."""
    args = {"path": "out.txt", "content": "x\n"}
    chat = spawn([tool_use("toolu_w1", "write_file", args), text("OK-END")], workspace)
    chat.prompt()
    chat.child.send(b"write it\ry\r")
    chat.expect(ASK)
    chat.child.send(b"n\r")
    chat.expect(b"Reason \\(optional\\):")  # only reached if the typed-ahead y was discarded
    chat.child.send(b"\r")
    chat.expect(b"OK-END")
    chat.prompt()
    assert chat.quit() == 0
    assert not (workspace / "out.txt").exists()
    [approval] = of_type(session_events(), "approval")
    assert approval["decision"] == "denied"


def test_keys_typed_while_a_tool_runs_do_not_answer_the_panel(spawn: Any, workspace: Path,
                                                              tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "gate.py").write_text(GATE_PLUGIN)
    args = {"path": "out.txt", "content": "x\n"}
    chat = spawn([tool_use("toolu_g", "wait_gate", {"path": "gate"}),
                  tool_use("toolu_w1", "write_file", args), text("OK-END")],
                 workspace, "--tools-dir", str(plugins))
    chat.prompt()
    chat.say("go")
    chat.expect(b"wait_gate")  # the tool is running; the terminal is not in prompt mode
    chat.child.send(b"y\r")
    (workspace / "gate").write_text("open")
    chat.expect(ASK)
    chat.child.send(b"n\r")
    chat.expect(b"Reason \\(optional\\):")
    chat.child.send(b"\r")
    chat.expect(b"OK-END")
    chat.prompt()
    assert chat.quit() == 0
    assert not (workspace / "out.txt").exists()


# --------------------------------------------------------------------------- keys


def test_ctrl_c_during_a_slow_tool_returns_to_the_prompt(spawn: Any, workspace: Path,
                                                         tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "slow.py").write_text(SLOW_PLUGIN)
    # The shell records the terminal settings before and after, as the user's shell would see
    # them; `trap : INT` keeps it alive through the Ctrl-C without making the child ignore it.
    shell = ('trap : INT; stty -a; echo BEFORE-END; "$@"; echo "STATUS=$?"; stty -a; '
             'echo AFTER-END')
    chat = spawn([tool_use("toolu_s1", "slow_read", {"path": "x"}, "Reading slowly."),
                  text("SECOND-ANSWER")], workspace, "--tools-dir", str(plugins), shell=shell)
    before = chat.expect(b"BEFORE-END")
    chat.prompt()
    chat.say("read it")
    chat.expect(b"slow_read")
    chat.child.sendintr()
    chat.expect(b"Interrupted")
    chat.prompt()  # back well before the tool's 30 s are up (TIMEOUT is 20 s)
    chat.say("and now?")  # the conversation goes on
    chat.expect(b"SECOND-ANSWER")
    chat.prompt()
    chat.child.send(b"\x04")
    chat.expect(b"STATUS=0")
    after = chat.expect(b"AFTER-END")
    assert before.split() == after.split()  # prompt-toolkit left the terminal as it found it

    events = session_events()
    [interrupt] = of_type(events, "interrupt")
    assert interrupt["during"] == "tool"
    [result] = of_type(events, "tool_result")
    assert result["id"] == "toolu_s1" and result["is_error"] is True
    assert "interrupted" in result["content"]
    assert [e["reason"] for e in of_type(events, "turn_end")] == ["interrupted", "end_turn"]


def test_ctrl_c_works_when_the_repl_was_started_with_sigint_ignored(
        spawn: Any, workspace: Path, tmp_path: Path) -> None:
    """Started with SIGINT ignored (`trap '' INT`, as nohup, a script's `&` or some launchers
    leave it), the REPL still takes Ctrl-C: the slow tool is interrupted, the prompt returns."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "slow.py").write_text(SLOW_PLUGIN)
    chat = spawn([tool_use("toolu_s1", "slow_read", {"path": "x"}, "Reading slowly."),
                  text("SECOND-ANSWER")], workspace, "--tools-dir", str(plugins),
                 shell="trap '' INT; \"$@\"; echo STATUS=$?")
    chat.prompt()
    chat.say("read it")
    chat.expect(b"slow_read")
    chat.child.sendintr()
    chat.expect(b"Interrupted")
    chat.prompt()
    chat.say("and now?")
    chat.expect(b"SECOND-ANSWER")
    chat.prompt()
    chat.child.send(b"\x04")
    chat.expect(b"STATUS=0")
    [result] = of_type(session_events(), "tool_result")
    assert result["is_error"] is True and "interrupted" in result["content"]


def spawn_on_fake(base_url: str, workspace: Path, timeout: float = TIMEOUT) -> pexpect.spawn:
    """`agent-cli chat` on the real anthropic provider, pointed at a loopback fake server."""
    env = pty_env()
    env.update(ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=base_url)
    return pexpect.spawn(sys.executable, ["-m", "agent_cli", "chat", "--provider", "anthropic",
                                          "--workspace", str(workspace)],
                         env=env, cwd=str(REPO), dimensions=(40, 120), timeout=timeout)


def interrupt_a_streaming_reply(workspace: Path, interrupt: Callable[[pexpect.spawn], None],
                                timeout: float = TIMEOUT) -> list[Any]:
    """The real anthropic provider against the loopback fake, streaming a long answer slowly:
    `interrupt` is pressed mid-stream, the REPL must come back to its prompt, and the next turn
    must be answered. Returns the requests the fake received (it validates each one)."""
    from tests.fakes.anthropic_server import FakeAnthropic, Reply, text_reply

    slow = Reply(content=[{"type": "text", "text": "word " * 3000}], event_delay_s=0.05)
    with FakeAnthropic([slow, text_reply("SECOND-ANSWER")]) as fake:
        child = spawn_on_fake(fake.base_url, workspace, timeout)
        try:
            chat = Chat(child)
            chat.prompt()
            chat.say("go")
            chat.expect(b"word word word")
            interrupt(child)
            chat.expect(b"Interrupted")
            chat.prompt()
            chat.say("again")
            chat.expect(b"SECOND-ANSWER")
            chat.prompt()
            assert chat.quit() == 0
        finally:
            if child.isalive():
                child.terminate(force=True)
        return list(fake.requests)


def test_ctrl_c_during_a_streaming_reply_returns_to_the_prompt(workspace: Path) -> None:
    """Ctrl-C cancels the reply, and the next request is still a valid conversation: the
    question stays, the cut reply's text is the assistant's, marked interrupted."""
    requests = interrupt_a_streaming_reply(workspace, lambda child: child.sendintr())
    assert len(requests) == 2
    second = requests[1].body["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    events = session_events()
    assert [e["during"] for e in of_type(events, "interrupt")] == ["model"]
    assert [e["reason"] for e in of_type(events, "turn_end")] == ["interrupted", "end_turn"]


def test_ctrl_c_at_the_prompt_clears_the_line(spawn: Any, workspace: Path) -> None:
    chat = spawn([text("REPLY")], workspace)
    chat.prompt()
    chat.child.send(b"half a thought")
    chat.child.send(b"\x03")
    chat.prompt()
    chat.say("hello")
    chat.expect(b"REPLY")
    chat.prompt()
    assert chat.quit() == 0
    assert [e["text"] for e in of_type(session_events(), "user_message")] == ["hello"]


def test_ctrl_c_twice_on_an_empty_prompt_leaves(spawn: Any, workspace: Path) -> None:
    chat = spawn([text("REPLY")], workspace)
    chat.prompt()
    chat.say("hello")  # (a turn first: the session is ready, this is the REPL's own prompt)
    chat.expect(b"REPLY")
    chat.prompt()
    chat.child.send(b"\x03")
    chat.expect(b"Press Ctrl-C again to exit")
    chat.prompt()
    chat.child.send(b"typed\x03")  # on text it clears the line, and counts as something else
    chat.prompt()
    chat.child.send(b"\x03")
    chat.expect(b"Press Ctrl-C again to exit")
    chat.prompt()
    chat.child.send(b"\x03")
    out = chat.expect(pexpect.EOF)
    chat.child.close()
    assert chat.child.exitstatus == 0
    assert b"Session log:" in out
    events = session_events()
    assert [e["text"] for e in of_type(events, "user_message")] == ["hello"]
    assert of_type(events, "session_end")


def test_alt_enter_and_ctrl_j_insert_newlines(spawn: Any, workspace: Path) -> None:
    chat = spawn([text("REPLY")], workspace)
    chat.prompt()
    chat.child.send(b"one\x1b\rtwo\nthree\r")  # Esc Enter (= Alt-Enter), Ctrl-J, Enter
    chat.expect(b"REPLY")
    chat.prompt()
    assert chat.quit() == 0
    assert [e["text"] for e in of_type(session_events(), "user_message")] == ["one\ntwo\nthree"]


def test_ctrl_d_exits_with_status_0(spawn: Any, workspace: Path) -> None:
    chat = spawn([text("unused")], workspace)
    chat.prompt()
    chat.child.send(b"\x04")
    out = chat.expect(pexpect.EOF)
    chat.child.close()
    assert chat.child.exitstatus == 0
    assert b"Session log:" in out
    assert of_type(session_events(), "session_end")


def test_help_and_tools(spawn: Any, workspace: Path) -> None:
    chat = spawn([text("unused")], workspace)
    chat.prompt()
    chat.say("/help")
    shown = chat.prompt()
    for needle in (b"Alt-Enter", b"Ctrl-J", b"Ctrl-C", b"Ctrl-D", b"/tools", b"/clear", b"/log",
                   b"/usage", b"/exit"):
        assert needle in shown
    chat.say("/tools")
    shown = chat.prompt()
    for needle in (b"read_file", b"write_file", b"list_dir", b"multiply"):
        assert needle in shown
    chat.say("/nonsense")
    assert b"Unknown command" in chat.prompt()
    chat.say("/exit")
    chat.child.expect(pexpect.EOF)
    chat.child.close()
    assert chat.child.exitstatus == 0
    assert not of_type(session_events(), "user_message")  # commands never reach the model
