"""Run a session log again (`agent-cli replay LOG --rerun`): feed the recorded model replies back
through the real loop, run the tools again (write calls ask again, unless ReuseApprovals finds
the byte-identical call approved in the recording), and report where the results drift.

Unlike showing (show.py), which streams, a rerun holds the recorded model replies to feed them
back. No Rich here: the caller passes the sinks that draw the events, and
ui/views/rerun_report.py draws the report.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from agent_cli import events as ev
from agent_cli.calls import Approved, Call, Decision
from agent_cli.errors import AgentError, LogError
from agent_cli.log.reader import BadLine, read_events
from agent_cli.tools.base import canonical_json

if TYPE_CHECKING:
    from agent_cli.config import Settings
    from agent_cli.loop import TurnResult
    from agent_cli.providers.base import ModelRequest, ModelResponse, StatusSink, TextSink
    from agent_cli.session import Session, Sink
    from agent_cli.tools.registry import Registry
    from agent_cli.turn import Answerer

class RerunInterrupted(AgentError):
    """The person cancelled a turn of the rerun: the rest is not sent (exit 130)."""

    exit_code = 130


ApprovalKey = tuple[str, str, str, str]
"""(call id, tool name, args_hash, canonical JSON of the arguments shown)."""


class ReuseApprovals:
    """Approves a call only when the user approved the byte-identical call (same id, tool name,
    canonical arguments and hash) in the recording, once per recorded yes; everything else goes
    to `inner` when given, else to whoever the session asks (None: not answered here)."""

    def __init__(self, inner: Answerer | None, approved: Iterable[ApprovalKey]) -> None:
        self.inner = inner
        self._left: Counter[ApprovalKey] = Counter(approved)

    def decide(self, request: Call) -> Decision | None:
        key = (request.id, request.name, request.args_hash, canonical_json(request.args))
        if self._left[key] > 0:
            self._left[key] -= 1
            return Approved(request.id, request.args_hash, by="recording")
        return self.inner.decide(request) if self.inner is not None else None


class FrontEnd(Protocol):
    """What runs the rerun's turns for a person (ui/turns.TerminalTurns): its sink joins the
    session's, and each recorded message is sent through it."""

    @property
    def outbox(self) -> Sink: ...

    def attach(self, session: Session) -> None: ...

    def run(self, text: str) -> TurnResult: ...


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
    from agent_cli.log.trust import check_trust, trusted_copy

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
    requests: int = 0
    """Model requests the rerun answered from the recording."""
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


class RecordedReplies:
    """The provider a rerun is built with: the recorded model replies, one turn at a time.

    The session holds this one provider from construction to the end (its `provider` and its
    loop's are the same object); `begin(i)` moves it to turn i's replies, so a turn that makes
    fewer requests than the recording did never hands its leftovers to the next turn."""

    name = "scripted"

    def __init__(self, turns: list[RecordedTurn], *, model: str, source: str) -> None:
        from agent_cli.providers.scripted import ScriptedProvider

        self.model = model
        self._turns = turns
        self._source = source
        self._current = ScriptedProvider([], model=model, source=source)
        self.requests = 0
        """Model requests answered from the recording, over all turns."""

    def begin(self, index: int) -> None:
        from agent_cli.providers.scripted import ScriptedProvider

        turn = self._turns[index]
        self._current = ScriptedProvider(turn.replies, model=self.model,
                                         source=f"{self._source} (turn {index + 1})")

    def complete(self, request: ModelRequest, on_text: TextSink,
                 on_status: StatusSink) -> ModelResponse:
        self.requests += 1
        return self._current.complete(request, on_text, on_status)


def rerun(path: Path, *, settings: Settings, workspace: Path, registry: Registry,
          approver: Answerer | None = None, sinks: Iterable[Sink] = (),
          front: FrontEnd | None = None,
          on_turn: Callable[[str], None] | None = None, reuse_approvals: bool = False,
          log_path: Path | None = None, load_errors: Iterable[str] = ()) -> RerunReport:
    """Feed the recorded model replies back through the real loop in `workspace`; tools run
    again, write calls ask again: `approver` answers on the spot, else `front` (which also runs
    each turn and owns the terminal's interrupts). `sinks` see every event; `on_turn` is told
    each recorded user message as it is sent again. Returns what differs from the recording
    (ui/views/rerun_report.py draws it)."""
    from agent_cli.session import Session, make_redactor
    from agent_cli.tools.loader import LoadReport

    rec = load_trusted_recording(path) if reuse_approvals else load_recording(path)
    if rec.start is None and not rec.turns:
        raise LogError(f"{path} holds no session to rerun.")
    report = RerunReport(tools=tool_drift(rec.start, registry), warnings=list(rec.bad))
    gate_approver = ReuseApprovals(approver, rec.approved) if reuse_approvals else approver
    now: dict[str, ev.ToolResultEvent] = {}

    def collect(event: ev.AnyEvent) -> None:
        if isinstance(event, ev.ToolResultEvent):
            now[event.id] = event

    model = rec.start.model if rec.start is not None else "scripted"
    provider = RecordedReplies(rec.turns, model=model, source=str(path))
    session = Session(settings, workspace=workspace, provider=provider,
                      registry=registry, approver=gate_approver,
                      sinks=[*sinks, collect, *([front.outbox] if front is not None else [])],
                      log_path=log_path, load_report=LoadReport(errors=list(load_errors)))
    if front is not None:
        front.attach(session)
    report.log_path = session.log_path
    session.start()
    session.emit(ev.Notice(message=f"rerun of {path}", kind="rerun"))
    for i, turn in enumerate(rec.turns):
        if turn.fresh:
            session.history.clear()
        provider.begin(i)
        session.loop.limits.max_turns = max(1, len(turn.replies))
        if on_turn is not None:
            on_turn(turn.text)
        result = front.run(turn.text) if front is not None else session.send(turn.text)
        if result.reason == "interrupted":
            session.close("interrupted")
            raise RerunInterrupted(f"The rerun of {path} was interrupted at turn {i + 1} of "
                                   f"{len(rec.turns)}; the new log is {session.log_path}.")
    session.close("rerun")
    redactor = make_redactor(settings)
    report.drift = compare(rec, now, redactor.text, [*rec.workspaces, str(session.workspace)])
    report.calls = len(now)
    report.requests = provider.requests
    return report
