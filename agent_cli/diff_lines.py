"""What kind of line of a unified diff this is: the one reading the approval panel's preview, the
undo view and the HTML export colour by, so a line is an addition in all three or in none."""

from __future__ import annotations

from typing import Literal

LineKind = Literal["add", "del", "hunk", "head", ""]

HEAD_WORDS = ("CREATE", "OVERWRITE", "EDIT")
"""A file tool's preview starts with one of these, naming what the call does to the file."""


def line_kind(line: str) -> LineKind:
    """`add` (+), `del` (-), `hunk` (@@), `head` (a preview's first line), or "" (context,
    and the ---/+++ file names)."""
    if line.startswith("+") and not line.startswith("+++"):
        return "add"
    if line.startswith("-") and not line.startswith("---"):
        return "del"
    if line.startswith("@@"):
        return "hunk"
    if line.startswith(HEAD_WORDS):
        return "head"
    return ""
