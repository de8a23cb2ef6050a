"""Model answers rendered as Markdown (headings, lists, tables, highlighted code), through the
output boundary.

Model text is untrusted. Three rules keep it from reaching the terminal as anything but text:
1. The Markdown *source* is sanitised first (safe_text): an ESC, OSC 8 hyperlink, bidi override or
   zero-width character becomes a visible token before the parser ever sees it, so no code fence,
   table cell or heading can carry a live escape.
2. Links are never hyperlinks: `hyperlinks=False`, so `[docs](javascript:...)` shows its text and
   the target as plain text, and images show as their alt text.
3. Raw HTML is not interpreted: the parser runs with `html` off, so `<b>` or `<script>` is shown
   as typed instead of vanishing.

Imported lazily (markdown-it and pygments cost start-up time): only when an answer is rendered.
"""

from __future__ import annotations

from typing import Any

from rich.markdown import Markdown

from agent_cli.safe_text import sanitize


class SafeMarkdown(Markdown):
    """Rich Markdown over sanitised source, with hyperlinks and raw HTML off."""

    def __init__(self, source: str, **kwargs: Any) -> None:
        from markdown_it import MarkdownIt

        kwargs["hyperlinks"] = False
        clean = sanitize(source, collapse_padding=False)
        super().__init__(clean, **kwargs)
        parser = MarkdownIt("commonmark", {"html": False}).enable("strikethrough").enable("table")
        self.parsed = parser.parse(clean)


def render_answer(text: str) -> Markdown:
    """The renderable for one finished answer."""
    return SafeMarkdown(text, code_theme="monokai")
