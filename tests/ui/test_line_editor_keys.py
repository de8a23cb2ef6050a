"""The prompt's keys and completion, in process: the real line editor (ui/line_editor.py) reads
prompt-toolkit's pipe input, so the keys are parsed as a terminal's would be, without a pty."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from prompt_toolkit import PromptSession
from prompt_toolkit.application import create_app_session
from prompt_toolkit.completion import CompleteEvent
from prompt_toolkit.document import Document
from prompt_toolkit.history import InMemoryHistory
from prompt_toolkit.input import PipeInput, create_pipe_input
from prompt_toolkit.output import DummyOutput

from agent_cli.ui import commands, repl
from agent_cli.ui.completion import ReplCompleter
from agent_cli.ui.keys import TypedAhead, plain_keys
from agent_cli.ui.line_editor import EmptyLineInterrupt, prompt_session


@pytest.fixture
def editor() -> Iterator[tuple[PromptSession[str], PipeInput]]:
    with create_pipe_input() as pipe, create_app_session(input=pipe, output=DummyOutput()):
        yield prompt_session(InMemoryHistory()), pipe


def test_ctrl_c_on_an_empty_line_is_told_apart_from_one_on_text(
        editor: tuple[PromptSession[str], PipeInput]) -> None:
    ps, pipe = editor
    pipe.send_text("\x03")
    with pytest.raises(EmptyLineInterrupt):
        ps.prompt("› ")
    pipe.send_text("half a thought\x03")
    with pytest.raises(KeyboardInterrupt) as raised:
        ps.prompt("› ")
    assert not isinstance(raised.value, EmptyLineInterrupt)  # it only clears the line


@pytest.mark.parametrize("keys", ["\x07", "\x18\x05"], ids=["ctrl-g", "ctrl-x-ctrl-e"])
def test_the_editor_keys_open_the_message_in_editor(
        editor: tuple[PromptSession[str], PipeInput], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch, keys: str) -> None:
    script = tmp_path / "fake-editor"
    seen = tmp_path / "seen"
    script.write_text(f'#!/bin/sh\ncat "$1" > "{seen}"\nprintf "written in the editor" > "$1"\n')
    script.chmod(0o755)
    monkeypatch.setenv("VISUAL", str(script))
    ps, pipe = editor

    def person() -> None:
        pipe.send_text("draft" + keys)
        # Enter once the editor closed and its text is back in the line, as a person sees it
        deadline = time.monotonic() + 60
        while ps.default_buffer.text != "written in the editor" and time.monotonic() < deadline:
            time.sleep(0.01)
        pipe.send_text("\r")

    typing = threading.Thread(target=person, daemon=True)
    typing.start()
    assert ps.prompt("› ") == "written in the editor"
    typing.join(60)
    assert seen.read_text().startswith("draft")  # the editor was given the line typed so far


def _complete(completer: ReplCompleter, text: str) -> list[str]:
    return [c.text for c in completer.get_completions(Document(text), CompleteEvent())]


def test_commands_complete_from_the_command_table(workspace: Path) -> None:
    completer = ReplCompleter(commands.command_lines, workspace)
    assert _complete(completer, "/he") == ["/help"]
    assert set(_complete(completer, "/")) == {name for name, _ in commands.command_lines()}
    assert _complete(completer, "/help more") == []  # past the command's name
    assert _complete(completer, "say /he") == []  # only at the start of the line


def test_paths_complete_inside_the_workspace_only(workspace: Path, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "main.py").write_text("x")
    (workspace / "src" / "mod.py").write_text("x")
    (workspace / ".env").write_text("SECRET=1")
    (workspace / "readme.md").write_text("x")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("x")
    os.symlink(outside, workspace / "out-link")
    os.symlink(workspace / "src", workspace / "src-link")
    state = workspace / "agent-state"
    state.mkdir()
    monkeypatch.setenv("AGENT_CLI_HOME", str(state))  # agent-cli's own state, in the workspace
    completer = ReplCompleter(commands.command_lines, workspace)

    assert _complete(completer, "look at @") == ["@readme.md", "@src/", "@src-link/"]
    assert _complete(completer, "@src/m") == ["@src/main.py", "@src/mod.py"]
    assert _complete(completer, "@src-link/ma") == ["@src-link/main.py"]
    assert _complete(completer, "@.") == ["@.env"]  # hidden ones when asked for
    assert _complete(completer, "@out-link/") == []  # a link out is not followed
    assert _complete(completer, "@../") == []
    assert _complete(completer, f"@{outside}/") == []
    assert _complete(completer, "@agent-state/") == []


def test_keys_typed_during_a_turn_make_lines() -> None:
    typed = TypedAhead()
    assert typed.feed("hello wordl\x7f\x7fld\rsecond ") == ["hello world"]
    assert typed.feed("\r\r") == ["second "]  # Enter on nothing is no message
    typed.feed("gone\x15kept words\x17")
    lines, text = typed.take()
    assert lines == ["hello world", "second "]
    assert text == "kept "
    assert typed.take() == ([], "")
    assert plain_keys(b"a\x1b[Ab\x1bOPc\x1bxd") == (b"abcd", False)  # arrows, F1, Alt-x
    assert plain_keys(b"ab\x1b") == (b"ab", True)  # maybe a lone Esc


def test_queued_lines_are_one_message_and_commands_their_own() -> None:
    assert repl.grouped(["one", "two", "/usage", "three"]) == ["one\ntwo", "/usage", "three"]
