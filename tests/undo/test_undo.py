"""Undo end to end: real files, real commands through the real Session (scripted provider and
approver), then `agent-cli undo` as a real process; trees compared by hashing every file."""

from __future__ import annotations

import hashlib
import json
import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_cli import events as ev
from agent_cli.approval import ScriptedApprover
from agent_cli.config import Settings
from agent_cli.providers.scripted import ScriptedProvider
from agent_cli.session import Session, load_registry
from tests.conftest import REPO
from tests.scripts import done, tool_use


def tree_hash(root: Path) -> dict[str, str]:
    """Every path under root: file content + mode, link target, folder mode."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            st = p.lstat()
            if stat.S_ISLNK(st.st_mode):
                out[rel] = "link:" + os.readlink(p)
            elif stat.S_ISDIR(st.st_mode):
                out[rel] = f"dir:{stat.S_IMODE(st.st_mode):o}"
            else:
                digest = hashlib.sha256(p.read_bytes()).hexdigest()
                out[rel] = f"file:{stat.S_IMODE(st.st_mode):o}:{digest}"
    return out


def run_session(ws: Path, log: Path, calls: list[tuple[str, str, dict[str, Any]]],
                answers: list[str] | None = None, **settings: Any) -> list[ev.AnyEvent]:
    """One turn with these calls (one per reply), each approved unless `answers` says."""
    replies = [tool_use(i, n, a) for i, n, a in calls] + [done("done")]
    config = Settings(provider="scripted", **settings)
    registry, report = load_registry(config)
    assert report.errors == []
    seen: list[ev.AnyEvent] = []
    session = Session(config, workspace=ws, provider=ScriptedProvider(replies),
                      registry=registry,
                      approver=ScriptedApprover(answers if answers is not None
                                                else ["y"] * len(calls)),
                      sinks=[seen.append], log_path=log)
    session.start()
    session.send("go")
    session.close()
    return seen


def sh(command: str) -> dict[str, Any]:
    return {"command": command, "timeout_s": 60}


def undo_cli(*args: str, answers: str | None = "y\n", tmp: Path | None = None,
             ) -> subprocess.CompletedProcess[str]:
    extra: list[str] = []
    if answers is not None:
        assert tmp is not None
        f = tmp / f"answers-{len(list(tmp.glob('answers-*')))}.txt"
        f.write_text(answers)
        extra = ["--answers", str(f)]
    return subprocess.run([sys.executable, "-m", "agent_cli", "undo", *args, *extra],
                          capture_output=True, text=True, cwd=str(REPO), timeout=120,
                          env={**os.environ, "COLUMNS": "120"}, stdin=subprocess.DEVNULL)


def events_of(log: Path, kind: str) -> list[dict[str, Any]]:
    return [r for r in map(json.loads, log.read_text().splitlines()) if r["type"] == kind]


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "src").mkdir(parents=True)
    (root / "src" / "keep.py").write_text("print('keep')\n")
    (root / "src" / "edit.txt").write_text("one\ntwo\nthree\n")
    (root / "old.txt").write_text("to be renamed\n")
    (root / "gone").mkdir()
    (root / "gone" / "a.txt").write_text("a\n")
    (root / "gone" / "deep").mkdir()
    (root / "gone" / "deep" / "b.bin").write_bytes(bytes(range(256)) * 40)
    (root / "script.sh").write_text("#!/bin/sh\necho hi\n")
    os.chmod(root / "script.sh", 0o644)
    (root / "blob.bin").write_bytes(b"\x00\xff" * 5000)
    os.symlink("src/keep.py", root / "link")
    return root


# --------------------------------------------------------------------------- round trips


def test_command_effects_are_recorded_and_undone_byte_identical(ws: Path, tmp_path: Path) -> None:
    before = tree_hash(ws)
    log = tmp_path / "s.jsonl"
    command = ("mv old.txt new-name.txt && rm -rf gone && chmod 755 script.sh && "
               "mkdir -p fresh/sub && printf 'new\\n' > fresh/sub/n.txt && "
               "printf 'ONE\\ntwo\\n' > src/edit.txt && head -c 3000 /dev/urandom > blob.bin && "
               "ln -sf edit.txt src/l2")
    run_session(ws, log, [("toolu_cmd", "run_command", sh(command))])
    assert tree_hash(ws) != before
    [effects] = events_of(log, "effects")
    assert effects["id"] == "toolu_cmd" and effects["scope"] == "tree"
    by_path = {c["path"]: c for c in effects["changes"]}
    assert by_path["old.txt"]["change"] == "deleted"
    assert by_path["new-name.txt"]["change"] == "created"
    assert by_path["gone"]["change"] == "deleted"
    assert by_path["gone/deep/b.bin"]["change"] == "deleted"
    assert by_path["script.sh"]["change"] == "mode"
    assert by_path["fresh/sub/n.txt"]["change"] == "created"
    assert by_path["fresh"]["change"] == "created"
    assert by_path["src/edit.txt"]["change"] == "modified"
    assert by_path["blob.bin"]["change"] == "modified"
    assert by_path["src/edit.txt"]["before"]["sha256"] == hashlib.sha256(
        b"one\ntwo\nthree\n").hexdigest()
    assert "src/keep.py" not in by_path
    # effects come after the call ran and before its result
    kinds = [r["type"] for r in map(json.loads, log.read_text().splitlines())]
    assert kinds.index("effects") < kinds.index("tool_result")

    result = undo_cli(str(log), tmp=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Undo this? [y/N]" in result.stdout
    assert "+three" in result.stdout  # the diff it applies
    assert tree_hash(ws) == before

    # the undo is logged in the same log, chained and signed, as one record (no new session)
    [undo] = events_of(log, "undo")
    assert undo["undid"] == ["toolu_cmd"]
    assert [r["type"] for r in map(json.loads, log.read_text().splitlines())][-2:] == \
        ["session_end", "undo"]
    assert subprocess.run([sys.executable, "-m", "agent_cli", "log", "verify", str(log)],
                          capture_output=True, cwd=str(REPO)).returncode == 0
    after_cmd = {k: v for k, v in tree_hash(ws).items()}
    # a second undo steps back further: there is nothing further, and it does not redo
    again = undo_cli(str(log), tmp=tmp_path)
    assert again.returncode == 1 and "Nothing to undo" in again.stdout + again.stderr
    assert tree_hash(ws) == after_cmd
    # redo is its own command
    redone = undo_cli(str(log), "--redo", tmp=tmp_path)
    assert redone.returncode == 0, redone.stdout + redone.stderr
    assert "Redo this? [y/N]" in redone.stdout
    assert (ws / "fresh" / "sub" / "n.txt").read_text() == "new\n"
    assert not (ws / "gone").exists()
    # and back once more
    third = undo_cli(str(log), tmp=tmp_path)
    assert third.returncode == 0, third.stdout + third.stderr
    assert tree_hash(ws) == before


def test_write_file_records_only_its_target_and_new_folders(ws: Path, tmp_path: Path) -> None:
    before = tree_hash(ws)
    log = tmp_path / "s.jsonl"
    run_session(ws, log, [
        ("toolu_w", "write_file", {"path": "docs/new/readme.md", "content": "hello\n"}),
        ("toolu_e", "edit_file", {"path": "src/edit.txt", "old_string": "two",
                                  "new_string": "TWO", "replace_all": False}),
    ])
    effects = events_of(log, "effects")
    assert [e["scope"] for e in effects] == ["file", "file"]
    assert {c["path"] for c in effects[0]["changes"]} == {"docs", "docs/new",
                                                          "docs/new/readme.md"}
    assert [c["path"] for c in effects[1]["changes"]] == ["src/edit.txt"]
    listed = undo_cli("--list", str(log), answers=None)
    assert listed.returncode == 0, listed.stderr
    lines = [x for x in listed.stdout.splitlines() if x.startswith("toolu_")]
    assert [x.split()[0] for x in lines] == ["toolu_e", "toolu_w"]  # newest first
    result = undo_cli(str(log), "--to", "toolu_w", tmp=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert tree_hash(ws) == before


def test_a_file_changed_since_is_named_and_left_alone(ws: Path, tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    run_session(ws, log, [("toolu_c", "run_command",
                           sh("printf 'x\\n' > src/edit.txt && printf 'y\\n' > made.txt"))])
    (ws / "src" / "edit.txt").write_text("the user's own edit\n")
    # no to the partial undo: nothing is touched
    refused = undo_cli(str(log), answers="n\n", tmp=tmp_path)
    assert refused.returncode == 1
    assert "src/edit.txt" in refused.stdout and "changed since toolu_c" in refused.stdout
    assert "Undo the other 1 change" in refused.stdout
    assert (ws / "made.txt").exists()
    # yes: the rest goes back, the user's edit stays
    partial = undo_cli(str(log), tmp=tmp_path)
    assert partial.returncode == 0, partial.stdout + partial.stderr
    assert not (ws / "made.txt").exists()
    assert (ws / "src" / "edit.txt").read_text() == "the user's own edit\n"
    [undo] = events_of(log, "undo")
    assert any(x.startswith("src/edit.txt") for x in undo["left_alone"])


def test_no_terminal_and_no_answers_refuses(ws: Path, tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    run_session(ws, log, [("toolu_c", "run_command", sh("printf 'y\\n' > made.txt"))])
    result = undo_cli(str(log), answers=None)
    assert result.returncode == 1
    assert "No terminal to confirm on" in result.stdout
    assert (ws / "made.txt").exists()
    assert events_of(log, "undo") == []
    assert "--yes" not in undo_cli("--help", answers=None).stdout


def test_last_finds_the_newest_session_of_the_workspace(ws: Path, tmp_path: Path) -> None:
    sessions = Path(os.environ["AGENT_CLI_HOME"]) / "sessions"
    run_session(ws, sessions / "a.jsonl", [("toolu_c", "run_command",
                                            sh("printf 'y\\n' > made.txt"))])
    run_session(ws, sessions / "b.jsonl", [("toolu_r", "read_file", {"path": "old.txt"})])
    f = tmp_path / "ans.txt"
    f.write_text("y\n")
    result = subprocess.run([sys.executable, "-m", "agent_cli", "undo", "--last",
                             "--answers", str(f)], capture_output=True, text=True,
                            cwd=str(ws), timeout=120, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stdout + result.stderr
    assert not (ws / "made.txt").exists()


def test_gitignored_and_oversize_files_are_named_in_the_panel(
        ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_CLI_UNDO_OVERLAY", "off")  # the snapshot path's limits
    (ws / ".gitignore").write_text("node_modules/\n*.log\n!keep.log\n")
    (ws / "node_modules" / "pkg").mkdir(parents=True)
    (ws / "node_modules" / "pkg" / "index.js").write_text("x")
    (ws / "debug.log").write_text("log")
    (ws / "keep.log").write_text("kept")
    (ws / "big.dat").write_bytes(b"\x01" * (2 * 1024 * 1024 + 1))
    log = tmp_path / "s.jsonl"
    approver_seen = run_session(ws, log, [("toolu_c", "run_command",
                                           sh("printf z > node_modules/pkg/index.js && "
                                              "printf z > keep.log && printf z > debug.log"))],
                                undo_file_cap_mb=2)
    [approval] = [e for e in approver_seen if isinstance(e, ev.Approval)]
    note = approval.panel_extra["undo"]
    assert note.startswith("undo will not cover: ")
    assert "node_modules/ (ignored)" in note and "debug.log (ignored)" in note
    assert "1 file over 2 MB" in note
    [effects] = events_of(log, "effects")
    assert [c["path"] for c in effects["changes"]] == ["keep.log"]


def test_sandbox_off_says_effects_outside_cannot_be_undone(ws: Path, tmp_path: Path) -> None:
    from agent_cli.undo.recorder import OUTSIDE_NOTE, WorkspaceRecorder

    recorder = WorkspaceRecorder(ws, sandbox="off")
    registry, _ = load_registry(Settings())
    call = registry.validate("toolu_x", "run_command", {"command": "true"})
    assert OUTSIDE_NOTE in recorder.notes(call)["undo"]
    assert "effects outside the workspace cannot be undone" in OUTSIDE_NOTE
    on = WorkspaceRecorder(ws)
    assert on.notes(call) == {}


def test_on_the_overlay_path_the_panel_note_walks_nothing(ws: Path) -> None:
    from agent_cli.undo.recorder import OUTSIDE_NOTE, WorkspaceRecorder

    recorder = WorkspaceRecorder(ws)
    assert recorder.overlay() == (True, "")
    walked: list[object] = []
    recorder.snapper.tree = lambda *a: walked.append(a)  # type: ignore[assignment,method-assign,return-value]
    registry, _ = load_registry(Settings())
    call = registry.validate("toolu_x", "run_command", {"command": "true"})
    assert recorder.notes(call) == {} and walked == []
    assert WorkspaceRecorder(ws, sandbox="off").notes(call) == {"undo": OUTSIDE_NOTE}


def test_agent_cli_home_inside_the_workspace_is_never_recorded(ws: Path, tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    home = ws / ".agent-home"
    monkeypatch.setenv("AGENT_CLI_HOME", str(home))
    log = tmp_path / "s.jsonl"
    # (The sandbox carves AGENT_CLI_HOME out of the workspace: the workspace's top folder can
    # then be listed, not written; its other folders can.)
    (ws / "src").mkdir(exist_ok=True)
    run_session(ws, log, [("toolu_c", "run_command", sh("printf 'y\\n' > src/made.txt"))])
    [effects] = events_of(log, "effects")
    assert [c["path"] for c in effects["changes"]] == ["src/made.txt"]


def test_a_symlink_out_of_the_workspace_is_recorded_as_a_link(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside")
    os.symlink(str(outside), ws / "out")
    log = tmp_path / "s.jsonl"
    run_session(ws, log, [("toolu_c", "run_command", sh("rm out && printf q > q.txt"))])
    [effects] = events_of(log, "effects")
    paths = {c["path"]: c for c in effects["changes"]}
    assert set(paths) == {"out", "q.txt"}
    assert paths["out"]["before"]["kind"] == "link"
    result = undo_cli(str(log), tmp=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert os.readlink(ws / "out") == str(outside)
    assert (outside / "secret.txt").read_text() == "outside"


def test_a_damaged_store_object_is_never_restored(ws: Path, tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    run_session(ws, log, [("toolu_c", "run_command", sh("printf 'x\\n' > src/edit.txt"))])
    [effects] = events_of(log, "effects")
    sha = effects["changes"][0]["before"]["sha256"]
    obj = Path(os.environ["AGENT_CLI_HOME"]) / "store" / "objects" / sha[:2] / sha[2:]
    os.chmod(obj, 0o600)
    obj.write_bytes(b"tampered\n")
    result = undo_cli(str(log), tmp=tmp_path)
    assert result.returncode == 1
    assert "damaged" in result.stdout
    assert (ws / "src" / "edit.txt").read_text() == "x\n"


def test_store_layout_is_private(ws: Path, tmp_path: Path) -> None:
    run_session(ws, tmp_path / "s.jsonl", [("toolu_c", "run_command", sh("true"))])
    store = Path(os.environ["AGENT_CLI_HOME"]) / "store"
    for p in [store, *store.rglob("*")]:
        mode = stat.S_IMODE(p.stat().st_mode)
        assert mode == (0o700 if p.is_dir() else 0o600), (p, oct(mode))
