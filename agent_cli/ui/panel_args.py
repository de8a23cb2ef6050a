"""What the approval panel and its question say about a call's arguments: their declared order,
which of them the preview already shows whole, and the target and facts the question restates.
Plain strings in, plain strings out: the panel sanitises whatever of it reaches the terminal."""

from __future__ import annotations

import json
import shlex
from typing import Any

from agent_cli.calls import Call
from agent_cli.diff_lines import line_kind
from agent_cli.safe_text import one_line

PROMPT_TARGET_MAX = 60
"""Characters of the path or command the question restates (the cut is counted)."""
HEADINGS = ("CREATE", "OVERWRITE", "EDIT", "WILL FAIL")
"""First words of a preview that say what a file write does; the question repeats them."""


def value_text(value: Any) -> str:
    """An argument as the panel prints it: a string as it is, anything else as indented JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=2)


def ordered_args(request: Call) -> list[tuple[str, Any]]:
    """The arguments in the tool's declared order; names it does not declare follow, sorted."""
    declared = [k for k in request.arg_order if k in request.args]
    seen = set(declared)
    rest = sorted((k for k in request.args if k not in seen), key=str)
    return [(k, request.args[k]) for k in [*declared, *rest]]


def is_diff(preview: str) -> bool:
    """Whether a preview is a unified diff (its `+`/`-` lines keep their gutter when wrapped)."""
    return "\n@@ " in preview or preview.startswith("@@ ")


def _added_text(preview: str) -> str:
    """What the `+` lines of a unified diff add, joined (the whole content of a new file)."""
    return "".join(line[1:] for line in preview.splitlines(keepends=True)
                   if line_kind(line) == "add")


def shown_by_preview(value: Any, preview: str | None) -> str | None:
    """Why a value need not be printed again: the preview already shows all of it. A new file's
    content is exactly the `+` lines of its diff; an argv list is the quoted command line."""
    if not preview:
        return None
    if isinstance(value, str) and value and is_diff(preview) and _added_text(preview) == value:
        n = value.count("\n") + (0 if value.endswith("\n") else 1)
        return f"(shown once, as the diff below: {n:,} line{'' if n == 1 else 's'})"
    if (isinstance(value, list) and value and all(isinstance(v, str) for v in value)
            and shlex.join(value) in preview):
        return f"(shown once, in the preview below, as one command line of {len(value):,} words)"
    return None


_PATH_KEYS = ("path", "file", "file_path", "filename", "target", "dest", "destination")


def target(request: Call) -> str:
    """What the question names: the path, or the command, or the first text argument."""
    args = ordered_args(request)
    for key, value in args:
        if str(key).lower() in _PATH_KEYS and isinstance(value, str):
            return " on " + one_line(value, PROMPT_TARGET_MAX)
    for key, value in args:
        if str(key).lower() in ("command", "cmd", "argv", "args"):
            text = (shlex.join(value) if isinstance(value, list)
                    and all(isinstance(v, str) for v in value) else value_text(value))
            return " `" + one_line(text, PROMPT_TARGET_MAX) + "`"
    for key, value in args:
        if isinstance(value, str):
            return f" with {one_line(str(key), 24)}=" + one_line(value, PROMPT_TARGET_MAX)
    return ""


def call_facts(request: Call) -> list[str]:
    """What the question adds in brackets: the preview's heading (CREATE, EDIT...) and the
    number of lines a `content` argument holds."""
    facts: list[str] = []
    first = (request.preview or "").split("\n", 1)[0]
    for heading in HEADINGS:
        if first.startswith(heading):
            facts.append(heading)
            break
    content = request.args.get("content")
    if isinstance(content, str):
        n = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
        facts.append(f"{n:,} line" + ("" if n == 1 else "s"))
    return facts
