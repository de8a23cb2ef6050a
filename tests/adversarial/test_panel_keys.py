"""Family: keys at the panel, in a real pseudo-terminal (issue 11 items 3 and 11).

`agent-cli chat` runs under pexpect with a scripted model; the keys are sent as a terminal sends
them. The approval answer is read by a fresh line editor each time: Up-arrow must not bring back
the `y` typed at the previous panel; Esc stops the reply; a panel taller than the terminal asks
its question only after its last page.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.adversarial.conftest import PTY_PROMPT
from tests.scripts import calls, text

pexpect = pytest.importorskip("pexpect")

pytestmark = pytest.mark.pty

ASK = rb"Run [^\r\n]*\? \[y/N\]"
PAGE = rb"-- more \("


def _write(call_id: str, path: str, content: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "write_file",
            "input": {"path": path, "content": content}}


def _events() -> list[dict[str, Any]]:
    folder = Path(os.environ["AGENT_CLI_HOME"]) / "sessions"
    [log] = sorted(folder.glob("*.jsonl"))
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


def _quit(child: Any) -> None:
    child.expect(PTY_PROMPT)
    child.send(b"\x04")
    child.expect(pexpect.EOF)
    child.close()


def test_up_arrow_at_the_second_panel_does_not_recall_yes(chat: Any) -> None:
    child, ws = chat([calls(_write("toolu_a", "a.txt", "first\n"),
                             _write("toolu_b", "b.txt", "second\n")), text("done")])
    child.send(b"write both\r")
    child.expect(ASK)
    child.send(b"y\r")
    # The second panel's question, by its own path: a bare ASK would match the first question
    # redrawn with its accepted "y" (the line editor redraws the line when it accepts it), and
    # the keys below would then be sent before the second question exists and flushed as
    # typeahead: the test hung whenever they arrived before that flush.
    child.expect(rb"Run write_file on b\.txt[^\r\n]*\? \[y/N\]")
    # Keys sent before the prompt has finished drawing (cursor shown again: it is reading) can
    # be lost on a loaded machine; wait for that, then press Up.
    child.expect(rb"\x1b\[\?25h")
    child.send(b"\x1b[A")  # Up: with a shared history this brought back the y
    child.send(b"\r")
    child.expect(b"Denied")
    _quit(child)
    assert (ws / "a.txt").read_text() == "first\n"
    assert not (ws / "b.txt").exists()
    approvals = [e for e in _events() if e["type"] == "approval"]
    assert [a["decision"] for a in approvals] == ["approved", "denied"]


def test_esc_at_a_panel_denies_the_rest_of_thecalls(chat: Any) -> None:
    child, ws = chat([calls(_write("toolu_a", "a.txt", "1"), _write("toolu_b", "b.txt", "2"),
                             _write("toolu_c", "c.txt", "3")), text("never asked for")])
    child.send(b"write three\r")
    child.expect(ASK)
    child.send(b"\x1b")
    child.expect(b"the rest of this reply")
    _quit(child)
    assert list(ws.iterdir()) == []
    events = _events()
    results = [e for e in events if e["type"] == "tool_result"]
    assert [r["id"] for r in results] == ["toolu_a", "toolu_b", "toolu_c"]
    assert all(r["is_error"] for r in results)
    assert len([e for e in events if e["type"] == "model_reply"]) == 1


def test_a_tall_panel_is_paged_and_y_counts_only_at_the_question(chat: Any) -> None:
    content = "".join(f"row {i}\n" for i in range(120))
    child, ws = chat([calls(_write("toolu_a", "tall.txt", content)), text("written")],
                     rows=24)
    child.send(b"write a tall file\r")
    child.expect(PAGE)
    child.send(b"y\r")  # y at a page only turns the page
    child.expect(PAGE)
    assert not (ws / "tall.txt").exists()
    child.send(b"G\r")  # the rest at once, then the question
    child.expect(rb"row 119")
    child.expect(ASK)
    child.send(b"y\r")
    child.expect(b"written")
    _quit(child)
    assert (ws / "tall.txt").read_text() == content
