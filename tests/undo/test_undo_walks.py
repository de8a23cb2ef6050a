"""Undo's walks of the workspace per write command (issue 21, goal 7).

The recorder walks the tree for the panel's note (what undo will not cover), right after the yes
(the snapshot that counts) and after the call. A snapshot younger than its own walk time (at
least `REUSE_MIN_S`) is reused for the next one asked for, so an automatic yes costs one walk for
note + before, and in a reply of several calls the walk after one call is the walk before the
next. A person answering a panel takes longer than that: then the snapshot after the yes is
taken afresh, and an edit made while the panel was open is not put on the call's record.

The walks are counted on the real Snapshotter (each walk really runs). This is the snapshot
path (where the kernel refuses the overlay), forced with AGENT_CLI_UNDO_OVERLAY=off.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from agent_cli import events as ev
from agent_cli.config import Settings
from agent_cli.session import load_registry
from agent_cli.undo import recorder as rec


@pytest.fixture(autouse=True)
def _snapshots(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_CLI_UNDO_OVERLAY", "off")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    for i in range(20):
        (root / "src" / f"f{i}.txt").write_text(f"{i}\n")
    return root


def _counting(recorder: rec.WorkspaceRecorder) -> list[int]:
    walks = [0]
    real = recorder.snapper.tree

    def tree(rules_from: Any = None) -> Any:
        walks[0] += 1
        return real(rules_from)

    recorder.snapper.tree = tree  # type: ignore[method-assign]
    return walks


def _call(call_id: str) -> Any:
    registry, _ = load_registry(Settings())
    return registry.validate(call_id, "run_command", {"command": "true"})


def _effects(events: list[ev.Event]) -> ev.Effects:
    [effects] = [e for e in events if isinstance(e, ev.Effects)]
    return effects


def test_an_automatic_yes_takes_one_walk_for_the_note_and_the_snapshot(
        ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rec, "REUSE_MIN_S", 60.0)  # however loaded the machine is
    recorder = rec.WorkspaceRecorder(ws)
    walks = _counting(recorder)
    call = _call("toolu_a")
    recorder.notes(call)
    token = recorder.before(call)
    (ws / "made.txt").write_text("by the call\n")
    effects = _effects(recorder.after(token, True))
    assert walks[0] == 2  # was 3: note, before, after
    assert [c.path for c in effects.changes] == ["made.txt"]


def test_in_a_reply_of_two_calls_the_walk_after_one_is_the_walk_before_the_next(
        ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rec, "REUSE_MIN_S", 60.0)
    recorder = rec.WorkspaceRecorder(ws)
    walks = _counting(recorder)
    first, second = _call("toolu_a"), _call("toolu_b")
    recorder.notes(first)
    token = recorder.before(first)
    (ws / "a.txt").write_text("first\n")
    one = _effects(recorder.after(token, True))
    recorder.notes(second)
    token = recorder.before(second)
    (ws / "b.txt").write_text("second\n")
    two = _effects(recorder.after(token, True))
    assert walks[0] == 3  # was 6
    assert [c.path for c in one.changes] == ["a.txt"]
    assert [c.path for c in two.changes] == ["b.txt"]


def test_an_edit_while_the_panel_was_open_is_not_the_calls(
        ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rec, "REUSE_MIN_S", 0.0)  # only the walk's own time counts
    recorder = rec.WorkspaceRecorder(ws)
    walks = _counting(recorder)
    call = _call("toolu_a")
    recorder.notes(call)
    (ws / "src" / "f1.txt").write_text("the person's own edit, panel still open\n")
    last = recorder._last
    assert last is not None
    deadline = time.monotonic() + 30
    while time.monotonic() - last[3] <= last[4] and time.monotonic() < deadline:
        time.sleep(0.001)  # the panel stays open longer than the walk took
    token = recorder.before(call)
    (ws / "made.txt").write_text("by the call\n")
    effects = _effects(recorder.after(token, True))
    assert walks[0] == 3
    assert [c.path for c in effects.changes] == ["made.txt"]


def test_a_call_that_did_not_finish_leaves_no_snapshot_to_reuse(
        ws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rec, "REUSE_MIN_S", 60.0)
    recorder = rec.WorkspaceRecorder(ws)
    walks = _counting(recorder)
    first, second = _call("toolu_a"), _call("toolu_b")
    token = recorder.before(first)
    recorder.after(token, False)  # timed out: what it started may still be writing
    (ws / "late.txt").write_text("written by the first call's leftover child\n")
    token = recorder.before(second)
    (ws / "b.txt").write_text("second\n")
    two = _effects(recorder.after(token, True))
    assert walks[0] == 4
    assert [c.path for c in two.changes] == ["b.txt"]
