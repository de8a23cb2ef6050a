"""Untrusted text as Rich `Text`: sanitised by safe_text, with stand-in tokens styled so they can't
pass for the literal characters. `Text` never parses markup or emoji codes, so "[bold]" and
":smile:" show as typed."""

from __future__ import annotations

from rich.text import Text

from agent_cli.safe_text import segments

TOKEN_STYLE = "reverse yellow"


def safe(text: str, style: str = "", *, collapse_padding: bool = True) -> Text:
    out = Text(style=style)
    for seg in segments(text, collapse_padding=collapse_padding):
        out.append(seg.text, style=TOKEN_STYLE if seg.token else None)
    return out
