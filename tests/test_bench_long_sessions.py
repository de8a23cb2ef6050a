"""The long-session bench, run once in its quick mode: it must complete and print every figure
(a bench that silently stops printing is a bench nobody notices is broken). Nothing here asserts
on time; the figures are README's, from the full run."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


@pytest.mark.mcp
def test_the_long_session_bench_runs_in_quick_mode_and_prints_its_figures() -> None:
    proc = subprocess.run([sys.executable, str(REPO / "bench" / "bench_long_sessions.py"),
                           "--quick"], cwd=REPO, capture_output=True, text=True, timeout=600)
    out = proc.stdout
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert out.rstrip().endswith("done"), out
    figure = (r": \d+\.\d\d s wall, \d+\.\d\d s CPU, \d+ MB peak; floor \d+\.\d\d s, "
              r"\d+\.\d\d s CPU, \d+ MB \(\d+\.\dx wall, \d+\.\dx CPU\)")
    for name in ("log verify", "replay -o jsonl", r"resume \(rebuild \+ one more turn\)",
                 r"log verify, \d+ MB", "log list", r"log list --workspace WS -n 5",
                 r"start_hub\(\) to 3 ready, and close\(\)"):
        assert re.search(name + figure, out), (name, out)
    assert "exit " not in out, out  # every child it measured succeeded
    assert "the resumed session's log verifies: yes" in out
    assert "3 of 3 ready" in out
