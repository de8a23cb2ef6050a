"""The snapshot path (what runs wherever the overlay cannot) records what slipped past it before:
a file that grew past the size cap, a file replaced by a FIFO, a hook planted in `.git/hooks`.
Real commands through the real Session, then `agent-cli undo` as a real process."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.undo.test_undo import events_of, run_session, sh, undo_cli

MB = 1024 * 1024


@pytest.fixture(autouse=True)
def _snapshots(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_CLI_UNDO_OVERLAY", "off")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("my notes\n")
    (root / "small.txt").write_text("small\n")
    return root


def changes_of(log: Path) -> dict[str, dict[str, Any]]:
    [effects] = events_of(log, "effects")
    return {c["path"]: c for c in effects["changes"]}


def test_a_file_grown_past_the_cap_is_a_change_and_undo_restores_it(ws: Path,
                                                                    tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    run_session(ws, log, [("toolu_big", "run_command",
                           sh("head -c 2097152 /dev/zero | tr '\\0' x > notes.txt"))],
                undo_file_cap_mb=1)
    assert (ws / "notes.txt").stat().st_size == 2 * MB
    changes = changes_of(log)
    assert list(changes) == ["notes.txt"]
    assert changes["notes.txt"]["change"] == "modified"
    assert changes["notes.txt"]["after"]["size"] == 2 * MB
    result = undo_cli(str(log), tmp=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (ws / "notes.txt").read_text() == "my notes\n"


def test_a_file_replaced_by_a_fifo_is_recorded_and_undo_restores_it(ws: Path,
                                                                    tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    run_session(ws, log, [("toolu_fifo", "run_command", sh("rm notes.txt && mkfifo notes.txt"))])
    assert stat.S_ISFIFO((ws / "notes.txt").lstat().st_mode)
    changes = changes_of(log)
    assert list(changes) == ["notes.txt"]
    assert changes["notes.txt"]["after"]["kind"] == "special"
    assert changes["notes.txt"]["before"]["kind"] == "file"
    result = undo_cli(str(log), tmp=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert stat.S_ISREG((ws / "notes.txt").lstat().st_mode)
    assert (ws / "notes.txt").read_text() == "my notes\n"


def test_a_fifo_that_was_never_covered_is_still_not_claimed(ws: Path, tmp_path: Path) -> None:
    os.mkfifo(ws / "pipe")
    log = tmp_path / "s.jsonl"
    run_session(ws, log, [("toolu_p", "run_command", sh("rm pipe && printf x > made.txt"))])
    assert list(changes_of(log)) == ["made.txt"]


def _git(ws: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid",
           "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_SYSTEM": "/dev/null"}
    return subprocess.run(["git", *args], cwd=ws, capture_output=True, text=True, env=env,
                          timeout=60, check=True)


def test_make_test_planting_a_hook_is_recorded_flagged_and_undone(ws: Path,
                                                                   tmp_path: Path) -> None:
    _git(ws, "init", "-q")
    _git(ws, "add", "-A")
    _git(ws, "commit", "-qm", "first")
    marker = tmp_path / "hook-ran"
    hook = f"#!/bin/sh\\ntouch {marker}\\n"
    (ws / "Makefile").write_text(
        "test:\n"
        f"\tprintf '{hook}' > .git/hooks/pre-commit\n"
        "\tchmod +x .git/hooks/pre-commit\n")
    log = tmp_path / "s.jsonl"
    seen = run_session(ws, log, [("toolu_make", "run_command", sh("make -s test"))])
    assert os.access(ws / ".git" / "hooks" / "pre-commit", os.X_OK)
    changes = changes_of(log)
    assert changes[".git/hooks/pre-commit"]["change"] == "created"
    assert not any(p.endswith(".sample") for p in changes)  # only what changed
    from agent_cli import events as ev
    from agent_cli.undo.flags import runs_later

    [effects] = [e for e in seen if isinstance(e, ev.Effects)]
    assert [f.path for f in runs_later(effects.changes)] == [".git/hooks/pre-commit"]

    result = undo_cli(str(log), tmp=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert ".git/hooks/pre-commit" in result.stdout
    assert not (ws / ".git" / "hooks" / "pre-commit").exists()
    (ws / "small.txt").write_text("changed\n")
    _git(ws, "commit", "-qam", "second")
    assert not marker.exists()  # the planted hook is gone: the commit ran none
    assert json.loads(log.read_text().splitlines()[-1])["type"] == "undo"


def test_git_config_is_recorded_and_the_rest_of_git_is_not(ws: Path, tmp_path: Path) -> None:
    _git(ws, "init", "-q")
    before = (ws / ".git" / "config").read_text()
    log = tmp_path / "s.jsonl"
    run_session(ws, log, [("toolu_cfg", "run_command",
                           sh("printf '[core]\\n\\thooksPath = /tmp/evil\\n' >> .git/config && "
                              "printf x > .git/description"))])
    changes = changes_of(log)
    assert list(changes) == [".git/config"]
    result = undo_cli(str(log), tmp=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (ws / ".git" / "config").read_text() == before


def test_a_gitignore_planted_in_hooks_hides_no_hook(ws: Path, tmp_path: Path) -> None:
    (ws / ".git" / "hooks").mkdir(parents=True)
    log = tmp_path / "s.jsonl"
    run_session(ws, log, [("toolu_gi", "run_command",
                           sh("printf '*\\n' > .git/hooks/.gitignore && "
                              "printf 'x' > .git/hooks/post-checkout"))])
    assert {".git/hooks/.gitignore", ".git/hooks/post-checkout"} <= set(changes_of(log))
