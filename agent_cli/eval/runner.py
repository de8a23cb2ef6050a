"""One trial: a fresh copy of the task's workspace, the real Session built the way `chat` and
`run` build theirs (Session.create), answers from the task instead of a person, its own session
log; then the checks. A suite runs its trials serially or in a bounded pool of processes; the
results are put back in (task, trial) order, so both give the same report.

Each trial is a separate session in a separate folder: nothing one trial does can change what
another sees. Parallel trials run in worker processes started isolated (eval/workers.py): a
fresh `python -I` in a neutral folder, never a fork of this process, and never with the current
folder (a cloned benchmark's) on sys.path.
"""

from __future__ import annotations

import fnmatch
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_cli.approval import parse_answer
from agent_cli.calls import Approved, Call, Decision, Denied
from agent_cli.eval.checks import TrialRecord, judge
from agent_cli.eval.tasks import Task
from agent_cli.tools.registry import Registry
from agent_cli.tools.scope import Scope, ScopedRegistry

if TYPE_CHECKING:
    from agent_cli.config import Settings
    from agent_cli.events import AnyEvent
    from agent_cli.loop import TurnResult
    from agent_cli.session import Session


@dataclass(frozen=True)
class TrialSpec:
    """Everything a worker process needs for one trial (picklable)."""

    task: Task
    trial: int
    """1-based."""
    settings: Settings
    """The suite's settings (config files, env and command-line flags already applied)."""
    tools_dirs: list[Path]
    """--tools-dir folders, on top of the settings' tools_dirs."""
    log: Path


@dataclass
class TrialResult:
    task_id: str
    trial: int
    passed: bool
    failed_checks: list[str]
    log: str
    requests: int = 0
    usage: dict[str, int] = field(default_factory=dict)
    cost_usd: float | None = None
    seconds: float = 0.0


class EvalApprover:
    """The task's `answers` (as the command line allowed them: eval/answers.py) stand in for the
    person at the prompt, except for a call that asks for the network, which no answer approves.
    Its decisions are recorded with by="policy"; TaskTagger adds the task id and the answer to
    each one it made."""

    def __init__(self, task: Task, settings: Settings | None = None) -> None:
        self.task = task
        self.settings = settings
        """The trial's settings: which MCP servers reach the network."""
        self.queue = list(task.answers) if isinstance(task.answers, list) else None
        self.made: dict[str, str] = {}
        """call id -> the reason recorded with the decision."""

    def decide(self, request: Call) -> Decision:
        from agent_cli.eval.answers import NETWORK_REFUSAL, asks_network

        where = f"eval task {self.task.id}"
        if asks_network(request, self.settings):
            reason = f"{where}: {NETWORK_REFUSAL}"
            self.made[request.id] = reason
            return Denied(request.id, reason, by="policy")
        if self.queue is None:
            ok = self.task.answers == "all"
            reason = f"{where}: answers = \"{self.task.answers}\""
            self.made[request.id] = reason
            if ok:
                return Approved(request.id, request.args_hash, by="policy")
            return Denied(request.id, reason, by="policy")
        if not self.queue:
            reason = f"{where}: no answer left in the task's list, so the call is denied"
            self.made[request.id] = reason
            return Denied(request.id, reason, by="policy")
        typed = self.queue.pop(0)
        ok, why = parse_answer(typed)
        reason = f"{where}: answered {typed!r}" + (f" ({why})" if why else "")
        self.made[request.id] = reason
        if ok:
            return Approved(request.id, request.args_hash, by="policy")
        return Denied(request.id, reason, by="policy")


class TaskTagger:
    """A sink placed before the session log: every decision the EvalApprover made is recorded
    with the task id and the answer that decided it (extra fields `task` and `reason`)."""

    def __init__(self, approver: EvalApprover) -> None:
        self.approver = approver

    def __call__(self, event: AnyEvent) -> None:
        from agent_cli import events as ev

        if isinstance(event, ev.Approval) and event.id in self.approver.made:
            event.reason = self.approver.made[event.id]
            event.task = self.approver.task.id  # type: ignore[attr-defined]  # extra field


def scope_for(task: Task) -> Scope | None:
    """The task's `tools` globs and `read_only`, as the one scope mechanism every session uses
    (agent_cli/tools/scope.py); None when the task does not narrow the tools."""
    if task.tools is None and not task.read_only:
        return None
    return Scope.of(task.tools, read_only=task.read_only, origin=f"eval task {task.id}")


def _unmatched_tools(task: Task, registry: Registry) -> list[str]:
    tools = registry.all_tools() if isinstance(registry, ScopedRegistry) else list(registry)
    names = [t.name for t in tools]
    return [g for g in task.tools or [] if not any(fnmatch.fnmatchcase(n, g) for n in names)]


def trial_settings(spec: TrialSpec) -> Settings:
    """The settings of one trial: the suite's, with this task's script, model and request
    bound on top (as command-line flags would be)."""
    task = spec.task
    changes: dict[str, Any] = {}
    if task.script is not None:
        changes.update(script=str(task.script), provider="scripted")
    if task.model is not None:
        changes["model"] = task.model
    if task.max_requests is not None:
        # One request past the bound, so a model that never stops is seen to exceed it.
        changes["max_turns"] = task.max_requests + 1
    return spec.settings.model_copy(update=changes)


def run_trial(spec: TrialSpec) -> TrialResult:
    """Run one trial to the end and judge it. Errors a user can meet (a bad script, a missing
    key) fail the trial with their sentence; they do not stop the suite."""
    from agent_cli.errors import AgentError

    start = time.monotonic()
    task = spec.task
    record = TrialRecord()
    failed: list[str]
    with tempfile.TemporaryDirectory(prefix=f"agent-cli-eval-{task.id}-") as tmp:
        workspace = Path(tmp) / "workspace"
        if task.workspace is not None:
            shutil.copytree(task.workspace, workspace, symlinks=True)
        else:
            workspace.mkdir()
        try:
            failed = _drive(spec, workspace, record)
        except AgentError as e:
            failed = [f"setup: {e}"]
        except Exception as e:  # a bug in one trial must not take the suite down
            failed = [f"error: {type(e).__name__}: {e}"]
    return TrialResult(task.id, spec.trial, not failed, failed, str(spec.log),
                       record.requests, record.usage, record.cost_usd,
                       round(time.monotonic() - start, 3))


def _drive(spec: TrialSpec, workspace: Path, record: TrialRecord) -> list[str]:
    from agent_cli.session import Session

    task = spec.task
    approver = EvalApprover(task, spec.settings)
    spec.log.parent.mkdir(parents=True, exist_ok=True)
    session = Session.create(trial_settings(spec), workspace=workspace.resolve(),
                             approver=approver, sinks=[record], tools_dirs=spec.tools_dirs,
                             # before the log: the tags are recorded
                             taggers=[TaskTagger(approver)],
                             log_path=spec.log, scope=scope_for(task))
    session.start()
    unmatched = _unmatched_tools(task, session.registry)
    if unmatched:
        session.close("eval setup failed")
        listed = ", ".join(repr(g) for g in unmatched)
        return [f"tools: no loaded tool matches {listed}; `agent-cli tools` lists them"]
    try:
        for prompt in task.prompts:
            result, ctrl_c = _send(session, prompt)
            record.answer = result.text
            if ctrl_c or result.reason == "interrupted":
                # The loop answers Ctrl-C by ending the turn; for a suite it means stop, also
                # when the turn had just ended another way as the key came (the cancel then
                # found nothing to stop, and the suite would have gone on).
                session.close("interrupted")
                raise KeyboardInterrupt
            if result.reason not in ("end_turn", "stop_sequence"):
                break
    finally:
        session.close()
    record.usage = session.usage.total()
    record.cost_usd = session.usage.cost()
    return judge(task, record, workspace)


def _send(session: Session, text: str) -> tuple[TurnResult, bool]:
    """One prompt of a trial, as a front end runs it: the turn on its own thread, and Ctrl-C
    (a KeyboardInterrupt here, the main thread) turned into a cancel, so the engine answers the
    pending calls and records the interrupt itself. Also says whether Ctrl-C was pressed: the
    turn may have ended on its own in the same moment, and the suite must stop all the same."""
    handle = session.prompt(text)
    ctrl_c = False
    while True:
        try:
            result = handle.wait()
        except KeyboardInterrupt:
            ctrl_c = True
            session.cancel("user")
            continue
        assert result is not None
        return result, ctrl_c


def run_suite(specs: list[TrialSpec], jobs: int = 1,
              on_done: Callable[[TrialResult], None] | None = None) -> list[TrialResult]:
    """All trials, at most `jobs` at a time (each in an isolated worker process:
    eval/workers.py); results in the order of `specs` whatever order they finished in."""
    results: dict[int, TrialResult] = {}

    def finished(i: int, result: TrialResult) -> None:
        results[i] = result
        if on_done is not None:
            on_done(result)

    if jobs <= 1 or len(specs) <= 1:
        for i, spec in enumerate(specs):
            finished(i, run_trial(spec))
    else:
        from agent_cli.eval.workers import run_parallel

        run_parallel(specs, jobs, finished)
    return [results[i] for i in range(len(specs))]


def plan(tasks: list[Task], settings: Settings, tools_dirs: list[Path], trials: int,
         log_dir: Path) -> list[TrialSpec]:
    """Task by task, trial by trial; each trial's log is named `<task id>-<trial>.jsonl`. A
    folder that already holds one of them is refused: a trial's log must be its own alone."""
    from agent_cli.errors import UsageError

    # Absolute: a worker runs in a neutral current folder, not this one.
    folders = [Path(d).expanduser().absolute() for d in tools_dirs]
    specs = [TrialSpec(task, n, settings, folders, log_dir / f"{task.id}-{n}.jsonl")
             for task in tasks for n in range(1, trials + 1)]
    taken = [s.log.name for s in specs if s.log.exists()]
    if taken:
        raise UsageError(f"{log_dir} already holds trial logs ({taken[0]} and "
                         f"{len(taken) - 1} more); give a new --log-dir DIR.")
    return specs
