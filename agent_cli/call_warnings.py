"""What an approval panel warns about a call, as plain sentences: hidden or control characters
turned into tokens, and words that mix ASCII with look-alike letters of another script.

The terminal panel (ui/panel.py) and the HTML export (log/html_export.py) both print these, so
they live below both, with no Rich: the same call gets the same warnings wherever it is shown.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

from agent_cli.calls import Call
from agent_cli.safe_text import Findings, one_line, scan


def _strings(value: Any) -> list[str]:
    """Every key and string at any depth of an argument value: a control character inside a
    list is shown as a JSON escape, so scanning the JSON text would miss it."""
    out: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict):
            out.extend(str(k) for k in item)
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
    return out


def hidden_summary(request: Call, clean: frozenset[int] = frozenset()) -> str | None:
    """Say when any shown value holds characters that were turned into tokens (or, inside a
    list or object, into JSON escapes such as \\u001b). `clean`: ids of argument strings already
    sanitised to no token at all (the panel's own rows), which need no second scan."""
    texts = _strings(request.args)
    texts.append(request.id)
    texts.append(request.name)
    texts.extend(_strings(request.panel_extra))
    if request.preview:
        texts.append(request.preview)
    notes: list[str] = []
    found = [f for f in (scan(t) for t in texts if id(t) not in clean) if f.any]
    if found:  # one sentence for the whole call, however many values needed tokens
        notes.append(Findings(*(sum(getattr(f, k) for f in found)
                                for k in ("controls", "bidi", "invisible", "padding_runs"))
                              ).summary())
    names = [request.name, request.id, *map(str, request.args), *request.panel_extra]
    breaks = sum(1 for n in names if "\n" in n or "\t" in n)
    if breaks:
        notes.append(f"{breaks} name{'s' if breaks != 1 else ''} or id{'s' if breaks != 1 else ''}"
                     " with line breaks or tabs (shown as \\n, \\t)")
    if not notes:
        return None
    return "Hidden or control characters are shown as highlighted tokens: " + "; ".join(notes)


_WORD = re.compile(r"[^\W\d_]+")
LOOKALIKES_SHOWN = 5


def _foreign(ch: str) -> bool:
    """A letter that is neither ASCII nor a Latin letter with a mark (é is fine; і, ο, ｐ are
    not)."""
    return not ch.isascii() and not unicodedata.name(ch, "").startswith("LATIN ")


def lookalike_summary(request: Call) -> str | None:
    """Name the words that mix ASCII letters with letters of another script: `gіthub` with a
    Cyrillic і reads as github. The value is shown exactly; this says what the eye would miss.
    Words wholly in one script (Russian, Greek text) are left alone."""
    found: dict[str, str] = {}
    for text in _strings(request.args):
        if text.isascii() or len(found) >= LOOKALIKES_SHOWN:
            continue
        for m in _WORD.finditer(text):
            word = m.group()
            if word.isascii() or not any(c.isascii() for c in word):
                continue
            odd = [c for c in word if _foreign(c)]
            if odd and word not in found:
                c = odd[0]
                found[word] = f"U+{ord(c):04X} {unicodedata.name(c, '?')}"
            if len(found) >= LOOKALIKES_SHOWN:
                break
    if not found:
        return None
    listed = "; ".join(f"'{one_line(w, 40)}' has {what}" for w, what in found.items())
    return f"Look-alike letters: words mixing ASCII with other scripts: {listed}"
