"""Run a session log again (`agent-cli replay LOG --rerun`): feed the recorded model replies back
through the real loop, run the tools again (write calls ask again, unless ReuseApprovals finds
the byte-identical call approved in the recording), and report where the results drift.

Unlike showing (replay.py), which streams, a rerun holds the recorded model replies to feed them
back.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_cli import events as ev
from agent_cli.approval import Approver
from agent_cli.calls import Approved, Call, Decision
from agent_cli.errors import LogError
from agent_cli.safe_text import one_line
from agent_cli.session_log import BadLine, read_events
from agent_cli.tools.base import canonical_json

if TYPE_CHECKING:
    from rich.console import Console

    from agent_cli.config import Settings
    from agent_cli.tools.registry import Registry

ApprovalKey = tuple[str, str, str, str]
"""(call id, tool name, args_hash, canonical JSON of the arguments shown)."""


class ReuseApprovals:
    """Approves a call only when the user approved the byte-identical call (same id, tool name,
    canonical arguments and hash) in the recording, once per recorded yes; everything else goes
    to the wrapped approver, which asks as usual."""

    def __init__(self, inner: Approver, approved: Iterable[ApprovalKey]) -> None:
        self.inner = inner
        self._left: Counter[ApprovalKey] = Counter(approved)

    def decide(self, request: Call) -> Decision:
        key = (request.id, request.name, request.args_hash, canonical_json(request.args))
        if self._left[key] > 0:
            self._left[key] -= 1
            return Approved(request.id, request.args_hash, by="recording")
        return self.inner.decide(request)


@dataclass
class RecordedTurn:
    text: str
    replies: list[dict[str, Any]] = field(default_factory=list)
    fresh: bool = False
    """The conversation was empty before this turn (a new session or /clear)."""


@dataclass
class Recording:
    start: ev.SessionStart | None = None
    turns: list[RecordedTurn] = field(default_factory=list)
    results: dict[str, ev.ToolResultEvent] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    approved: list[ApprovalKey] = field(default_factory=list)
    workspaces: set[str] = field(default_factory=set)
    bad: list[str] = field(default_factory=list)


def load_recording(path: Path) -> Recording:
    rec = Recording()
    fresh = True
    for lineno, item in read_events(path):
        if isinstance(item, BadLine):
            rec.bad.append(f"line {lineno}: {item.reason}")
            continue
        match item:
            case ev.SessionStart():
                rec.start = rec.start or item
                rec.workspaces.add(item.workspace)
                if not item.continues:
                    fresh = True
            case ev.Notice() if item.kind == "clear":
                fresh = True
            case ev.UserMessage():
                rec.turns.append(RecordedTurn(item.text, fresh=fresh))
                fresh = False
            case ev.ModelReply() if rec.turns:
                rec.turns[-1].replies.append({"content": item.content,
                                              "stop_reason": item.stop_reason,
                                              "usage": item.usage, "model": item.model})
            case ev.ToolResultEvent():
                if item.id not in rec.results:
                    rec.order.append(item.id)
                rec.results[item.id] = item
            case ev.Approval() if item.decision == "approved" and item.by == "user":
                rec.approved.append((item.id, item.name, item.args_hash,
                                     canonical_json(item.args if item.args is not None else {})))
            case _:
                pass
    return rec


def load_trusted_recording(path: Path) -> Recording:
    """The recording, for reusing its approvals: only from a log that `log_trust.check_trust`
    trusts (every record signed with this user's key, a clean chain, no warning), and read from
    the very snapshot that was checked. Anything else is refused with the reason."""
    from agent_cli.log_trust import check_trust, trusted_copy

    with trusted_copy(path) as copy:
        trust = check_trust(copy)
        if not trust.trusted:
            raise LogError(f"--reuse-approvals refused for {path}: {trust.reason} Nothing was "
                           "run. Rerun without --reuse-approvals to be asked about every call "
                           "again.")
        return load_recording(copy)


_DURATION = re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s|sec|secs|seconds)\b")


def normalise(text: str, workspaces: Iterable[str]) -> str:
    """What must match between a recording and a rerun: workspace paths and durations vary."""
    for ws in sorted((w for w in workspaces if w), key=len, reverse=True):
        text = text.replace(ws, "<workspace>")
    text = _DURATION.sub("<duration>", text)
    return "\n".join(line.rstrip() for line in text.strip().splitlines())


@dataclass
class Drift:
    call_id: str
    tool: str
    what: str
    recorded: str
    now: str


@dataclass
class ToolDrift:
    tool: str
    what: str


@dataclass
class RerunReport:
    drift: list[Drift] = field(default_factory=list)
    tools: list[ToolDrift] = field(default_factory=list)
    calls: int = 0
    log_path: Path | None = None
    warnings: list[str] = field(default_factory=list)


def tool_drift(start: ev.SessionStart | None, registry: Registry) -> list[ToolDrift]:
    if start is None:
        return []
    now = {t.name: t for t in registry}
    out: list[ToolDrift] = []
    for info in start.tools:
        tool = now.get(info.name)
        if tool is None:
            out.append(ToolDrift(info.name, "missing now"))
        elif tool.schema_hash() != info.schema_hash:
            out.append(ToolDrift(info.name, f"schema changed ({info.schema_hash} -> "
                                            f"{tool.schema_hash()})"))
    recorded = {t.name for t in start.tools}
    out += [ToolDrift(name, "new since the recording") for name in sorted(now)
            if name not in recorded]
    return out


def _first_difference(a: str, b: str) -> tuple[str, str]:
    la, lb = a.splitlines() or [""], b.splitlines() or [""]
    for i in range(max(len(la), len(lb))):
        x = la[i] if i < len(la) else "(no line)"
        y = lb[i] if i < len(lb) else "(no line)"
        if x != y:
            return x, y
    return a, b


def compare(rec: Recording, now: dict[str, ev.ToolResultEvent], redact: Callable[[str], str],
            workspaces: Iterable[str]) -> list[Drift]:
    spaces = list(workspaces)
    out: list[Drift] = []
    for call_id in rec.order:
        old = rec.results[call_id]
        new = now.get(call_id)
        if new is None:
            out.append(Drift(call_id, old.name, "not run in the rerun",
                             normalise(old.content, spaces), ""))
            continue
        a = normalise(old.content, spaces)
        b = normalise(redact(new.content), spaces)
        if a != b or old.is_error != new.is_error:
            what = "result differs" if old.is_error == new.is_error else (
                "now fails" if new.is_error else "now succeeds")
            x, y = _first_difference(a, b)
            out.append(Drift(call_id, old.name, what, x, y))
    for call_id, new in now.items():
        if call_id not in rec.results:
            out.append(Drift(call_id, new.name, "new in the rerun", "",
                             normalise(redact(new.content), spaces)))
    return out


def rerun(path: Path, *, settings: Settings, workspace: Path, registry: Registry,
          approver: Approver, console: Console, reuse_approvals: bool = False,
          log_path: Path | None = None, load_errors: Iterable[str] = ()) -> RerunReport:
    """Feed the recorded model replies back through the real loop in `workspace`; tools run
    again, write calls ask again. Returns what differs from the recording."""
    from rich.text import Text

    from agent_cli.providers.scripted import ScriptedProvider
    from agent_cli.session import Session, make_redactor
    from agent_cli.tools.loader import LoadReport
    from agent_cli.ui.render import Renderer
    from agent_cli.ui.safe_rich import safe

    rec = load_trusted_recording(path) if reuse_approvals else load_recording(path)
    if rec.start is None and not rec.turns:
        raise LogError(f"{path} holds no session to rerun.")
    report = RerunReport(tools=tool_drift(rec.start, registry), warnings=list(rec.bad))
    gate_approver: Approver = ReuseApprovals(approver, rec.approved) if reuse_approvals \
        else approver
    now: dict[str, ev.ToolResultEvent] = {}

    def collect(event: ev.AnyEvent) -> None:
        if isinstance(event, ev.ToolResultEvent):
            now[event.id] = event

    model = rec.start.model if rec.start is not None else "scripted"
    session = Session(settings, workspace=workspace,
                      provider=ScriptedProvider([], model=model, source=str(path)),
                      registry=registry, approver=gate_approver,
                      sinks=[Renderer(console), collect], log_path=log_path,
                      load_report=LoadReport(errors=list(load_errors)))
    report.log_path = session.log_path
    session.start()
    session.emit(ev.Notice(message=f"rerun of {path}", kind="rerun"))
    try:
        for i, turn in enumerate(rec.turns, start=1):
            if turn.fresh:
                session.history.clear()
            session.loop.provider = ScriptedProvider(turn.replies, model=model,
                                                     source=f"{path} (turn {i})")
            session.loop.limits.max_turns = max(1, len(turn.replies))
            console.print(Text("› ", style="bold") + safe(turn.text))
            session.send(turn.text)
    except KeyboardInterrupt:
        session.close("interrupted")
        raise
    session.close("rerun")
    redactor = make_redactor(settings)
    report.drift = compare(rec, now, redactor.text, [*rec.workspaces, str(session.workspace)])
    report.calls = len(now)
    return report


def print_rerun_report(report: RerunReport, console: Console) -> None:
    from rich.table import Table
    from rich.text import Text

    from agent_cli.ui.safe_rich import safe

    if report.tools:
        table = Table(title="Tools changed since the recording", title_justify="left")
        table.add_column("tool")
        table.add_column("change", overflow="fold")
        for t in report.tools:
            table.add_row(safe(t.tool), safe(t.what))
        console.print(table)
    for w in report.warnings:
        console.print(safe(f"warning: {w}", "yellow"))
    if not report.drift:
        console.print(Text(f"No drift: all {report.calls:d} call results match the recording.",
                           style="green"))
    else:
        table = Table(title=f"Drift: {len(report.drift):d} call(s) differ from the recording",
                      title_justify="left")
        table.add_column("call", overflow="fold")
        table.add_column("tool")
        table.add_column("what")
        table.add_column("recorded", overflow="fold")
        table.add_column("now", overflow="fold")
        for d in report.drift:
            table.add_row(safe(d.call_id), safe(d.tool), safe(d.what),
                          safe(one_line(d.recorded, 160)), safe(one_line(d.now, 160)))
        console.print(table)
    if report.log_path is not None:
        console.print(safe(f"Rerun log: {report.log_path}", "dim"))
