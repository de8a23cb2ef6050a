"""Long sessions hold: a session of 10,000 turns, a 1 GB log, 10,000 logs in the folder, 20 MCP
servers. Each figure stands beside a floor measured in the same run.

1. A session of --turns turns (a user message, a model reply with one read call, its proposal,
   approval, start and result, and the turn's end: 7 records a turn), signed with this run's
   log key through the writer's own chain arithmetic. `log verify`, `replay --output jsonl`
   and resuming it (`log.resume.rebuild`, what `chat --resume` does before the first prompt,
   and a new session that continues the log and runs one more turn) each in a child process:
   wall time and its own peak RSS (wait4). Floor: a child that `json.loads` every line.
2. A log of --gib GiB (records with 16 kB tool results, the same arithmetic): `log verify`'s
   wall time and peak RSS against a child that reads the file and sha256es every line. The peak
   memory is also given for a log a tenth the size: bounded means it does not grow with the
   log.
3. `log list` with --logs small logs in the sessions folder: wall time and peak RSS, against a
   child that opens every log and reads its first line.
4. --servers MCP servers (a small MCPServer script each, stdio) attached to one session:
   `start_hub()` to every server ready, and close(); floor: the same scripts without
   `server.run()`, one per core at a time (each imports the SDK and builds its server).

    python bench/bench_long_sessions.py [--quick] [--turns 10000] [--gib 1] [--logs 10000]
                                        [--servers 20] [--dir DIR]

`--quick` (what CI runs once, tests/test_bench_long_sessions.py) shrinks every size so the whole
run takes seconds: 300 turns, 16 MB, 300 logs, 3 servers. Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.common import REPO, clean_env, header, machine_line, run_child

PY = sys.executable
KEY = bytes(range(32))
"""The log key of every log built here (written to the run's own AGENT_CLI_HOME)."""

FLOOR_JSON = "import json,sys\nfor line in open(sys.argv[1],'rb'):\n    json.loads(line)\n"
FLOOR_SHA = ("import hashlib,sys\nfor line in open(sys.argv[1],'rb'):\n"
             "    hashlib.sha256(line).hexdigest()\n")
FLOOR_FIRST_LINES = ("import os,sys\nfor e in os.scandir(sys.argv[1]):\n"
                     "    with open(e.path,'rb') as f: f.readline()\n")
FLOOR_SERVERS = ("import os,pathlib,subprocess,sys\n"
                 "from concurrent.futures import ThreadPoolExecutor\n"
                 "def one(p): subprocess.run([sys.executable,str(p)],stdin=subprocess.DEVNULL)\n"
                 "with ThreadPoolExecutor(os.cpu_count() or 1) as pool:\n"
                 "    list(pool.map(one, sorted(pathlib.Path(sys.argv[1]).glob('f*.py'))))\n")
"""The same server scripts without their last line (`server.run()`), as many at a time as there
are cores: each imports the SDK, builds its server and exits; what attaching cannot go below
(all at once, they only fight over the cores)."""

SERVER = '''
from mcp.server.mcpserver import MCPServer

server = MCPServer("s{n}")


@server.tool(description="Echoes its text.")
def echo(text: str) -> str:
    return text


server.run()
'''


class Chain:
    """Records chained and signed as the writer does it (hash over the previous hash and the
    canonical record, HMAC of the hash under KEY), written as the writer writes them."""

    def __init__(self, path: Path) -> None:
        from agent_cli.log.keys import key_id, mac_function

        self.f = open(path, "wb")  # noqa: SIM115 (closed in close())
        self.prev = ""
        self.seq = 0
        self.mac = mac_function(KEY)
        self.key_id = key_id(KEY)
        self.ts = time.time() - 86_400

    def add(self, kind: str, **fields: Any) -> None:
        from agent_cli.log.writer import chain_hash, serialize

        self.seq += 1
        self.ts += 0.001
        rec: dict[str, Any] = {"v": 1, "seq": self.seq, "ts": self.ts, "type": kind, **fields}
        if kind == "session_start":
            rec["key_id"] = self.key_id
        rec["hash"] = chain_hash(self.prev, rec)
        rec["mac"] = self.mac(rec["hash"])
        self.prev = rec["hash"]
        self.f.write(serialize(rec) + b"\n")

    def start(self, workspace: Path) -> None:
        self.add("session_start", version="bench", model="m", provider="scripted",
                 workspace=str(workspace), tools=[], continues=None, system="")

    def turn(self, i: int, result: str) -> None:
        cid = f"toolu_{i:08d}"
        args = {"path": f"src/file_{i}.py"}
        self.add("user_message", text=f"turn {i}: look at src/file_{i}.py")
        self.add("model_reply", content=[{"type": "tool_use", "id": cid, "name": "read_file",
                                          "input": args}],
                 stop_reason="tool_use", usage={"input_tokens": 10, "output_tokens": 5},
                 model="m")
        self.add("tool_proposed", id=cid, name="read_file", input=args)
        self.add("approval", id=cid, name="read_file", effect="read", decision="approved",
                 by="policy", args_hash=f"{i:064x}", reason=None, args=args, preview=None,
                 panel_extra={})
        self.add("tool_started", id=cid, name="read_file", sandbox=None)
        self.add("tool_result", id=cid, name="read_file", is_error=False, content=result,
                 duration=0.001, truncated=False)
        self.add("turn_end", reason="tool_use", message=None, usage={})

    def close(self, end: bool = True) -> None:
        if end:
            self.add("session_end", reason="exit")
        self.f.close()


def figure(name: str, run: Any, floor: Any | None = None) -> None:
    line = (f"   {name}: {run.wall_s:.2f} s wall, {run.cpu_s:.2f} s CPU, "
            f"{run.peak_rss_mb:.0f} MB peak")
    if run.returncode != 0:
        line += f"  (exit {run.returncode}: {run.stderr.strip()[:200]})"
    if floor is not None:
        line += (f"; floor {floor.wall_s:.2f} s, {floor.cpu_s:.2f} s CPU, "
                 f"{floor.peak_rss_mb:.0f} MB ({run.wall_s / max(floor.wall_s, 1e-9):.1f}x wall, "
                 f"{run.cpu_s / max(floor.cpu_s, 1e-9):.1f}x CPU)")
    print(line, flush=True)


def agent(*args: str) -> list[str]:
    return [PY, "-m", "agent_cli", *args]


RESUME = '''
import sys, time
from pathlib import Path
from agent_cli.approval import ScriptedApprover
from agent_cli.config import Settings
from agent_cli.log.resume import rebuild
from agent_cli.providers.scripted import ScriptedProvider
from agent_cli.session import Session, load_registry
log, ws = Path(sys.argv[1]), Path(sys.argv[2])
t0 = time.perf_counter()
history = rebuild(log).history
t1 = time.perf_counter()
settings = Settings(provider="scripted", context_budget_chars=200_000)
registry, _ = load_registry(settings, [])
s = Session(settings, workspace=ws, registry=registry, approver=ScriptedApprover([]),
            provider=ScriptedProvider([{"content": [{"type": "text", "text": "ok"}],
                                        "stop_reason": "end_turn"}]),
            history=history, continues=str(log), log_path=log.with_name("resumed.jsonl"))
s.start()
assert s.send("one more").reason == "end_turn"
s.close()
took = time.perf_counter() - t1
print(f"rebuild {t1 - t0:.2f} s, {len(history)} messages; one more turn {took:.2f} s")
'''


def build_turns(log: Path, ws: Path, turns: int) -> None:
    chain = Chain(log)
    chain.start(ws)
    for i in range(turns):
        chain.turn(i, f"contents of src/file_{i}.py\n" * 8)
    chain.close()


def build_big(log: Path, ws: Path, target: int) -> None:
    result = ("x" * 79 + "\n") * 200  # 16 kB of tool output
    chain = Chain(log)
    chain.start(ws)
    i = 0
    while chain.f.tell() < target:
        chain.add("tool_result", id=f"toolu_{i:08d}", name="read_file", is_error=False,
                  content=result, duration=0.001, truncated=False)
        i += 1
    chain.close()


def build_list(folder: Path, ws: Path, count: int) -> None:
    for n in range(count):
        chain = Chain(folder / f"20260101-{n // 3600:02d}{n // 60 % 60:02d}{n % 60:02d}-"
                               f"{n:06x}.jsonl")
        chain.ts += n
        chain.start(ws / f"ws{n % 7}")
        chain.turn(n, "small result\n")
        chain.close()


def build(kind: str, path: Path, ws: Path, n: int, env: dict[str, str]) -> float:
    """Build in a child process, so this one stays small (a child's peak RSS counts the pages
    it was forked with) and imports nothing of agent-cli; the wall time it took."""
    run = run_child([PY, __file__, "--build", kind, str(path), str(ws), str(n)], env=env,
                    cwd=REPO, capture=True, timeout_s=3600)
    if run.returncode != 0:
        raise SystemExit(f"building {kind} failed: {run.stderr}")
    return run.wall_s


def part_turns(tmp: Path, env: dict[str, str], turns: int) -> None:
    header(f"1. a session of {turns:,} turns ({turns * 7 + 2:,} records)")
    ws = tmp / "ws"
    ws.mkdir(exist_ok=True)
    log = tmp / "turns.jsonl"
    built = build("turns", log, ws, turns, env)
    print(f"   built in {built:.2f} s, {log.stat().st_size / 1e6:.1f} MB", flush=True)
    floor = run_child([PY, "-c", FLOOR_JSON, str(log)], env=env)
    figure("log verify", run_child(agent("log", "verify", str(log)), env=env, cwd=REPO,
                                   capture=True), floor)
    # (not captured: a child's peak RSS counts the pages of the process it was started from,
    # and this one must not grow by holding a long output)
    figure("replay -o jsonl", run_child(agent("replay", str(log), "-o", "jsonl"), env=env,
                                        cwd=REPO), floor)
    resumed = run_child([PY, "-c", RESUME, str(log), str(ws)], env=env, cwd=REPO, capture=True)
    figure("resume (rebuild + one more turn)", resumed, floor)
    print(f"   ({resumed.stdout.strip()})")
    again = run_child(agent("log", "verify", str(log.with_name("resumed.jsonl"))), env=env,
                      cwd=REPO, capture=True)
    print(f"   the resumed session's log verifies: {'yes' if again.returncode == 0 else 'NO'}")


def part_big(tmp: Path, env: dict[str, str], size: int) -> None:
    header(f"2. a log of {size / 2**30:.3f} GiB: log verify in bounded memory")
    peaks: list[tuple[int, Any, Any]] = []
    for target in (size // 10, size):
        log = tmp / f"big-{target}.jsonl"
        built = build("big", log, tmp, target, env)
        print(f"   {log.stat().st_size / 1e6:,.0f} MB built in {built:.1f} s", flush=True)
        floor = run_child([PY, "-c", FLOOR_SHA, str(log)], env=env)
        run = run_child(agent("log", "verify", str(log)), env=env, cwd=REPO, capture=True)
        figure(f"log verify, {log.stat().st_size / 1e6:,.0f} MB", run, floor)
        peaks.append((log.stat().st_size, run, floor))
        log.unlink()
    (small, s_run, _), (big, b_run, _) = peaks
    print(f"   peak RSS at {small / 1e6:,.0f} MB / {big / 1e6:,.0f} MB: {s_run.peak_rss_mb:.0f} / "
          f"{b_run.peak_rss_mb:.0f} MB")


def part_list(tmp: Path, env: dict[str, str], count: int) -> None:
    header(f"3. log list with {count:,} logs in the sessions folder")
    home = Path(env["AGENT_CLI_HOME"])
    folder = home / "sessions"
    folder.mkdir(parents=True, exist_ok=True)
    for n in range(7):
        (tmp / f"ws{n}").mkdir(exist_ok=True)
    built = build("list", folder, tmp, count, env)
    print(f"   built in {built:.1f} s", flush=True)
    floor = run_child([PY, "-c", FLOOR_FIRST_LINES, str(folder)], env=env)
    figure("log list", run_child(agent("log", "list"), env=env, cwd=REPO, capture=True), floor)
    figure("log list --workspace WS -n 5",
           run_child(agent("log", "list", "--workspace", str(tmp / "ws3"), "-n", "5"), env=env,
                     cwd=REPO, capture=True), floor)
    shutil.rmtree(folder)


HUB = '''
import os, sys, time
from pathlib import Path
from agent_cli.approval import ScriptedApprover
from agent_cli.config import MCPServer, Settings
from agent_cli.providers.scripted import ScriptedProvider
from agent_cli.session import Session
from agent_cli.tools.loader import load_tools
from agent_cli.tools.mcp.hub import start_hub
folder, n = Path(sys.argv[1]), int(sys.argv[2])
servers = {f"s{i}": MCPServer(command=sys.executable, args=[str(folder / f"s{i}.py")],
                              trusted=True) for i in range(n)}
registry, _ = load_tools([])
session = Session(Settings(provider="scripted", mcp={"servers": servers}), workspace=folder,
                  provider=ScriptedProvider([]), registry=registry, approver=ScriptedApprover([]))
t0 = time.monotonic()
hub = start_hub(session.settings, session.registry, session.emit,
                session_id=session.log_path.stem, workspace=folder)
hub.wait_ready()
ready = time.monotonic() - t0
states = [s.state for s in hub.snapshot()]
t1 = time.monotonic()
hub.close()
session.close()
print(f"ready {ready:.2f} s, close {time.monotonic() - t1:.2f} s, "
      f"{states.count('ready')} of {n} ready")
'''


def part_servers(tmp: Path, env: dict[str, str], count: int) -> None:
    header(f"4. {count} MCP servers attached to one session")
    folder = tmp / "servers"
    folder.mkdir()
    for i in range(count):
        (folder / f"s{i}.py").write_text(SERVER.format(n=i), encoding="utf-8")
        (folder / f"f{i}.py").write_text(SERVER.format(n=i).replace("server.run()", ""),
                                         encoding="utf-8")
    run = run_child([PY, "-c", HUB, str(folder), str(count)], env=env, cwd=REPO, capture=True,
                    timeout_s=600)
    floor = run_child([PY, "-c", FLOOR_SERVERS, str(folder)], env=env, timeout_s=600)
    figure(f"start_hub() to {count} ready, and close()", run, floor)
    print(f"   ({run.stdout.strip() or run.stderr.strip()[-300:]})")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small sizes, for CI (seconds)")
    ap.add_argument("--turns", type=int, default=10_000)
    ap.add_argument("--gib", type=float, default=1.0)
    ap.add_argument("--logs", type=int, default=10_000)
    ap.add_argument("--servers", type=int, default=20)
    ap.add_argument("--dir", type=Path, default=None, help="where the logs are built")
    ap.add_argument("--build", nargs=4, metavar=("KIND", "PATH", "WS", "N"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.build:
        kind, path, ws, n = args.build
        {"turns": build_turns, "big": build_big, "list": build_list}[kind](
            Path(path), Path(ws), int(n))
        return
    if args.quick:
        args.turns, args.gib, args.logs, args.servers = 300, 16 / 1024, 300, 3
    print(machine_line(), flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="bench-long-", dir=args.dir))
    try:
        home = tmp / "home"
        home.mkdir(mode=0o700)
        key = home / "log.key"
        key.write_text(KEY.hex() + "\n", encoding="ascii")
        os.chmod(key, 0o600)
        env = clean_env(AGENT_CLI_HOME=str(home))
        part_turns(tmp, env, args.turns)
        part_big(tmp, env, int(args.gib * 2**30))
        part_list(tmp, env, args.logs)
        part_servers(tmp, env, args.servers)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("\ndone", flush=True)


if __name__ == "__main__":
    main()
