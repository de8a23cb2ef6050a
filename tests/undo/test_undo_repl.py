"""`/undo` in the real REPL, in a pseudo-terminal: the panel, the [y/N], the files on disk, the
log; /undo steps back a turn at a time, /redo puts back."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.ui.test_repl_pty import pexpect, spawn, text, tool_use  # noqa: F401 (fixture)

pytestmark = pytest.mark.pty
ASK = rb"Run [^\r\n]*\? \[y/N\]"
UNDO_ASK = rb"Undo this\? \[y/N\]"


def test_slash_undo_steps_back_a_turn_at_a_time_and_redo_is_its_own_command(
        spawn: Any, workspace: Path) -> None:  # noqa: F811
    (workspace / "notes.txt").write_text("old line\n")
    chat = spawn([tool_use("toolu_w1", "write_file", {"path": "notes.txt",
                                                     "content": "new line\n"}),
                  text("WROTE-IT"),
                  tool_use("toolu_w2", "write_file", {"path": "notes.txt",
                                                     "content": "third line\n"}),
                  tool_use("toolu_w3", "write_file", {"path": "other.txt", "content": "o\n"}),
                  text("TURN-TWO")], workspace)
    chat.child.timeout = 60
    chat.prompt()
    chat.approved_turn("rewrite the note", b"WROTE-IT")
    chat.approved_turn("again, and another file", b"TURN-TWO", panels=2)
    assert (workspace / "notes.txt").read_text() == "third line\n"
    # /undo: the whole last turn, newest call first
    chat.say("/undo")
    panel = chat.expect(UNDO_ASK)
    assert b"toolu_w3" in panel and b"toolu_w2" in panel and b"toolu_w1" not in panel
    assert panel.index(b"toolu_w3") < panel.index(b"toolu_w2")
    assert b"+new line" in panel and b"-third line" in panel
    chat.say("y")
    chat.expect(b"Undone: 2 paths restored")
    chat.prompt()
    assert (workspace / "notes.txt").read_text() == "new line\n"
    assert not (workspace / "other.txt").exists()
    # a second /undo steps back one more turn (it does not undo the undo)
    chat.say("/undo")
    panel = chat.expect(UNDO_ASK)
    assert b"toolu_w1" in panel and b"toolu_w2" not in panel
    chat.say("n")
    chat.expect(b"Not undone")
    chat.prompt()
    assert (workspace / "notes.txt").read_text() == "new line\n"
    chat.say("/undo")
    chat.expect(UNDO_ASK)
    chat.say("y")
    chat.expect(b"Undone")
    chat.prompt()
    assert (workspace / "notes.txt").read_text() == "old line\n"
    # /redo puts back what the last undo took back
    chat.say("/redo")
    chat.expect(rb"Redo this\? \[y/N\]")
    chat.say("y")
    chat.expect(b"Redone")
    chat.prompt()
    assert (workspace / "notes.txt").read_text() == "new line\n"
    assert not (workspace / "other.txt").exists()
    assert chat.quit() == 0
    folder = Path(os.environ["AGENT_CLI_HOME"]) / "sessions"
    [log] = folder.glob("*.jsonl")
    recs = [json.loads(x) for x in log.read_text().splitlines()]
    undos = [r for r in recs if r["type"] == "undo"]
    assert undos[0]["undid"] == ["toolu_w3", "toolu_w2"]
    assert undos[1]["undid"] == ["toolu_w1"]
    assert undos[2]["undid"] == [undos[1]["id"]] and undos[2]["id"].startswith("redo_")


def test_a_tall_undo_panel_is_paged_by_the_one_confirm(spawn: Any, workspace: Path,  # noqa: F811
                                                       ) -> None:
    (workspace / "long.txt").write_text("".join(f"old {i}\n" for i in range(120)))
    chat = spawn([tool_use("toolu_w2", "write_file", {"path": "long.txt", "content": "short\n"}),
                  text("WROTE-IT")], workspace)
    chat.child.timeout = 60
    chat.prompt()
    chat.say("shorten it")
    chat.expect(b"G for the rest")  # the write's own panel is taller than the terminal too
    chat.say("G")  # the pager's "the rest", then the question
    chat.expect(ASK)
    chat.say("y")
    chat.expect(b"WROTE-IT")
    chat.prompt()
    chat.say("/undo")
    chat.expect(b"G for the rest")  # paged like every y/N (ui/confirm.py), not by $PAGER
    chat.child.send(b"G")  # one key
    shown = chat.expect(UNDO_ASK)
    assert b"+old 119" in shown
    chat.say("y")
    chat.expect(b"Undone")
    chat.prompt()
    assert chat.quit() == 0
    assert (workspace / "long.txt").read_text().startswith("old 0\n")
