"""A long argument value is laid out line by line (agent_cli/ui/long_text.py) and draws exactly
what Rich's own layout of the same Text draws, in the real approval panel."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from agent_cli.approval import ApprovalRequest
from agent_cli.ui import long_text
from agent_cli.ui.long_text import FoldedText, laid_out
from agent_cli.ui.panel import approval_panel
from agent_cli.ui.safe_rich import safe

VALUE = "".join(
    f"line {i}: " + ("word " * (i % 37)) + ("漢字" * (i % 5)) + ("x" * (i % 251)) + "\n"
    + ("\n" if i % 13 == 0 else "") + ("\x1b[31m\t<esc>\n" if i % 29 == 0 else "")
    for i in range(400))


def draw(renderable: object, width: int) -> str:
    console = Console(file=io.StringIO(), width=width, force_terminal=True,
                      color_system="truecolor")
    console.print(renderable)
    return console.file.getvalue()  # type: ignore[attr-defined]


def request(value: str) -> ApprovalRequest:
    return ApprovalRequest(call_id="toolu_1", name="write_file", effect="write",
                           args={"path": "a.md", "content": value}, args_hash="0" * 64,
                           preview=None, description="Write a file.", source="tools.d/w.py")


@pytest.mark.parametrize("width", [20, 41, 100])
def test_folded_text_draws_what_rich_draws(width: int) -> None:
    text = safe(VALUE)
    assert len(text) >= long_text.LONG
    assert draw(FoldedText(text), width) == draw(text, width)


@pytest.mark.parametrize("width", [40, 100])
def test_the_panel_of_a_long_value_is_unchanged_by_the_fast_layout(
        width: int, monkeypatch: pytest.MonkeyPatch) -> None:
    fast = draw(approval_panel(request(VALUE)), width)
    monkeypatch.setattr(long_text, "LONG", 10**12)  # every value through plain Text
    slow = draw(approval_panel(request(VALUE)), width)
    assert fast == slow
    assert "line 399:" in fast and "\x1b[31m" not in fast


def test_short_values_stay_plain_text() -> None:
    assert laid_out(safe("short")).plain == "short"  # type: ignore[union-attr]
    assert isinstance(laid_out(safe("y" * long_text.LONG)), FoldedText)
