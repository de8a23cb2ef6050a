"""The approval panel and the terminal approver.

The panel shows the tool, its effect class, every argument (in the order the tool declares them)
and the preview, all through the one sanitiser. Its layout cannot hide a value: argument names are
capped and wrap, so values keep most of the width even at 40 columns; a value the preview already
shows whole (a new file's content is its diff, an argv is the command line) is shown once; a panel
taller than the terminal is shown a page at a time, and the question comes only after its last
line was on screen. The question restates the call (`Run write_file on notes.txt (CREATE, 2,000
lines)? [y/N]`), because by then the panel's head may have scrolled away.

Only `y`/`yes` approves; Enter, any other word, EOF deny this call; `q`, Esc and Ctrl-C deny it and
the rest of the reply. Paging and the answer are the one confirm's (ui/confirm.py): single keys at a
page, typeahead discarded, a fresh line editor for the answer (no history, no completion, no
default), Esc at the reason prompt cancels the reason.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.panel import Panel
from rich.text import Text

from agent_cli.approval import ONLY_YES, Answer, decision_for
from agent_cli.call_warnings import hidden_summary, lookalike_summary
from agent_cli.calls import Call, Decision, Denied
from agent_cli.safe_text import is_blank, one_line
from agent_cli.ui.confirm import Asker
from agent_cli.ui.panel_args import (
    HEADINGS,
    call_facts,
    is_diff,
    ordered_args,
    shown_by_preview,
    target,
    value_text,
)
from agent_cli.ui.panel_frame import FramedLines, grid_lines
from agent_cli.ui.safe_rich import safe, safe_line

InputFn = Callable[[str], str]

KEY_MAX = 24
"""Widest an argument name column gets; longer names wrap inside it."""
TITLE_ID_MAX = 60
BLANK_RUN_MIN = 4
"""This many blank lines in a row in a diff (same gutter) are shown as one counted marker."""


# -- the preview --------------------------------------------------------------------------------

_GUTTER_STYLE = {"+": "green", "-": "red", " ": ""}
_SANDBOX_WARNINGS = ("network: ALLOWED", "not sandboxed", "sandbox: OFF", "not confined",
                     "SANDBOX OFF")


def _gutter(mark: str) -> Text:
    """The gutter of a diff line, repeated on each wrapped piece of it."""
    if mark == "+":
        return Text("+", style="green")
    if mark == "-":
        return Text("-", style="red")
    return Text(" ")


class DiffView:
    """A preview as the panel shows it. In a unified diff every wrapped piece of a `+`/`-` line
    keeps its gutter, so a continuation never reads as a context line; a run of blank lines is
    one counted marker; each line is sanitised on its own (a hidden character stays a token)."""

    def __init__(self, preview: str) -> None:
        self.preview = preview

    def _rows(self) -> Iterator[tuple[str, Text]]:
        lines = self.preview.removesuffix("\n").split("\n")
        i = 0
        while i < len(lines):
            line = lines[i]
            gutter = line[:1]
            if gutter in _GUTTER_STYLE and not line.startswith(("+++", "---")):
                style = _GUTTER_STYLE[gutter]
                j = i
                while j < len(lines) and lines[j][:1] == gutter and is_blank(lines[j][1:]):
                    j += 1
                if j - i >= BLANK_RUN_MIN:
                    marker = Text(f"⟨… {j - i:,} blank lines …⟩", style="reverse yellow")
                    yield gutter, marker
                    i = j
                    continue
                yield gutter, safe(line[1:], style)
            elif line.startswith("@@"):
                yield "", safe(line, "cyan")
            elif line.startswith(HEADINGS):
                yield "", safe(line, "bold")
            elif line.startswith(_SANDBOX_WARNINGS):
                # the sandbox lines of run_command that widen what a yes allows
                yield "", safe(line, "bold red")
            else:
                yield "", safe(line)
            i += 1

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if not is_diff(self.preview):
            yield safe(self.preview)
            return
        width = max(options.max_width - 1, 8)
        for gutter, body in self._rows():
            if not gutter:
                yield body
                continue
            for piece in body.wrap(console, width, overflow="fold"):
                yield _gutter(gutter) + piece


# -- the panel ----------------------------------------------------------------------------------

def _title(call_id: str) -> Text:
    """The call id is model output too: sanitised and on one line; a long one is cut here with
    the cut counted, and shown in full in the panel body (a row `call id`)."""
    return Text("Approve call ", style="bold") + safe_line(call_id, TITLE_ID_MAX, "bold")


def key_width(total: int) -> int:
    """The name column's width at a panel `total` columns wide: at most a third of the inside,
    never more than KEY_MAX, so a value always keeps two thirds (24 columns at 40)."""
    inner = max(total - 4, 12)
    return max(6, min(KEY_MAX, inner // 3))


class ApprovalPanel:
    """The panel for one request, laid out for the width it is drawn at."""

    def __init__(self, request: Call) -> None:
        self.request = request

    def _rows(self, clean: set[int]) -> list[tuple[Text, Text]]:
        """The name/value rows; adds to `clean` the argument strings that hold no token."""
        r = self.request
        rows: list[tuple[Text, Text]] = [(Text("tool"), safe(r.name, "bold"))]
        if len(one_line(r.id)) > TITLE_ID_MAX:
            rows.append((Text("call id"), safe(r.id)))
        rows.append((Text("effect"), safe_line(r.effect, 40, "green" if r.effect == "read"
                                                else "bold red")))
        if r.source:
            rows.append((Text("from"), safe(r.source, "dim")))
        if r.description and not r.preview:
            about = r.description.strip().split("\n", 1)[0]
            rows.append((Text("about"), safe_line(about, 200, "dim")))
        for key, value in r.panel_extra.items():
            rows.append((safe_line(key), safe(value, "bold red" if value.startswith(
                _SANDBOX_WARNINGS) else "italic")))
        if not r.args:
            rows.append((Text("arguments"), Text("(none)", style="dim")))
        for key, value in ordered_args(r):
            once = shown_by_preview(value, r.preview)
            if once is not None:
                rows.append((safe_line(str(key)), safe(once, "dim")))
            else:
                shown = safe(value_text(value))
                if isinstance(value, str) and not shown.spans:
                    clean.add(id(value))  # no token: nothing for hidden_summary to find
                rows.append((safe_line(str(key)), shown))
        return rows

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        r = self.request
        inner = max(options.max_width - 4, 1)
        clean: set[int] = set()
        body = grid_lines(console, self._rows(clean), inner, key_width(options.max_width),
                          "bold cyan")
        parts: list[RenderableType] = []
        if r.preview:
            parts.append(Text("preview", style="bold cyan"))
            parts.append(DiffView(r.preview))
        warning = hidden_summary(r, frozenset(clean))
        if warning:
            parts.append(safe("⚠ " + warning, "bold yellow"))
        lookalikes = lookalike_summary(r)
        if lookalikes:
            parts.append(safe("⚠ " + lookalikes, "bold yellow"))
        frame = Panel(Text(""), title=_title(r.id), title_align="left",
                      border_style="yellow", expand=True)
        yield FramedLines(body, Group(*parts) if parts else None, frame)


def approval_panel(request: Call) -> ApprovalPanel:
    return ApprovalPanel(request)


# -- the question -------------------------------------------------------------------------------

def prompt_line(request: Call) -> str:
    """`Run write_file on notes.txt (CREATE, 2,000 lines)? [y/N] `: the call restated, sanitised
    and on one line, so the question says what a yes is for even when the panel scrolled away."""
    facts = call_facts(request)
    said = f" ({', '.join(facts)})" if facts else ""
    return f"Run {one_line(request.name, 64)}{target(request)}{said}? [y/N] "


PROMPT_RE = re.compile(r"^Run .*\? \[y/N\] $", re.S)
"""Matches every question `prompt_line` asks (tests and harnesses use it)."""

RESIZED_NOTE = ("The terminal was resized: the panel is shown again, laid out for {width:,} "
                "columns; answer after its last line.")


def tall_panel_note(lines: int, height: int) -> str:
    return (f"This panel is {lines:,} lines long, taller than the terminal ({height:,} rows): it "
            "is shown a page at a time, and the question comes after its last line.")


class TerminalApprover:
    """Shows the panel (a page at a time when it is taller than the terminal) and asks the
    question that restates the call, for each write call: through the one confirm
    (ui/confirm.Asker), so its pager, typeahead and answer rules are the same as every y/N's."""

    def __init__(self, console: Console, input_fn: InputFn | None = None,
                 flush_typeahead: bool = True) -> None:
        self.console = console
        self.asker = Asker(console, input_fn, flush=flush_typeahead)

    def _size(self) -> tuple[int, int]:
        return self.asker.size()

    def decide(self, request: Call) -> Decision:
        panel = approval_panel(request)
        while True:
            size = self.asker.page(panel, note=tall_panel_note)
            if size is None:
                self.console.print(Text("Denied, and the rest of this reply too (stopped at "
                                        "the panel).", style="red"))
                return decision_for(request, Answer("stop"))
            answer = self.asker.answer(prompt_line(request))
            # A yes counts for a panel drawn at the terminal's size: after a resize the lines
            # on screen may be cut or reflowed, so the panel is drawn again and asked again.
            if answer is None or answer.kind != "approve" or self._size() == size:
                break
            self.console.print(safe(RESIZED_NOTE.format(width=self._size()[0]), "bold yellow"))
        if answer is None:
            self.console.print(Text("Denied (no answer).", style="red"))
            return Denied(request.id, None)
        if answer.kind == "approve":
            return decision_for(request, answer)
        if answer.kind == "stop":
            self.console.print(Text("Denied, and the rest of this reply too.", style="red"))
            return decision_for(request, answer)
        reason = self.asker.reason() if answer.ask_reason else answer.reason
        if answer.note == ONLY_YES:
            self.console.print(Text("Denied: only y or yes approves; what you typed goes to the "
                                    "model as your reason.", style="red"))
        else:
            self.console.print(Text("Denied.", style="red"))
        return Denied(request.id, reason)


def panel_lines(request: Call, width: int) -> int:
    """Rows the panel takes on a terminal `width` columns wide, counted in cells (a CJK
    character takes two), as Rich lays it out."""
    import io

    c = Console(file=io.StringIO(), width=width, force_terminal=False, color_system=None)
    c.print(approval_panel(request))
    text = c.file.getvalue()  # type: ignore[attr-defined]
    return len(text.splitlines())
