"""The pieces under undo: the .gitignore matcher, the store and its stat cache, prune, and a
10,000-file workspace with one approved command."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agent_cli.config import Settings
from agent_cli.undo.ignore import Matcher, parse
from agent_cli.undo.snapshot import Snapshotter
from agent_cli.undo.store import Store
from tests.conftest import REPO
from tests.undo.test_undo import run_session, sh, tree_hash, undo_cli


def ignored(rules: str, path: str, is_dir: bool = False, where: str = "") -> bool:
    return Matcher().child(where, parse(rules)).ignored(path, is_dir)


@pytest.mark.parametrize(("rules", "path", "is_dir", "expected"), [
    ("*.log", "a.log", False, True),
    ("*.log", "deep/x/a.log", False, True),
    ("*.log", "a.logx", False, False),
    ("/build", "build", True, True),
    ("/build", "src/build", True, False),
    ("build/", "build", False, False),  # trailing slash: folders only
    ("build/", "src/build", True, True),
    ("doc/*.txt", "doc/a.txt", False, True),
    ("doc/*.txt", "doc/sub/a.txt", False, False),
    ("**/logs", "a/b/logs", True, True),
    ("logs/**", "logs/a/b.txt", False, True),
    ("a/**/b", "a/b", True, True),
    ("a/**/b", "a/x/y/b", True, True),
    ("*.log\n!keep.log", "keep.log", False, False),
    ("# comment\n\n*.tmp", "x.tmp", False, True),
    ("\\#hash", "#hash", False, True),
    ("f?le", "file", False, True),
    ("[ab].txt", "b.txt", False, True),
    ("[!ab].txt", "a.txt", False, False),
])
def test_gitignore_syntax(rules: str, path: str, is_dir: bool, expected: bool) -> None:
    assert ignored(rules, path, is_dir) is expected


def test_nested_gitignore_applies_below_its_folder_and_wins() -> None:
    m = Matcher().child("", parse("*.txt\n")).child("sub", parse("!keep.txt\n"))
    assert m.ignored("a.txt", False)
    assert m.ignored("sub/b.txt", False)
    assert not m.ignored("sub/keep.txt", False)
    assert m.ignored("keep.txt", False)  # the nested rule only applies below sub/


def test_second_snapshot_of_an_unchanged_tree_reads_no_file(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    for i in range(200):
        d = ws / f"d{i % 10}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"f{i}.txt").write_text(f"file {i}\n")
    past = time.time() - 3600
    for p in ws.rglob("*.txt"):
        os.utime(p, (past, past))
    store = Store()
    first = Snapshotter(ws, store).tree()
    assert first.files == 200
    stored = store.added
    assert stored > 0
    # a fresh Snapshotter (a new session) uses the cache on disk: nothing is read or stored
    again = Snapshotter(ws, Store())
    reads: list[str] = []
    original = again.store.put_fd
    again.store.put_fd = lambda fd: reads.append("x") or original(fd)  # type: ignore[method-assign]
    second = again.tree()
    assert reads == []
    assert second.entries == first.entries


def test_a_same_size_edit_that_keeps_the_mtime_is_still_seen(tmp_path: Path) -> None:
    """The cache key includes ctime: resetting mtime after an edit does not hide it."""
    ws = tmp_path / "ws"
    ws.mkdir()
    f = ws / "a.txt"
    f.write_text("aaaa")
    past = time.time() - 3600
    os.utime(f, (past, past))
    snapper = Snapshotter(ws, Store())
    one = snapper.tree().entries["a.txt"]
    f.write_text("bbbb")
    os.utime(f, (past, past))
    two = snapper.tree().entries["a.txt"]
    assert one[1] != two[1]  # (kind, sha256, mode, size)


def test_prune_removes_old_logs_and_only_their_snapshots(tmp_path: Path) -> None:
    sessions = Path(os.environ["AGENT_CLI_HOME"]) / "sessions"
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("v1 only in the old log\n")
    run_session(ws, sessions / "old.jsonl", [("toolu_1", "run_command",
                                              sh("printf 'v2 shared\\n' > a.txt"))])
    run_session(ws, sessions / "new.jsonl", [("toolu_2", "run_command",
                                              sh("printf 'v3 new\\n' > a.txt"))])
    old_time = time.time() - 40 * 86400
    os.utime(sessions / "old.jsonl", (old_time, old_time))
    store = Store()
    objects = {sha for sha, _p in store.all_objects()}
    recs = [json.loads(x) for x in (sessions / "old.jsonl").read_text().splitlines()]
    [eff] = [r for r in recs if r["type"] == "effects"]
    only_old = eff["changes"][0]["before"]["sha256"]
    shared = eff["changes"][0]["after"]["sha256"]
    assert {only_old, shared} <= objects
    listed = subprocess.run([sys.executable, "-m", "agent_cli", "log", "list"],
                            capture_output=True, text=True, cwd=str(REPO))
    assert "undo store:" in listed.stdout
    result = subprocess.run([sys.executable, "-m", "agent_cli", "log", "prune",
                             "--older-than", "30d"], capture_output=True, text=True,
                            cwd=str(REPO))
    assert result.returncode == 0, result.stderr
    assert "Removed 1 logs" in result.stdout
    assert not (sessions / "old.jsonl").exists() and (sessions / "new.jsonl").exists()
    left = {sha for sha, _p in store.all_objects()}
    assert only_old not in left
    assert shared in left  # still referenced by the new log (its before state)
    # the new log's call can still be undone
    undo = undo_cli(str(sessions / "new.jsonl"), tmp=tmp_path)
    assert undo.returncode == 0, undo.stdout + undo.stderr
    assert (ws / "a.txt").read_text() == "v2 shared\n"


def test_prune_age_is_checked() -> None:
    bad = subprocess.run([sys.executable, "-m", "agent_cli", "log", "prune", "--older-than",
                          "soon"], capture_output=True, text=True, cwd=str(REPO))
    assert bad.returncode == 2 and "30d" in bad.stderr


def test_ten_thousand_files_and_one_approved_command(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    for i in range(10_000):
        d = ws / f"pkg{i % 100}"
        if i < 100:
            d.mkdir(parents=True)
        (d / f"m{i}.py").write_text(f"x = {i}\n")
    before = tree_hash(ws)
    log = tmp_path / "s.jsonl"
    run_session(ws, log, [("toolu_big", "run_command",
                           sh("rm pkg3/m3.py && printf 'y = 1\\n' > pkg5/m5.py && "
                              "mkdir extra && printf n > extra/n.py"))],
                **{"undo_store_cap_mb": 1024})
    recs = [json.loads(x) for x in log.read_text().splitlines()]
    [eff] = [r for r in recs if r["type"] == "effects"]
    assert sorted(c["path"] for c in eff["changes"]) == ["extra", "extra/n.py", "pkg3/m3.py",
                                                         "pkg5/m5.py"]
    result = undo_cli(str(log), tmp=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert tree_hash(ws) == before


def test_undo_off_records_nothing(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    log = tmp_path / "s.jsonl"
    run_session(ws, log, [("toolu_c", "run_command", sh("printf y > a"))], undo=False)
    assert '"effects"' not in log.read_text()
    assert Settings(undo=False).undo is False
