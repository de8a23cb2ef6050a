"""`agent-cli eval` throughput: trials per minute on the example suite, serial and with --jobs 2.

    python bench/bench_eval.py [--trials 5] [--runs 3]

Each run is the real command in a child process (`python -m agent_cli eval
examples/eval/tasks.toml --trials K --output json`) in its own AGENT_CLI_HOME, so the figure
includes start-up, the copies of the workspaces, the session logs with their fsyncs and, for
--jobs, the worker processes' own start-up. The example suite is scripted (no network). The
reports of the serial and the parallel runs are compared too: they must be the same.
Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
SUITE = REPO / "examples" / "eval" / "tasks.toml"


def run(trials: int, jobs: int, home: Path, logs: Path) -> tuple[float, dict[str, Any]]:
    env = dict(os.environ, AGENT_CLI_HOME=str(home))
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "agent_cli", "eval", str(SUITE), "--trials",
                           str(trials), "--jobs", str(jobs), "--output", "json", "--log-dir",
                           str(logs), "--approve-task-answers"], capture_output=True,
                          text=True, env=env, cwd=REPO, timeout=1800, check=False)
    wall = time.perf_counter() - start
    if not proc.stdout.strip():
        raise SystemExit(f"eval failed: {proc.stderr}")
    return wall, json.loads(proc.stdout)


def normalised(report: dict[str, Any]) -> str:
    for task in report["tasks"]:
        for trial in task["trials"]:
            trial["log"] = Path(trial["log"]).name
    return json.dumps(report, sort_keys=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=5, help="trials per task (default 5)")
    parser.add_argument("--runs", type=int, default=3, help="repeats of each mode (default 3)")
    args = parser.parse_args()
    print(f"eval throughput on {SUITE.relative_to(REPO)}, --trials {args.trials}, "
          f"{os.cpu_count()} CPUs, median of {args.runs} runs")
    reports: dict[int, str] = {}
    with tempfile.TemporaryDirectory(prefix="bench-eval-") as tmp:
        root = Path(tmp)
        for jobs in (1, 2):
            walls: list[float] = []
            count = 0
            for i in range(args.runs):
                home = root / f"home-{jobs}-{i}"
                home.mkdir()
                wall, report = run(args.trials, jobs, home, root / f"logs-{jobs}-{i}")
                walls.append(wall)
                count = report["trials"]
                reports[jobs] = normalised(report)
            med = statistics.median(walls)
            print(f"  --jobs {jobs}: {count} trials in {med:.2f} s (min {min(walls):.2f}, "
                  f"max {max(walls):.2f}) = {count / med * 60:,.0f} trials per minute")
    print(f"  parallel report identical to serial: {reports[1] == reports[2]}")


if __name__ == "__main__":
    main()
