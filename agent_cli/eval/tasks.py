"""The task file (TOML): one pydantic model is the shape, the validation and the error sentences.

Paths in a task file (`workspace`, `script`) are relative to the task file, never to the current
folder, so a suite runs the same from anywhere; and they stay inside the task file's folder,
checked by the one path guard (tools/paths.py: `..`, absolute paths elsewhere and links that leave
are refused), because a task file may come from someone else and its workspace is copied into
every trial, where the model reads it. File checks name paths inside the trial's workspace; they
may not leave it. Whether a task's `answers` are used is decided by the command line
(eval/answers.py).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path, PurePosixPath
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from agent_cli.approval import DenyRule
from agent_cli.errors import PathRefused, UsageError

AnswerSpec: TypeAlias = Literal["all", "none"] | list[str]
"""The forms of a task's answers (a task file's `answers`, a value of `--answers FILE`)."""

MAX_INPUT_BYTES = 4 << 20
"""The most of a task file (or an answers file) that is read."""

TASK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
"""Task ids name log files, so they stay plain."""


class FileCheck(BaseModel):
    """What one file must be after the trial: exactly one of `content`, `sha256`, `regex`,
    `absent`. In the task file a plain string means `content`, and the string "absent" means
    `absent = true` (write `{ content = "absent" }` for a file holding that word)."""

    model_config = ConfigDict(extra="forbid")

    content: str | None = None
    """The exact text (UTF-8) the file must hold."""
    sha256: str | None = Field(None, pattern=r"^[0-9a-fA-F]{64}$")
    """The hex SHA-256 of the file's bytes."""
    regex: str | None = None
    """A regular expression that must match somewhere in the file's text (re.search)."""
    absent: bool = False
    """The file must not exist."""

    @model_validator(mode="after")
    def _one_kind(self) -> FileCheck:
        given = [k for k in ("content", "sha256", "regex") if getattr(self, k) is not None]
        if self.absent:
            given.append("absent")
        if len(given) != 1:
            raise ValueError("give exactly one of content, sha256, regex or absent = true "
                             f"(got {', '.join(given) or 'none'})")
        if self.regex is not None:
            _compile(self.regex)
        return self


class CallPattern(BaseModel):
    """A call described by a glob over the tool name and globs over argument values (all must
    match), with the same matching as config deny rules."""

    model_config = ConfigDict(extra="forbid")

    tool: str
    args: dict[str, str] = {}

    def matches(self, name: str, args: dict[str, Any]) -> bool:
        return DenyRule(tool=self.tool, args=self.args).matches(name, args)

    def describe(self) -> str:
        inner = ", ".join(f"{k}={v}" for k, v in self.args.items())
        return f"{self.tool}({inner})" if inner else self.tool


class Task(BaseModel):
    """One task: what to ask, in which workspace, with which answers, and what must hold after."""

    model_config = ConfigDict(extra="forbid")

    id: str
    """Names the task in the report and its trials' log files (letters, digits, `.`, `_`, `-`)."""
    prompt: str | list[str]
    """The user's message, or a list of messages sent as successive turns."""
    workspace: Path | None = None
    """A folder, copied fresh for every trial (relative to the task file); omitted, each trial
    starts in an empty folder."""
    script: Path | None = None
    """Replies for the scripted provider (relative to the task file); omit to use the
    configured provider and model."""
    model: str | None = None
    """Model name for this task (default: the configured one)."""
    answers: AnswerSpec = "none"
    """Approvals: "all" approves every write call, "none" denies them all, a list answers in
    order as typed at the prompt ("y", "n use ./tmp"); calls past the end of the list are
    denied. Used only when the command line allows it (eval/answers.py); a network call is
    never approved by it."""
    tools: list[str] | None = None
    """Only these tools are offered (names or globs); default: every loaded tool."""
    read_only: bool = False
    """Offer only tools whose effect class is `read`."""
    files: dict[str, FileCheck] = {}
    """Path (inside the workspace) -> what the file must be after the trial."""
    forbid: list[CallPattern] = []
    """Calls that must never have been approved."""
    require: list[CallPattern] = []
    """Calls that must have run (approved and started)."""
    answer: str | None = None
    """A regular expression that must match the final answer text (re.search)."""
    max_requests: int | None = Field(None, ge=1)
    """Most model requests a trial may make; the loop is stopped one request after it."""
    max_cost_usd: float | None = Field(None, ge=0)
    """Most a trial may cost (needs `prices` for the model in config)."""

    @field_validator("id")
    @classmethod
    def _plain_id(cls, value: str) -> str:
        if not TASK_ID.match(value):
            raise ValueError("use 1 to 64 letters, digits, '.', '_' or '-', starting with a "
                             "letter or digit")
        return value

    @field_validator("prompt")
    @classmethod
    def _some_prompt(cls, value: str | list[str]) -> str | list[str]:
        if (isinstance(value, list) and not value) or value == "":
            raise ValueError("give the user's message (or a list of messages)")
        return value

    @field_validator("files", mode="before")
    @classmethod
    def _short_forms(cls, value: Any) -> Any:
        if not isinstance(value, dict):
            return value
        out: dict[Any, Any] = {}
        for path, check in value.items():
            if check == "absent":
                out[path] = {"absent": True}
            elif isinstance(check, str):
                out[path] = {"content": check}
            else:
                out[path] = check
        return out

    @field_validator("files")
    @classmethod
    def _inside(cls, value: dict[str, FileCheck]) -> dict[str, FileCheck]:
        for path in value:
            p = PurePosixPath(path)
            if not path or p.is_absolute() or ".." in p.parts or "\\" in path:
                raise ValueError(f"{path!r} must be a relative path inside the workspace "
                                 "(no leading /, no ..)")
        return value

    @field_validator("answer")
    @classmethod
    def _answer_regex(cls, value: str | None) -> str | None:
        if value is not None:
            _compile(value)
        return value

    @property
    def prompts(self) -> list[str]:
        return [self.prompt] if isinstance(self.prompt, str) else list(self.prompt)


class TaskFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tasks: list[Task] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_ids(self) -> TaskFile:
        seen: set[str] = set()
        for task in self.tasks:
            if task.id in seen:
                raise ValueError(f"two tasks have the id {task.id!r}; ids must be unique")
            seen.add(task.id)
        return self


def _compile(pattern: str) -> re.Pattern[str]:
    try:
        return re.compile(pattern)
    except re.error as e:
        raise ValueError(f"{pattern!r} is not a valid regular expression ({e})") from None


def _where(loc: tuple[int | str, ...], data: dict[str, Any]) -> str:
    """`task "writes-out", files.out.txt` instead of `tasks.0.files.out.txt`."""
    if len(loc) >= 2 and loc[0] == "tasks" and isinstance(loc[1], int):
        tasks = data.get("tasks")
        task_id = None
        if isinstance(tasks, list) and loc[1] < len(tasks) and isinstance(tasks[loc[1]], dict):
            task_id = tasks[loc[1]].get("id")
        name = f"task {task_id!r}" if isinstance(task_id, str) else f"task #{loc[1] + 1}"
        rest = ".".join(str(p) for p in loc[2:])
        return f"{name}, {rest}" if rest else name
    return ".".join(str(p) for p in loc) or "(file)"


def _explain(err: Any) -> str:
    if err["type"] == "extra_forbidden":
        return "unknown field (check the spelling; see README, Writing eval tasks)"
    if err["type"] == "missing":
        return "required field is missing"
    msg = str(err["msg"])
    return msg.removeprefix("Value error, ")


def read_input(path: Path, what: str = "task file") -> bytes:
    """The bytes of a file the eval acts on (the task file, an answers file), read through the
    product's one gate for such files (agent_cli/trusted_input.py): named as given, never
    through a link, a regular file only (a FIFO or a device is refused, never waited on), never
    agent-cli's own state, at most MAX_INPUT_BYTES. A refusal is a usage error (exit 2)."""
    from agent_cli.trusted_input import InputRefused, open_trusted_text

    where = Path(path).expanduser().absolute()
    try:
        return open_trusted_text(where.parent, where.name, max_bytes=MAX_INPUT_BYTES,
                                 what=what).data
    except InputRefused as e:
        raise UsageError(str(e)) from None


def load_tasks(path: Path) -> TaskFile:
    """Read and validate a task file; paths become absolute real paths inside the task file's
    folder. Every problem is one sentence naming the task and field."""
    raw = read_input(path)
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise UsageError(f"Task file {path} is not UTF-8 text.") from None
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"Task file {path} is not valid TOML: {e}.") from None
    try:
        suite = TaskFile.model_validate(data)
    except ValidationError as e:
        lines = [f"Task file {path} has problems:"]
        # pydantic reports each failing member of a union; one line per place is enough.
        seen: set[str] = set()
        for err in e.errors(include_url=False):
            loc = tuple(p for p in err["loc"] if not (isinstance(p, str) and (
                p.startswith(("literal[", "list[", "str")) or p in ("function-after",))))
            where = _where(loc, data)
            if where in seen:
                continue
            seen.add(where)
            lines.append(f"- {where}: {_explain(err)}.")
        raise UsageError("\n".join(lines)) from None
    # The folder the task file was named in (not where a link to it leads).
    base = path.absolute().parent
    for task in suite.tasks:
        if task.workspace is not None:
            task.workspace = _inside_base(base, task, "workspace", task.workspace)
            if not task.workspace.is_dir():
                raise UsageError(f"Task {task.id!r}: workspace {task.workspace} is not a "
                                 "folder (paths are relative to the task file).")
        if task.script is not None:
            task.script = _inside_base(base, task, "script", task.script)
            if not task.script.is_file():
                raise UsageError(f"Task {task.id!r}: script {task.script} is not a file "
                                 "(paths are relative to the task file).")
    return suite


def _inside_base(base: Path, task: Task, field: str, given: Path) -> Path:
    """`given` resolved by the path guard with the task file's folder as its root."""
    from agent_cli.tools.paths import resolve_in_workspace

    try:
        return resolve_in_workspace(base, str(given))
    except PathRefused as e:
        raise UsageError(f"Task {task.id!r}: {field} {str(given)!r} is refused: {e} A task's "
                         f"{field} must be inside the task file's folder ({base}).") from None
