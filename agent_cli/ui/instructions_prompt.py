"""The question asked when a pinned project instruction file changed: the diff, then [y/N].

The same rules as an approval panel's answer: keys typed before the question appeared are
discarded, the line editor has no history and no default, and only `y`/`yes` accepts.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.text import Text

from agent_cli.approval import parse_answer
from agent_cli.instructions import Instruction
from agent_cli.safe_text import sanitize
from agent_cli.ui.panel import PAGE_PROMPT, DiffView
from agent_cli.ui.safe_rich import safe
from agent_cli.ui.terminal import default_input, discard_typeahead


def terminal_confirm(console: Console, input_fn: Callable[[str], str] | None = None
                     ) -> Callable[[Instruction, str], bool]:
    def confirm(item: Instruction, diff: str) -> bool:
        console.print(Text("Project instructions ", style="bold yellow")
                      + safe(item.shown, "bold") +
                      Text(" changed since you trusted them:", style="bold yellow"))
        read = input_fn or default_input()
        try:
            if not _show_whole(console, DiffView(diff), read):
                return False
            question = f"Pass the changed {sanitize(item.shown)} to the model? [y/N] "
            discard_typeahead()
            answer = read(question)
        except (EOFError, KeyboardInterrupt):
            return False
        approved, _ = parse_answer(answer)
        return approved

    return confirm


def _show_whole(console: Console, view: DiffView, read: Callable[[str], str]) -> bool:
    """Put the whole diff on screen before the question, a page at a time when it is taller than
    the terminal (as an approval panel does); False when the person stopped with q."""
    with console.capture() as cap:
        console.print(view)
    lines = cap.get().splitlines(keepends=True)
    room = max(console.height - 3, 5)
    if len(lines) <= room:
        console.print(view)
        return True
    shown = 0
    while shown < len(lines):
        page = lines[shown:shown + room]
        console.file.write("".join(page))
        console.file.flush()
        shown += len(page)
        if shown >= len(lines):
            return True
        discard_typeahead()
        word = read(PAGE_PROMPT.format(shown=shown, total=len(lines))).strip().lower()
        if word in ("q", "quit") or word.startswith("\x1b"):
            return False
        if word == "g":
            room = len(lines)
    return True
