"""Answers rendered as Markdown, through the output boundary: a recorded console shows headings,
lists, tables and highlighted code, and hostile Markdown (escapes, OSC 8 links, javascript:
links, raw HTML, images) never reaches the terminal as anything but visible text."""

from __future__ import annotations

import io
import re

from rich.console import Console

from agent_cli import events as ev
from agent_cli.ui.markdown import render_answer
from agent_cli.ui.render import Renderer
from agent_cli.ui.status import TerminalView, head_tail

SGR = re.compile(r"\x1b\[[0-9;]*m")

NICE = """# Plan

Some *emphasis* and `code`.

- first item
- second item

| name | value |
|------|-------|
| a    | 1     |

```python
def answer() -> int:
    return 42
```
"""

HOSTILE = (
    "# Title \x1b[2J\x1b[H\n\n"
    "click \x1b]8;;https://evil.example/\x1b\\here\x1b]8;;\x1b\\ now\n\n"
    "[docs](javascript:alert(1)) and [site](https://example.com/x)\n\n"
    "<script>alert('x')</script>\n\n<b>bold?</b> inline <i>html</i>\n\n"
    "![cat picture](https://evil.example/cat.png)\n\n"
    "```sh\necho hi \x1b]52;c;ZXZpbA==\x07 \u202egnp.exe\n```\n"
)


def pinned(buf: io.StringIO, terminal: bool) -> Console:
    if terminal:
        return Console(file=buf, width=80, force_terminal=True, color_system="truecolor",
                       record=True)
    return Console(file=buf, width=80, record=True)


def record(renderable: object, *, terminal: bool = True) -> tuple[str, str]:
    buf = io.StringIO()
    c = pinned(buf, terminal)
    c.print(renderable)
    return buf.getvalue(), c.export_text(styles=False)


def assert_only_sgr(raw: str) -> None:
    """Every ESC in the output starts a colour sequence Rich wrote; no OSC, no cursor moves."""
    rest = SGR.sub("", raw)
    assert "\x1b" not in rest, repr(rest[:300])
    for ch in ("\x07", "\x9b", "\x9d", "\u202e", "\x08"):
        assert ch not in raw


def test_markdown_renders_headings_lists_tables_and_highlighted_code() -> None:
    raw, plain = record(render_answer(NICE))
    assert "# Plan" not in plain and "Plan" in plain  # a heading, not the source
    assert "• first item" in plain and "• second item" in plain
    assert re.search(r"name\s+[┃│]?\s*value", plain) and re.search(r"\ba\s+[┃│]?\s*1\b", plain)
    assert "def answer() -> int:" in plain and "```" not in plain
    # syntax highlighting: the keyword `return` has a colour of its own, the number another
    kw = re.search(r"\x1b\[([0-9;]*)mreturn\x1b\[0m", raw)
    num = re.search(r"\x1b\[([0-9;]*)m42\x1b\[0m", raw)
    assert kw and num and kw.group(1) != num.group(1), "code block was not highlighted"
    assert_only_sgr(raw)


def test_hostile_markdown_cannot_escape_the_boundary() -> None:
    raw, plain = record(render_answer(HOSTILE))
    assert_only_sgr(raw)
    assert "\x1b]8" not in raw  # no hyperlink of any kind, from the text or from Rich
    assert "\\x1b[2J" in plain and "\\x1b]8;;https://evil.example/" in plain  # shown as tokens
    assert "\\x1b]52" in plain and "<U+202E>" in plain
    # links are text: the target is shown, never live
    assert "javascript:alert(1)" in plain and "https://example.com/x" in plain
    # raw HTML is shown as typed, not interpreted (nor silently dropped)
    assert "<script>alert('x')</script>" in plain and "<b>bold?</b>" in plain
    # an image is its alt text
    assert "cat picture" in plain


def test_not_a_terminal_renders_no_escape_at_all() -> None:
    raw, _plain = record(render_answer(HOSTILE), terminal=False)
    assert "\x1b" not in raw and "\x07" not in raw


def events_for(answer: str) -> list[ev.AnyEvent]:
    half = len(answer) // 2
    return [ev.UserMessage(text="go"), ev.TextDelta(answer[:half]), ev.TextDelta(answer[half:]),
            ev.ModelReply(content=[{"type": "text", "text": answer}], stop_reason="end_turn"),
            ev.TurnEnd(reason="end_turn")]


def run_view(events: list[ev.AnyEvent], *, markdown: bool, terminal: bool) -> tuple[str, str]:
    buf = io.StringIO()
    c = pinned(buf, terminal)
    view = TerminalView(Renderer(c), c, markdown=markdown)
    for event in events:
        view(event)
    view.stop()
    return buf.getvalue(), c.export_text(styles=False)


def test_the_view_prints_the_finished_answer_as_markdown_once() -> None:
    raw, _plain = run_view(events_for(NICE), markdown=True, terminal=True)
    # on a terminal: the stream showed live (raw source, with the spinner), was erased, and the
    # finished answer was printed as Markdown after the last erase
    assert "- first item" in SGR.sub("", raw)
    final = SGR.sub("", raw.rsplit("\x1b[2K", 1)[-1])
    assert "• first item" in final and "```" not in final
    # not a terminal (piped): no live region, no Markdown layout; the raw text once, unwrapped
    long_line = "word " * 40 + "end"
    raw, _plain = run_view(events_for(NICE + long_line + "\n"), markdown=True, terminal=False)
    assert raw.count("second item") == 1 and "- first item" in raw and long_line in raw
    assert "Waiting for the model" not in raw and "\x1b" not in raw


def test_hostile_answer_through_the_view_is_clean() -> None:
    raw, _plain = run_view(events_for(HOSTILE), markdown=True, terminal=True)
    # the live region moves the cursor and erases its own lines (CSI K / A, hide/show cursor);
    # nothing else: no OSC, no screen clear, no BEL
    rest = re.sub(r"\x1b\[(?:[0-9;]*m|2K|1A|\?25[lh])", "", raw)
    assert "\x1b" not in rest.replace("\r", ""), repr(rest[:300])
    assert "\x07" not in raw and "\x1b]" not in raw and "\x1b[2J" not in raw


def test_spinner_line_says_what_runs_how_long_and_how_to_stop_it() -> None:
    from agent_cli.ui.status import WaitLine

    line = WaitLine("Running run_command").line().plain
    assert re.fullmatch(r". Running run_command · \d+\.\d s · Esc to interrupt", line), line


def test_plain_keeps_the_raw_text_as_it_streamed() -> None:
    _raw, plain = run_view(events_for(NICE), markdown=False, terminal=True)
    assert "# Plan" in plain and "```python" in plain and "| name | value |" in plain


def test_head_and_tail_of_a_long_result() -> None:
    shown, cut = head_tail("\n".join(f"line {i}" for i in range(100)))
    assert cut == 92
    assert shown.splitlines()[:4] == ["line 0", "line 1", "line 2", "line 3"]
    assert shown.splitlines()[-1] == "line 99" and "92 more lines" in shown
    assert head_tail("a\nb\nc") == ("a\nb\nc", 0)
