"""The loop's effect recorder: snapshot before an approved call runs, `effects` event after.

`write_file`/`edit_file` (the bundled ones) change one file: only it and the folders a write would
create are recorded. Every other write tool (run_command, plugins, MCP tools) may change anything,
so the workspace tree is recorded, incrementally. The panel learns beforehand what undo will not
cover; the snapshot that counts is taken after the yes, right before the call runs, so an edit
made while the panel was open is not mistaken for the call's.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_cli import events as ev
from agent_cli.undo.snapshot import MB, Limits, Snapshot, Snapshotter, diff
from agent_cli.undo.store import Store

if TYPE_CHECKING:
    from agent_cli.calls import Call
    from agent_cli.config import Settings

FILE_TOOLS = frozenset({"write_file", "edit_file"})
REUSE_MIN_S = 0.05
"""A snapshot is reused for the next one asked for (same scope) while it is younger than the
walk that took it, or than this: no person answers a panel that fast, so no edit of theirs can
fall in between, and anything else that writes in that window races the walk itself anyway."""
OUTSIDE_NOTE = "effects outside the workspace cannot be undone (the sandbox is off)"


@dataclass
class Pending:
    """What `before` took for one call, handed back to `after`."""

    call_id: str
    name: str
    scope: str
    rels: list[str]
    snapshot: Snapshot | None = None
    error: str | None = None
    layer: Any = None
    """The overlay layer the call writes into (sandbox.overlay.Layer), on the overlay path."""
    since_ns: int = 0


@dataclass
class WorkspaceRecorder:
    """Implements loop.EffectRecorder for one session's workspace, and (as a sink) keeps this
    session's change sets for `/undo`."""

    workspace: Path
    limits: Limits = field(default_factory=Limits)
    sandbox: str = "workspace"
    skip: tuple[Path, ...] = ()
    store: Store = field(default_factory=Store)
    seen: list[ev.Effects | ev.Undo | ev.UserMessage] = field(default_factory=list)
    """This session's `effects`, `undo` and user-message events, in order (what /undo works
    from: the messages number the turns)."""
    review: Callable[[ev.Effects], bool] | None = None
    """Config `review_effects`: shown an approved command's change set (with its diff), says
    whether to keep it. On the overlay path it is asked before the changes are applied."""
    overwrite: Callable[[str], bool] | None = None
    """Asked for each path the user changed in the workspace while a command ran in its layer:
    whether the command's version replaces theirs (None: never; the path is named instead)."""
    earlier: Path | None = None
    """The log this session resumed (`chat --continue`): /undo reaches its calls too, once that
    log is trusted for undo (read when /undo first asks, not at start)."""

    def __post_init__(self) -> None:
        self.workspace = Path(os.path.realpath(self.workspace))
        self.snapper = Snapshotter(self.workspace, self.store, self.limits, self.skip)
        self.earlier_note = ""
        """Why the resumed log's calls cannot be undone here (it is not trusted)."""
        self._last: tuple[str, tuple[str, ...], Snapshot, float, float] | None = None
        self._overlay: tuple[bool, str] | None = None
        """The newest snapshot: scope, paths, the snapshot, when it was done, what it took."""

    @classmethod
    def for_session(cls, workspace: Path, settings: Settings) -> WorkspaceRecorder:
        from agent_cli.config import home
        from agent_cli.log.store import sessions_dir

        limits = Limits(file_cap=int(getattr(settings, "undo_file_cap_mb", 50)) * MB,
                        session_cap=int(getattr(settings, "undo_store_cap_mb", 1024)) * MB)
        return cls(workspace, limits, str(getattr(settings, "sandbox", "workspace")),
                   (home(), sessions_dir(settings)))

    def records(self) -> list[ev.Event | ev.AnyEvent]:
        """What /undo works from: the resumed log's records (when trusted), then this
        session's. An untrusted earlier log is left out, and said once."""
        if self.earlier is not None:
            from agent_cli.undo.logs import UndoRefused, trusted_events

            path, self.earlier = self.earlier, None
            try:
                events, _crashed = trusted_events(path)
            except (UndoRefused, OSError) as e:
                self.earlier_note = str(e)
            else:
                self.seen[:0] = [e for e in events
                                 if isinstance(e, ev.Effects | ev.Undo | ev.UserMessage)]
        return list(self.seen)

    def __call__(self, event: ev.AnyEvent) -> None:
        if isinstance(event, ev.Effects | ev.Undo | ev.UserMessage):
            self.seen.append(event)

    # -- scope -------------------------------------------------------------------------------

    def _scope(self, call: Call) -> tuple[str, list[str]]:
        from agent_cli.tools.loader import bundled_tools_dir

        tool = call.tool
        if tool.name in FILE_TOOLS and tool.source and \
                Path(tool.source).resolve().parent == bundled_tools_dir().resolve():
            raw = call.args.get("path")
            if not isinstance(raw, str):
                return "file", []
            from agent_cli.errors import PathRefused
            from agent_cli.tools.paths import resolve_in_workspace

            try:
                real = resolve_in_workspace(self.workspace, raw)
                rel = real.relative_to(self.workspace).as_posix()
            except (PathRefused, ValueError):
                return "file", []  # the write itself will be refused: nothing to record
            return "file", [] if rel == "." else [rel]
        return "tree", []

    def _take(self, scope: str, rels: list[str], rules_from: Snapshot | None = None, *,
              reuse: bool = True) -> Snapshot:
        """A snapshot of `scope`; with `reuse`, the newest one when it is fresh (REUSE_MIN_S):
        the panel's note, the snapshot after an automatic yes and, in a reply of several calls,
        the one after the previous call are then one walk, not three."""
        now = time.monotonic()
        last = self._last
        if reuse and last is not None and last[0] == scope and last[1] == tuple(rels) and \
                now - last[3] <= max(last[4], REUSE_MIN_S):
            return last[2]
        snap = self.snapper.paths(rels, rules_from) if scope == "file" \
            else self.snapper.tree(rules_from)
        done = time.monotonic()
        self._last = (scope, tuple(rels), snap, done, done - now)
        return snap

    # -- the hook ----------------------------------------------------------------------------

    def notes(self, call: Call) -> dict[str, str]:
        """Rows for the approval panel: what undo will not cover."""
        scope, rels = self._scope(call)
        lines: list[str] = []
        if scope == "tree" and call.tool.name == "run_command" and self.overlay()[0]:
            # it writes into a layer of its own: nothing is walked, and all of it is covered
            return {"undo": OUTSIDE_NOTE} if self.sandbox == "off" else {}
        try:
            snap = self._take(scope, rels)
            skipped = snap.not_covered(self.limits.file_cap)
            if skipped:
                lines.append("undo will not cover: " + ", ".join(skipped))
        except Exception as e:  # never stops the call: it says undo won't cover it
            lines.append(f"undo will not cover this call: the workspace cannot be snapshotted "
                         f"({_why(e)})")
        if scope == "tree" and self.sandbox == "off":
            lines.append(OUTSIDE_NOTE)
        return {"undo": "\n".join(lines)} if lines else {}

    def overlay(self) -> tuple[bool, str]:
        """Whether approved commands run in an overlay layer here (wherever the kernel allows
        it, unless AGENT_CLI_UNDO_OVERLAY=off), and why not; found once per session."""
        if self._overlay is None:
            self._overlay = self._find_overlay()
        return self._overlay

    def _find_overlay(self) -> tuple[bool, str]:
        from agent_cli.sandbox.overlay import available

        self.store._prepare()  # (its folders 0700 before the layers' folder is made in it)
        layers = Path(os.path.realpath(self.store.root))
        if layers == self.workspace or self.workspace in layers.parents:
            return False, "agent-cli's own folder is inside the workspace (an overlay's layers " \
                          "cannot lie inside its lower layer)"
        return available(self.store.root / "layers")

    def overlay_notice(self) -> str | None:
        """Said once at start when the kernel refuses the overlay (not when switched off)."""
        from agent_cli.sandbox.overlay import ENV

        if os.environ.get(ENV, "").lower() in ("off", "0", "no"):
            return None
        ok, why = self.overlay()
        return None if ok else (f"undo: approved commands cannot run in an overlay layer here "
                                f"({why}); their effects are recorded by snapshots instead")

    def before(self, call: Call) -> Pending:
        scope, rels = self._scope(call)
        pending = Pending(call.id, call.tool.name, scope, rels)
        if scope == "tree" and call.tool.name == "run_command" and self.overlay()[0]:
            from agent_cli.sandbox.overlay import Layer
            from agent_cli.sandbox.policy import current

            box = current()
            if box is not None:
                pending.layer = Layer.make(self.store.root / "layers")
                pending.since_ns = time.time_ns()
                pending.scope = "overlay"
                box.layer = pending.layer
                self._last = None  # the workspace will change under any snapshot kept
                return pending
        try:
            pending.snapshot = self._take(scope, rels)
        except Exception as e:  # never stops the call: it says undo won't cover it
            pending.error = f"the workspace could not be snapshotted ({_why(e)})"
        return pending

    def _after_layer(self, token: Pending, finished: bool) -> list[ev.Event]:
        from agent_cli.sandbox.policy import current
        from agent_cli.undo.upper import apply_upper

        box = current()
        if box is not None:
            box.layer = None
        if self.review is not None:
            try:
                dry = apply_upper(token.layer.upper, self.workspace, self.store,
                                  token.since_ns, dry=True, file_cap=self.limits.file_cap)
            except OSError:
                dry = None
            if dry is not None and dry.changes and not self.review(ev.Effects(
                    id=token.call_id, name=token.name, workspace=str(self.workspace),
                    changes=dry.changes, complete=finished)):
                token.layer.remove()
                return [ev.Notice(message=f"call {token.call_id}: its changes were discarded "
                                  "(you answered no to keeping them); the workspace is as it "
                                  "was", kind="undo"),
                        ev.Effects(id=token.call_id, name=token.name,
                                   workspace=str(self.workspace), changes=[],
                                   complete=finished)]
        if token.layer.fd < 0:  # the command never started: nothing was written
            return [ev.Effects(id=token.call_id, name=token.name, workspace=str(self.workspace),
                               scope="tree", changes=[], complete=finished)]
        try:
            applied = apply_upper(token.layer.upper, self.workspace, self.store, token.since_ns,
                                  self.overwrite, file_cap=self.limits.file_cap)
        except OSError as e:
            return [ev.Notice(message=f"the changes of call {token.call_id} could not all be "
                              f"applied to the workspace ({_why(e)}); {self._keep(token)}",
                              kind="undo")]
        token.layer.remove()
        from agent_cli.undo.restore import git_kept

        # Of .git, as on the snapshot path, only what runs code later is recorded (and undone).
        applied.changes = [ch for ch in applied.changes if (not ch.path.startswith(".git/")
                           and ch.path != ".git") or git_kept(ch.path.split("/"))]
        out: list[ev.Event] = []
        if applied.conflicts:
            out.append(ev.Notice(message=f"call {token.call_id}: left as you have them (changed "
                                 "in the workspace while the command ran, or not a file): "
                                 + ", ".join(applied.conflicts), kind="undo"))
        out.append(ev.Effects(id=token.call_id, name=token.name, workspace=str(self.workspace),
                              scope="tree", changes=applied.changes, complete=finished))
        return out

    def _keep(self, token: Pending) -> str:
        """Where the layer of a call whose changes could not be applied was copied to (it
        lives in memory only), in words."""
        dest = self.store.root / "layers" / f"kept-{token.call_id}-{os.urandom(3).hex()}"
        try:
            token.layer.keep(dest)
        except OSError as e:
            return f"its layer could not be kept either ({_why(e)})"
        finally:
            token.layer.remove()
        return f"what it wrote is kept in {dest}"

    def after(self, token: Any, finished: bool) -> list[ev.Event]:
        if not isinstance(token, Pending):
            return []
        if token.layer is not None:
            return self._after_layer(token, finished)
        if token.snapshot is None:
            return [ev.Notice(message=f"undo cannot cover call {token.call_id}: {token.error}",
                              kind="undo")]
        try:
            # never reused: the call ran since the snapshot before it
            now = self._take(token.scope, token.rels, token.snapshot, reuse=False)
        except Exception as e:  # never stops the call: it says undo won't cover it
            return [ev.Notice(message=f"undo cannot cover call {token.call_id}: the workspace "
                              f"could not be snapshotted after it ran ({_why(e)})",
                              kind="undo")]
        if not finished:
            self._last = None  # what it started may still be writing: never reuse this one
        changes = diff(token.snapshot, now)
        self.store.sync({s.sha256 for ch in changes for s in (ch.before, ch.after)
                         if s is not None and s.sha256 is not None})
        skipped = sorted(set(token.snapshot.not_covered(self.limits.file_cap))
                         | set(now.not_covered(self.limits.file_cap)))
        effects = ev.Effects(id=token.call_id, name=token.name, workspace=str(self.workspace),
                             scope="file" if token.scope == "file" else "tree", changes=changes,
                             not_covered=skipped, complete=finished)
        if self.review is not None and changes and not self.review(effects):
            return [effects, *self._take_back(effects)]
        return [effects]

    def _take_back(self, effects: ev.Effects) -> list[ev.Event]:
        """Snapshot path, review said no: the changes already landed, so undo them now."""
        from agent_cli.config import home
        from agent_cli.log.changes import from_event
        from agent_cli.undo.restore import apply, make_plan, undo_event

        self._last = None
        plan = make_plan([from_event(effects)], self.workspace, self.store, home())
        applied = apply(plan, self.store)
        return [undo_event(plan, applied), ev.Notice(
            message=f"call {effects.id}: its changes were undone (you answered no to keeping "
            "them; on this system they reach the workspace before they can be reviewed)",
            kind="undo")]


def _why(e: BaseException) -> str:
    return str(getattr(e, "strerror", None) or e or type(e).__name__)
