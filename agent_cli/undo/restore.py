"""Plan and apply an undo: put paths back to their recorded `before` state.

Planning walks the chosen change sets newest first and, path by path, requires the file on disk
to be exactly the state the call left (content, kind and mode); anything else is a conflict,
named and left alone. Applying re-checks each path right before touching it (an edit made while
the panel was open is not clobbered either), reaches it from a descriptor of the workspace without
following links, writes through a temp file and a rename, and checks every byte taken from the
store against its sha256.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from agent_cli import events as ev
from agent_cli.events import EntryState, PathChange
from agent_cli.log.changes import ChangeSet
from agent_cli.undo.snapshot import current_state, state_at
from agent_cli.undo.store import Store, StoreError

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)


def same(a: EntryState | None, b: EntryState | None) -> bool:
    if a is None or b is None:
        return a is b
    if a.kind != b.kind or a.sha256 != b.sha256:
        return False
    return a.kind == "link" or a.mode == b.mode


def describe(state: EntryState | None) -> str:
    if state is None:
        return "absent"
    if state.kind == "dir":
        return f"folder {state.mode:o}"
    if state.kind == "link":
        return "symbolic link"
    if state.kind == "special":
        return "special file (FIFO, socket or device)"
    return f"file {state.size:,} bytes, mode {state.mode:o}"


def bad_path(rel: str, home_rel: str | None) -> str | None:
    """Why a recorded path may not be touched (records are trusted only once signed, but a path
    is still checked: nothing outside the workspace, nothing in .git or agent-cli's state)."""
    if not rel or "\x00" in rel or rel.startswith("/"):
        return "not a path inside the workspace"
    parts = rel.split("/")
    if any(p in ("", ".", "..") for p in parts):
        return "not a plain path inside the workspace"
    if ".git" in parts and not git_kept(parts):
        return "inside .git, where undo touches only .git/config and .git/hooks/"
    if "[REDACTED:" in rel:
        return "its name was redacted in the log"
    if home_rel is not None and (home_rel == "" or rel == home_rel
                                 or rel.startswith(home_rel + "/")):
        return "inside agent-cli's own folder (AGENT_CLI_HOME)"
    return None


def git_kept(parts: list[str]) -> bool:
    """`.git/config` and `.git/hooks/...` at the top: what snapshots record of `.git`."""
    from agent_cli.undo.snapshot import GIT_KEPT

    if parts[0] != ".git" or ".git" in parts[1:] or len(parts) < 2 or parts[1] not in GIT_KEPT:
        return False
    return parts[1] == "hooks" or len(parts) == 2


@dataclass
class Step:
    path: str
    current: EntryState | None
    """What is there now (checked again right before the change)."""
    target: EntryState | None
    sets: list[str] = field(default_factory=list)
    """Change sets whose changes to this path are undone, newest first."""


@dataclass
class Conflict:
    path: str
    set_id: str
    reason: str


@dataclass
class Plan:
    workspace: Path
    sets: list[ChangeSet]
    """Newest first."""
    steps: list[Step] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)


def make_plan(sets_newest_first: list[ChangeSet], workspace: Path, store: Store,
              home: Path | None = None) -> Plan:
    ws = Path(os.path.realpath(workspace))
    home_rel: str | None = None
    if home is not None:
        real_home = Path(os.path.realpath(home))
        if real_home == ws or ws in real_home.parents:
            home_rel = real_home.relative_to(ws).as_posix() if real_home != ws else ""
    plan = Plan(ws, sets_newest_first)
    now: dict[str, EntryState | None] = {}
    initial: dict[str, EntryState | None] = {}
    contributors: dict[str, list[str]] = {}
    blocked: set[str] = set()
    order: list[str] = []
    for cs in sets_newest_first:
        for ch in cs.changes:
            path = ch.path
            if path in blocked:
                continue
            why = bad_path(path, home_rel)
            if why is not None:
                blocked.add(path)
                plan.conflicts.append(Conflict(path, cs.id, why))
                continue
            if path not in now:
                try:
                    now[path] = current_state(ws, path)
                except OSError as e:
                    blocked.add(path)
                    plan.conflicts.append(Conflict(path, cs.id, f"cannot be read now "
                                                   f"({e.strerror or e})"))
                    continue
                initial[path] = now[path]
                order.append(path)
            if not same(now[path], ch.after):
                blocked.add(path)
                plan.conflicts.append(Conflict(
                    path, cs.id, f"changed since {cs.id} ran: it is now "
                    f"{describe(now[path])}, not the {describe(ch.after)} the call left"))
                continue
            target = ch.before
            if target is not None and target.kind != "dir" and target.sha256 and \
                    not store.has(target.sha256):
                blocked.add(path)
                plan.conflicts.append(Conflict(path, cs.id, "cannot be restored: its snapshot "
                                               "is no longer in the undo store"))
                continue
            now[path] = target
            contributors.setdefault(path, []).append(cs.id)
    for path in order:
        if path in contributors and not same(initial[path], now[path]):
            plan.steps.append(Step(path, initial[path], now[path], contributors[path]))
    # A folder to remove that keeps a file left alone stays too (said now, not at rmdir time).
    for step in list(plan.steps):
        cur = step.current
        if step.target is None and cur is not None and cur.kind == "dir":
            held = sorted(p for p in blocked if p.startswith(step.path + "/"))
            if held:
                plan.steps.remove(step)
                plan.conflicts.append(Conflict(step.path, step.sets[0], "folder left in place: "
                                               f"it holds {held[0]}, which is left alone"))
    return plan


@dataclass
class Applied:
    changes: list[PathChange] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


def change_kind(before: EntryState | None, after: EntryState | None
                ) -> Literal["created", "modified", "deleted", "mode"]:
    """What happened to a path between two states (an undo's step, an overlay layer's entry)."""
    if before is None:
        return "created"
    if after is None:
        return "deleted"
    if before.kind == after.kind and before.sha256 == after.sha256:
        return "mode"
    return "modified"


class _Tree:
    """Descriptor-relative access to paths below the workspace; never follows a link."""

    def __init__(self, root: Path) -> None:
        self.root_fd = os.open(root, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC)

    def close(self) -> None:
        os.close(self.root_fd)

    def parent(self, rel: str, create: bool) -> tuple[int, str]:
        """(descriptor of the folder holding `rel`, its last name); the caller closes it."""
        parts = rel.split("/")
        fd = os.dup(self.root_fd)
        try:
            for part in parts[:-1]:
                if create:
                    with contextlib.suppress(FileExistsError):
                        os.mkdir(part, 0o755, dir_fd=fd)
                nxt = os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW | _CLOEXEC, dir_fd=fd)
                os.close(fd)
                fd = nxt
        except BaseException:
            os.close(fd)
            raise
        return fd, parts[-1]


def _write_from_store(pfd: int, name: str, target: EntryState, store: Store) -> None:
    tmp = f".agent-cli-undo-{secrets.token_hex(6)}"
    assert target.sha256 is not None
    if target.kind == "link":
        link_to = os.fsdecode(store.read(target.sha256))
        os.symlink(link_to, tmp, dir_fd=pfd)
    else:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC, 0o600,
                     dir_fd=pfd)
        try:
            for chunk in store.iter_chunks(target.sha256):
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view):]
            os.fchmod(fd, target.mode)
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            os.unlink(tmp, dir_fd=pfd)
            raise
        os.close(fd)
    try:
        os.rename(tmp, name, src_dir_fd=pfd, dst_dir_fd=pfd)
    except BaseException:
        os.unlink(tmp, dir_fd=pfd)
        raise


def _chmod(pfd: int, name: str, mode: int, is_dir: bool) -> None:
    flags = os.O_RDONLY | _NOFOLLOW | _NONBLOCK | _CLOEXEC | (_DIRECTORY if is_dir else 0)
    fd = os.open(name, flags, dir_fd=pfd)
    try:
        os.fchmod(fd, mode)
    finally:
        os.close(fd)


def apply(plan: Plan, store: Store) -> Applied:
    """Carry out the plan's steps: removals (files, then folders deepest first), new folders
    (shallowest first), file and link contents, then folder modes (deepest first)."""
    out = Applied()
    now: dict[str, EntryState | None] = {s.path: s.current for s in plan.steps}
    done: dict[str, bool] = {}
    failed: set[str] = set()
    tree = _Tree(plan.workspace)

    def op(step: Step, action: str) -> None:
        if step.path in failed:
            return
        try:
            pfd, name = tree.parent(step.path, create=action in ("mkdir", "write"))
        except OSError as e:
            failed.add(step.path)
            out.failed.append(f"{step.path}: left alone, its folder cannot be reached "
                              f"({e.strerror or e})")
            return
        try:
            if not same(state_at(pfd, name), now[step.path]):
                failed.add(step.path)
                out.failed.append(f"{step.path}: left alone, it changed while the undo was "
                                  "being confirmed")
                return
            target = step.target
            if action == "remove":
                cur = now[step.path]
                if cur is not None and cur.kind == "dir":
                    os.rmdir(name, dir_fd=pfd)
                else:
                    os.unlink(name, dir_fd=pfd)
                now[step.path] = None
            elif action == "mkdir":
                os.mkdir(name, 0o700, dir_fd=pfd)
                now[step.path] = EntryState(kind="dir", mode=0o700)
            elif action == "write" and target is not None:
                cur = now[step.path]
                if cur is not None and cur.kind == "file" and target.kind == "file" \
                        and cur.sha256 == target.sha256:
                    _chmod(pfd, name, target.mode, False)
                else:
                    _write_from_store(pfd, name, target, store)
                now[step.path] = target
            elif action == "chmod" and target is not None:
                _chmod(pfd, name, target.mode, True)
                now[step.path] = target
            done[step.path] = True
        except StoreError as e:
            failed.add(step.path)
            out.failed.append(f"{step.path}: left alone, {e}")
        except OSError as e:
            failed.add(step.path)
            if action == "remove" and e.errno in (errno.ENOTEMPTY, errno.EEXIST):
                out.failed.append(f"{step.path}/: left in place, it holds files undo does not "
                                  "track (ignored or created since)")
            else:
                out.failed.append(f"{step.path}: left alone ({e.strerror or e})")
        finally:
            os.close(pfd)

    def depth(step: Step) -> int:
        return step.path.count("/")

    try:
        steps = plan.steps
        removals = [s for s in steps if s.current is not None
                    and (s.target is None or s.target.kind != s.current.kind)]
        for s in sorted(removals, key=lambda s: (s.current is not None
                                                 and s.current.kind == "dir", -depth(s))):
            op(s, "remove")
        for s in sorted((s for s in steps if s.target is not None and s.target.kind == "dir"
                         and (s.current is None or s.current.kind != "dir")), key=depth):
            op(s, "mkdir")
        for s in steps:
            if s.target is not None and s.target.kind != "dir":
                op(s, "write")
        for s in sorted(steps, key=lambda s: -depth(s)):
            if s.target is None or s.target.kind != "dir":
                continue
            cur = now.get(s.path)
            if cur is None or cur.kind != "dir" or cur.mode != s.target.mode:
                op(s, "chmod")
            elif s.path not in failed:
                done[s.path] = True
    finally:
        tree.close()
    for s in steps:
        if s.path in done and s.path not in failed:
            out.changes.append(PathChange(path=s.path, change=change_kind(s.current, s.target),
                                          before=s.current, after=s.target))
    return out


def undo_event(plan: Plan, applied: Applied, prefix: str = "undo") -> ev.Undo:
    """The record of an undo (or, `prefix` "redo", of a redo: its `undid` names the undo)."""
    left = [f"{c.path}: {c.reason}" for c in plan.conflicts] + applied.failed
    return ev.Undo(id=f"{prefix}_{secrets.token_hex(6)}", undid=[cs.id for cs in plan.sets],
                   workspace=str(plan.workspace), changes=applied.changes, left_alone=left)
