"""Agent Skills: folders of instructions the model loads when a task needs them.

A skill is a `SKILL.md` file (in `DIR/NAME/SKILL.md`, or `DIR/SKILL.md`) that starts with front
matter between `---` lines giving its `name` and `description`. Progressive disclosure: only the
name and description of each skill go to the model at the start (a marked section of the system
prompt); the body is sent when the model calls the `load_skill` read tool. The folders come from
config `skills_dirs` only (none by default), never from the workspace unless named there.

A skill is instructions the model will follow, so it is read through the one gate
(trusted_input.py: its name under the skills folder, no link out of it, a regular file, capped)
and pinned like a plugin (the same pin store, tools/trust.py, keyed by that name): trusted on
first use, and a SKILL.md that changed since (a byte, or the name now a link) is held out, named
with its whole diff, until the user runs `agent-cli trust FILE`, which shows the change and asks.
The body is read once, at start, from the bytes that were checked against the pin: what the model
gets later is exactly what was trusted, framed so it cannot close its frame.

The front matter is parsed here (a small subset of YAML: `key: value` lines, quoted values, and
`>` / `|` blocks); agent-cli adds no YAML dependency for two fields.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field

if TYPE_CHECKING:
    from agent_cli.tools.base import Tool, ToolContext
    from agent_cli.tools.trust import PluginPins

SKILL_FILE = "SKILL.md"
NAME_RE = re.compile(r"^(?!.*--)[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$")
"""The Agent Skills spec: 1-64 lowercase letters, digits and hyphens, no hyphen first or last,
never two in a row."""
MAX_DESCRIPTION = 1024
MAX_SKILL_BYTES = 512_000
MAX_FILE_BYTES = 512_000
"""Largest bundled file (references/, scripts/, assets/) `load_skill(name, path)` returns."""
SECTION_START = "<available_skills>"
SECTION_END = "</available_skills>"
FRAME_TAGS = ("available_skills", "project_instructions", "skill")
"""Tags a skill's text may not write: it cannot close its own frame or forge another."""


@dataclass(frozen=True)
class Skill:
    name: str
    description: str
    body: str
    """The instructions after the front matter, as trusted."""
    path: Path
    folder: Path | None = None
    """The skill's own folder: its bundled files are read under it, never outside."""
    fields: dict[str, Field_] = field(default_factory=dict)
    """Every front matter field as written (the spec's optional ones kept: license,
    compatibility, metadata, allowed-tools)."""


@dataclass
class SkillSet:
    skills: dict[str, Skill] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    """One sentence per skill held out (bad front matter, changed since trusted, a duplicate)."""
    pins: PluginPins | None = None
    """The pins a bundled file is checked against when `load_skill` reads it."""


Field_ = str | dict[str, str]
"""A front matter value: text, or a map of text (the spec's `metadata`)."""


def parse_front_matter(text: str) -> tuple[dict[str, Field_], str]:
    """(fields, body). Raises ValueError with a reason when there is no front matter block."""
    lines = text.lstrip("\ufeff").split("\n")
    if not lines or lines[0].strip() != "---":
        raise ValueError("it does not start with a `---` front matter line")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].strip() == "---")
    except StopIteration:
        raise ValueError("its front matter has no closing `---` line") from None
    fields: dict[str, Field_] = {}
    i = 1
    while i < end:
        line = lines[i]
        i += 1
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line[:1].isspace() or ":" not in line:
            raise ValueError(f"front matter line {i} is not `key: value`")
        key, _, value = line.partition(":")
        value = value.strip()
        if value in (">", "|", ">-", "|-"):
            block: list[str] = []
            while i < end and (not lines[i].strip() or lines[i][:1].isspace()):
                block.append(lines[i].strip())
                i += 1
            value = (" " if value.startswith(">") else "\n").join(block).strip()
        elif not value and i < end and lines[i][:1].isspace():
            mapping: dict[str, str] = {}
            while i < end and (not lines[i].strip() or lines[i][:1].isspace()):
                entry = lines[i].strip()
                i += 1
                if not entry or entry.startswith("#"):
                    continue
                if ":" not in entry:
                    raise ValueError(f"front matter line {i} is not `key: value`")
                k, _, v = entry.partition(":")
                mapping[k.strip()] = _unquote(v.strip())
            fields[key.strip()] = mapping
            continue
        fields[key.strip()] = _unquote(value)
    return fields, "\n".join(lines[end + 1:]).strip("\n")


def _unquote(value: str) -> str:
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def _text(value: Field_ | None) -> str:
    return value if isinstance(value, str) else ""


def skill_files(folder: Path) -> list[Path]:
    """`folder/SKILL.md` and `folder/*/SKILL.md`, in name order."""
    found = [folder / SKILL_FILE] if (folder / SKILL_FILE).is_file() else []
    found += sorted(p for p in folder.glob(f"*/{SKILL_FILE}") if p.is_file())
    return found


def load_skills(folders: list[Path], pins: PluginPins | None = None) -> SkillSet:
    out = SkillSet(pins=pins)
    for folder in folders:
        if not folder.is_dir():
            out.problems.append(f"{folder}: skills folder not found (config skills_dirs); "
                                "no skills were loaded from it.")
            continue
        for path in skill_files(folder):
            _load_one(folder, str(path.relative_to(folder)), out, pins)
    return out


def _load_one(folder: Path, name: str, out: SkillSet, pins: PluginPins | None) -> None:
    """One SKILL.md, read once through the gate (trusted_input.py: its name under the skills
    folder, no link out of it, a regular file, capped) and checked against its pin by name."""
    from agent_cli.trusted_input import InputRefused, open_trusted_text

    path = folder / name
    try:
        got = open_trusted_text(folder, name, max_bytes=MAX_SKILL_BYTES, what="skill file")
    except InputRefused as e:
        out.problems.append(f"{path}: {e} Not loaded.")
        return
    data = got.data
    try:
        fields, body = parse_front_matter(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        why = "it is not UTF-8 text" if isinstance(e, UnicodeDecodeError) else str(e)
        out.problems.append(f"{path}: not a skill file: {why}. Start it with front matter "
                            "(`---`, `name: ...`, `description: ...`, `---`).")
        return
    name = _text(fields.get("name"))
    description = " ".join(_text(fields.get("description")).split())
    if not NAME_RE.match(name):
        out.problems.append(f"{path}: the skill name {name!r} must be 1-64 lowercase letters, "
                            "digits and hyphens, with no hyphen first, last or twice in a row; "
                            "not loaded.")
        return
    if path.parent.name != name:
        out.problems.append(f"{path}: the skill name {name!r} must be the name of its folder "
                            f"({path.parent.name!r}); not loaded.")
        return
    if not description or len(description) > MAX_DESCRIPTION:
        out.problems.append(f"{path}: skill {name} needs a description of 1 to "
                            f"{MAX_DESCRIPTION} characters; not loaded.")
        return
    if name in out.skills:
        out.problems.append(f"{path}: a skill named {name} was already loaded from "
                            f"{out.skills[name].path}; rename one of them.")
        return
    if pins is not None:
        check = pins.check_input(got, what="skill", how="agent-cli trust")
        if not check.ok:
            shown = "" if got.linked else f"\n{check.diff}"  # a link's target: not logged
            out.problems.append(f"{path}: skill {name} changed since you trusted it (or is new "
                                "under this name), so it is not offered. If you made the "
                                f"change, run `agent-cli trust {got.key}`.{shown}")
            return
    out.skills[name] = Skill(name, description, body, path, path.parent, fields)


def system_section(skills: SkillSet) -> str:
    """The part of the system prompt that lists the skills (names and descriptions only)."""
    if not skills.skills:
        return ""
    rows = "\n".join(f"<skill><name>{s.name}</name><description>{_xml(s.description)}"
                     "</description></skill>" for s in skills.skills.values())
    return ("\n\nSkills: instructions for particular tasks. Only their names and descriptions "
            "are listed here; when a task matches one, call load_skill with its name to read "
            f"its instructions before you start.\n{SECTION_START}\n{rows}\n{SECTION_END}")


def _xml(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


class LoadSkillArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(description="The skill's name, as listed in the system prompt.")
    path: str | None = Field(None, description="A file bundled with the skill (e.g. "
                             "references/forms.md), relative to the skill's folder, as its "
                             "instructions name it; omit it for the instructions themselves.")


def load_skill_tool(skills: SkillSet) -> Tool:
    """The `load_skill(name)` read tool: the body of one trusted skill."""
    from agent_cli.tools.base import Tool, ToolOutput

    def run(args: LoadSkillArgs, ctx: ToolContext) -> ToolOutput:
        from agent_cli.trusted_input import frame

        skill = skills.skills.get(args.name)
        if skill is None:
            known = ", ".join(sorted(skills.skills)) or "(none)"
            return ToolOutput(f"No skill is named {args.name!r}. Skills: {known}.", True)
        if args.path is None:
            body = frame("skill_instructions", {"name": skill.name}, skill.body,
                         also=FRAME_TAGS)
            return ToolOutput(f"Skill {skill.name} ({skill.path.name}):\n\n{body}")
        text, problem = bundled_file(skills, skill, args.path)
        if problem is not None:
            return ToolOutput(problem, True)
        body = frame("skill_file", {"skill": skill.name, "path": args.path}, text,
                     also=(*FRAME_TAGS, "skill_instructions"))
        return ToolOutput(f"Skill {skill.name}, file {args.path}:\n\n{body}")

    return Tool(name="load_skill", args=LoadSkillArgs, run=run, effect="read",
                description="Read the full instructions of one skill listed under Skills in "
                "the system prompt, or (with path) one file bundled with it. Call it when the "
                "task matches the skill's description.",
                source="agent_cli/skills.py",
                input_examples=[{"name": next(iter(skills.skills), "skill-name")}])


def bundled_file(skills: SkillSet, skill: Skill, rel: str) -> tuple[str, str | None]:
    """(text, None) of one file bundled with `skill`, read through the gate under the skill's
    folder (no link out of it, a regular file, capped) and checked against its pin like the
    SKILL.md (first use pins it); ("", the reason) when refused."""
    from agent_cli.trusted_input import InputRefused, open_trusted_text

    if skill.folder is None:
        return "", f"Skill {skill.name} has no folder of bundled files."
    try:
        got = open_trusted_text(skill.folder, rel, max_bytes=MAX_FILE_BYTES,
                                what=f"file of skill {skill.name}")
        text = got.text
    except InputRefused as e:
        return "", f"{e} Name a file inside the skill's folder, as its instructions do."
    if skills.pins is not None:
        check = skills.pins.check_input(got, what=f"file of skill {skill.name}",
                                        how="agent-cli trust")
        if not check.ok:
            return "", (f"{rel} of skill {skill.name} changed since it was trusted, so it is "
                        f"not read; the user can trust it with `agent-cli trust {got.key}`.")
    return text, None
