"""The approval panel and the terminal approver.

The panel shows the tool, its effect class, every argument in full and the preview, all through
the one sanitiser. Only `y`/`yes` approves; Enter, anything else, EOF and Ctrl-C deny.
"""

from __future__ import annotations

import json
import os
import re
import sys
import unicodedata
from collections.abc import Callable
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from agent_cli.approval import ApprovalRequest, Approved, Decision, Denied, parse_answer
from agent_cli.safe_text import one_line, one_line_segments, sanitize, scan
from agent_cli.ui.safe_rich import TOKEN_STYLE, safe

InputFn = Callable[[str], str]


def _value_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=2)


def _diff_text(preview: str) -> Text:
    out = Text()
    for line in preview.splitlines(keepends=True):
        style = ""
        if line.startswith("+") and not line.startswith("+++"):
            style = "green"
        elif line.startswith("-") and not line.startswith("---"):
            style = "red"
        elif line.startswith("@@"):
            style = "cyan"
        elif line.startswith(("CREATE", "OVERWRITE", "EDIT")):
            style = "bold"
        elif line.startswith(("network: ALLOWED", "not sandboxed", "sandbox: OFF", "not confined")):
            style = "bold red"  # the sandbox lines of run_command that widen what a yes allows
        out.append_text(safe(line, style))
    return out


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


def hidden_summary(request: ApprovalRequest) -> str | None:
    """Say when any shown value holds characters that were turned into tokens (or, inside a
    list or object, into JSON escapes such as \\u001b)."""
    texts = _strings(request.args)
    texts.append(request.call_id)
    texts.extend(_strings(request.extra))
    if request.preview:
        texts.append(request.preview)
    notes: list[str] = []
    for t in texts:
        f = scan(t)
        if f.any:
            notes.append(f.summary())
    if not notes:
        return None
    return "Hidden or control characters are shown as highlighted tokens: " + "; ".join(notes)


_WORD = re.compile(r"[^\W\d_]+")
LOOKALIKES_SHOWN = 5


def _foreign(ch: str) -> bool:
    """A letter that is neither ASCII nor a Latin letter with a mark (é is fine; і, ο, ｐ are
    not)."""
    return not ch.isascii() and not unicodedata.name(ch, "").startswith("LATIN ")


def lookalike_summary(request: ApprovalRequest) -> str | None:
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


TITLE_ID_MAX = 60


def _title(call_id: str) -> Text:
    """The call id is model output too: sanitised and on one line; a long one is cut here with
    the cut counted, and shown in full in the panel body (a row `call id`)."""
    title = Text("Approve call ", style="bold")
    for seg in one_line_segments(call_id, TITLE_ID_MAX):
        title.append(seg.text, style=TOKEN_STYLE if seg.token else "bold")
    return title


def approval_panel(request: ApprovalRequest) -> Panel:
    table = Table.grid(padding=(0, 1))
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column(overflow="fold")
    table.add_row("tool", safe(request.name, "bold"))
    if len(one_line(request.call_id)) > TITLE_ID_MAX:
        table.add_row("call id", safe(request.call_id))
    table.add_row("effect", Text(request.effect, style="bold red" if request.effect != "read"
                                 else "green"))
    if request.source:
        table.add_row("from", safe(request.source, "dim"))
    for key, value in request.extra.items():
        table.add_row(safe(key), safe(value, "italic"))
    if not request.args:
        table.add_row("arguments", Text("(none)", style="dim"))
    for key, value in request.args.items():
        table.add_row(safe(str(key)), safe(_value_text(value)))
    parts: list[RenderableType] = [table]
    if request.preview:
        parts.append(Text("preview", style="bold cyan"))
        parts.append(_diff_text(request.preview))
    warning = hidden_summary(request)
    if warning:
        parts.append(Text("⚠ " + warning, style="bold yellow"))
    lookalikes = lookalike_summary(request)
    if lookalikes:
        parts.append(safe("⚠ " + lookalikes, "bold yellow"))
    return Panel(Group(*parts), title=_title(request.call_id),
                 title_align="left", border_style="yellow", expand=True)


def _screen_lines(text: str, width: int) -> int:
    """Terminal lines `text` takes once sanitised (padding collapsed) and wrapped at `width`."""
    return sum(max(1, -(-len(line) // width)) for line in sanitize(text).split("\n"))


def _plural(n: int, noun: str) -> str:
    return f"{n:,} {noun}" if n == 1 else f"{n:,} {noun}s"


def tall_panel_note(request: ApprovalRequest, width: int, height: int) -> str | None:
    """When the panel is taller than the terminal, its start has scrolled away by the time the
    prompt shows (filler that is not blank is not collapsed). Say so right above the prompt,
    with the size of each long value, so the person knows to scroll up or to say no."""
    key_width = max((len(str(k)) for k in request.args), default=4)
    inner = max(20, width - key_width - 5)
    values = [(str(k), _value_text(v)) for k, v in request.args.items()]
    if request.preview:
        values.append(("preview", request.preview))
    total = 6 + sum(_screen_lines(v, inner) for _, v in values)
    if total <= max(height - 3, 10):
        return None
    sizes = [f"{k}: {_plural(len(v), 'character')}, {_plural(v.count(chr(10)) + 1, 'line')}"
             for k, v in values if len(v) > 200 or "\n" in v]
    return (f"This panel is about {total:,} lines long, taller than the terminal: scroll up to "
            f"read all of it before answering. " + "; ".join(sizes) + ".")


def discard_typeahead() -> None:
    """Keys typed while the model was streaming or a tool ran must not answer the panel.

    Two places hold such keys: the terminal's input queue (flushed with termios) and
    prompt-toolkit's own typeahead store, which keeps whatever the REPL prompt read past the Enter
    that sent the message (`hello<Enter>y<Enter>` typed fast arrives in one read).
    """
    try:
        if not sys.stdin.isatty():
            return
    except (AttributeError, ValueError):  # no stdin, or it was closed
        return
    try:
        import termios

        termios.tcflush(sys.stdin.fileno(), termios.TCIFLUSH)
    except (ImportError, OSError, ValueError):
        pass
    if "prompt_toolkit" in sys.modules:
        from prompt_toolkit.input.defaults import create_input
        from prompt_toolkit.input.typeahead import clear_typeahead

        clear_typeahead(create_input())


def default_input() -> InputFn:
    """A line editor for the answer on a terminal (its own history: a `y` must never be one
    arrow-key away), plain `input` otherwise."""
    if sys.stdin.isatty() and os.environ.get("TERM") != "dumb":
        from prompt_toolkit import PromptSession

        session: PromptSession[str] = PromptSession()
        return lambda msg: session.prompt(msg)
    return input


class TerminalApprover:
    """Shows the panel and asks `Run this? [y/N]` for each write call."""

    def __init__(self, console: Console, input_fn: InputFn | None = None,
                 flush_typeahead: bool = True) -> None:
        self.console = console
        self._input = input_fn
        self.flush_typeahead = flush_typeahead

    def _ask(self, message: str) -> str:
        if self._input is None:
            self._input = default_input()
        return self._input(message)

    def decide(self, request: ApprovalRequest) -> Decision:
        self.console.print(approval_panel(request))
        note = tall_panel_note(request, self.console.width, self.console.height)
        if note is not None:
            self.console.print(Text("⚠ " + note, style="bold yellow"))
        if self.flush_typeahead:
            discard_typeahead()
        try:
            answer = self._ask("Run this? [y/N] ")
        except (EOFError, KeyboardInterrupt):
            self.console.print(Text("Denied (no answer).", style="red"))
            return Denied(request.call_id, None)
        ok, reason = parse_answer(answer)
        if ok:
            return Approved(request.call_id, request.args_hash)
        if reason is None and answer.strip().lower() in ("n", "no"):
            try:
                reason = self._ask("Reason (optional): ").strip() or None
            except (EOFError, KeyboardInterrupt):
                reason = None
        self.console.print(Text("Denied.", style="red"))
        return Denied(request.call_id, reason)
