"""Show, rerun and resume a session from its log.

Everything here streams the log (one line at a time through session_log's reader) except a rerun,
which must hold the recorded model replies to feed them back. Showing never executes a tool and
never calls a model: it turns recorded events back into what the terminal showed, through the
same renderer, panel and sanitiser as a live session.
"""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, assert_never

from agent_cli import events as ev
from agent_cli.approval import ApprovalRequest, Approved, Approver, Decision
from agent_cli.errors import LogError, UsageError
from agent_cli.loop import add_user_text
from agent_cli.safe_text import one_line, sanitize
from agent_cli.session_log import BadLine, read_events, read_records, to_event, verify
from agent_cli.tools.base import canonical_json

if TYPE_CHECKING:
    from rich.console import Console

    from agent_cli.config import Settings
    from agent_cli.tools.registry import Registry

INTERRUPTED = "interrupted; outcome unknown"
"""The result a resumed conversation gives a call that was running when the session died."""

TOOL_EVENTS = (ev.ToolProposed, ev.ToolInvalid, ev.Approval, ev.ToolStarted, ev.ToolResultEvent)
FRAME_EVENTS = (ev.SessionStart, ev.SessionEnd)


def sessions_dir(settings: Settings) -> Path:
    from agent_cli.config import home

    return Path(settings.log_dir).expanduser() if settings.log_dir else home() / "sessions"


def _use_id(use: dict[str, Any], index: int) -> str:
    value = use.get("id")
    return value if isinstance(value, str) and value else f"toolu_missing_{index}"


# -- resume ------------------------------------------------------------------------------------

@dataclass
class Rebuilt:
    history: list[dict[str, Any]] = field(default_factory=list)
    interrupted: list[str] = field(default_factory=list)
    """Calls that had no result (the process died mid-call); answered INTERRUPTED, never re-run."""
    warnings: list[str] = field(default_factory=list)


def rebuild(path: Path, _chain: frozenset[Path] = frozenset()) -> Rebuilt:
    """The Messages-API conversation as the model last saw it, following `continues` back to the
    first log. Every tool_use gets exactly one tool_result, in order."""
    real = path.resolve()
    if real in _chain:
        raise LogError(f"{path} is part of a loop of logs that continue each other; resume "
                       "from another log.")
    out = Rebuilt()
    pending: list[dict[str, Any]] | None = None
    results: dict[str, dict[str, Any]] = {}

    def flush() -> None:
        nonlocal pending
        if pending is None:
            return
        blocks: list[dict[str, Any]] = []
        for i, use in enumerate(pending):
            call_id = _use_id(use, i)
            block = results.pop(call_id, None)
            if block is None:
                block = {"type": "tool_result", "tool_use_id": call_id, "content": INTERRUPTED,
                         "is_error": True}
                out.interrupted.append(call_id)
            blocks.append(block)
        out.history.append({"role": "user", "content": blocks})
        pending = None
        results.clear()

    for lineno, item in read_events(path):
        if isinstance(item, BadLine):
            out.warnings.append(f"{path.name} line {lineno}: {item.reason}")
            continue
        if isinstance(item, ev.SessionStart):
            flush()
            if item.continues and Path(item.continues).expanduser().resolve() != real:
                try:
                    older = rebuild(Path(item.continues).expanduser(), _chain | {real})
                except LogError as e:
                    out.warnings.append(f"the conversation before line {lineno} is missing: {e}")
                    out.history = []
                else:  # (its interrupted calls were reported when it was resumed)
                    out.history = older.history
                    out.warnings += older.warnings
            elif not item.continues:
                out.history = []
        elif isinstance(item, ev.UserMessage):
            flush()
            add_user_text(out.history, item.text)
        elif isinstance(item, ev.ModelReply):
            flush()
            out.history.append({"role": "assistant", "content": item.content})
            uses = [b for b in item.content if b.get("type") == "tool_use"]
            pending = uses or None
        elif isinstance(item, ev.ToolResultEvent) and pending is not None:
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": item.id,
                                     "content": item.content}
            if item.is_error:
                block["is_error"] = True
            results[item.id] = block
        elif isinstance(item, ev.Notice) and item.kind == "clear":
            flush()
            out.history = []
    flush()
    return out


def history_from_log(path: Path) -> list[dict[str, Any]]:
    return rebuild(path).history


def resume_notes(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """The history and the sentences to show (and log) when resuming from `path`."""
    rebuilt = rebuild(path)
    notes = [f"Resumed from {path}: {len(rebuilt.history)} messages."]
    notes += [f"Call {i} was running when that session stopped: its outcome is unknown; it is "
              "not run again (the model is told so)." for i in rebuilt.interrupted]
    notes += [f"Skipped while reading the log: {w}" for w in rebuilt.warnings[:5]]
    return rebuilt.history, notes


def _first_start(path: Path) -> ev.SessionStart | None:
    for lineno, rec in read_records(path):
        if isinstance(rec, BadLine):
            continue
        item = to_event(lineno, rec)
        return item if isinstance(item, ev.SessionStart) else None
    return None


def latest_log_for(settings: Settings, workspace: Path) -> Path:
    """The most recently written log in the sessions folder whose session_start names this
    workspace."""
    folder = sessions_dir(settings)
    want = workspace.resolve()
    logs = sorted(folder.glob("*.jsonl"), key=lambda p: p.stat().st_mtime, reverse=True) \
        if folder.is_dir() else []
    for path in logs:
        try:
            start = _first_start(path)
        except LogError:
            continue
        if start is not None and Path(start.workspace).resolve() == want:
            return path
    raise LogError(f"No saved session for workspace {want} in {folder}; start one with "
                   "`agent-cli chat`, or name a log with --resume LOG.")


# -- log list ----------------------------------------------------------------------------------

@dataclass
class Summary:
    path: Path
    started: float = 0.0
    workspace: str = ""
    first_prompt: str = ""
    calls: int = 0
    approved: int = 0
    """Write calls approved by the user (read-only calls run without a decision)."""
    denied: int = 0
    bad_lines: int = 0


def summarize(path: Path) -> Summary:
    s = Summary(path)
    for lineno, rec in read_records(path):
        if isinstance(rec, BadLine):
            s.bad_lines += 1
            continue
        kind = rec.get("type")
        if kind == "session_start" and not s.workspace:
            item = to_event(lineno, rec)
            if isinstance(item, ev.SessionStart):
                s.started, s.workspace = item.ts, item.workspace
        elif kind == "user_message" and not s.first_prompt:
            s.first_prompt = str(rec.get("text", ""))
        elif kind == "tool_proposed":
            s.calls += 1
        elif kind == "approval":
            if rec.get("decision") == "denied":
                s.denied += 1
            elif rec.get("by") in ("user", "recording"):
                s.approved += 1
    return s


def list_sessions(settings: Settings, workspace: Path | None = None,
                  limit: int = 20) -> list[Summary]:
    folder = sessions_dir(settings)
    if not folder.is_dir():
        return []
    logs = sorted(folder.glob("*.jsonl"), key=lambda p: p.stat().st_mtime, reverse=True)
    out: list[Summary] = []
    for path in logs:
        try:
            s = summarize(path)
        except LogError:
            continue
        if workspace is not None and (not s.workspace
                                      or Path(s.workspace).resolve() != workspace.resolve()):
            continue
        out.append(s)
    out.sort(key=lambda s: s.started, reverse=True)
    return out[:limit]


# -- show --------------------------------------------------------------------------------------

def parse_turns(spec: str | None) -> tuple[int, int | None] | None:
    """`3`, `2-4`, `2-` (to the end) or `-4` (from the first)."""
    if spec is None:
        return None
    m = re.fullmatch(r"\s*(\d*)\s*(-?)\s*(\d*)\s*", spec)
    if m is None or not (m.group(1) or m.group(3)) or (not m.group(2) and not m.group(1)):
        raise UsageError(f"--turns takes N, N-M, N- or -M (for example 2-4), not {spec!r}.")
    lo = int(m.group(1)) if m.group(1) else 1
    hi = (int(m.group(3)) if m.group(3) else None) if m.group(2) else lo
    if lo < 1 or (hi is not None and hi < lo):
        raise UsageError(f"--turns {spec}: turns count from 1 and the range must not be empty.")
    return lo, hi


View = Callable[[ev.Event, dict[str, Any]], None]


@dataclass
class ShowStats:
    events: int = 0
    shown: int = 0
    turns: int = 0
    bad: list[str] = field(default_factory=list)


def show(path: Path, view: View, *, turns: tuple[int, int | None] | None = None,
         tools_only: bool = False, on_bad: Callable[[str], None] | None = None) -> ShowStats:
    """Stream the log into `view`, keeping the chosen turns (session_start and session_end are
    always kept, for context). Turn N starts at the Nth user message."""
    stats = ShowStats()
    turn = 0
    for lineno, rec in read_records(path):
        item = rec if isinstance(rec, BadLine) else to_event(lineno, rec)
        if isinstance(item, BadLine):
            msg = f"line {lineno}: {item.reason}"
            stats.bad.append(msg)
            if on_bad is not None:
                on_bad(msg)
            continue
        assert not isinstance(rec, BadLine)
        stats.events += 1
        if isinstance(item, ev.UserMessage):
            turn += 1
            stats.turns = turn
        if not isinstance(item, FRAME_EVENTS):
            if turns is not None and not (turns[0] <= turn and (turns[1] is None
                                                                or turn <= turns[1])):
                continue
            if tools_only and not isinstance(item, TOOL_EVENTS):
                continue
        stats.shown += 1
        view(item, rec)
    return stats


class JsonlView:
    """The recorded records, one per line, exactly as the writer serialises them."""

    def __init__(self, write: Callable[[str], Any]) -> None:
        self.write = write

    def __call__(self, event: ev.Event, record: dict[str, Any]) -> None:
        self.write(json.dumps(record, ensure_ascii=True, separators=(",", ":")) + "\n")


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ts))


class TextView:
    """What the terminal showed: the live Renderer for events, the live approval panel for each
    decision a person made, followed by the answer that was typed."""

    def __init__(self, console: Console, log_path: Path) -> None:
        from agent_cli.ui.render import Renderer

        self.console = console
        self.log_path = log_path
        self.renderer = Renderer(console)
        self.proposed: dict[str, Any] = {}
        self.sources: dict[str, str] = {}

    def __call__(self, event: ev.Event, record: dict[str, Any]) -> None:
        from rich.text import Text

        from agent_cli.ui.safe_rich import safe

        c = self.console
        match event:
            case ev.SessionStart():
                self.sources = {t.name: t.source for t in event.tools}
                c.print(Text.assemble(("agent-cli", "bold"), " · ")
                        + safe(f"{event.provider}:{event.model} · workspace {event.workspace}"))
                note = f"replay of {self.log_path}, recorded {_when(event.ts)}"
                if event.continues:
                    note += f", continuing {event.continues}"
                c.print(safe(note + "; nothing is run again.", "dim"))
            case ev.UserMessage():
                c.print(Text("› ", style="bold") + safe(event.text))
            case ev.ModelReply():
                for block in event.content:
                    if block.get("type") == "text" and block.get("text"):
                        self.renderer(ev.TextDelta(str(block["text"])))
                self.renderer(event)
            case ev.ToolProposed():
                self.proposed[event.id] = event.input
                self.renderer(event)
            case ev.Approval():
                self._approval(event)
                self.renderer(event)
            case ev.ToolResultEvent():
                self.proposed.pop(event.id, None)
                self.renderer(event)
            case ev.SessionEnd():
                c.print(safe(f"(session ended: {event.reason})", "dim"))
            case (ev.ToolInvalid() | ev.ToolStarted() | ev.ErrorEvent() | ev.Interrupt()
                  | ev.TurnEnd() | ev.Notice()):
                self.renderer(event)
            case _:
                assert_never(event)

    def _approval(self, event: ev.Approval) -> None:
        from rich.text import Text

        from agent_cli.ui.panel import approval_panel
        from agent_cli.ui.safe_rich import safe

        if event.by == "recording":
            self.console.print(Text("✓ ", style="green")
                               + safe(f"{event.name}: approved again (identical to a call "
                                      "approved in the recording)", "dim"))
            return
        if event.by != "user":
            return  # read-only calls showed no panel; rule and policy denials print as live
        proposed = self.proposed.get(event.id)
        args = event.args if event.args is not None else (
            proposed if isinstance(proposed, dict) else {})
        request = ApprovalRequest(call_id=event.id, name=event.name, effect=event.effect,
                                  args=args, args_hash=event.args_hash, preview=event.preview,
                                  source=self.sources.get(event.name, ""),
                                  extra=dict(event.panel_extra))
        self.console.print(approval_panel(request))
        if event.decision == "approved":
            answer = "y"
        else:
            answer = "n" + (f" {event.reason}" if event.reason else "")
        self.console.print(Text("Run this? [y/N] ") + safe(answer, "bold"))
        if event.decision == "denied":
            self.console.print(Text("Denied.", style="red"))


def _fence(text: str, lang: str = "") -> str:
    """A fenced block that the text cannot close: longer than any backtick run inside it."""
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * max(3, longest + 1)
    return f"{ticks}{lang}\n{text}\n{ticks}\n"


_MD_SPECIAL = re.compile(r"([\\`*_\[\]<>|~])")
"""Inline Markdown that could act inside a line: emphasis, code, links, HTML, tables."""


def _md_inline(text: str) -> str:
    return _MD_SPECIAL.sub(r"\\\1", one_line(text, 200))


class MarkdownView:
    """An export for reading and sharing: every untrusted string sanitised and fenced, so the log
    can hold no markup, link or HTML that a Markdown viewer would act on."""

    def __init__(self, write: Callable[[str], Any], log_path: Path) -> None:
        self.write = write
        self.log_path = log_path
        self.turn = 0

    def __call__(self, event: ev.Event, record: dict[str, Any]) -> None:
        w = self.write
        match event:
            case ev.SessionStart():
                w(f"# Session {_md_inline(self.log_path.name)}\n\n"
                  f"- started: {_when(event.ts)}\n"
                  f"- model: {_md_inline(event.provider + ':' + event.model)}\n"
                  f"- workspace: {_md_inline(event.workspace)}\n")
                if event.continues:
                    w(f"- continues: {_md_inline(event.continues)}\n")
                w("\n")
            case ev.UserMessage():
                self.turn += 1
                w(f"## Turn {self.turn}\n\n**User**\n\n{_fence(sanitize(event.text), 'text')}\n")
            case ev.ModelReply():
                text = "".join(str(b.get("text", "")) for b in event.content
                               if b.get("type") == "text")
                if text:
                    w(f"**Model** ({_md_inline(event.stop_reason or '?')})\n\n"
                      f"{_fence(sanitize(text), 'text')}\n")
            case ev.ToolProposed():
                args = json.dumps(event.input, ensure_ascii=False, indent=2)
                w(f"### Call {_md_inline(event.name)} ({_md_inline(event.id)})\n\n"
                  f"{_fence(sanitize(args), 'json')}\n")
            case ev.ToolInvalid():
                w(f"**Invalid call:**\n\n{_fence(sanitize(event.reason), 'text')}\n")
            case ev.Approval():
                line = f"**Decision:** {event.decision} by {event.by}"
                if event.reason:
                    line += f", reason: {_md_inline(event.reason)}"
                w(line + f" (args sha256 {event.args_hash[:16]})\n\n")
                if event.preview:
                    w(f"Preview shown:\n\n{_fence(sanitize(event.preview), 'diff')}\n")
            case ev.ToolStarted():
                pass
            case ev.ToolResultEvent():
                status = "error" if event.is_error else "ok"
                w(f"**Result** ({status}, {event.duration:.2f} s"
                  f"{', truncated' if event.truncated else ''}):\n\n"
                  f"{_fence(sanitize(event.content), 'text')}\n")
            case ev.ErrorEvent():
                w(f"**Error** ({_md_inline(event.kind)}): {_md_inline(event.message)}\n\n")
            case ev.Interrupt():
                w(f"*Interrupted during {_md_inline(event.during)}.*\n\n")
            case ev.TurnEnd():
                if event.message:
                    w(f"*Turn ended ({_md_inline(event.reason)}): "
                      f"{_md_inline(event.message)}*\n\n")
            case ev.Notice():
                w(f"*Notice ({_md_inline(event.kind)}): {_md_inline(event.message)}*\n\n")
            case ev.SessionEnd():
                w(f"*Session ended: {_md_inline(event.reason)}.*\n\n")
            case _:
                assert_never(event)


# -- rerun -------------------------------------------------------------------------------------

ApprovalKey = tuple[str, str, str, str]
"""(call id, tool name, args_hash, canonical JSON of the arguments shown)."""


class ReuseApprovals:
    """Approves a call only when the user approved the byte-identical call (same id, tool name,
    canonical arguments and hash) in the recording, once per recorded yes; everything else goes
    to the wrapped approver, which asks as usual."""

    def __init__(self, inner: Approver, approved: Iterable[ApprovalKey]) -> None:
        self.inner = inner
        self._left: Counter[ApprovalKey] = Counter(approved)

    def decide(self, request: ApprovalRequest) -> Decision:
        key = (request.call_id, request.name, request.args_hash, canonical_json(request.args))
        if self._left[key] > 0:
            self._left[key] -= 1
            return Approved(request.call_id, request.args_hash, by="recording")
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

    if reuse_approvals:
        check = verify(path)
        if not check.ok:
            raise LogError(f"--reuse-approvals needs a log that passes `agent-cli log verify`; "
                           f"this one fails: {check.fault}")
    rec = load_recording(path)
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
        console.print(Text(f"No drift: all {report.calls} call results match the recording.",
                           style="green"))
    else:
        table = Table(title=f"Drift: {len(report.drift)} call(s) differ from the recording",
                      title_justify="left")
        table.add_column("call", overflow="fold")
        table.add_column("tool")
        table.add_column("what")
        table.add_column("recorded", overflow="fold")
        table.add_column("now", overflow="fold")
        for d in report.drift:
            table.add_row(safe(d.call_id), safe(d.tool), d.what,
                          safe(one_line(d.recorded, 160)), safe(one_line(d.now, 160)))
        console.print(table)
    if report.log_path is not None:
        console.print(safe(f"Rerun log: {report.log_path}", "dim"))
