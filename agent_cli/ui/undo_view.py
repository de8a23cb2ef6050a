"""The undo panel: what an undo would do, path by path, with the diff it would apply; then
`[y/N]` through the one confirm (ui/confirm.py: the whole panel paged, single keys, typeahead
dropped), the restore, and what was left alone.

Every string from a record or a file (paths, ids, tool names, file content in diffs) goes through
safe_text via `safe`; rich.text.Text is only ever built over sanitised strings.
"""

from __future__ import annotations

import difflib
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console, Group, RenderableType
from rich.panel import Panel
from rich.text import Text

from agent_cli import events as ev
from agent_cli.diff_lines import line_kind
from agent_cli.log.changes import ChangeSet
from agent_cli.ui.confirm import Asker
from agent_cli.ui.safe_rich import safe
from agent_cli.undo.restore import Applied, Plan, Step, apply, undo_event
from agent_cli.undo.store import Store, StoreError

if TYPE_CHECKING:
    from agent_cli.session import Session

Ask = Callable[[str], str]
"""Shows a prompt and returns the answer typed; EOFError / KeyboardInterrupt mean no answer."""

DIFF_MAX_BYTES = 1_000_000
DIFF_STYLE = {"add": "green", "del": "red", "hunk": "cyan"}
"""How the undo view colours each kind of diff line (diff_lines.line_kind)."""


def _when(ts: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))


def _text_of(store: Store, sha: str | None) -> str | None:
    """The content as text, or None when binary, too large or unavailable."""
    if sha is None:
        return ""
    try:
        data = store.read(sha)
    except StoreError:
        return None
    if len(data) > DIFF_MAX_BYTES or b"\x00" in data:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None


def _diff(step: Step, store: Store) -> Text:
    cur, tgt = step.current, step.target
    if (cur is not None and cur.kind != "file") or (tgt is not None and tgt.kind != "file"):
        return Text()
    if cur is not None and tgt is not None and cur.sha256 == tgt.sha256:
        return Text()
    too_big = max(cur.size if cur else 0, tgt.size if tgt else 0) > DIFF_MAX_BYTES
    old = None if too_big else _text_of(store, cur.sha256 if cur else None)
    new = None if too_big else _text_of(store, tgt.sha256 if tgt else None)
    if old is None or new is None:
        size_a = f"{cur.size:,}" if cur else "0"
        size_b = f"{tgt.size:,}" if tgt else "0"
        return Text(f"    (binary or large content: {size_a} -> {size_b} bytes)\n", style="dim")
    out = Text()
    lines = difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                 fromfile=f"now/{step.path}" if cur else "/dev/null",
                                 tofile=f"after-undo/{step.path}" if tgt else "/dev/null")
    for line in lines:
        if not line.endswith("\n"):
            line += "\n\\ No newline at end of file\n"
        style = DIFF_STYLE.get(line_kind(line), "")
        out.append_text(safe("    " + line, style))
    return out


def _action(step: Step) -> str:
    cur, tgt = step.current, step.target
    if tgt is None:
        return f"delete {'folder' if cur and cur.kind == 'dir' else 'file'}"
    if cur is None:
        return f"recreate {'folder' if tgt.kind == 'dir' else tgt.kind}"
    if cur.kind != tgt.kind:
        return f"replace {cur.kind} by {tgt.kind}"
    if cur.sha256 == tgt.sha256:
        return f"chmod {cur.mode:o} -> {tgt.mode:o}"
    if tgt.kind == "link":
        return "restore link"
    mode = f", mode {cur.mode:o} -> {tgt.mode:o}" if cur.mode != tgt.mode else ""
    return f"restore earlier content{mode}"


def _set_line(cs: ChangeSet) -> Text:
    what = f"undo {cs.id} (of {', '.join(cs.undid)})" if cs.is_undo else f"{cs.id} {cs.name}"
    line = safe(what, "bold") + (safe(f"  turn {cs.turn}", "dim") if cs.turn else Text())
    line += safe(f"  {_when(cs.ts)}  ", "dim") + safe(cs.counts())
    if not cs.complete:
        line += Text("  (recorded while the call was still running)", style="yellow")
    return line


def undo_panel(plan: Plan, store: Store, redo: bool = False, note: str = "") -> Panel:
    parts: list[RenderableType] = [safe(note, "yellow")] if note else []
    parts.append(Text("Redo: put back what this undo took back:" if redo
                      else "Undo, newest first:", style="bold cyan"))
    for cs in plan.sets:
        parts.append(Text("  ") + _set_line(cs))
    parts.append(Text.assemble(("workspace ", "bold cyan"), safe(str(plan.workspace))))
    if plan.steps:
        parts.append(Text("What changes:", style="bold cyan"))
    for step in plan.steps:
        either = step.target or step.current
        shown = step.path + ("/" if either is not None and either.kind == "dir" else "")
        parts.append(Text("  ") + safe(shown, "bold") + Text(": ") + safe(_action(step)))
        diff = _diff(step, store)
        diff.rstrip()
        if diff.plain:
            parts.append(diff)
    if plan.conflicts:
        parts.append(Text("Left alone (changed since, or cannot be restored):",
                          style="bold red"))
        for c in plan.conflicts:
            parts.append(Text("  ✗ ", style="red") + safe(c.path, "bold") + Text(": ")
                         + safe(c.reason))
    title = Text("Redo " if redo else "Undo ", style="bold") + safe(
        plan.sets[0].id if len(plan.sets) == 1 else f"{len(plan.sets)} change sets", "bold")
    return Panel(Group(*parts), title=title, title_align="left", border_style="yellow",
                 expand=True)


def question(plan: Plan, redo: bool = False) -> str:
    verb = "Redo" if redo else "Undo"
    if plan.conflicts:
        n = len(plan.steps)
        return (f"{verb} the other {n} change{'s' if n != 1 else ''}, leaving the files named "
                "above alone? [y/N] ")
    return f"{verb} this? [y/N] "


@dataclass
class Outcome:
    undone: bool
    event: ev.Undo | None = None
    applied: Applied | None = None
    message: str = ""


def confirm_and_apply(plan: Plan, store: Store, console: Console, ask: Ask | Asker | None,
                      record: Callable[[ev.Undo], None], *, redo: bool = False,
                      note: str = "") -> Outcome:
    """Show the panel, ask, restore on yes and hand the `undo` event to `record` (the log).
    `ask` is the terminal's Asker (the one confirm: paged, typeahead dropped), a plain answer
    source (`--answers FILE`: the panel is printed whole, no page takes an answer), or None (no
    terminal: the panel is printed and nothing is undone). `note` is said first in the panel (a
    crashed session)."""
    panel = undo_panel(plan, store, redo, note)
    if isinstance(ask, Asker):
        asker = ask
    else:
        asker = Asker(console, ask, read_key=lambda _prompt: "G", flush=False)
    if not plan.steps or ask is None:
        console.print(panel)
        if not plan.steps:
            return Outcome(False, message="Nothing to undo: every change of it was changed "
                           "since (named above); nothing was touched.")
        return Outcome(False, message="No terminal to confirm on: nothing was undone. Run it in "
                       "a terminal, or give the answer explicitly with --answers FILE.")
    if not asker.confirm(panel, question(plan, redo)):
        return Outcome(False, message="Not undone; nothing was touched.")
    applied = apply(plan, store)
    event = undo_event(plan, applied, "redo" if redo else "undo")
    if applied.changes:
        record(event)
    return Outcome(bool(applied.changes), event, applied, _done_message(event, applied, redo))


def _done_message(event: ev.Undo, applied: Applied, redo: bool = False) -> str:
    n = len(applied.changes)
    if redo:
        return (f"Redone: {n} path{'s' if n != 1 else ''} put back (logged as {event.id})."
                if n else "Nothing was put back.") + (
            " Left alone: " + "; ".join(event.left_alone) if event.left_alone else "")
    msg = f"Undone: {n} path{'s' if n != 1 else ''} restored (logged as {event.id}; /redo or " \
          "`agent-cli undo --redo` puts them back)." if n else "Nothing was restored."
    if event.left_alone:
        msg += " Left alone: " + "; ".join(event.left_alone)
    return msg


def print_outcome(console: Console, outcome: Outcome) -> None:
    style = "green" if outcome.undone and not (outcome.event and outcome.event.left_alone) \
        else "yellow"
    console.print(safe(outcome.message, style))


def list_view(sets_newest_first: list[ChangeSet]) -> Text:
    """`undo --list`: one change set a line, newest first."""
    out = Text()
    for cs in sets_newest_first:
        paths = ", ".join(ch.path for ch in cs.changes[:4])
        if len(cs.changes) > 4:
            paths += f", +{len(cs.changes) - 4} more"
        out.append_text(_set_line(cs) + Text("  ") + safe(paths, "dim") + Text("\n"))
    return out


def repl_undo(session: Session, arg: str, *, console: Console | None = None,
              ask: Ask | Asker | None = None, redo: bool = False) -> RenderableType | None:
    """`/undo` (one turn back; again: one more), `/undo ID` (back to just before that call) and
    `/redo` over this session's own records (kept in memory as they were emitted, so no file is
    trusted for them); the undo event goes into this session's log."""
    from agent_cli.config import home
    from agent_cli.errors import AgentError
    from agent_cli.log.changes import history
    from agent_cli.undo.logs import redo_set, select
    from agent_cli.undo.restore import make_plan

    recorder = session.effects
    if recorder is None:
        return Text("Undo is off in this session (config undo = false).", style="yellow")
    hist = history(recorder.records())
    if not redo and not hist.undoable():
        why = f" ({recorder.earlier_note})" if recorder.earlier_note else ""
        return safe("Nothing to undo: no approved call of this session (or of the one it "
                    f"resumed) changed a file that is not undone yet{why}.", "yellow")
    try:
        chosen = [redo_set(hist)] if redo else select(hist, arg.strip() or None)
    except AgentError as e:
        return safe(str(e), "yellow")
    if console is None:
        found = getattr(session.gate.approver, "console", None)
        console = found if isinstance(found, Console) else Console(highlight=False)
    if ask is None:
        from agent_cli.ui.confirm import terminal_asker

        ask = terminal_asker(console)
    plan = make_plan(chosen, Path(chosen[0].workspace), recorder.store, home())
    outcome = confirm_and_apply(plan, recorder.store, console, ask, session.emit, redo=redo)
    return safe(outcome.message, "green" if outcome.undone and outcome.event is not None
                and not outcome.event.left_alone else "yellow")
