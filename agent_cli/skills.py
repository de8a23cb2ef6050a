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

The front matter is YAML, read by PyYAML's safe loader (plain data only: a `!!python/...` tag is
refused, never run) and then checked against the Agent Skills spec (`check_fields`). A skill's
front matter is a few fields, so anything built to cost time or memory is refused before or while
it is read: more than MAX_FRONT_MATTER characters, an alias (`*name`, how "billion laughs"
documents grow), nesting deeper than Python's recursion allows. PyYAML is imported only when a
skills folder is configured: start-up does not pay for it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Literal

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
    """The spec's fields as checked (name, description and the optional license,
    compatibility, metadata, allowed-tools); other keys are not kept."""
    first_use: bool = False
    """Pinned by this load (not seen before under its name): trusted on first use."""


HeldState = Literal["changed", "refused", "missing"]


@dataclass(frozen=True)
class HeldOut:
    """A skill (or a skills folder) not offered, and why."""

    path: Path
    name: str
    """The name it gives (its folder's name when it gives none that could be read)."""
    state: HeldState
    """changed: differs from its pin (`agent-cli trust` accepts it); refused: against the spec,
    refused by the gate, or a duplicate; missing: the configured folder is not there."""
    reason: str
    """One sentence: what is wrong, where, and what to do."""
    detail: str = ""
    """For a changed skill, the whole change (empty when the name leads through a link)."""

    @property
    def problem(self) -> str:
        return f"{self.reason}\n{self.detail}" if self.detail else self.reason


@dataclass
class SkillSet:
    skills: dict[str, Skill] = field(default_factory=dict)
    held: list[HeldOut] = field(default_factory=list)
    """Every skill held out (bad front matter, changed since trusted, a duplicate), in order."""
    pins: PluginPins | None = None
    """The pins a bundled file is checked against when `load_skill` reads it."""

    @property
    def problems(self) -> list[str]:
        """One notice per skill held out (its sentence, and its change when it changed)."""
        return [h.problem for h in self.held]


Field_ = str | dict[str, str]
"""A front matter value as kept: text, or a map of text (the spec's `metadata`)."""

MAX_FRONT_MATTER = 32_768
"""Characters of front matter read as YAML (the spec's fields need a few hundred)."""
MAX_COMPATIBILITY = 500
OPTIONAL_TEXT = ("license", "compatibility")


def parse_front_matter(text: str) -> tuple[dict[str, object], str]:
    """(fields, body): the YAML between the first line `---` and the next line `---`, which must
    be a map. Raises ValueError with a sentence that says what is wrong and on which line of the
    file."""
    lines = text.lstrip("\ufeff").split("\n")
    if lines[0].strip() != "---":
        raise ValueError("not a skill file: it does not start with a `---` front matter "
                         "line (`---`, `name: ...`, `description: ...`, `---`)")
    try:
        end = next(i for i in range(1, len(lines)) if lines[i].rstrip() == "---")
    except StopIteration:
        raise ValueError("its front matter has no closing `---` line") from None
    block = "".join(f"{line}\n" for line in lines[1:end])
    if len(block) > MAX_FRONT_MATTER:
        raise ValueError(f"its front matter is {len(block):,} characters, more than the "
                         f"{MAX_FRONT_MATTER:,} read; keep the fields short and move long text "
                         "into the body")
    data = _load_yaml(block)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ValueError(f"its front matter is {_kind(data)}, not `key: value` lines")
    return data, "\n".join(lines[end + 1:]).strip("\n")


def _load_yaml(block: str) -> object:
    """PyYAML's safe loader (imported here: only configured skills pay for it), with aliases
    refused; a YAML error becomes a sentence naming the line of the file (the block starts on
    its second line)."""
    import yaml

    class Loader(yaml.SafeLoader):
        def compose_node(self, parent: yaml.Node | None, index: int) -> yaml.Node | None:
            if self.check_event(yaml.AliasEvent):
                raise yaml.composer.ComposerError(
                    None, None, "an alias (`*name`) is not read here: write the value out",
                    self.peek_event().start_mark)
            return super().compose_node(parent, index)

    try:
        return yaml.load(block, Loader=Loader)  # a SafeLoader: plain data only
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f" (line {mark.line + 2}, column {mark.column + 1})" if mark else ""
        what = " ".join(str(e.problem or e.context or "it cannot be read").split())
        raise ValueError(f"its front matter is not valid YAML: {what}{where}") from None
    except yaml.YAMLError as e:
        raise ValueError("its front matter is not valid YAML: "
                         f"{' '.join(str(e).split())}") from None
    except RecursionError:
        raise ValueError("its front matter is nested too deeply to read") from None
    except ValueError:  # a value YAML parses but Python refuses (an integer of 5,000 digits)
        raise ValueError("its front matter has a value that cannot be read (a number too long "
                         "to convert); write it in quotes") from None


def _kind(value: object) -> str:
    """What YAML made of a value, in words (for a sentence saying it should be text)."""
    if value is None:
        return "empty"
    if isinstance(value, bool):
        return f"true/false ({str(value).lower()})"
    if isinstance(value, int | float):
        return f"a number ({value})"
    if isinstance(value, dict):
        return "a map"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "text"
    return f"a {type(value).__name__} ({value})"


def check_fields(data: dict[str, object], folder: str) -> tuple[dict[str, Field_], str | None]:
    """The spec's fields of a parsed front matter, checked: (fields kept, None), or ({}, a
    sentence saying what is wrong). `folder` is the name of the skill's folder, which the name
    must equal. Other keys are not the spec's and are not kept."""
    name = data.get("name")
    if not isinstance(name, str):
        return {}, (f"its `name` is {_kind(name)}; give the skill's name as text, the name "
                    "of its folder")
    if not NAME_RE.match(name):
        return {}, (f"the skill name {name[:80]!r} must be 1-64 lowercase letters, digits and "
                    "hyphens, with no hyphen first, last or twice in a row")
    if name != folder:
        return {}, f"the skill name {name!r} must be the name of its folder ({folder!r})"
    description = data.get("description")
    if not isinstance(description, str) or not description.strip() \
            or len(description.strip()) > MAX_DESCRIPTION:
        said = (f"{len(description.strip()):,} characters" if isinstance(description, str)
                else _kind(description))
        return {}, (f"skill {name} needs a description of 1 to {MAX_DESCRIPTION} characters "
                    f"(it is {said})")
    fields: dict[str, Field_] = {"name": name, "description": description.strip()}
    for key in OPTIONAL_TEXT:
        value = data.get(key)
        if value is None:
            continue
        if not isinstance(value, str):
            return {}, f"its `{key}` is {_kind(value)}; write it as text (in quotes)"
        fields[key] = value
    if len(fields.get("compatibility", "")) > MAX_COMPATIBILITY:
        return {}, f"its `compatibility` is longer than {MAX_COMPATIBILITY} characters"
    metadata = data.get("metadata")
    if metadata is not None:
        if not isinstance(metadata, dict):
            return {}, (f"its `metadata` is {_kind(metadata)}; the spec wants a map of text "
                        "(`metadata:` then indented `key: \"value\"` lines)")
        for key, value in metadata.items():
            if not isinstance(key, str) or not isinstance(value, str):
                wrong = value if isinstance(key, str) else key
                return {}, (f"its `metadata` entry {str(key)!r} is {_kind(wrong)} as YAML "
                            "reads it; the spec wants a map of text: put the value in quotes")
        fields["metadata"] = dict(metadata)
    tools = data.get("allowed-tools")
    if tools is not None:
        if isinstance(tools, list) and all(isinstance(t, str) for t in tools):
            tools = " ".join(tools)  # a YAML list, as some skills write it
        if not isinstance(tools, str):
            return {}, (f"its `allowed-tools` is {_kind(tools)}; the spec wants text "
                        "(tool names separated by spaces)")
        fields["allowed-tools"] = tools
    return fields, None


def skill_files(folder: Path) -> list[Path]:
    """`folder/SKILL.md` and `folder/*/SKILL.md`, in name order."""
    found = [folder / SKILL_FILE] if (folder / SKILL_FILE).is_file() else []
    found += sorted(p for p in folder.glob(f"*/{SKILL_FILE}") if p.is_file())
    return found


def load_skills(folders: list[Path], pins: PluginPins | None = None) -> SkillSet:
    out = SkillSet(pins=pins)
    for folder in folders:
        if not folder.is_dir():
            out.held.append(HeldOut(folder, folder.name, "missing", (
                f"{folder}: skills folder not found (config skills_dirs); no skills were "
                "loaded from it.")))
            continue
        for path in skill_files(folder):
            _load_one(folder, str(path.relative_to(folder)), out, pins)
    return out


def _load_one(folder: Path, name: str, out: SkillSet, pins: PluginPins | None) -> None:
    """One SKILL.md, read once through the gate (trusted_input.py: its name under the skills
    folder, no link out of it, a regular file, capped) and checked against its pin by name."""
    from agent_cli.trusted_input import InputRefused, open_trusted_text

    path = folder / name

    def refuse(why: str, shown: str = path.parent.name) -> None:
        out.held.append(HeldOut(path, shown, "refused", f"{path}: {why}; not loaded."))

    try:
        got = open_trusted_text(folder, name, max_bytes=MAX_SKILL_BYTES, what="skill file")
    except InputRefused as e:
        out.held.append(HeldOut(path, path.parent.name, "refused", f"{path}: {e} Not loaded."))
        return
    try:
        data, body = parse_front_matter(got.data.decode("utf-8"))
    except UnicodeDecodeError:
        return refuse("it is not UTF-8 text")
    except ValueError as e:
        return refuse(str(e))
    fields, problem = check_fields(data, path.parent.name)
    if problem is not None:
        return refuse(problem)
    name = str(fields["name"])
    if name in out.skills:
        return refuse(f"a skill named {name} was already loaded from {out.skills[name].path}; "
                      "rename one of them", name)
    first_use = False
    if pins is not None:
        check = pins.check_input(got, what="skill", how="agent-cli trust")
        if not check.ok:
            out.held.append(HeldOut(path, name, "changed", (
                f"{path}: skill {name} changed since you trusted it (or is new under this "
                f"name), so it is not offered. If you made the change, run "
                f"`agent-cli trust {got.key}`."),
                "" if got.linked else check.diff))  # a link's target: not logged
            return
        first_use = check.first_use
    description = " ".join(str(fields["description"]).split())
    out.skills[name] = Skill(name, description, body, path, path.parent, fields, first_use)


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
