"""What run_command's guards cost, and what they save.

1. Overhead: the median wall time of run_command's process runner (new session, scrubbed
   environment, capped streaming read, group and leftover checks) against a bare
   `subprocess.run(["true"])`, over many runs.
2. Memory: the peak RSS (ru_maxrss) of a fresh Python process that runs
   `head -c 1000000000 /dev/zero` through the runner and keeps only head and tail, against the
   same process running `true`; and, for scale, what `subprocess.run(capture_output=True)` costs
   for 100 MB.

3. Sandbox: `true` through the runner unconfined, with the confinement of before (Landlock
   writes only) and with the capability record (reads carved around agent-cli's state and the
   credential stores, the socket filter, a PID namespace per command), interleaved; the build of
   the read allow-list and ruleset (once per session); and, for scale, the exec wrapper that
   MCP servers go through (a Python start before the real program).

Run: python bench/bench_run_command.py [--runs N]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time

from agent_cli.tools.procs import run_process, scrubbed_env

CHILD = textwrap.dedent("""
    import resource, subprocess, sys, time
    from agent_cli.tools.procs import run_process, scrubbed_env
    mode, size = sys.argv[1], int(sys.argv[2])
    env = scrubbed_env()
    start = time.monotonic()
    if mode == "runner":
        argv = ["head", "-c", str(size), "/dev/zero"] if size else ["true"]
        res = run_process(argv, cwd=".", env=env, timeout_s=600)
        total, kept = res.total_bytes, len(res.head) + len(res.tail)
    else:
        out = subprocess.run(["head", "-c", str(size), "/dev/zero"], capture_output=True).stdout
        total, kept = len(out), len(out)
    took = time.monotonic() - start
    print(total, kept, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, f"{took:.3f}")
""")


def median_ms(fn: object, runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def child(mode: str, size: int) -> tuple[int, int, int, float]:
    done = subprocess.run([sys.executable, "-c", CHILD, mode, str(size)], capture_output=True,
                          text=True, check=True, cwd=tempfile.gettempdir())
    total, kept, rss, took = done.stdout.split()
    return int(total), int(kept), int(rss), float(took)


def _legacy_spawner(box: object, cwd: str) -> object:
    """The confinement before the capability record (for the before/after): Landlock with
    reads everywhere and writes in the workspace and the session's temporary folder, no socket
    filter, no PID namespace."""
    from agent_cli.sandbox import landlock
    from agent_cli.sandbox.policy import WRITE_DEVICES
    from agent_cli.sandbox.spawner import Spawner

    tmp = str(box.tmpdir())  # type: ignore[attr-defined]
    fd = landlock.build_ruleset(box.support.abi,  # type: ignore[attr-defined]
                                rules=[("/", "read"), (cwd, "write"), (tmp, "write")],
                                write_files=WRITE_DEVICES, network=False)
    return Spawner(fd, name="bench-legacy")


def sandbox_figures(runs: int, cwd: str, env: dict[str, str]) -> None:
    """`true` through the runner unconfined, with the confinement of before (writes only) and
    with today's record (reads carved around the denied paths, the socket filter, a PID
    namespace per command), interleaved run by run so that the load of a shared machine hits
    all alike; and what building the read allow-list costs, once per session."""
    from pathlib import Path

    from agent_cli.sandbox.policy import Sandbox

    box = Sandbox("workspace", Path(cwd))
    if not box.enforced:
        print(f"\nsandbox: not measured: {box.support.reason}")
        return
    builds = []
    for _ in range(5):
        fresh = Sandbox("workspace", Path(cwd))
        t = time.perf_counter()
        caps = fresh.capabilities(False)
        rules = fresh.plan(caps)
        fresh._ruleset(caps)
        builds.append(time.perf_counter() - t)
        fresh.close()
    build = statistics.median(builds) * 1000
    legacy = _legacy_spawner(box, cwd)

    class Legacy:
        support = box.support

        def popen(self, network: bool) -> object:
            return legacy.popen  # type: ignore[attr-defined]

        def env(self, env: dict[str, str]) -> dict[str, str]:
            return box.env(env)

    old = Legacy()
    for _ in range(10):
        run_process(["true"], cwd=cwd, env=env, timeout_s=30, sandbox=box)
        run_process(["true"], cwd=cwd, env=env, timeout_s=30, sandbox=old)
    times: dict[str, list[float]] = {"off": [], "before": [], "now": []}
    for _ in range(runs):
        for key, sandbox in (("off", None), ("before", old), ("now", box)):
            t = time.perf_counter()
            run_process(["true"], cwd=cwd, env=env, timeout_s=30, sandbox=sandbox)
            times[key].append(time.perf_counter() - t)
    plain, before, now = (statistics.median(times[k]) * 1000 for k in ("off", "before", "now"))
    print(f"\nsandbox (Landlock ABI {box.support.abi}, socket filter "
          f"{'on' if box.support.seccomp else 'off'}, PID namespace "
          f"{'on' if box.pid_namespace() else 'off'}), `true`, median of {runs} interleaved "
          "runs:")
    print(f"  runner, unconfined          {plain:7.2f} ms")
    print(f"  runner, before (writes)     {before:7.2f} ms   ({before - plain:+.2f} ms per call)")
    print(f"  runner, now (the record)    {now:7.2f} ms   ({now - plain:+.2f} ms per call, "
          f"{now - before:+.2f} ms against before)")
    print(f"  read allow-list + ruleset   {build:7.2f} ms   ({len(rules)} rules, "
          f"{len(caps.read_denied)} denied paths; once per session and record)")
    print(f"  first command of a session  {now + build:7.2f} ms   (the build included)")
    argv, _tmp = box.wrap(["true"], writable=cwd, network=False, name="bench")
    n = max(10, runs // 10)
    wrapped = median_ms(lambda: subprocess.run(argv, check=True), n)
    print(f"  exec wrapper (MCP path)     {wrapped:7.2f} ms   (subprocess.run of the wrapper "
          f"around `true`, {n} runs; paid once per server start)")
    legacy.close()  # type: ignore[attr-defined]
    box.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=300)
    ns = parser.parse_args()
    env = scrubbed_env()
    cwd = tempfile.gettempdir()
    print(f"python {platform.python_version()} on {platform.system()} {platform.machine()}, "
          f"{os.cpu_count()} cpus, {len(os.listdir('/proc')) if os.path.isdir('/proc') else '?'}"
          " /proc entries")

    # Warm up both paths (imports, page cache).
    for _ in range(10):
        subprocess.run(["true"], check=False)
        run_process(["true"], cwd=cwd, env=env, timeout_s=30)
    bare = median_ms(lambda: subprocess.run(["true"], check=False), ns.runs)
    ours = median_ms(lambda: run_process(["true"], cwd=cwd, env=env, timeout_s=30,
                                         sandbox=None), ns.runs)
    print(f"\n`true`, median of {ns.runs} runs:")
    print(f"  subprocess.run          {bare:7.2f} ms")
    print(f"  run_command runner      {ours:7.2f} ms   ({ours / bare:.1f}x, "
          f"+{ours - bare:.2f} ms per call)")
    sandbox_figures(ns.runs, cwd, env)

    _base_total, _, base_rss, _ = child("runner", 0)
    gb = 1_000_000_000
    total, kept, rss, took = child("runner", gb)
    print("\npeak memory (ru_maxrss) of a fresh Python process:")
    print(f"  runner, `true`                         {base_rss / 1024:7.1f} MB")
    print(f"  runner, 1 GB of output (kept {kept:,} B) {rss / 1024:7.1f} MB  "
          f"(+{(rss - base_rss) / 1024:.1f} MB; {total / took / 1e6:.0f} MB/s over {took:.2f} s)")
    hundred = 100_000_000
    _, _, cap_rss, _ = child("capture", hundred)
    print(f"  subprocess.run(capture_output), 100 MB {cap_rss / 1024:7.1f} MB  "
          f"(+{(cap_rss - base_rss) / 1024:.1f} MB, for comparison)")


if __name__ == "__main__":
    main()
