"""One way into each command: the second, faster path kept, measured against the one path.

    python bench/bench_paths.py [--runs 9]

`agent-cli --help` runs twice per round, in the same interleaved rounds as `python -c pass` (the
floor): as shipped (cli/main.py lays the page out without typer), and with that path switched
off by a patch made in the child before `agent_cli.cli.main.main()` runs (so typer prints it).
Printed: median wall and CPU time of each, their ratio to the floor and to each other, and the
gain in milliseconds. A second path stays only if it is the only way to meet a goal in bench/,
its gain is one a person notices (100 ms or 2x), and its tests hold under load (issue 32). The
paths folded back (`--version`, `log verify` and `replay -o jsonl` without typer, the forked
half-log verify) were measured by this script before they were removed; those figures and every
decision are in docs/benchmarks.md ("One way into each command"). The SSE reader is measured by
`bench_overhead.py --sdk-ab`, the early frame by `bench_startup.py` (key echo). Figures only.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

MAIN = "from agent_cli.cli.main import main; main()"
OFF = {
    "quick help": "import agent_cli.cli.main as m; m.quick_answer = lambda args: None; ",
}


def children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    cpu0 = children_cpu()
    t0 = time.perf_counter()
    subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   check=False)
    return time.perf_counter() - t0, children_cpu() - cpu0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=9)
    args = ap.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="agent-cli-paths-") as tmp:
        env = dict(os.environ, AGENT_CLI_HOME=str(Path(tmp) / "home"), COLUMNS="80")
        cases: list[tuple[str, str, list[str]]] = [
            ("agent-cli --help", "quick help", ["--help"]),
        ]
        for _name, switch, words in cases:  # warm-up: bytecode, file cache
            run([py, "-c", MAIN, *words], env)
            run([py, "-c", OFF[switch] + MAIN, *words], env)
        got: dict[tuple[int, str], list[tuple[float, float]]] = {}
        floors: list[tuple[float, float]] = []
        for _ in range(args.runs):
            floors.append(run([py, "-c", "pass"], env))
            for i, (_name, switch, words) in enumerate(cases):
                got.setdefault((i, "fast"), []).append(run([py, "-c", MAIN, *words], env))
                got.setdefault((i, "one"), []).append(
                    run([py, "-c", OFF[switch] + MAIN, *words], env))
        fw = statistics.median(w for w, _ in floors)
        fc = statistics.median(c for _, c in floors)
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load "
              f"{os.getloadavg()[0]:.1f}; n={args.runs}; floor python -c pass: wall "
              f"{fw * 1000:.1f} ms, cpu {fc * 1000:.1f} ms")
        print(f"{'command':<20} {'path off':<11} {'fast wall':>10} {'one wall':>10} "
              f"{'fast cpu':>9} {'one cpu':>9}  wall/floor fast, one  gain")
        for i, (name, switch, _words) in enumerate(cases):
            fwall = statistics.median(w for w, _ in got[(i, "fast")])
            owall = statistics.median(w for w, _ in got[(i, "one")])
            fcpu = statistics.median(c for _, c in got[(i, "fast")])
            ocpu = statistics.median(c for _, c in got[(i, "one")])
            print(f"{name:<20} {switch:<11} {fwall * 1000:8.0f}ms {owall * 1000:8.0f}ms "
                  f"{fcpu * 1000:7.0f}ms {ocpu * 1000:7.0f}ms  "
                  f"{fwall / fw:5.1f}x {owall / fw:5.1f}x"
                  f"  {(owall - fwall) * 1000:+5.0f} ms ({owall / fwall:.2f}x); goal "
                  f"<= 80 ms: fast {'met' if fwall <= 0.08 else 'MISSED'}, one "
                  f"{'met' if owall <= 0.08 else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
