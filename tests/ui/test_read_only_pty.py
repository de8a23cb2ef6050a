"""Read-only mode in the real REPL, in a pseudo-terminal: the prompt shows the mode, a write call
is refused before any panel, and `/mode normal` brings the panel back."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pexpect = pytest.importorskip("pexpect")

from tests.ui.test_repl_pty import (  # noqa: E402
    ASK,
    PASTE_ON,
    PROMPT,
    of_type,
    session_events,
    spawn,
    text,
    tool_use,
)

pytestmark = pytest.mark.pty
__all__ = ["spawn"]  # the fixture, imported for the tests below


def prompt_line(chat: Any) -> bytes:
    """Wait for a fresh prompt and return the prompt text itself (what precedes the `›`)."""
    chat.child.expect(PASTE_ON)
    chat.child.expect(PROMPT)
    return bytes(chat.child.before)


def test_read_only_mode_refuses_writes_and_mode_normal_restores(spawn: Any,
                                                                workspace: Path) -> None:
    args = {"path": "out.txt", "content": "hello\n"}
    chat = spawn([tool_use("w1", "write_file", args), text("FIRST-DONE"),
                  tool_use("w2", "write_file", args), text("SECOND-DONE")],
                 workspace, "--read-only")
    assert b"read-only" in prompt_line(chat)
    chat.say("write the file")
    before = chat.expect(b"FIRST-DONE")
    assert b"Run this?" not in before  # no panel at all
    assert b"read-only mode" in before
    assert not (workspace / "out.txt").exists()
    assert b"read-only" in prompt_line(chat)

    chat.say("/mode normal")
    chat.expect(b"Normal mode")
    assert b"read-only" not in prompt_line(chat)
    chat.say("try again")
    chat.expect(ASK)
    chat.say("y")
    chat.expect(b"SECOND-DONE")
    prompt_line(chat)
    assert chat.quit() == 0

    assert (workspace / "out.txt").read_text() == "hello\n"
    approvals = {a["id"]: a for a in of_type(session_events(), "approval")}
    assert approvals["w1"]["decision"] == "denied" and approvals["w1"]["by"] == "policy"
    assert "read-only mode" in approvals["w1"]["reason"]
    assert approvals["w2"]["decision"] == "approved" and approvals["w2"]["by"] == "user"
    notices = [n for n in of_type(session_events(), "notice") if n.get("kind") == "mode"]
    assert len(notices) == 1  # the switch is on the record


def test_mode_read_only_switches_the_tools_offered(spawn: Any, workspace: Path) -> None:
    chat = spawn([text("ONE")], workspace)
    assert b"read-only" not in prompt_line(chat)
    chat.say("/mode read-only")
    chat.expect(b"Read-only mode")
    assert b"read-only" in prompt_line(chat)
    chat.say("/tools")
    listing = chat.expect(b"Not offered:")
    chat.expect(b"write_file")
    assert b"read_file" in listing
    prompt_line(chat)
    assert chat.quit() == 0
