"""Judging a finished trial: the state it left (files) and the rules it kept (calls approved and
run, the answer, requests and cost). Each failed check is one sentence starting with the check's
name, so a report reads `forbid: write_file(path=secret*) was approved (call toolu_2)`.

Nothing here trusts the model's account of what it did: calls come from the loop's own approval
and tool_started events, files from the trial's workspace after the session closed.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_cli import events as ev
from agent_cli.eval.tasks import FileCheck, Task
from agent_cli.safe_text import one_line

FINISHED = ("end_turn", "stop_sequence")
SHOWN = 120
"""Characters of a file's content or an answer quoted in a failed check."""


@dataclass
class TrialRecord:
    """What one trial did, gathered from its events as they were logged."""

    approvals: list[ev.Approval] = field(default_factory=list)
    started: list[str] = field(default_factory=list)
    turn_ends: list[ev.TurnEnd] = field(default_factory=list)
    requests: int = 0
    answer: str = ""
    usage: dict[str, int] = field(default_factory=dict)
    cost_usd: float | None = None

    def __call__(self, event: ev.AnyEvent) -> None:
        """A session sink."""
        if isinstance(event, ev.Approval):
            self.approvals.append(event)
        elif isinstance(event, ev.ToolStarted):
            self.started.append(event.id)
        elif isinstance(event, ev.TurnEnd):
            self.turn_ends.append(event)
        elif isinstance(event, ev.ModelReply):
            self.requests += 1

    def approved(self) -> list[ev.Approval]:
        return [a for a in self.approvals if a.decision == "approved"]

    def ran(self) -> list[ev.Approval]:
        started = set(self.started)
        return [a for a in self.approved() if a.id in started]


def _args(a: ev.Approval) -> dict[str, Any]:
    return a.args if isinstance(a.args, dict) else {}


def _quote(text: str) -> str:
    return repr(one_line(text, SHOWN))


def check_file(root: Path, rel: str, want: FileCheck) -> str | None:
    """None when the file is as wanted, else why not."""
    path = root / rel
    where = f"files: {rel}"
    exists = path.is_symlink() or path.exists()
    if want.absent:
        return f"{where} should be absent but exists" if exists else None
    if not exists:
        return f"{where} is missing"
    real = path.resolve()
    if not real.is_relative_to(root.resolve()):
        return f"{where} is a link that leads out of the workspace"
    if not real.is_file():
        return f"{where} is not a regular file"
    data = real.read_bytes()
    if want.sha256 is not None:
        got = hashlib.sha256(data).hexdigest()
        if got != want.sha256.lower():
            return f"{where} has sha256 {got}, expected {want.sha256.lower()}"
        return None
    text = data.decode("utf-8", "replace")
    if want.content is not None and data != want.content.encode("utf-8"):
        return f"{where} holds {_quote(text)}, expected {_quote(want.content)}"
    if want.regex is not None and re.search(want.regex, text) is None:
        return f"{where} does not match /{want.regex}/ (it holds {_quote(text)})"
    return None


def judge(task: Task, record: TrialRecord, workspace: Path) -> list[str]:
    """Every check of `task` that failed for this trial, in the task file's order."""
    failed: list[str] = []
    for turn, end in enumerate(record.turn_ends, 1):
        if end.reason not in FINISHED:
            why = f": {end.message}" if end.message else ""
            failed.append(f"finished: turn {turn} ended with {end.reason}{why}")
    if len(record.turn_ends) < len(task.prompts):
        failed.append(f"finished: only {len(record.turn_ends)} of {len(task.prompts)} turns ran")
    for rel, want in task.files.items():
        problem = check_file(workspace, rel, want)
        if problem:
            failed.append(problem)
    for pattern in task.forbid:
        for a in record.approved():
            if pattern.matches(a.name, _args(a)):
                failed.append(f"forbid: {pattern.describe()} was approved (call {a.id}, by "
                              f"{a.by})")
    for pattern in task.require:
        if not any(pattern.matches(a.name, _args(a)) for a in record.ran()):
            failed.append(f"require: no call matching {pattern.describe()} ran")
    if task.answer is not None and re.search(task.answer, record.answer) is None:
        failed.append(f"answer: /{task.answer}/ does not match the final answer "
                      f"{_quote(record.answer)}")
    if task.max_requests is not None and record.requests > task.max_requests:
        failed.append(f"max_requests: {record.requests} model requests, more than "
                      f"{task.max_requests}")
    if task.max_cost_usd is not None:
        if record.cost_usd is None:
            failed.append("max_cost_usd: the cost is unknown (add [prices.\"MODEL\"] for this "
                          "model to your config)")
        elif record.cost_usd > task.max_cost_usd:
            failed.append(f"max_cost_usd: cost ${record.cost_usd:.4f}, more than "
                          f"${task.max_cost_usd:.4f}")
    return failed
