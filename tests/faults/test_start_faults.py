"""Faults met before the first turn: a read-only or missing AGENT_CLI_HOME, a full disk under the
log key or under `--log FILE`, a process out of file descriptors. Each is one sentence and exit
10 (README, "Exit codes"), with no traceback and no file left behind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agent_cli.log.keys import log_key
from agent_cli.write_faults import EXIT_CODE, WriteFault
from tests.faults.conftest import SmallDisk

REPO = Path(__file__).resolve().parents[2]
SCRIPT = [{"content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn"}]


def run_cli(tmp_path: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps(SCRIPT), encoding="utf-8")
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    env = {**os.environ, "AGENT_CLI_HOME": str(home), "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "agent_cli", "run", "--provider", "scripted",
                           "--script", str(script), "--workspace", str(ws), *args, "hello"],
                          env=env, cwd=REPO, capture_output=True, text=True, timeout=120)


def one_sentence(proc: subprocess.CompletedProcess[str]) -> str:
    assert proc.returncode == EXIT_CODE, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr
    said = " ".join(proc.stderr.split())  # (the console wraps long lines)
    assert said.count("error:") == 1 and said.startswith("error: Could not write"), said
    assert said.endswith("."), said
    return said


def test_a_read_only_home_is_one_sentence_at_start(tmp_path: Path, disk: SmallDisk) -> None:
    home = disk.root / "home"
    home.mkdir()
    disk.read_only()
    said = one_sentence(run_cli(tmp_path, home))
    assert "read-only file system" in said and str(disk.root) in said.replace(" ", "")


def test_a_missing_home_on_a_read_only_disk_is_one_sentence(tmp_path: Path,
                                                            disk: SmallDisk) -> None:
    disk.read_only()
    said = one_sentence(run_cli(tmp_path, disk.root / "missing" / "home"))
    assert "read-only file system" in said


def test_log_on_a_full_disk_is_refused_before_the_first_turn(tmp_path: Path,
                                                             disk: SmallDisk) -> None:
    disk.fill()
    target = disk.root / "chosen.jsonl"
    said = one_sentence(run_cli(tmp_path, tmp_path / "home", "--log", str(target)))
    assert str(target) in said.replace(" ", "") and "is full: free space" in said
    assert disk.debris() == [], "the refused log (or a part of it) was left behind"


def test_the_log_key_on_a_full_disk_leaves_no_temporary_file(disk: SmallDisk,
                                                             home_on_disk: Path) -> None:
    home_on_disk.mkdir()
    disk.fill()
    with pytest.raises(WriteFault) as refused:
        log_key(create=True)
    assert f"the log key {home_on_disk / 'log.key'}" in str(refused.value)
    assert "is full" in str(refused.value)
    assert os.listdir(home_on_disk) == [], "a .log.key.<random> was left behind"
    disk.free()
    assert log_key(create=True) is not None
    assert os.listdir(home_on_disk) == ["log.key"]


EMFILE_PROBE = r'''
import os, resource, sys
from pathlib import Path
from agent_cli.log.writer import SessionLog
from agent_cli.write_faults import WriteFault
from agent_cli.log.keys import log_key

log_key(create=True)
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))
held = []
try:
    while True:
        held.append(os.open(os.devnull, os.O_RDONLY))
except OSError:
    pass
try:
    SessionLog(Path(sys.argv[1]))
except WriteFault as e:
    print(e)
    sys.exit(e.exit_code)
sys.exit(0)
'''


def test_no_file_descriptors_left_is_one_sentence(tmp_path: Path) -> None:
    # (no mount needed: RLIMIT_NOFILE is lowered inside the child, which then uses them all)
    proc = subprocess.run([sys.executable, "-c", EMFILE_PROBE, str(tmp_path / "s.jsonl")],
                          cwd=REPO, capture_output=True, text=True, timeout=60,
                          env={**os.environ, "AGENT_CLI_HOME": str(tmp_path / "home")})
    assert proc.returncode == EXIT_CODE, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "no file descriptors left" in proc.stdout and "ulimit -n" in proc.stdout
