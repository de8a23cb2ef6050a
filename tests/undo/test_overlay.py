"""The overlay path: an approved command's writes land in an upper layer of its own (a real
overlayfs in a private mount namespace, real processes), then exactly that change set is applied
to the workspace and recorded; undo puts the workspace back; a path the user changed while the
command ran is a conflict, left alone."""

from __future__ import annotations

import os
import stat
import subprocess
import time
from pathlib import Path

import pytest

from agent_cli.log.changes import ChangeSet
from agent_cli.sandbox.landlock import Prepared
from agent_cli.sandbox.overlay import Layer, available, confinement, popen_in_layer
from agent_cli.undo.restore import apply, make_plan
from agent_cli.undo.store import Store
from agent_cli.undo.upper import apply_upper
from tests.undo.test_undo import tree_hash


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src" / "deep").mkdir(parents=True)
    (root / "src" / "a.txt").write_text("a\n")
    (root / "src" / "deep" / "b.txt").write_text("b\n")
    (root / "old.txt").write_text("old\n")
    (root / "run.sh").write_text("echo\n")
    (root / "gone").mkdir()
    (root / "gone" / "x.txt").write_text("x\n")
    (root / "repl").mkdir()
    (root / "repl" / "keep.txt").write_text("k\n")
    (root / "repl" / "drop.txt").write_text("d\n")
    os.symlink("src/a.txt", root / "link")
    return root


def run(ws: Path, tmp: Path, command: str, confine: object = None) -> tuple[Layer, int, int]:
    if not available(tmp / "probe")[0]:
        pytest.fail(f"overlays are refused here: {available(tmp / 'probe')[1]}")
    layer = Layer.make(tmp / "layers")
    since = time.time_ns()
    proc = popen_in_layer(layer, ws, ["/bin/sh", "-c", command], cwd=str(ws),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, confine=confine)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 0, out
    return layer, since, proc.returncode


def test_writes_land_in_the_layer_and_exactly_that_change_set_is_applied(ws: Path,
                                                                         tmp_path: Path) -> None:
    before = tree_hash(ws)
    layer, since, _ = run(ws, tmp_path, (
        "printf A > src/a.txt && rm -rf gone && mv old.txt new.txt && chmod 755 run.sh && "
        "mkdir -p fresh && printf n > fresh/n.txt && ln -sf deep/b.txt src/l2 && "
        "rm -rf repl && mkdir repl && printf k2 > repl/keep.txt && rm link && mkfifo link"))
    assert tree_hash(ws) == before  # nothing reached the workspace yet
    store = Store()
    applied = apply_upper(layer.upper, ws, store, since)
    layer.remove()
    by = {c.path: c.change for c in applied.changes}
    assert by["src/a.txt"] == "modified"
    assert by["gone"] == "deleted" and by["gone/x.txt"] == "deleted"
    assert by["old.txt"] == "deleted" and by["new.txt"] == "created"
    assert by["run.sh"] == "mode"
    assert by["fresh"] == "created" and by["fresh/n.txt"] == "created"
    assert by["src/l2"] == "created"
    assert by["repl/drop.txt"] == "deleted" and by["repl/keep.txt"] == "modified"
    assert by["link"] == "modified"
    assert "src/deep/b.txt" not in by and "src" not in by  # a merged folder is no change
    assert (ws / "src" / "a.txt").read_text() == "A"
    assert not (ws / "gone").exists() and (ws / "new.txt").read_text() == "old\n"
    assert stat.S_IMODE((ws / "run.sh").stat().st_mode) == 0o755
    assert not (ws / "repl" / "drop.txt").exists()
    assert stat.S_ISFIFO((ws / "link").lstat().st_mode)
    # and the record undoes it exactly
    cs = ChangeSet("toolu_o", "run_command", 0.0, str(ws), applied.changes)
    plan = make_plan([cs], ws, store)
    assert plan.conflicts == []
    apply(plan, store)
    assert tree_hash(ws) == before


def test_a_path_the_user_changed_meanwhile_is_a_conflict(ws: Path, tmp_path: Path) -> None:
    layer, since, _ = run(ws, tmp_path, "printf mine > src/a.txt && printf t > other.txt")
    (ws / "src" / "a.txt").write_text("the user's edit\n")  # after the command started
    applied = apply_upper(layer.upper, ws, Store(), since)
    assert applied.conflicts == ["src/a.txt"]
    assert (ws / "src" / "a.txt").read_text() == "the user's edit\n"
    assert [c.path for c in applied.changes] == ["other.txt"]
    yes = apply_upper(layer.upper, ws, Store(), since, overwrite=lambda rel: True)
    assert (ws / "src" / "a.txt").read_text() == "mine" and yes.conflicts == []
    layer.remove()


def test_mount_first_confine_second_landlock_names_the_merged_view(ws: Path,
                                                                   tmp_path: Path) -> None:
    from agent_cli.sandbox.policy import probe

    support = probe()
    outside = tmp_path / "outside"
    outside.mkdir()
    rules = [("/", "read"), (str(ws), "write")]
    confine = confinement(Prepared(support.abi, rules=rules, write_files=["/dev/null"],
                                        network=False, inside=str(ws)))
    layer, since, _ = run(ws, tmp_path, f"printf w > made.txt && "
                          f"! printf x 2>/dev/null > {outside}/escape.txt", confine)
    assert not (outside / "escape.txt").exists()
    applied = apply_upper(layer.upper, ws, Store(), since)
    assert [c.path for c in applied.changes] == ["made.txt"]
    layer.remove()


def test_the_switch_forces_the_fallback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_CLI_UNDO_OVERLAY", "off")
    assert available(tmp_path) == (False, "AGENT_CLI_UNDO_OVERLAY=off")


def test_an_approved_command_in_a_session_runs_in_its_layer_and_undo_restores(
        ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole path: Session, gate, run_command confined in the layer, effects from the upper
    layer only, then `agent-cli undo` as a process; a planted hook is recorded and undone."""
    import json

    from tests.undo.test_undo import run_session, sh, undo_cli

    monkeypatch.setenv("AGENT_CLI_UNDO_OVERLAY", "on")
    layers: list[Layer] = []
    make = Layer.make.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(Layer, "make", classmethod(
        lambda cls, base: layers.append(make(cls, base)) or layers[-1]))
    (ws / ".git" / "hooks").mkdir(parents=True)
    (ws / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    before = tree_hash(ws)
    log = tmp_path / "s.jsonl"
    seen = run_session(ws, log, [("toolu_ov", "run_command", sh(
        "printf A > src/a.txt && rm -rf gone && printf '#!/bin/sh\\n' > .git/hooks/pre-commit"
        " && printf x > .git/HEAD && printf t > \"$TMPDIR/t\""
        " && grep -q \"^overlay $PWD overlay \" /proc/self/mounts"))])
    from agent_cli import events as ev

    [effects] = [e for e in seen if isinstance(e, ev.Effects)]
    paths = {c.path for c in effects.changes}
    assert paths == {"src/a.txt", "gone", "gone/x.txt", ".git/hooks/pre-commit"}
    assert not any(isinstance(e, ev.Notice) and e.kind == "undo" for e in seen)
    [result_event] = [e for e in seen if isinstance(e, ev.ToolResultEvent)]
    assert not result_event.is_error, result_event.content  # it ran on the overlay
    assert (ws / "src" / "a.txt").read_text() == "A"
    assert (ws / ".git" / "HEAD").read_text() == "x"  # applied, though not recorded
    result = undo_cli(str(log), tmp=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    after = tree_hash(ws)
    assert {k: v for k, v in after.items() if k != ".git/HEAD"} == \
        {k: v for k, v in before.items() if k != ".git/HEAD"}
    assert layers and all(layer.fd == -1 for layer in layers)  # each let go (memory freed)
    assert json.loads(log.read_text().splitlines()[-1])["type"] == "undo"


def test_a_refused_overlay_is_said_once_at_start(ws: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    from agent_cli import events as ev
    from agent_cli.sandbox import overlay
    from tests.undo.test_undo import run_session, sh

    monkeypatch.setenv("AGENT_CLI_UNDO_OVERLAY", "on")
    monkeypatch.setattr(overlay, "_AVAILABLE", (False, "overlayfs: Operation not permitted"))
    log = tmp_path / "s.jsonl"
    seen = run_session(ws, log, [("toolu_1", "run_command", sh("printf 1 > one.txt")),
                                 ("toolu_2", "run_command", sh("printf 2 > two.txt"))])
    notes = [e.message for e in seen if isinstance(e, ev.Notice) and "overlay" in e.message]
    assert len(notes) == 1 and "Operation not permitted" in notes[0]
    effects = [e for e in seen if isinstance(e, ev.Effects)]
    assert [[c.path for c in e.changes] for e in effects] == [["one.txt"], ["two.txt"]]


@pytest.mark.parametrize("answer", ["n", "y"])
def test_the_user_edits_a_file_while_the_command_runs(ws: Path, tmp_path: Path, answer: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A real command in its layer, a real edit in the workspace meanwhile: the path is named,
    and the command's version replaces the user's only on a yes."""
    import threading

    from agent_cli import events as ev
    from agent_cli.approval import ScriptedApprover
    from agent_cli.config import Settings
    from agent_cli.providers.scripted import ScriptedProvider
    from agent_cli.session import Session, load_registry
    from tests.scripts import done, tool_use
    from tests.undo.test_undo import sh

    monkeypatch.setenv("AGENT_CLI_UNDO_OVERLAY", "on")
    go = tmp_path / "go"
    command = (f"printf cmd > src/a.txt && printf s > started && "
               f"while [ ! -e {go} ]; do sleep 0.05; done && printf o > other.txt")
    config = Settings(provider="scripted")
    registry, _ = load_registry(config)
    seen: list[ev.AnyEvent] = []
    session = Session(config, workspace=ws, provider=ScriptedProvider(
        [tool_use("toolu_c", "run_command", sh(command)), done("done")]), registry=registry,
        approver=ScriptedApprover(["y"]), sinks=[seen.append], log_path=tmp_path / "s.jsonl")
    asked: list[str] = []
    assert session.effects is not None
    session.effects.overwrite = lambda rel: asked.append(rel) or answer == "y"  # type: ignore[func-returns-value]
    session.start()
    worker = threading.Thread(target=session.send, args=("go",))
    worker.start()

    def started() -> bool:
        layer = session.sandbox.layer
        try:
            return layer is not None and (layer.upper / "started").exists()
        except OSError:  # (the layer is being let go)
            return False

    deadline = time.monotonic() + 60
    while not started() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert started(), "the command never started in its layer"
    (ws / "src" / "a.txt").write_text("the user's edit\n")
    go.write_text("go")
    worker.join(120)
    session.close()
    assert asked == ["src/a.txt"]
    assert (ws / "other.txt").read_text() == "o"
    [effects] = [e for e in seen if isinstance(e, ev.Effects)]
    if answer == "n":
        assert (ws / "src" / "a.txt").read_text() == "the user's edit\n"
        assert "src/a.txt" not in {c.path for c in effects.changes}
        notes = [e.message for e in seen if isinstance(e, ev.Notice) and e.kind == "undo"]
        assert any("src/a.txt" in n and "while the command ran" in n for n in notes)
    else:
        assert (ws / "src" / "a.txt").read_text() == "cmd"
        [ch] = [c for c in effects.changes if c.path == "src/a.txt"]
        assert ch.before is not None and ch.before.size == len("the user's edit\n")


def test_big_new_content_is_hashed_not_stored_and_the_old_content_is_kept(
        ws: Path, tmp_path: Path) -> None:
    layer, since, _ = run(ws, tmp_path, "head -c 3000000 /dev/zero > big.bin && "
                          "printf new > src/a.txt")
    store = Store(tmp_path / "store")
    applied = apply_upper(layer.upper, ws, store, since)
    layer.remove()
    by = {c.path: c for c in applied.changes}
    big = by["big.bin"].after
    assert big is not None and big.size == 3_000_000 and not store.has(big.sha256 or "")
    assert (ws / "big.bin").stat().st_size == 3_000_000
    old = by["src/a.txt"].before
    assert old is not None and store.read(old.sha256 or "") == b"a\n"
    assert store.size()[1] < 100_000


def test_the_session_ruleset_confines_every_command_in_its_own_merged_view(
        ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The rules outside the workspace are added once to a ruleset kept for the session; each
    command adds its own merged view's rule: every command can write its view and nothing
    outside, also across the ruleset being made afresh."""
    from agent_cli.sandbox.policy import probe

    monkeypatch.setattr(Prepared, "REBUILD_AFTER", 2)
    outside = tmp_path / "outside"
    outside.mkdir()
    rules = Prepared(probe().abi, rules=[("/", "read"), (str(ws), "write")],
                     write_files=["/dev/null"], network=False, inside=str(ws))
    try:
        for i in range(5):
            layer, since, _ = run(ws, tmp_path, f"printf {i} > made{i}.txt && "
                                  f"! printf x 2>/dev/null > {outside}/escape{i}.txt",
                                  confinement(rules))
            applied = apply_upper(layer.upper, ws, Store(tmp_path / "store"), since)
            layer.remove()
            assert [c.path for c in applied.changes] == [f"made{i}.txt"]
            assert (ws / f"made{i}.txt").read_text() == str(i)
    finally:
        rules.close()
    assert list(outside.iterdir()) == []


def test_changes_that_cannot_be_applied_are_kept_on_disk(ws: Path, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """The layer lives in memory only: when its changes cannot be applied, what the command
    wrote is copied to agent-cli's folder (and the user is told where) before it is let go."""
    from agent_cli import events as ev
    from agent_cli.undo import upper
    from tests.undo.test_undo import run_session, sh

    def refuse(*_a: object, **_k: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setenv("AGENT_CLI_UNDO_OVERLAY", "on")
    monkeypatch.setattr(upper, "apply_upper", refuse)
    seen = run_session(ws, tmp_path / "s.jsonl", [("toolu_k", "run_command", sh(
        "mkdir -p out && printf kept > out/k.txt && rm old.txt && ln -s out/k.txt ln"))])
    [note] = [e.message for e in seen if isinstance(e, ev.Notice) and e.kind == "undo"]
    assert "No space left on device" in note and "kept in " in note
    kept = Path(note.split("kept in ", 1)[1])
    assert (kept / "out" / "k.txt").read_text() == "kept"
    assert os.readlink(kept / "ln") == "out/k.txt"
    assert not (kept / "old.txt").exists()  # a deletion has no content to keep
    assert (ws / "old.txt").read_text() == "old\n" and not (ws / "out").exists()


def test_a_full_layer_is_named_as_the_layer_not_the_disk(
        ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The layer is held in memory: a command that fills it is told so (and how to avoid it),
    instead of leaving the user and the model to look for a full disk."""
    from agent_cli import events as ev
    from agent_cli.sandbox import overlay
    from agent_cli.sandbox.diagnose import LAYER_FULL
    from tests.undo.test_undo import run_session, sh

    monkeypatch.setenv("AGENT_CLI_UNDO_OVERLAY", "on")
    monkeypatch.setattr(overlay, "LAYER_OPTIONS", b"mode=0700,size=1m")
    seen = run_session(ws, tmp_path / "s.jsonl", [("toolu_big", "run_command", sh(
        "head -c 3000000 /dev/zero > big.bin"))])
    [result] = [e for e in seen if isinstance(e, ev.ToolResultEvent)]
    assert result.is_error and "No space left on device" in result.content, result.content
    assert LAYER_FULL in result.content

