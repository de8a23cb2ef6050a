"""The offline demo a newcomer runs first: it must work end to end, with no key and no network."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "examples" / "demo.py"

pytestmark = pytest.mark.pty


def test_demo_runs_to_the_end_and_writes_notes(tmp_path: Path) -> None:
    out_dir = tmp_path / "demo"
    proc = subprocess.run([sys.executable, str(DEMO), "--fast", "--dir", str(out_dir),
                           "--timeout", "30"],
                          cwd=tmp_path, capture_output=True, timeout=120)
    output = proc.stdout.decode("utf-8", "replace")
    assert proc.returncode == 0, output + proc.stderr.decode("utf-8", "replace")

    notes = out_dir / "workspace" / "notes.txt"
    expected = "Summary of README.txt:\n- a demo workspace\n- writes need your yes\n"
    assert notes.read_text(encoding="utf-8") == expected
    assert "- writes need your yes" in output  # the demo shows the file it wrote
    log = out_dir / "session.jsonl"
    assert f"Session log: {log}" in output

    events = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    approvals = [e for e in events if e["type"] == "approval" and e["name"] == "write_file"]
    assert [(a["decision"], a["by"]) for a in approvals] == [("approved", "user")]
    results = {e["name"]: e for e in events if e["type"] == "tool_result"}
    assert results["write_file"]["is_error"] is False
    assert results["multiply"]["content"] == "408"
    assert [e["reason"] for e in events if e["type"] == "turn_end"] == ["end_turn"]
    assert events[-1]["type"] == "session_end"
    # the follow-up commands it prints work as printed, in a shell whose PATH may lack agent-cli
    import shlex

    shown = [line.split(":", 1)[1].strip() for line in output.splitlines()
             if line.strip().startswith(("show it again:", "check it:"))]
    assert len(shown) == 2, output
    env = {k: v for k, v in os.environ.items() if k != "AGENT_CLI_HOME"}
    env["PATH"] = "/usr/bin:/bin"
    for command in shown:
        ran = subprocess.run(shlex.split(command), cwd=tmp_path, env=env, capture_output=True,
                             text=True, timeout=120)
        assert ran.returncode == 0, (command, ran.stdout, ran.stderr)
    assert "activate" in output or "agent-cli replay" in output


def test_demo_refuses_a_folder_that_already_holds_a_run(tmp_path: Path) -> None:
    (tmp_path / "workspace").mkdir()
    proc = subprocess.run([sys.executable, str(DEMO), "--fast", "--dir", str(tmp_path)],
                          capture_output=True, timeout=60, text=True)
    assert proc.returncode == 1
    assert "already holds a demo run" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_demo_interactive_hands_the_panel_to_the_person(tmp_path: Path) -> None:
    pexpect = pytest.importorskip("pexpect")
    out_dir = tmp_path / "demo"
    child = pexpect.spawn(sys.executable, [str(DEMO), "--interactive", "--fast", "--dir",
                                           str(out_dir)],
                          dimensions=(40, 120), timeout=30, cwd=str(tmp_path))
    try:
        child.expect(rb"Run .*\? \[y/N\]")
        child.send(b"n not today\r")  # the person's own answer, not the demo's
        child.expect(b"whole demo")
        child.expect("›".encode())
        child.send(b"\x04")
        child.expect(b"notes.txt was not written")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    assert not (out_dir / "workspace" / "notes.txt").exists()
    events = [json.loads(x) for x in (out_dir / "session.jsonl").read_text().splitlines()]
    [approval] = [e for e in events if e["type"] == "approval" and e["name"] == "write_file"]
    assert (approval["decision"], approval["by"], approval["reason"]) == ("denied", "user",
                                                                          "not today")
