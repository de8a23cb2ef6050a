"""One way into each command: every second, faster path measured against the one path.

    python bench/bench_paths.py [--runs 5] [--events 100000]

The paths folded back (`--version` and `log verify` / `replay -o jsonl` without typer) were
measured by this script before they were removed; their figures are in docs/benchmarks.md.
Each pair runs the same command line twice, in the same interleaved rounds as `python -c pass`
(the floor): once as shipped, once with the fast path switched off by a patch made in the
child before `agent_cli.cli.main.main()` runs (so the command goes the one way). Printed: the
median wall and CPU time of each, their ratio to the floor and to each other, and the gain in
milliseconds. A second path stays only if it is the only way to meet a goal in bench/, its
gain is one a person notices (100 ms or 2x), and its tests hold under load (issue 32); the
decisions are in docs/benchmarks.md. The SSE reader is measured by `bench_overhead.py --sdk-ab`
and the early frame by `bench_startup.py` (key echo). Figures only; nothing is asserted.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_log import KEY, generate

MAIN = "from agent_cli.cli.main import main; main()"
OFF = {
    "quick help": "import agent_cli.cli.main as m; m.quick_answer = lambda args: None; ",
    "split verify": "import agent_cli.log.verify_split as v; v.start = lambda *a, **k: None; ",
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
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--events", type=int, default=100_000)
    args = ap.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory(prefix="agent-cli-paths-") as tmp:
        root = Path(tmp)
        home = root / "home"  # holds the key, so verify checks every MAC as it would at home
        home.mkdir()
        (home / "log.key").write_text(KEY.hex() + "\n", encoding="ascii")
        env = dict(os.environ, AGENT_CLI_HOME=str(home))
        env.pop("ANTHROPIC_API_KEY", None)
        short, long = root / "short.jsonl", root / "long.jsonl"
        generate(short, 5)
        generate(long, args.events)
        size = long.stat().st_size >> 20
        cases: list[tuple[str, str, list[str]]] = [
            ("agent-cli --help", "quick help", ["--help"]),
            ("log verify, 5 events", "split verify", ["log", "verify", str(short)]),
            (f"log verify, {args.events} ({size} MB)", "split verify",
             ["log", "verify", str(long)]),
            (f"replay -o jsonl, {args.events}", "split verify",
             ["replay", str(long), "-o", "jsonl"]),
        ]
        for _name, switch, words in cases:  # warm-up: bytecode, file cache
            run([py, "-c", MAIN, *words], env)
            run([py, "-c", OFF[switch] + MAIN, *words], env)
        got: dict[tuple[int, str], list[tuple[float, float]]] = {}
        floors: list[tuple[float, float]] = []
        json_floor: list[tuple[float, float]] = []  # goal 1's floor: json.loads of every line
        parse = ("import json, sys\nwith open(sys.argv[1], 'rb') as f:\n    for line in f:\n"
                 "        json.loads(line)\n")
        for _ in range(args.runs):
            floors.append(run([py, "-c", "pass"], env))
            json_floor.append(run([py, "-c", parse, str(long)], env))
            for i, (_name, switch, words) in enumerate(cases):
                got.setdefault((i, "fast"), []).append(run([py, "-c", MAIN, *words], env))
                got.setdefault((i, "one"), []).append(
                    run([py, "-c", OFF[switch] + MAIN, *words], env))
        fw = statistics.median(w for w, _ in floors)
        fc = statistics.median(c for _, c in floors)
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load "
              f"{os.getloadavg()[0]:.1f}; n={args.runs}; floor python -c pass: wall "
              f"{fw * 1000:.1f} ms, cpu {fc * 1000:.1f} ms")
        jw = statistics.median(w for w, _ in json_floor)
        print(f"goal 1's floor, json.loads of every line of the {size} MB log: wall "
              f"{jw * 1000:.0f} ms; goal: <= 3x that (and <= 1.0 s)")
        print(f"{'command':<34} {'path off':<13} {'fast wall':>10} {'one wall':>10} "
              f"{'fast cpu':>9} {'one cpu':>9}  wall/floor fast, one  gain")
        for i, (name, switch, _words) in enumerate(cases):
            fwall = statistics.median(w for w, _ in got[(i, "fast")])
            owall = statistics.median(w for w, _ in got[(i, "one")])
            fcpu = statistics.median(c for _, c in got[(i, "fast")])
            ocpu = statistics.median(c for _, c in got[(i, "one")])
            print(f"{name:<34} {switch:<13} {fwall * 1000:8.0f}ms {owall * 1000:8.0f}ms "
                  f"{fcpu * 1000:7.0f}ms {ocpu * 1000:7.0f}ms  "
                  f"{fwall / fw:5.1f}x {owall / fw:5.1f}x"
                  f"  {(owall - fwall) * 1000:+5.0f} ms ({owall / fwall:.2f}x)"
                  + (f"; x json floor: {fwall / jw:.2f} fast, {owall / jw:.2f} one"
                     if str(args.events) in name else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
