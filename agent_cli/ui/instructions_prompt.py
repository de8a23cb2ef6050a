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
from agent_cli.ui.panel import DiffView, default_input, discard_typeahead
from agent_cli.ui.safe_rich import safe


def terminal_confirm(console: Console, input_fn: Callable[[str], str] | None = None
                     ) -> Callable[[Instruction, str], bool]:
    def confirm(item: Instruction, diff: str) -> bool:
        console.print(Text("Project instructions ", style="bold yellow")
                      + safe(item.shown, "bold") +
                      Text(" changed since you trusted them:", style="bold yellow"))
        console.print(DiffView(diff))
        question = f"Pass the changed {sanitize(item.shown)} to the model? [y/N] "
        discard_typeahead()
        read = input_fn or default_input()
        try:
            answer = read(question)
        except (EOFError, KeyboardInterrupt):
            return False
        approved, _ = parse_answer(answer)
        return approved

    return confirm
