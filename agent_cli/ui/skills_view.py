"""The skills listing: one renderable for `agent-cli tools` and the REPL's `/skills`, so both say
the same thing about every skill: offered (pinned, or pinned now on first use) or held out and
why (changed since trusted, refused, its folder missing).

Every name, path, description and reason comes from files on disk (a skills folder someone else
may write), so each crosses the output boundary (ui/safe_rich.py) here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Group
from rich.padding import Padding
from rich.text import Text

from agent_cli.safe_text import one_line
from agent_cli.ui.safe_rich import safe

if TYPE_CHECKING:
    from agent_cli.skills import SkillSet

STATE_STYLE = {"changed": "yellow", "refused": "red", "missing": "red"}


def skills_listing(skills: SkillSet | None, tool_offered: bool = True) -> Group:
    """A heading with the counts, then a line per skill: name, state, SKILL.md; under it the
    description of an offered skill, or the sentence (and change) of one held out.
    `tool_offered` False: the session's tool scope leaves `load_skill` out, so the model is
    told of none of them (said at the end)."""
    if skills is None or not (skills.skills or skills.held):
        return Group(Text("No skills: config skills_dirs names no folder with a SKILL.md.",
                          style="dim"))
    offered = "offered" if tool_offered else "loaded"
    rows: list[Text | Padding] = [Text.assemble(
        ("Skills", "bold"), (f": {len(skills.skills):d} ", "dim"), (offered, "dim"),
        (f", {len(skills.held):d} held out", "dim"))]
    for skill in skills.skills.values():
        state = "pinned now (first use)" if skill.first_use else "pinned"
        rows.append(Text.assemble("  ", safe(skill.name, "bold"), "  ", (state, "green"),
                                  "  ", safe(str(skill.path), "dim")))
        rows.append(Padding(safe(one_line(skill.description, 300)), (0, 0, 0, 4)))
    for held in skills.held:
        rows.append(Text.assemble("  ", safe(held.name, "bold"), "  ",
                                  safe(held.state, STATE_STYLE[held.state])))
        rows.append(Padding(safe(held.reason), (0, 0, 0, 4)))
        if held.detail:
            rows.append(Padding(safe(held.detail, "dim"), (0, 0, 0, 4)))
    if skills.skills and not tool_offered:
        rows.append(Text("None is offered in this session: the tool scope (--tools, "
                         "--exclude-tools) leaves out load_skill.", style="yellow"))
    return Group(*rows)
