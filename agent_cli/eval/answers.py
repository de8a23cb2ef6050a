"""Who may approve a trial's calls: the rule for `answers`.

A task file is often someone else's (a cloned benchmark), and its `answers` would approve effects
with no one asked. So a task file's own answers are honoured only when the command line says so:
`--approve-task-answers` (use the file's answers), or `--answers FILE` (the user's own file of
answers, by task id). Otherwise every task runs with "none" and one line says the file's answers
were ignored. Whatever the source, a call that asks for the network is never approved without a
person: the answer for it is a denial with the reason.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter, ValidationError

from agent_cli.calls import Call
from agent_cli.errors import UsageError
from agent_cli.eval.tasks import AnswerSpec, Task, TaskFile, read_input

NETWORK_REFUSAL = ("a call that asks for the network is never approved by an eval's answers "
                   "(no person was asked); run it in a chat, where you see its panel")

if TYPE_CHECKING:
    from agent_cli.config import Settings

_ANSWERS = TypeAdapter(AnswerSpec)


def asks_network(call: Call, settings: Settings | None = None) -> bool:
    """Whether the call reaches the network: the sandbox's own test for a call (an argument
    `network` that is exactly true, as run_command's), so the eval and the sandbox cannot
    disagree; or a call to an MCP server that is remote (`url`) or granted `network = true`."""
    from agent_cli.sandbox.policy import wants_network

    if wants_network(call.args):
        return True
    if settings is None or not call.source.startswith("mcp:"):
        return False
    server = settings.mcp.get("servers", {}).get(call.source.removeprefix("mcp:"))
    return server is not None and (server.url is not None or server.network)


@dataclass(frozen=True)
class AnswerSource:
    """Where the answers of a suite come from, as the command line said."""

    approve_task_answers: bool = False
    """`--approve-task-answers`: the task file's own `answers` are used."""
    answers_file: Path | None = None
    """`--answers FILE`: a TOML file of `TASK_ID = "all" | "none" | [answers]` (and `"*"` for
    every task it does not name); it replaces the task file's answers."""


def apply_answers(suite: TaskFile, source: AnswerSource) -> str | None:
    """Give each task of `suite` the answers the command line allows (in place). Returns the one
    line to show when a task file's answers were ignored, else None."""
    if source.answers_file is not None and source.approve_task_answers:
        raise UsageError("Give either --answers FILE or --approve-task-answers, not both.")
    if source.answers_file is not None:
        given = load_answers_file(source.answers_file, suite)
        for task in suite.tasks:
            task.answers = given.get(task.id, given.get("*", "none"))
        return None
    if source.approve_task_answers:
        return None
    ignored = [t.id for t in suite.tasks if _gives_answers(t)]
    for task in suite.tasks:
        task.answers = "none"
    if not ignored:
        return None
    named = ", ".join(ignored[:3]) + (f" and {len(ignored) - 3} more" if len(ignored) > 3 else "")
    return (f"note: the task file's answers ({named}) are ignored and every write call is "
            "denied: a task file may come from someone else. Pass --approve-task-answers to "
            "use them, or --answers FILE to give your own.")


def _gives_answers(task: Task) -> bool:
    return "answers" in task.model_fields_set and task.answers != "none"


def load_answers_file(path: Path, suite: TaskFile) -> dict[str, Any]:
    """The `--answers FILE` table, checked: every key a task id of the suite (or `*`), every
    value an answers form. Problems are sentences naming the key."""
    raw = read_input(path, "answers file")
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as e:
        raise UsageError(f"--answers {path} is not valid TOML: {e}.") from None
    ids = {t.id for t in suite.tasks}
    out: dict[str, Any] = {}
    for key, value in data.items():
        if key != "*" and key not in ids:
            raise UsageError(f"--answers {path}: {key!r} is not a task of this suite (tasks: "
                             f"{', '.join(sorted(ids))}; `*` means every other task).")
        try:
            out[key] = _ANSWERS.validate_python(value)
        except ValidationError:
            raise UsageError(f'--answers {path}: {key!r} must be "all", "none" or a list of '
                             'answers as typed at the prompt (["y", "n use ./tmp"]).') from None
    return out
