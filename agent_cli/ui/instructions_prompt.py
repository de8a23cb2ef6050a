"""The question asked when a pinned project instruction file changed: the whole diff, then
[y/N], through the one confirm (ui/confirm.py): the diff paged and never cut, keys typed before
the question discarded, only `y`/`yes` accepts. A yes pins exactly the bytes whose diff was shown
(instructions.load), never a second read of the file.

The same confirm offers an AGENTS.md found in the workspace that nothing names (`terminal_offer`,
once per content: instructions.offer_found): its whole text first, then the question.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.text import Text

from agent_cli.instructions import Instruction
from agent_cli.safe_text import sanitize
from agent_cli.ui.confirm import Asker, ReadLine
from agent_cli.ui.panel import DiffView
from agent_cli.ui.safe_rich import safe


def terminal_confirm(console: Console, input_fn: ReadLine | None = None
                     ) -> Callable[[Instruction, str], bool]:
    asker = Asker(console, input_fn)

    def confirm(item: Instruction, diff: str) -> bool:
        console.print(Text("Project instructions ", style="bold yellow")
                      + safe(item.shown, "bold") +
                      Text(" changed since you trusted them (or are new under this name):",
                           style="bold yellow"))
        question = f"Pass the changed {sanitize(item.shown)} to the model? [y/N] "
        return asker.confirm(DiffView(diff), question)

    return confirm


def terminal_offer(console: Console, input_fn: ReadLine | None = None
                   ) -> Callable[[Instruction], bool]:
    """The question for a found AGENTS.md: the whole file shown (paged when tall), then
    "Use AGENTS.md (2.1 kB) as project instructions? [y/N]"; a yes pins those bytes."""
    from agent_cli.ui.outgoing import human_size

    asker = Asker(console, input_fn)

    def offer(item: Instruction) -> bool:
        console.print(safe(item.shown, "bold") + Text(" is in this workspace. It is what the "
                      "model would read as the project's instructions (never as permission):",
                      style="bold yellow"))
        question = (f"Use {sanitize(item.shown)} ({human_size(len(item.data))}) as project "
                    "instructions? [y/N] ")
        return asker.confirm(safe(item.text), question)

    return offer
