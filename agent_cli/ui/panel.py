"""The approval panel and the terminal approver.

The panel shows the tool, its effect class, every argument (in the order the tool declares them)
and the preview, all through the one sanitiser. Its layout cannot hide a value: argument names are
capped and wrap, so values keep most of the width even at 40 columns; a value the preview already
shows whole (a new file's content is its diff, an argv is the command line) is shown once; a panel
taller than the terminal is shown a page at a time, and the question comes only after its last
line was on screen. The question restates the call (`Run write_file on notes.txt (CREATE, 2,000
lines)? [y/N]`), because by then the panel's head may have scrolled away.

Only `y`/`yes` approves; Enter, any other word, EOF deny this call; `q`, Esc and Ctrl-C deny it and
the rest of the reply. The answer is read by a fresh line editor each time: no history, no
completion, no default.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Iterator
from typing import Any

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from agent_cli.approval import ONLY_YES, Answer, decision_for, read_answer
from agent_cli.call_warnings import hidden_summary, lookalike_summary
from agent_cli.calls import Call, Decision, Denied
from agent_cli.safe_text import is_blank, one_line
from agent_cli.ui.safe_rich import safe, safe_line
from agent_cli.ui.terminal import default_input, discard_typeahead

InputFn = Callable[[str], str]

KEY_MAX = 24
"""Widest an argument name column gets; longer names wrap inside it."""
TITLE_ID_MAX = 60
PROMPT_TARGET_MAX = 60
"""Characters of the path or command the question restates (the cut is counted)."""
BLANK_RUN_MIN = 4
"""This many blank lines in a row in a diff (same gutter) are shown as one counted marker."""


def _value_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, indent=2)


def ordered_args(request: Call) -> list[tuple[str, Any]]:
    """The arguments in the tool's declared order; names it does not declare follow, sorted."""
    declared = [k for k in request.arg_order if k in request.args]
    seen = set(declared)
    rest = sorted((k for k in request.args if k not in seen), key=str)
    return [(k, request.args[k]) for k in [*declared, *rest]]


# -- the preview --------------------------------------------------------------------------------

def _is_diff(preview: str) -> bool:
    return "\n@@ " in preview or preview.startswith("@@ ")


def _added_text(preview: str) -> str:
    """What the `+` lines of a unified diff add, joined (the whole content of a new file)."""
    return "".join(line[1:] for line in preview.splitlines(keepends=True)
                   if line.startswith("+") and not line.startswith("+++"))


def shown_by_preview(value: Any, preview: str | None) -> str | None:
    """Why a value need not be printed again: the preview already shows all of it. A new file's
    content is exactly the `+` lines of its diff; an argv list is the quoted command line."""
    if not preview:
        return None
    if isinstance(value, str) and value and _is_diff(preview) and _added_text(preview) == value:
        n = value.count("\n") + (0 if value.endswith("\n") else 1)
        return f"(shown once, as the diff below: {n:,} line{'' if n == 1 else 's'})"
    if (isinstance(value, list) and value and all(isinstance(v, str) for v in value)
            and shlex.join(value) in preview):
        return f"(shown once, in the preview below, as one command line of {len(value):,} words)"
    return None


_GUTTER_STYLE = {"+": "green", "-": "red", " ": ""}
_HEADINGS = ("CREATE", "OVERWRITE", "EDIT", "WILL FAIL")
_SANDBOX_WARNINGS = ("network: ALLOWED", "not sandboxed", "sandbox: OFF", "not confined")


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
            elif line.startswith(_HEADINGS):
                yield "", safe(line, "bold")
            elif line.startswith(_SANDBOX_WARNINGS):
                # the sandbox lines of run_command that widen what a yes allows
                yield "", safe(line, "bold red")
            else:
                yield "", safe(line)
            i += 1

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if not _is_diff(self.preview):
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

    def _table(self, width: int) -> Table:
        r = self.request
        table = Table.grid(padding=(0, 1))
        table.add_column(style="bold cyan", max_width=key_width(width), overflow="fold")
        table.add_column(overflow="fold", ratio=1)
        table.add_row("tool", safe(r.name, "bold"))
        if len(one_line(r.id)) > TITLE_ID_MAX:
            table.add_row("call id", safe(r.id))
        table.add_row("effect", safe_line(r.effect, 40, "green" if r.effect == "read"
                                          else "bold red"))
        if r.source:
            table.add_row("from", safe(r.source, "dim"))
        if r.description and not r.preview:
            about = r.description.strip().split("\n", 1)[0]
            table.add_row("about", safe_line(about, 200, "dim"))
        for key, value in r.panel_extra.items():
            table.add_row(safe_line(key), safe(value, "italic"))
        if not r.args:
            table.add_row("arguments", Text("(none)", style="dim"))
        for key, value in ordered_args(r):
            once = shown_by_preview(value, r.preview)
            if once is not None:
                table.add_row(safe_line(str(key)), safe(once, "dim"))
            else:
                table.add_row(safe_line(str(key)), safe(_value_text(value)))
        return table

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        r = self.request
        parts: list[RenderableType] = [self._table(options.max_width)]
        if r.preview:
            parts.append(Text("preview", style="bold cyan"))
            parts.append(DiffView(r.preview))
        warning = hidden_summary(r)
        if warning:
            parts.append(safe("⚠ " + warning, "bold yellow"))
        lookalikes = lookalike_summary(r)
        if lookalikes:
            parts.append(safe("⚠ " + lookalikes, "bold yellow"))
        yield Panel(Group(*parts), title=_title(r.id), title_align="left",
                    border_style="yellow", expand=True)


def approval_panel(request: Call) -> ApprovalPanel:
    return ApprovalPanel(request)


# -- the question -------------------------------------------------------------------------------

_PATH_KEYS = ("path", "file", "file_path", "filename", "target", "dest", "destination")


def _target(request: Call) -> str:
    """What the question names: the path, or the command, or the first text argument."""
    args = ordered_args(request)
    for key, value in args:
        if str(key).lower() in _PATH_KEYS and isinstance(value, str):
            return " on " + one_line(value, PROMPT_TARGET_MAX)
    for key, value in args:
        if str(key).lower() in ("command", "cmd", "argv", "args"):
            text = (shlex.join(value) if isinstance(value, list)
                    and all(isinstance(v, str) for v in value) else _value_text(value))
            return " `" + one_line(text, PROMPT_TARGET_MAX) + "`"
    for key, value in args:
        if isinstance(value, str):
            return f" with {one_line(str(key), 24)}=" + one_line(value, PROMPT_TARGET_MAX)
    return ""


def _facts(request: Call) -> list[str]:
    facts: list[str] = []
    first = (request.preview or "").split("\n", 1)[0]
    for heading in _HEADINGS:
        if first.startswith(heading):
            facts.append(heading)
            break
    content = request.args.get("content")
    if isinstance(content, str):
        n = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
        facts.append(f"{n:,} line" + ("" if n == 1 else "s"))
    return facts


def prompt_line(request: Call) -> str:
    """`Run write_file on notes.txt (CREATE, 2,000 lines)? [y/N] `: the call restated, sanitised
    and on one line, so the question says what a yes is for even when the panel scrolled away."""
    facts = _facts(request)
    said = f" ({', '.join(facts)})" if facts else ""
    return f"Run {one_line(request.name, 64)}{_target(request)}{said}? [y/N] "


PROMPT_RE = re.compile(r"^Run .*\? \[y/N\] $", re.S)
"""Matches every question `prompt_line` asks (tests and harnesses use it)."""

PAGE_PROMPT = "-- more ({shown:,} of {total:,} lines): Enter for the next page, G for the rest, " \
              "q to deny -- "


def tall_panel_note(lines: int, height: int) -> str:
    return (f"This panel is {lines:,} lines long, taller than the terminal ({height:,} rows): it "
            "is shown a page at a time, and the question comes after its last line.")


class _Stop(Exception):
    """The person answered q, Esc or Ctrl-C at a page of the panel."""


class TerminalApprover:
    """Shows the panel (a page at a time when it is taller than the terminal) and asks the
    question that restates the call, for each write call."""

    def __init__(self, console: Console, input_fn: InputFn | None = None,
                 flush_typeahead: bool = True) -> None:
        self.console = console
        self._input = input_fn
        self.flush_typeahead = flush_typeahead

    def _ask(self, message: str, *, fresh: bool = True) -> str:
        """Read one answer; with `fresh`, keys typed before the prompt appeared are dropped."""
        if self._input is None:
            self._input = default_input()
        if fresh and self.flush_typeahead:
            discard_typeahead()
        return self._input(message)

    def _show(self, panel: ApprovalPanel) -> bool:
        """Put the whole panel on screen; False when the person stopped (q) before its end."""
        c = self.console
        with c.capture() as cap:
            c.print(panel)
        rendered = cap.get()
        lines = rendered.splitlines(keepends=True)
        room = max(c.height - 3, 5)
        if len(lines) <= room:
            c.print(panel)  # through the console, so a recording console records it too
            return True
        c.print(safe(tall_panel_note(len(lines), c.height), "bold yellow"))
        room = max(room - 1, 4)
        shown = 0
        while shown < len(lines):
            page = lines[shown:shown + room]
            c.file.write("".join(page))
            c.file.flush()
            shown += len(page)
            if shown >= len(lines):
                break
            try:
                answer = self._ask(PAGE_PROMPT.format(shown=shown, total=len(lines)))
            except (EOFError, KeyboardInterrupt):
                return False
            word = answer.strip().lower()
            if word in ("q", "quit") or answer.startswith("\x1b"):
                return False
            if word == "g":
                room = len(lines)
        return True

    def decide(self, request: Call) -> Decision:
        if not self._show(approval_panel(request)):
            self.console.print(Text("Denied, and the rest of this reply too (stopped at the "
                                    "panel).", style="red"))
            return decision_for(request, Answer("stop"))
        try:
            answer = read_answer(self._ask(prompt_line(request)))
        except EOFError:
            self.console.print(Text("Denied (no answer).", style="red"))
            return Denied(request.id, None)
        except KeyboardInterrupt:
            answer = Answer("stop")
        if answer.kind == "approve":
            return decision_for(request, answer)
        if answer.kind == "stop":
            self.console.print(Text("Denied, and the rest of this reply too.", style="red"))
            return decision_for(request, answer)
        reason = answer.reason
        if answer.ask_reason:
            try:
                reason = self._ask("Reason (optional): ", fresh=False).strip() or None
            except (EOFError, KeyboardInterrupt):
                reason = None
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
