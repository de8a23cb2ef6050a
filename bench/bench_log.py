"""Session-log costs: the write-ahead fsync policy, and reading a long log back.

1. Events written per second through the real SessionLog (redaction on, hash chain, fsync of
   every write call's decision before it runs), in a realistic mix: per call a tool_proposed,
   an approval (fsynced), a tool_started and a tool_result of ~600 characters. The same with
   fsync off shows what the durability costs. The log goes to a folder on disk (not /tmp, which
   may be tmpfs where fsync is free): the repo's bench/.out unless --dir says otherwise.
2. `agent-cli log verify LOG` and `agent-cli replay LOG --output jsonl > /dev/null` on a
   generated log of 100,000 events (and one of --events x 3), each a child process measured with
   wait4: wall time, CPU time and its own peak RSS. Both stream the file: the peak memory should
   not grow with the log.

    python bench/bench_log.py [--calls 2000] [--events 100000] [--repeat 3] [--dir DIR]
                              [--read-only] [--before TREE]

`--before TREE` runs a second copy of the code (a checkout of an older commit, for example
`git worktree add /tmp/before <commit>`) in the same interleaved rounds, its own child processes
with TREE first on the path, so a before/after pair comes from one run. `--read-only` skips the
write rates and the log of --events x 3.

Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent_cli import events as ev
from agent_cli.log.writer import SessionLog
from agent_cli.redact import Redactor
from bench.common import Stats, clean_env, header, machine_line, run_child

KEY = bytes(range(32))
"""A fixed log key: the HMAC costs what it costs in a session, and no key file is made."""
RESULT = ("line of tool output with a path src/app/module.py:42 and some words\n" * 9)[:600]


def call_events(i: int) -> list[ev.Event]:
    cid = f"toolu_{i:08d}"
    args = {"path": f"src/file_{i}.py", "content": "x = 1\n" * 10}
    return [
        ev.ToolProposed(id=cid, name="write_file", input=args),
        ev.Approval(id=cid, name="write_file", effect="write", decision="approved", by="user",
                    args_hash=f"{i:064x}", args=args),
        ev.ToolStarted(id=cid, name="write_file"),
        ev.ToolResultEvent(id=cid, name="write_file", is_error=False, content=RESULT,
                           duration=0.0123),
    ]


def write_rate(folder: Path, calls: int, fsync: bool) -> float:
    path = folder / f"rate-{'fsync' if fsync else 'nofsync'}.jsonl"
    path.unlink(missing_ok=True)
    events = [e for i in range(calls) for e in call_events(i)]
    log = SessionLog(path, redactor=Redactor(), fsync=fsync, key=KEY)
    start = time.perf_counter()
    for e in events:
        log.write(e)
    log.close()
    elapsed = time.perf_counter() - start
    path.unlink()
    return len(events) / elapsed


def generate(path: Path, n_events: int) -> None:
    """A plausible long session: turns of user message, model reply, calls, turn end."""
    path.unlink(missing_ok=True)
    log = SessionLog(path, redactor=Redactor(), fsync=False, key=KEY)
    log.write(ev.SessionStart(version="bench", model="m", provider="scripted", workspace="/ws",
                              tools=[]))
    written, i = 1, 0
    while written < n_events - 1:
        batch: list[ev.Event] = [
            ev.UserMessage(text=f"please change file {i}"),
            ev.ModelReply(content=[{"type": "text", "text": "Changing it."},
                                   {"type": "tool_use", "id": f"toolu_{i:08d}",
                                    "name": "write_file", "input": {"path": f"f{i}"}}],
                          stop_reason="tool_use", usage={"input_tokens": 100,
                                                         "output_tokens": 20}),
            *call_events(i),
            ev.ModelReply(content=[{"type": "text", "text": "Done."}], stop_reason="end_turn"),
            ev.TurnEnd(reason="end_turn"),
        ]
        for e in batch[: n_events - 1 - written]:
            log.write(e)
            written += 1
        i += 1
    log.write(ev.SessionEnd())
    log.close()


# ru_maxrss of a child counts the memory of the process it was forked from (the kernel carries
# the old address space's high-water mark over exec), and this bench holds tens of MB. So each
# child is started by a tiny launcher interpreter whose own footprint is the floor.
LAUNCHER = """
import os, sys, time
t = time.perf_counter()
pid = os.fork()
if pid == 0:
    fd = os.open(os.devnull, os.O_WRONLY)
    os.dup2(fd, 1)
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(time.perf_counter() - t, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime,
      os.waitstatus_to_exitcode(status))
"""


def measured(argv: list[str], env: dict[str, str]) -> tuple[float, float, float, int]:
    run = run_child([sys.executable, "-S", "-c", LAUNCHER, *argv], env=env, capture=True)
    wall, rss, cpu, code = run.stdout.split()
    return float(wall), float(rss), float(cpu), int(code)


def read_back(log: Path, repeat: int, before: Path | None = None) -> None:
    home = log.parent / "home"  # holds the key, so verify checks every MAC as it would at home
    home.mkdir(exist_ok=True)
    (home / "log.key").write_text(KEY.hex() + "\n", encoding="ascii")
    env = clean_env(AGENT_CLI_HOME=str(home))
    size_mb = log.stat().st_size / 1e6
    small = log.with_name("small.jsonl")  # what a command costs before the log's length counts
    generate(small, 5)
    py = sys.executable
    floor_code = ("import json, sys\nwith open(sys.argv[1], 'rb') as f:\n    for line in f:\n"
                  "        json.loads(line)\n")
    runs = [
        ("floor: bare json.loads of every line", [py, "-c", floor_code, str(log)]),
        ("log verify", [py, "-m", "agent_cli", "log", "verify", str(log)]),
        ("replay --output jsonl", [py, "-m", "agent_cli", "replay", str(log), "--output",
                                   "jsonl"]),
        ("(start-up alone: agent-cli --help)", [py, "-m", "agent_cli", "--help"]),
        ("(start-up: log verify, 5 events)", [py, "-m", "agent_cli", "log", "verify",
                                              str(small)]),
        ("(start-up: replay -o jsonl, 5 events)", [py, "-m", "agent_cli", "replay", str(small),
                                                   "--output", "jsonl"]),
    ]
    envs = {label: env for label, _ in runs}
    if before is not None:
        # -P: not the current folder first, so PYTHONPATH's tree is the agent_cli imported
        old_env = clean_env(AGENT_CLI_HOME=str(home), PYTHONPATH=str(before))
        for label, argv in [*runs[1:3], *runs[4:6]]:
            envs[f"{label} (before)"] = old_env
            runs.append((f"{label} (before)", [py, "-P", *argv[1:]]))
    wall = {label: Stats() for label, _ in runs}
    cpu = {label: Stats() for label, _ in runs}
    rss = {label: Stats() for label, _ in runs}
    codes: dict[str, int] = {}
    for _ in range(repeat):  # interleaved, so a burst of load hits every command alike
        for label, argv in runs:
            w, r, c, codes[label] = measured(argv, envs[label])
            wall[label].add(w)
            cpu[label].add(c)
            rss[label].add(r)
    floor = runs[0][0]
    for label, _ in runs:
        print(f"  {label:38s} wall {wall[label].fmt('s', 2)}  cpu {cpu[label].median:.2f} s  "
              f"peak RSS {rss[label].max:.1f} MB  exit {codes[label]}", flush=True)
        if label.startswith(("log verify", "replay --output jsonl")):
            print(f"  {'':38s} = {wall[label].median / wall[floor].median:.2f}x the floor's wall"
                  f", {cpu[label].median / cpu[floor].median:.2f}x its CPU (goal: <= 1.0 s and "
                  "<= 3x)", flush=True)
    print(f"  ({size_mb:.1f} MB log)")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--calls", type=int, default=2000, help="calls (x4 events) for the rate")
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--dir", type=Path, default=Path(__file__).resolve().parent / ".out")
    ap.add_argument("--read-only", action="store_true",
                    help="only read back the --events log (no write rates, no x 3 log)")
    ap.add_argument("--before", type=Path, default=None, metavar="TREE",
                    help="also run the agent_cli of this source tree, interleaved")
    args = ap.parse_args()
    folder: Path = args.dir
    folder.mkdir(parents=True, exist_ok=True)
    print(machine_line())
    try:
        header(f"events written per second ({args.calls} calls x 4 events, redaction on)")
        for fsync in (() if args.read_only else (True, False)):
            rates = Stats()
            for _ in range(args.repeat):
                rates.add(write_rate(folder, args.calls, fsync))
            label = "write-ahead fsync (default)" if fsync else "no fsync (for comparison)"
            print(f"  {label:30s} {rates.median:10.0f} events/s "
                  f"(min {rates.min:.0f}, max {rates.max:.0f})", flush=True)
        for n in (args.events,) if args.read_only else (args.events, args.events * 3):
            log = folder / f"gen-{n}.jsonl"
            start = time.perf_counter()
            generate(log, n)
            header(f"reading back a {n:,}-event log (generated in "
                   f"{time.perf_counter() - start:.1f} s)")
            read_back(log, args.repeat, args.before)
            log.unlink()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
