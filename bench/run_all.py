"""Run every bench script and print all their figures, one after another.

Nothing is skipped silently: a script that is missing is named as missing, one that fails or
runs out of time is named with its exit code, and the exit code is non-zero if any did.
Each script runs in its own process with a time limit, so the whole run is bounded.

Usage: python bench/run_all.py [--quick] [--timeout S] [NAME ...]
  NAME picks scripts (`overhead`, `bench_render`, ...); default all.
  --quick passes --quick to the scripts that take it (shorter runs, fewer repeats).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

SCRIPTS = (
    "bench_startup.py",
    "bench_paths.py",
    "bench_overhead.py",
    "bench_hotpath.py",
    "bench_peer_llm.py",
    "bench_log.py",
    "bench_context.py",
    "bench_cache.py",
    "bench_render.py",
    "bench_run_command.py",
    "bench_mcp.py",
    "bench_eval.py",
    "bench_undo.py",
    "bench_long_sessions.py",
)
"""In the order of the issue: start-up, per-call overhead, the peer, log/replay, memory,
rendering, then the tool and MCP costs; eval throughput, then undo's snapshots; last, long
sessions (10,000 turns, a 1 GB log, 10,000 logs, 20 MCP servers)."""


def takes_quick(script: Path) -> bool:
    """Whether the script documents a --quick option (read from its source, not guessed)."""
    return "--quick" in script.read_text(encoding="utf-8", errors="replace")


def pick(names: list[str]) -> list[str]:
    if not names:
        return list(SCRIPTS)
    chosen = []
    for name in names:
        stem = name.removesuffix(".py")
        stem = stem if stem.startswith("bench_") else f"bench_{stem}"
        chosen.append(f"{stem}.py")
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="scripts to run (default: all)")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--timeout", type=float, default=1800.0, help="seconds per script")
    args = parser.parse_args(argv)
    results: list[tuple[str, str, float]] = []
    for name in pick(args.names):
        script = HERE / name
        if not script.exists():
            print(f"\n######## {name}: MISSING (no such script in bench/)", flush=True)
            results.append((name, "missing", 0.0))
            continue
        cmd = [sys.executable, str(script)]
        if args.quick and takes_quick(script):
            cmd.append("--quick")
        print(f"\n######## {name}: {' '.join(cmd[1:])}", flush=True)
        start = time.monotonic()
        # its own process group, so a timeout ends the script and everything it started
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            code = proc.wait(timeout=args.timeout)
            status = "ok" if code == 0 else f"failed (exit {code})"
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            status = f"timed out after {args.timeout:.0f} s"
        except KeyboardInterrupt:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
        results.append((name, status, time.monotonic() - start))
    print("\n######## summary")
    for name, status, took in results:
        print(f"  {name:<24} {status:<24} {took:7.1f} s")
    bad = [r for r in results if r[1] != "ok"]
    if bad:
        print(f"  {len(bad)} of {len(results)} scripts did not give figures: "
              + ", ".join(f"{n} ({s})" for n, s, _ in bad))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
