"""Show a session log again: the records `agent-cli replay` hands to a view (the chosen turns, bad
lines reported in place), the Markdown and JSONL views, and the summaries behind `agent-cli log
list`.

Everything here streams the log (one line at a time through log.reader). Showing never executes a
tool and never calls a model. There is no Rich here: the text view, which draws the records as the
terminal showed them, is ui/views/replay.py; the HTML page is html_export.py. Running a log again
is agent_cli/rerun.py; rebuilding its conversation to resume it is resume.py.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, assert_never

from agent_cli import events as ev
from agent_cli.errors import LogError, UsageError
from agent_cli.log.encoding import serialize
from agent_cli.log.jsonl import jsonl_in_one_pass  # noqa: F401 (re-exported)
from agent_cli.log.reader import BadLine, read_records, to_event
from agent_cli.safe_text import one_line, sanitize

if TYPE_CHECKING:
    from agent_cli.config import Settings

TOOL_EVENTS = (ev.ToolProposed, ev.ToolInvalid, ev.Approval, ev.ToolStarted, ev.ToolResultEvent)
FRAME_EVENTS = (ev.SessionStart, ev.SessionEnd)


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
    kind: str = "new"
    """new | resumed (continues another log) | rerun (of a recording)."""


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
                if item.continues:
                    s.kind = "resumed"
        elif kind == "notice" and rec.get("kind") == "rerun":
            s.kind = "rerun"
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
    """The `limit` sessions that started last (of `workspace`'s, when given), summarised. Only
    their logs are read whole: every other log is read up to its first record (the
    session_start that says when and where it started), so `log list` stays fast with
    thousands of long logs in the folder."""
    from agent_cli.log.store import first_start, newest_first, same_workspace

    heads: list[tuple[float, int, Path, Summary | None]] = []
    ours: dict[str, bool] = {}
    """Recorded workspace -> whether it is `workspace` (resolved once per distinct string)."""
    for order, path in enumerate(newest_first(settings)):
        try:  # one bad log (unreadable, a FIFO, hostile values) never hides the others
            start = first_start(path)
            full = summarize(path) if start is None else None  # (no session_start first)
            started, where = (full.started, full.workspace) if full is not None else (
                start.ts, start.workspace) if start is not None else (0.0, "")
            if workspace is not None:
                if where not in ours:
                    ours[where] = same_workspace(where, workspace)
                if not ours[where]:
                    continue
        except (LogError, OSError, ValueError, RecursionError):
            continue
        heads.append((started, order, path, full))
    heads.sort(key=lambda h: (-h[0], h[1]))  # started last first; ties in the folder's order
    out: list[Summary] = []
    for _started, _order, path, full in heads:
        if len(out) >= limit:
            break
        try:
            out.append(full if full is not None else summarize(path))
        except (LogError, OSError, ValueError, RecursionError):
            continue
    return out


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


def count_turns(path: Path) -> int:
    """How many turns (user messages) a log holds, for `--turns` out of range."""
    return sum(1 for _lineno, rec in read_records(path)
               if not isinstance(rec, BadLine) and rec.get("type") == "user_message")


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
            if hasattr(view, "log_turn"):
                view.log_turn = turn  # text replay numbers turns as they are in the whole log
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
        self.write(serialize(record).decode("ascii") + "\n")


def when(ts: float) -> str:
    """A recorded time as every view shows it (UTC, to the second)."""
    return time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(ts))


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
                  f"- started: {when(event.ts)}\n"
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
                line = f"**Decision:** {_md_inline(event.decision)} by {_md_inline(event.by)}"
                if event.reason:
                    line += f", reason: {_md_inline(event.reason)}"
                w(line + f" (args sha256 {_md_inline(event.args_hash[:16])})\n\n")
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
            case ev.Effects() | ev.Undo():
                from agent_cli.log.changes import summary

                w(f"*{_md_inline(summary(event))}*\n\n")
            case _:
                assert_never(event)
