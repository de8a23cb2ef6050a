"""Family: the approval panel after a terminal resize, in a real pseudo-terminal (issue 16 item 9).

A panel is laid out for the terminal's size. When the terminal is resized while a tall panel is
being paged, the pager lays the panel out again for the new size and shows it again from its
first line; a `y` given at the question after a resize does not count: the panel is drawn again
at the new width and the question asked again, so a yes is always for a panel whose every line
was on screen as it is now laid out.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.adversarial.conftest import PTY_PROMPT
from tests.scripts import calls, done, use

pexpect = pytest.importorskip("pexpect")

pytestmark = pytest.mark.pty

ASK = rb"Run [^\r\n]*\? \[y/N\]"
PAGE = rb"-- more \(([\d,]+) of ([\d,]+) lines\)"
RESIZED = rb"The terminal was resized:"
"""The note's start: at 60 columns the rest of it wraps."""

ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")
READING = rb"\x1b\[\?25h"
"""The cursor shown again: the line editor is reading (keys sent before are dropped)."""


def _writes(content: str) -> list[dict[str, Any]]:
    """One write_file call of `content`, then the answer."""
    return [calls(use("toolu_a", "write_file", {"path": "wide.txt", "content": content})),
            done("written")]


def _border_widths(seen: bytes) -> list[int]:
    """Widths (in characters) of the panel's top borders in this stretch of output."""
    text = ANSI.sub(b"", seen).decode("utf-8", "replace")
    return [len(m.group()) for m in re.finditer(r"╭─ Approve call[^\r\n]*╮", text)]


def _redrawn(child: Any) -> None:
    """Wait until the line editor has redrawn its prompt for the new size (it erases below the
    cursor, draws, shows the cursor): a key sent before may be read before the resize is."""
    child.expect(rb"\x1b\[J")
    child.expect(READING)


def _quit(child: Any) -> None:
    child.expect(PTY_PROMPT)
    child.send(b"\x04")
    child.expect(pexpect.EOF)
    child.close()

# lines of 70 characters: one row each at 100 columns, two at 60
CONTENT = "".join(f"row {i:03d} " + "x" * 62 + "\n" for i in range(60))


def test_a_resize_while_paging_lays_the_panel_out_again_from_its_first_line(chat: Any) -> None:
    child, ws = chat(_writes(CONTENT), rows=24)
    child.send(b"write a wide file\r")
    child.expect(PAGE)
    assert _border_widths(child.before) == [100]
    total_wide = int(child.match.group(2).replace(b",", b""))
    child.expect(READING)
    child.setwinsize(24, 60)
    _redrawn(child)
    child.send(b"\r")  # the next page: the pager sees the new size
    child.expect(RESIZED)
    child.expect(PAGE)
    shown, total = (int(g.replace(b",", b"")) for g in child.match.groups())
    assert _border_widths(child.before) == [60]  # drawn again from its first line, 60 wide
    assert total > total_wide  # the value's lines wrap at the new width
    assert shown < total
    child.expect(READING)
    child.send(b"y\r")  # y at a page only turns the page
    child.expect(PAGE)
    assert not (ws / "wide.txt").exists()
    child.expect(READING)
    child.send(b"G\r")
    child.expect(rb"row 059")
    child.expect(ASK)
    child.expect(READING)
    child.send(b"y\r")
    child.expect(b"written")
    _quit(child)
    assert (ws / "wide.txt").read_text() == CONTENT


def test_a_yes_after_a_resize_at_the_question_is_asked_again_at_the_new_width(
        chat: Any) -> None:
    child, ws = chat(_writes("short\n"), rows=40)
    child.send(b"write a short file\r")
    child.expect(ASK)
    assert _border_widths(child.before) == [100]
    child.expect(READING)
    child.setwinsize(40, 60)
    _redrawn(child)
    child.send(b"y\r")
    child.expect(RESIZED)
    child.expect(ASK)
    assert _border_widths(child.before) == [60]
    assert not (ws / "wide.txt").exists()  # that y did not count
    child.expect(READING)
    child.send(b"y\r")
    child.expect(b"written")
    _quit(child)
    assert (ws / "wide.txt").read_text() == "short\n"
