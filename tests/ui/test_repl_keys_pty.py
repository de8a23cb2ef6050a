"""The daily-driver keys in a real pseudo-terminal: Esc interrupts a running tool or a streaming
answer like Ctrl-C; the spinner shows while a tool runs and is gone after; `chat --resume` alone
opens the picker; /show prints a result whole; a failed message is not merged into the next and
/retry sends it again."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import pytest

pexpect = pytest.importorskip("pexpect")

from tests.ui.test_repl_pty import (  # noqa: E402 (after the importorskip)
    ASK,
    REPO,
    SLOW_PLUGIN,
    Chat,
    interrupt_a_streaming_reply,
    of_type,
    pty_env,
    session_events,
    spawn_on_fake,
    text,
    tool_use,
)

pytestmark = pytest.mark.pty
TIMEOUT = 60


def start(tmp_path: Path, replies: list[dict[str, Any]], workspace: Path, *extra: str,
          env: dict[str, str] | None = None) -> Chat:
    script = tmp_path / f"script-{len(list(tmp_path.glob('script-*')))}.json"
    script.write_text(json.dumps(replies), encoding="utf-8")
    child = pexpect.spawn(sys.executable, ["-m", "agent_cli", "chat", "--script", str(script),
                                           "--workspace", str(workspace), *extra],
                          env=env or pty_env(), cwd=str(REPO), dimensions=(40, 120),
                          timeout=TIMEOUT)
    return Chat(child)


@pytest.fixture
def plugins(tmp_path: Path) -> Path:
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "slow.py").write_text(SLOW_PLUGIN)
    return folder


def test_esc_interrupts_a_running_tool_and_the_spinner_goes(tmp_path: Path, workspace: Path,
                                                            plugins: Path) -> None:
    chat = start(tmp_path, [tool_use("toolu_s1", "slow_read", {"path": "x"}),
                            text("SECOND-ANSWER")], workspace, "--tools-dir", str(plugins))
    try:
        chat.prompt()
        chat.say("read it")
        chat.expect(rb"Running slow_read")  # the spinner, with its elapsed time ...
        chat.expect(rb"\d+\.\d s \xc2\xb7 Esc to interrupt")
        chat.child.send(b"\x1b")  # a lone Esc
        shown = chat.expect(b"Interrupted")
        chat.prompt()  # back well before the tool's 30 s are up
        chat.say("and now?")
        after = chat.expect(b"SECOND-ANSWER")
        chat.prompt()
        assert b"Running slow_read" not in after  # ... and gone once the tool stopped
        assert chat.quit() == 0
    finally:
        if chat.child.isalive():
            chat.child.terminate(force=True)
    assert b"Traceback" not in shown
    events = session_events()
    [interrupt] = of_type(events, "interrupt")
    assert interrupt["during"] == "tool"
    [result] = of_type(events, "tool_result")
    assert result["id"] == "toolu_s1" and result["is_error"] is True
    assert [e["reason"] for e in of_type(events, "turn_end")] == ["interrupted", "end_turn"]


def test_esc_interrupts_a_streaming_answer(workspace: Path) -> None:
    interrupt_a_streaming_reply(workspace, lambda child: child.send(b"\x1b"), TIMEOUT)
    events = session_events()
    assert [e["during"] for e in of_type(events, "interrupt")] == ["model"]


def test_arrow_keys_during_a_turn_do_not_interrupt(tmp_path: Path, workspace: Path) -> None:
    gate = tmp_path / "plugins"
    gate.mkdir()
    from tests.ui.test_repl_pty import GATE_PLUGIN

    (gate / "gate.py").write_text(GATE_PLUGIN)
    chat = start(tmp_path, [tool_use("toolu_g", "wait_gate", {"path": "gate"}), text("DONE")],
                 workspace, "--tools-dir", str(gate))
    try:
        chat.prompt()
        chat.say("go")
        chat.expect(b"Running wait_gate")
        chat.child.send(b"\x1b[A\x1b[B")  # Up, Down: escape sequences, not a lone Esc
        (workspace / "gate").write_text("open")
        shown = chat.expect(b"DONE")
        chat.prompt()
        assert b"Interrupted" not in shown
        assert chat.quit() == 0
    finally:
        if chat.child.isalive():
            chat.child.terminate(force=True)


def test_esc_is_not_swallowed_by_the_panel_wiring(tmp_path: Path, workspace: Path) -> None:
    """The watcher hands the keyboard to the approval panel: `y` typed there approves."""
    args = {"path": "out.txt", "content": "x\n"}
    chat = start(tmp_path, [tool_use("toolu_w", "write_file", args), text("WROTE")], workspace)
    try:
        chat.prompt()
        chat.say("write")
        chat.expect(ASK)
        chat.child.send(b"y\r")
        chat.expect(b"WROTE")
        chat.prompt()
        assert chat.quit() == 0
    finally:
        if chat.child.isalive():
            chat.child.terminate(force=True)
    assert (workspace / "out.txt").read_text() == "x\n"


def test_show_prints_a_long_result_whole(tmp_path: Path, workspace: Path) -> None:
    (workspace / "long.txt").write_text("".join(f"row-{i:03d}\n" for i in range(40)))
    chat = start(tmp_path, [tool_use("toolu_r", "read_file", {"path": "long.txt"}),
                            text("READ-DONE")], workspace)
    try:
        chat.prompt()
        chat.say("read")
        shown = chat.expect(b"READ-DONE")
        assert b"row-000" in shown and b"row-039" in shown and b"row-020" not in shown
        assert b"/show 1" in shown
        chat.prompt()
        chat.say("/show 1")
        whole = chat.prompt()
        for i in range(40):
            assert f"row-{i:03d}".encode() in whole
        assert chat.quit() == 0
    finally:
        if chat.child.isalive():
            chat.child.terminate(force=True)


def test_a_failed_message_is_not_merged_and_retry_resends_it(tmp_path: Path,
                                                             workspace: Path) -> None:
    from tests.fakes.anthropic_server import FakeAnthropic, strip_cache_control, text_reply

    with FakeAnthropic([{"status": 400, "error_message": "bad content"},
                        text_reply("RETRIED-ANSWER")]) as fake:
        child = spawn_on_fake(fake.base_url, workspace, TIMEOUT)
        try:
            chat = Chat(child)
            chat.prompt()
            chat.say("the first message")
            chat.expect(b"/retry")
            shown = chat.prompt()
            assert b"/clear" in shown  # a 400: how to recover
            chat.say("/retry")
            chat.expect(b"RETRIED-ANSWER")
            chat.prompt()
            assert chat.quit() == 0
        finally:
            if child.isalive():
                child.terminate(force=True)
        second = strip_cache_control(fake.requests[-1].body["messages"])
    # sent once, alone: not merged with itself or anything else
    assert second == [{"role": "user", "content": [{"type": "text",
                                                     "text": "the first message"}]}]


def test_resume_alone_opens_the_picker_and_prints_a_recap(tmp_path: Path,
                                                          workspace: Path) -> None:
    from typer.testing import CliRunner

    from agent_cli.cli.app import app

    folder = Path(os.environ["AGENT_CLI_HOME"]) / "sessions"
    for i, words in enumerate(["older chat", "newer chat"]):
        script = tmp_path / f"s{i}.json"
        script.write_text(json.dumps([text(f"answer to {words}")]))
        result = CliRunner().invoke(app, ["chat", "--script", str(script), "-w",
                                          str(workspace)], input=words + "\n")
        assert result.exit_code == 0, result.output
    older = min(folder.glob("*.jsonl"), key=lambda p: p.read_text().find("older chat") < 0)
    os.utime(older, (1, 1))
    chat = start(tmp_path, [text("RESUMED-ANSWER")], workspace, "--resume")
    try:
        listing = chat.expect(rb"Resume which\? \[1-2")
        assert b"newer chat" in listing and b"older chat" in listing
        assert listing.index(b"newer chat") < listing.index(b"older chat")
        chat.child.send(b"2\r")
        recap = re.sub(rb"\x1b\[[0-9;]*m", b"", chat.prompt())
        assert b"Recap of the last 1 turn(s):" in recap
        assert b"you: older chat" in recap and b"model: answer to older chat" in recap
        chat.say("go on")
        chat.expect(b"RESUMED-ANSWER")
        chat.prompt()
        assert chat.quit() == 0
    finally:
        if chat.child.isalive():
            chat.child.terminate(force=True)


@pytest.mark.parametrize("plain", [False, True])
def test_run_on_a_terminal_renders_markdown_unless_plain(tmp_path: Path, workspace: Path,
                                                         plain: bool) -> None:
    script = tmp_path / "md.json"
    script.write_text(json.dumps([text("# Heading here\n\n- item one\n- item two\n")]))
    child = pexpect.spawn(sys.executable, ["-m", "agent_cli", "run", "go", "--script",
                                           str(script), "--workspace", str(workspace),
                                           *(["--plain"] if plain else [])],
                          env=pty_env(), cwd=str(REPO), dimensions=(40, 100), timeout=TIMEOUT)
    child.expect(pexpect.EOF)
    child.close()
    shown = re.sub(rb"\x1b\[[0-9;?]*[A-Za-z]", b"", bytes(child.before))
    assert child.exitstatus == 0
    if plain:
        assert b"# Heading here" in shown and b"- item one" in shown
    else:
        final = shown.rsplit(b"Heading here", 1)
        assert b"Heading here" in shown and b"\xe2\x80\xa2 item one" in shown  # a bullet
        assert not final[0].endswith(b"# ")  # the last print is the rendered heading


def test_a_running_command_shows_its_last_lines_live(tmp_path: Path, workspace: Path) -> None:
    """While run_command runs, the lines it has printed so far show under the spinner (with a
    `│` gutter, sanitised); the live area goes when the result arrives, and the result keeps the
    whole output."""
    # (The flag is outside the workspace: a command runs in an overlay layer of its own and does
    # not see what is written into the workspace meanwhile.)
    flag = tmp_path / "go"
    script = ("printf 'LIVE-ONE\\n'; printf 'LIVE-\\033[31mTWO\\n'; "
              f"while [ ! -e {flag} ]; do sleep 0.05; done; echo FINISHED")
    chat = start(tmp_path, [tool_use("toolu_c1", "run_command", {"command": script}),
                            text("AFTER-COMMAND")], workspace)
    try:
        chat.prompt()
        chat.say("run it")
        chat.expect(ASK)
        chat.say("y")
        # Shown while the command is still waiting for the flag: it cannot have finished.
        chat.expect(rb"\xe2\x94\x82 LIVE-ONE")
        # the escape is a visible token (styled, so other escapes stand around it)
        chat.expect(rb"\xe2\x94\x82 LIVE-[^\r\n]{0,60}\\x1b[^\r\n]{0,60}TWO")
        assert not flag.exists()
        flag.write_text("")
        after = chat.expect(b"AFTER-COMMAND")
        chat.prompt()
        assert chat.quit() == 0
    finally:
        if chat.child.isalive():
            chat.child.terminate(force=True)
    assert b"\x1b[31mTWO" not in after
    [result] = of_type(session_events(), "tool_result")
    assert "LIVE-ONE" in result["content"] and "FINISHED" in result["content"]
