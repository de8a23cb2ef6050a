"""The output boundary on the Rich side: untrusted text as Rich `Text`, sanitised by safe_text, with
stand-in tokens styled so they can't pass for the literal characters. `Text` never parses markup or
emoji codes, so "[bold]" and ":smile:" show as typed.

Every string from outside the program (model text, tool results, argument names and values, ids,
reasons, paths, every field of a replayed log) goes to a console through `safe` or `safe_line`;
tests/test_output_boundary.py fails on any other value handed to Rich. Example:

    console.print(safe(result_text, "dim"))
    table.add_row("path", safe_line(path, 80))
    title = Text("Approve call ") + safe_line(call_id, 60, "bold")
"""

from __future__ import annotations

from rich.text import Text

from agent_cli.safe_text import Safe

TOKEN_STYLE = "reverse yellow"


def safe(text: str | Safe, style: str = "", *, collapse_padding: bool = True,
         keep_alignment: bool = False) -> Text:
    """`text` sanitised (line breaks kept), as Rich Text with its tokens highlighted;
    `keep_alignment` for a tool's output (safe_text.segments)."""
    return _rich(Safe(text, collapse_padding=collapse_padding, keep_alignment=keep_alignment),
                 style)


def safe_line(text: str | Safe, limit: int | None = None, style: str = "") -> Text:
    """`text` on one line (line breaks and tabs become tokens), cut at `limit` sanitised
    characters with the cut counted."""
    return _rich(Safe(text, line=True, limit=limit), style)


def _rich(text: Safe, style: str) -> Text:
    out = Text(style=style)
    for seg in text.segments:
        out.append(seg.text, style=TOKEN_STYLE if seg.token else None)
    return out
