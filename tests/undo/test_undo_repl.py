"""`/undo` in the real REPL, in a pseudo-terminal: the panel, the [y/N], the files on disk, the
log; then /undo again undoes the undo."""

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


def test_slash_undo_restores_and_can_be_undone(spawn: Any, workspace: Path) -> None:  # noqa: F811
    (workspace / "notes.txt").write_text("old line\n")
    chat = spawn([tool_use("toolu_w1", "write_file", {"path": "notes.txt",
                                                     "content": "new line\n"}),
                  text("WROTE-IT")], workspace)
    chat.child.timeout = 60
    chat.prompt()
    chat.say("rewrite the note")
    chat.expect(ASK)
    chat.say("y")
    chat.expect(b"WROTE-IT")
    chat.prompt()
    assert (workspace / "notes.txt").read_text() == "new line\n"
    chat.say("/undo")
    panel = chat.expect(UNDO_ASK)
    assert b"toolu_w1" in panel and b"notes.txt" in panel
    assert b"+old line" in panel and b"-new line" in panel
    chat.say("y")
    chat.expect(b"Undone: 1 path restored")
    chat.prompt()
    assert (workspace / "notes.txt").read_text() == "old line\n"
    chat.say("/undo")
    chat.expect(UNDO_ASK)
    chat.say("n")
    chat.expect(b"Not undone")
    chat.prompt()
    assert (workspace / "notes.txt").read_text() == "old line\n"
    chat.say("/undo")
    chat.expect(UNDO_ASK)
    chat.say("y")
    chat.expect(b"Undone")
    chat.prompt()
    assert (workspace / "notes.txt").read_text() == "new line\n"
    assert chat.quit() == 0
    folder = Path(os.environ["AGENT_CLI_HOME"]) / "sessions"
    [log] = folder.glob("*.jsonl")
    recs = [json.loads(x) for x in log.read_text().splitlines()]
    undos = [r for r in recs if r["type"] == "undo"]
    assert undos[0]["undid"] == ["toolu_w1"]
    assert undos[1]["undid"] == [undos[0]["id"]]


def test_a_tall_undo_panel_is_paged_by_the_one_confirm(spawn: Any, workspace: Path,  # noqa: F811
                                                       ) -> None:
    (workspace / "long.txt").write_text("".join(f"old {i}\n" for i in range(120)))
    chat = spawn([tool_use("toolu_w2", "write_file", {"path": "long.txt", "content": "short\n"}),
                  text("WROTE-IT")], workspace)
    chat.child.timeout = 60
    chat.prompt()
    chat.say("shorten it")
    chat.expect(b"G for the rest")  # the write's own panel is taller than the terminal too
    chat.say("G")
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
