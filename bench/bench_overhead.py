"""Host overhead per tool call: what agent-cli itself costs around each model request + tool call.

Three measurements against the fake Anthropic server (real SDK, streaming, loopback; the server
runs in its own process and times its own handler so that time can be subtracted):

1. headless `agent-cli run ... --output jsonl > /dev/null` for N sequential multiply calls:
   overhead per call = (T(N) - T(0)) / N - server time per request (the CPU time of the fake's
   handler: its wall time would also count waiting for the client's bytes);
2. the same loop in-process (a Session with AnthropicProvider), so start-up is out of the picture,
   with the call-to-call interval early and late in the longest run (is it flat?);
3. a bare SDK client sending the same growing history, to split SDK cost from agent-cli's own;
4. from the server's side (issue 21, goal 5): the fake stamps each request's arrival and the end
   of its answer; overhead per call = next arrival - this answer's end, i.e. the time from one
   request's arrival to the next minus the server's own time per request. Start-up is not in it
   at all. Measured at N=100 and N=300 for the headless CLI, the in-process Session, the
   provider alone (`complete()` with no loop, log or tool), the bare SDK and a floor: a raw
   `http.client` loop sending the same growing body (one json.dumps, one read of the whole
   answer, no SSE parsing), interleaved run by run. `--profile` adds a
   cProfile of one in-process 300-call turn (functions ranked by own time, per call);
5. goal 5, second part: `agent-cli run` answered with no tool call against `python -c "import
   anthropic"` and `python -c pass`, interleaved (`--run-vs-import`; also after part 4);
6. goal 6: the provider's request path (body encoded once, `client.post(content=)`, the events
   read into dicts by providers/sse.py) against `client.post(body=)` (the SDK encodes the body)
   and the SDK's public `client.messages.stream`, interleaved, from the server's side
   (`--sdk-ab`);
7. `--layers`: one small request's CPU through each layer (http.client, httpx2, the SDK's
   `client.post`, our reader, `messages.stream`), to see what the SDK's request path alone costs.

`--before TREE` (an export of an older checkout, e.g. `git archive main | tar -x -C /tmp/old`)
adds that tree's provider to parts 4 and 6, interleaved with this one: in-process (the older
`providers/anthropic.py` inside this tree's Session) and headless (the whole older program).

Goal: under 3 ms per call and flat in N, with one client and one reused connection; from the
server's side at most 1.5 ms at N=100 and N=300.
Usage: python bench/bench_overhead.py [--repeat R] [--ns 0,1,10,100,300] [--quick]
       python bench/bench_overhead.py --server-side [--repeat R] [--profile] [--before TREE]
       python bench/bench_overhead.py --sdk-ab [--repeat R] [--before TREE]
       python bench/bench_overhead.py --run-vs-import [--repeat R]
       python bench/bench_overhead.py --layers [--repeat R]
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import (
    API_KEY,
    MODEL,
    REPO,
    FakeProcess,
    Stats,
    clean_env,
    header,
    machine_line,
    per_call,
    ratio,
    run_child,
    spawn_fake,
)

GOAL_MS = 3.0
SERVER_SIDE_GOAL_MS = 1.5
SERVER_SIDE_NS = (100, 300)
FLAT_TOLERANCE = 1.5
RUN_GOAL_RATIO = 1.3
"""Goal 5's second part: `agent-cli run` with no tool call at most 1.3x `import anthropic`."""
"""Per-call cost at the largest N may be at most this many times the cost at N=10."""


@dataclass
class PerCall:
    """Overhead per call at one N, three ways: wall (median, min) and the client's CPU time."""

    wall: float
    wall_min: float
    cpu: float


def agent_argv(n: int, workspace: Path) -> list[str]:
    return [sys.executable, "-m", "agent_cli", "run", f"Multiply some numbers, calls={n}",
            "--output", "jsonl", "--max-turns", str(n + 5), "--workspace", str(workspace)]


def check_once(fake: FakeProcess, n: int, env: dict[str, str], ws: Path) -> list[str]:
    """One captured run per N before timing: the figures mean nothing if the run was wrong."""
    fake.reset()
    r = run_child(agent_argv(n, ws), env=env, capture=True, timeout_s=120 + n)
    s = fake.stats()
    problems = []
    if r.returncode != 0:
        problems.append(f"N={n}: exit {r.returncode}: {r.stderr.strip()[-300:]}")
    results = r.stdout.count('"type":"tool_result"')
    if results != n:
        problems.append(f"N={n}: {results} tool results in the jsonl output, expected {n}")
    if s.requests != n + 1:
        problems.append(f"N={n}: the fake saw {s.requests} requests, expected {n + 1}")
    if len(s.client_ports) != 1:
        problems.append(f"N={n}: {len(s.client_ports)} client connections, expected 1 (reuse)")
    if s.streamed != s.requests:
        problems.append(f"N={n}: {s.requests - s.streamed} requests were not streaming")
    return problems


def headless(fake: FakeProcess, ns: list[int], repeat: int, tmp: Path) -> dict[int, PerCall]:
    """Subprocess runs, interleaved over N so drift on a noisy machine hits every N alike."""
    header("1. headless `agent-cli run --output jsonl > /dev/null` (subprocess)")
    home = tmp / "home"
    ws = tmp / "ws"
    home.mkdir()
    ws.mkdir()
    env = clean_env(ANTHROPIC_BASE_URL=fake.base_url, ANTHROPIC_API_KEY=API_KEY,
                    AGENT_CLI_HOME=str(home))
    problems = [p for n in ns for p in check_once(fake, n, env, ws)]
    if problems:
        print("the runs are wrong; no figures:\n  " + "\n  ".join(problems))
        raise SystemExit(1)
    print("checked: every N gives N tool results, N+1 streaming requests, one connection")
    wall = {n: Stats() for n in ns}
    cpu = {n: Stats() for n in ns}
    server = {n: Stats() for n in ns}
    rss = {n: Stats() for n in ns}
    for _ in range(repeat):
        for n in ns:
            fake.reset()
            r = run_child(agent_argv(n, ws), env=env, timeout_s=120 + n)
            if r.returncode != 0:
                print(f"N={n}: exit {r.returncode}; stopping")
                raise SystemExit(1)
            s = fake.stats()
            wall[n].add(r.wall_s)
            cpu[n].add(r.cpu_s)
            server[n].add(s.handler_cpu_s)
            rss[n].add(r.peak_rss_mb)
    print(f"{'N':>5}  {'wall':<40}  {'client CPU':>10}  {'server CPU':>10}  {'peak RSS':>8}")
    for n in ns:
        print(f"{n:>5}  {wall[n].fmt('s'):<40}  {cpu[n].median:8.3f} s  "
              f"{server[n].median * 1e3:7.1f} ms  {rss[n].median:5.1f} MB")
    out: dict[int, PerCall] = {}
    print("per call = (T(N) - T(0)) / N - server time per request; from median wall, min wall, "
          "and the client's median CPU time (the least disturbed by other load):")
    for n in ns:
        if n == 0:
            continue
        srv = (server[n].median - server[0].median) / n
        med = per_call(wall[0], wall[n], n, srv)
        low = per_call(wall[0], wall[n], n, srv, use_min=True)
        on_cpu = per_call(cpu[0], cpu[n], n)
        out[n] = PerCall(med, low, on_cpu)
        print(f"  N={n:>4}: wall median {med * 1e3:7.2f} ms, wall min {low * 1e3:7.2f} ms, "
              f"CPU {on_cpu * 1e3:6.2f} ms per call (server {srv * 1e3:.2f} ms per request)")
    print("  (at small N one second of start-up noise swamps the difference: read the large N)")
    return out


def make_session(fake: FakeProcess, tmp: Path, name: str, sinks: list[Any],
                 provider_cls: Any = None) -> Any:
    from agent_cli.approval import NonInteractiveApprover
    from agent_cli.config import Settings
    from agent_cli.providers.anthropic import AnthropicProvider
    from agent_cli.session import Session, load_registry

    settings = Settings.model_validate({"model": MODEL, "max_turns": 100_000})
    registry, report = load_registry(settings)
    ws = tmp / "ws"
    ws.mkdir(exist_ok=True)
    provider = (provider_cls or AnthropicProvider)(MODEL, api_key=API_KEY, base_url=fake.base_url,
                                                   max_retries=0)
    return Session(settings, workspace=ws, provider=provider, registry=registry,
                   approver=NonInteractiveApprover(), sinks=sinks,
                   log_path=tmp / "logs" / f"{name}.jsonl", load_report=report)


def in_process(fake: FakeProcess, ns: list[int], repeat: int,
               tmp: Path) -> tuple[dict[int, PerCall], float]:
    """A Session in this process: per-call cost without start-up, and its flatness."""
    from agent_cli import events as ev

    header("2. in-process Session + AnthropicProvider (no start-up)")
    warm = make_session(fake, tmp, "warm", [])
    warm.start()
    warm.send("calls=2")  # imports the SDK, builds the client, opens the connection
    warm.close()
    turn = {n: Stats() for n in ns}
    cpu = {n: Stats() for n in ns}
    server = {n: Stats() for n in ns}
    intervals: list[float] = []
    cpu_intervals: list[float] = []
    marks: list[float] = []
    cpu_marks: list[float] = []
    walls: list[float] = []

    def stamp(event: ev.AnyEvent) -> None:
        if isinstance(event, ev.ToolResultEvent):
            marks.append(time.perf_counter())
            cpu_marks.append(time.process_time())

    runs = 0
    for _ in range(repeat):
        for n in ns:
            runs += 1
            marks.clear()
            cpu_marks.clear()
            session = make_session(fake, tmp, f"run{runs}", [stamp])
            session.start()
            fake.reset()
            start, cpu_start = time.perf_counter(), time.process_time()
            result = session.send(f"calls={n}")
            elapsed, cpu_used = time.perf_counter() - start, time.process_time() - cpu_start
            s = fake.stats()
            session.close()
            if result.reason != "end_turn" or len(marks) != n or len(s.client_ports) != 1:
                print(f"N={n}: wrong run (reason {result.reason}, {len(marks)} results, "
                      f"{len(s.client_ports)} connections); stopping")
                raise SystemExit(1)
            turn[n].add(elapsed)
            cpu[n].add(cpu_used)
            server[n].add(s.handler_cpu_s)
            if n == max(ns):
                walls = s.walls_s
                intervals = [b - a for a, b in itertools.pairwise(marks)]
                cpu_intervals = [b - a for a, b in itertools.pairwise(cpu_marks)]
    out: dict[int, PerCall] = {}
    print("per call = (T(N) - T(0)) / N - server time per request; from median wall, min wall, "
          "and this process's median CPU time:")
    print(f"  N=   0: one request, no call: {turn[0].fmt('ms', 2)}")
    for n in ns:
        if n == 0:
            continue
        srv = (server[n].median - server[0].median) / n
        pc = PerCall(per_call(turn[0], turn[n], n, srv),
                     per_call(turn[0], turn[n], n, srv, use_min=True),
                     per_call(cpu[0], cpu[n], n))
        out[n] = pc
        print(f"  N={n:>4}: wall median {pc.wall * 1e3:6.2f} ms, wall min "
              f"{pc.wall_min * 1e3:6.2f} ms, CPU {pc.cpu * 1e3:6.2f} ms per call "
              f"(server {srv * 1e3:.2f} ms per request)")
    inside = float("nan")
    big = max(ns)
    if big >= 20 and walls:
        k = max(5, big // 6)
        # interval i spans request i+1 (0-based server index) and call i+1
        net = [iv - walls[i + 1] for i, iv in enumerate(intervals) if i + 1 < len(walls)]
        early, late = statistics.median(net[:k]), statistics.median(net[-k:])
        c_early, c_late = (statistics.median(cpu_intervals[:k]),
                           statistics.median(cpu_intervals[-k:]))
        inside = c_late / c_early
        print(f"flatness inside one N={big} turn, medians of call-to-call intervals: first {k} "
              f"calls {early * 1e3:.2f} ms wall (server time subtracted) / {c_early * 1e3:.2f} ms "
              f"CPU; last {k} calls {late * 1e3:.2f} ms wall / {c_late * 1e3:.2f} ms CPU; "
              f"CPU ratio last/first {c_late / c_early:.2f}")
    return out, inside


def bare_sdk(fake: FakeProcess, n: int, repeat: int) -> tuple[float, float]:
    """The SDK alone sending agent-cli's request shape with the same growing history."""
    import anthropic

    from agent_cli.config import DEFAULT_SYSTEM, Settings
    from agent_cli.session import load_registry

    header(f"3. bare anthropic SDK client, {n} streaming requests with a growing history")
    warnings.filterwarnings("ignore", category=DeprecationWarning)  # model end-of-life notice
    registry, _ = load_registry(Settings.model_validate({}))
    tools = registry.specs()
    client: Any = anthropic.Anthropic(api_key=API_KEY, base_url=fake.base_url, max_retries=0)
    per_req = Stats()
    cpu_req = Stats()
    for _ in range(repeat):
        fake.reset()
        start, cpu_start = time.perf_counter(), time.process_time()
        sdk_turn(client, tools, DEFAULT_SYSTEM, n)
        elapsed, cpu_used = time.perf_counter() - start, time.process_time() - cpu_start
        s = fake.stats()
        per_req.add((elapsed - s.handler_cpu_s) / s.requests)
        cpu_req.add(cpu_used / s.requests)
    print(f"SDK per request, server time subtracted: wall {per_req.fmt('ms', 2)}; "
          f"CPU {cpu_req.fmt('ms', 2)}")
    return per_req.median, cpu_req.median


def _gap_figures(gaps: list[float]) -> tuple[float, float, float, float]:
    """Mean and median of the gaps, and the medians of the first and last sixth (flatness)."""
    k = max(5, len(gaps) // 6)
    return (statistics.fmean(gaps), statistics.median(gaps), statistics.median(gaps[:k]),
            statistics.median(gaps[-k:]))


def sdk_turn(client: Any, tools: list[dict[str, Any]], system: str, n: int) -> int:
    """One turn of n calls through `client.messages.stream`, agent-cli's request shape."""
    history: list[dict[str, Any]] = [{"role": "user", "content": f"calls={n}"}]
    requests = 0
    while True:
        requests += 1
        with client.messages.stream(model=MODEL, max_tokens=8192, messages=history,
                                    tools=tools, system=system) as stream:
            for _text in stream.text_stream:
                pass
            final = stream.get_final_message()
        history.append({"role": "assistant", "content": [b.model_dump(mode="json",
                                                                       exclude_none=True)
                                                         for b in final.content]})
        uses = [b for b in final.content if b.type == "tool_use"]
        if not uses:
            return requests
        history.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": u.id, "content": "6"} for u in uses]})


def provider_turn(provider: Any, tools: list[dict[str, Any]], system: str, n: int) -> int:
    """One turn of n calls through the provider alone (`complete()`: cache marks, the body's
    encoding, the request, the events), with no loop, log or tool around it."""
    from agent_cli.providers.base import ModelRequest

    history: list[dict[str, Any]] = [{"role": "user", "content": f"calls={n}"}]
    requests = 0
    while True:
        requests += 1
        reply = provider.complete(ModelRequest(messages=history, tools=tools, system=system,
                                               max_tokens=8192, model=MODEL),
                                  lambda _t: None, lambda _m: None)
        history.append({"role": "assistant", "content": reply.content})
        uses = reply.tool_uses()
        if not uses:
            return requests
        history.append({"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": u["id"], "content": "6"} for u in uses]})


def raw_turn(port: int, tools: list[dict[str, Any]], system: str, n: int) -> int:
    """The floor: the same growing request body over one kept-alive `http.client` connection,
    encoded with one json.dumps, the answer read whole and not parsed (the fake's ids are known
    in advance). What any client must at least spend per call on this machine."""
    import http.client
    import json

    conn = http.client.HTTPConnection("127.0.0.1", port)
    headers = {"content-type": "application/json", "x-api-key": API_KEY,
               "anthropic-version": "2023-06-01"}
    history: list[dict[str, Any]] = [{"role": "user", "content": f"calls={n}"}]
    try:
        for i in range(n + 1):
            body = json.dumps({"model": MODEL, "max_tokens": 8192, "messages": history,
                               "tools": tools, "system": system, "stream": True},
                              ensure_ascii=False, separators=(",", ":")).encode()
            conn.request("POST", "/v1/messages", body=body, headers=headers)
            answer = conn.getresponse().read()
            if i == n:
                break
            uid = f"toolu_bench_{i:05d}"
            if uid.encode() not in answer:
                raise SystemExit(f"raw floor: the fake did not answer with {uid}")
            history.append({"role": "assistant", "content": [
                {"type": "tool_use", "id": uid, "name": "multiply",
                 "input": {"a": i + 2, "b": 3}}]})
            history.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": uid, "content": str((i + 2) * 3)}]})
    finally:
        conn.close()
    return n + 1


def load_before(tree: Path) -> Any:
    """The older tree's `AnthropicProvider` class, loaded beside this tree's (it imports this
    tree's `providers.base`, `body_json` and `http_errors`, whose interfaces it shares)."""
    import importlib.util

    path = tree.resolve() / "agent_cli" / "providers" / "anthropic.py"
    spec = importlib.util.spec_from_file_location("before_anthropic_provider", path)
    if spec is None or spec.loader is None:
        raise SystemExit(f"--before: no provider at {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.AnthropicProvider


def server_side(fake: FakeProcess, repeat: int, tmp: Path,
                before: Path | None = None) -> dict[tuple[str, int], float]:
    """Goal 5: per-call host overhead as the server sees it, four clients interleaved (six with
    `before`: that tree's provider in-process and its whole program headless)."""
    import anthropic

    from agent_cli.config import DEFAULT_SYSTEM, Settings
    from agent_cli.session import load_registry

    header("4. from the server's side: next request's arrival - end of this answer, per call")
    warnings.filterwarnings("ignore", category=DeprecationWarning)  # model end-of-life notice
    registry, _ = load_registry(Settings.model_validate({}))
    tools = registry.specs()
    client: Any = anthropic.Anthropic(api_key=API_KEY, base_url=fake.base_url, max_retries=0)
    home, ws = tmp / "ss-home", tmp / "ws"
    home.mkdir(exist_ok=True)
    ws.mkdir(exist_ok=True)
    env = clean_env(ANTHROPIC_BASE_URL=fake.base_url, ANTHROPIC_API_KEY=API_KEY,
                    AGENT_CLI_HOME=str(home))
    warm = make_session(fake, tmp, "ss-warm", [])
    warm.start()
    warm.send("calls=2")
    warm.close()
    sdk_turn(client, tools, DEFAULT_SYSTEM, 2)
    raw_turn(fake.port, tools, DEFAULT_SYSTEM, 2)
    from agent_cli.providers.anthropic import AnthropicProvider

    modes: tuple[str, ...] = ("floor: raw http.client", "bare SDK messages.stream",
                              "provider alone", "in-process Session", "headless agent-cli run")
    old_cls = load_before(before) if before is not None else None
    old_env = {**env, "PYTHONPATH": str(before.resolve())} if before is not None else env
    providers = {"provider alone": AnthropicProvider(MODEL, api_key=API_KEY,
                                                     base_url=fake.base_url, max_retries=0)}
    if before is not None:
        modes = (*modes[:2], "provider alone, before", modes[2], "in-process, before",
                 modes[3], "headless, before", modes[4])
        providers["provider alone, before"] = old_cls(MODEL, api_key=API_KEY,
                                                      base_url=fake.base_url, max_retries=0)
    for provider in providers.values():
        provider_turn(provider, tools, DEFAULT_SYSTEM, 2)
        warm = make_session(fake, tmp, "ss-warm-old", [], old_cls)
        warm.start()
        warm.send("calls=2")
        warm.close()
    mean: dict[tuple[str, int], Stats] = {(m, n): Stats() for m in modes for n in SERVER_SIDE_NS}
    median = {key: Stats() for key in mean}
    early = {key: Stats() for key in mean}
    late = {key: Stats() for key in mean}
    runs = 0
    for _ in range(repeat):
        for n in SERVER_SIDE_NS:
            for mode in modes:
                runs += 1
                fake.reset()
                if mode.startswith("floor"):
                    raw_turn(fake.port, tools, DEFAULT_SYSTEM, n)
                elif mode.startswith("bare SDK"):
                    sdk_turn(client, tools, DEFAULT_SYSTEM, n)
                elif mode.startswith("provider alone"):
                    provider_turn(providers[mode], tools, DEFAULT_SYSTEM, n)
                elif mode.startswith("in-process"):
                    cls = old_cls if mode.endswith("before") else None
                    session = make_session(fake, tmp, f"ss{runs}", [], cls)
                    session.start()
                    fake.reset()
                    session.send(f"calls={n}")
                    session.close()
                else:
                    old = mode.endswith("before")
                    r = run_child(agent_argv(n, ws), env=old_env if old else env,
                                  cwd=before if old else None, timeout_s=120 + n)
                    if r.returncode != 0:
                        raise SystemExit(f"{mode} N={n}: exit {r.returncode}")
                s = fake.stats(expect=n + 1)
                gaps = s.gaps_s()
                if s.requests != n + 1 or len(gaps) != n:
                    raise SystemExit(f"{mode} N={n}: the fake saw {s.requests} requests, "
                                     f"expected {n + 1}")
                a, b, c, d = _gap_figures(gaps)
                mean[mode, n].add(a)
                median[mode, n].add(b)
                early[mode, n].add(c)
                late[mode, n].add(d)
    print(f"medians over {repeat} interleaved runs; per call in ms; ratio = mean / the floor's "
          "mean in the same run")
    print(f"{'client':<26} {'N':>4} {'mean':>7} {'median':>7} {'first 1/6':>9} "
          f"{'last 1/6':>8} {'x floor':>8}")
    out: dict[tuple[str, int], float] = {}
    for n in SERVER_SIDE_NS:
        floor = mean[modes[0], n].median
        for mode in modes:
            key = (mode, n)
            out[key] = mean[key].median
            print(f"{mode:<26} {n:>4} {mean[key].median * 1e3:7.2f} "
                  f"{median[key].median * 1e3:7.2f} {early[key].median * 1e3:9.2f} "
                  f"{late[key].median * 1e3:8.2f} {ratio(mean[key].median, floor):>8}")
    for n in SERVER_SIDE_NS:
        h = out["headless agent-cli run", n] * 1e3
        i = out["in-process Session", n] * 1e3
        verdict = "MET" if max(h, i) <= SERVER_SIDE_GOAL_MS else "MISSED"
        print(f"goal 5, N={n}: headless {h:.2f} ms per call (mean), in-process "
              f"{i:.2f} ms; goal <= {SERVER_SIDE_GOAL_MS} ms: {verdict}")
    return out


def profile_turn(fake: FakeProcess, tmp: Path, n: int = 300, top: int = 25) -> None:
    """cProfile of one in-process n-call turn: where the host time per call goes."""
    import cProfile
    import io
    import pstats

    header(f"5. cProfile of one in-process {n}-call turn (own time per call, ranked)")
    warm = make_session(fake, tmp, "prof-warm", [])
    warm.start()
    warm.send("calls=2")
    warm.close()
    session = make_session(fake, tmp, "prof", [])
    session.start()
    prof = cProfile.Profile(time.process_time)  # CPU time: waiting on the socket is not cost
    prof.enable()
    session.send(f"calls={n}")
    prof.disable()
    session.close()
    out = io.StringIO()
    stats = pstats.Stats(prof, stream=out)
    total = sum(v[2] for v in stats.stats.values())  # type: ignore[attr-defined]
    print(f"profiled CPU {total:.3f} s = {total / n * 1e3:.2f} ms per call (cProfile inflates "
          "it; read the ranks and shares)")
    by_file: dict[str, float] = {}
    for (path, _line, _name), v in stats.stats.items():  # type: ignore[attr-defined]
        by_file[_area(path)] = by_file.get(_area(path), 0.0) + v[2]
    print("own time by area:")
    for area, t in sorted(by_file.items(), key=lambda kv: -kv[1])[:12]:
        print(f"  {t / total * 100:5.1f}%  {t / n * 1e6:7.0f} us per call  {area}")
    stats.sort_stats("tottime").print_stats(top)
    print("\n".join(line for line in out.getvalue().splitlines()[6:] if line.strip()))
    out.seek(0)
    out.truncate()
    stats.sort_stats("cumulative").print_stats(r"agent_cli", top)
    print("cumulative, agent_cli functions only:")
    print("\n".join(line for line in out.getvalue().splitlines()[6:] if line.strip()))


def public_api_ab(fake: FakeProcess, repeat: int, tmp: Path, n: int = 300,
                  before: Path | None = None) -> None:
    """Goal 6: the provider as shipped (body encoded once and sent as `client.post(content=)`,
    the events read into dicts by providers/sse.py) against the same reader with the body given
    as `client.post(body=)` (the SDK prepares, i.e. walks and copies, and encodes it), and
    against the SDK's public `client.messages.stream` with its own reader. With `before`, that
    tree's provider too. Same session, same server, interleaved; figures from the server's side,
    plus the two encodings alone on the body of the last request of an n-call turn."""
    import json

    import httpx2

    from agent_cli.providers.anthropic import STREAM_HEADERS, AnthropicProvider
    from agent_cli.providers.base import ModelResponse, usage_of

    header(f"6. goal 6: the shipped request path against the SDK's (N={n}, interleaved)")

    class PostBody(AnthropicProvider):
        def _send(self, client: Any, body: dict[str, Any]) -> Any:
            return client.post("/v1/messages", cast_to=httpx2.Response,
                               body={**body, "stream": True},
                               options={"headers": STREAM_HEADERS}, stream=True)

    class PublicStream(AnthropicProvider):
        """`client.messages.stream(**body)`: the SDK's request, events and final message."""

        def complete(self, request: Any, on_text: Any, on_status: Any) -> ModelResponse:
            with self.client().messages.stream(**self.body(request)) as stream:
                for event in stream:
                    if event.type == "content_block_delta" and event.delta.type == "text_delta":
                        on_text(event.delta.text)
                final = stream.get_final_message()
            return ModelResponse(
                content=[b.model_dump(mode="json", exclude_none=True) for b in final.content],
                stop_reason=final.stop_reason, usage=usage_of(final.usage.model_dump()),
                model=final.model)

    bodies: list[dict[str, Any]] = []

    class Keep(AnthropicProvider):
        def _send(self, client: Any, body: dict[str, Any]) -> Any:
            bodies[:] = [body]
            return super()._send(client, body)

    variants: dict[str, Any] = {"shipped: post(content=)": AnthropicProvider,
                                "post(body=), same reader": PostBody,
                                "public messages.stream": PublicStream}
    if before is not None:
        variants["before: hand-built manager"] = load_before(before)
    gaps = {name: Stats() for name in variants}
    late = {name: Stats() for name in variants}
    runs = 0
    for _ in range(repeat):
        for name, cls in variants.items():
            runs += 1
            session = make_session(fake, tmp, f"ab{runs}", [], cls)
            session.start()
            fake.reset()
            result = session.send(f"calls={n}")
            session.close()
            st = fake.stats(expect=n + 1)
            if result.reason != "end_turn" or st.requests != n + 1:
                raise SystemExit(f"{name}: wrong run ({result.reason}, {st.requests} requests)")
            g = st.gaps_s()
            gaps[name].add(statistics.fmean(g))
            late[name].add(_gap_figures(g)[3])
    shipped = gaps["shipped: post(content=)"].median
    for name in variants:
        print(f"  {name:<28} per call (server side, mean) {gaps[name].fmt('ms', 2)}; last "
              f"sixth {late[name].median * 1e3:.2f} ms; {ratio(gaps[name].median, shipped)} "
              "the shipped path")
    session = make_session(fake, tmp, "ab-body", [], Keep)
    session.start()
    session.send(f"calls={n}")
    session.close()
    from anthropic._utils._json import openapi_dumps  # measured only, never used
    from anthropic._utils._prepare import prepare_request_data

    body = bodies[0]
    enc, prep = Stats(), Stats()
    for _ in range(max(5, repeat * 3)):
        t0 = time.process_time()
        json.dumps({**body, "stream": True}, ensure_ascii=False, separators=(",", ":")).encode()
        t1 = time.process_time()
        openapi_dumps(prepare_request_data({**body, "stream": True}, location="body"))
        t2 = time.process_time()
        enc.add(t1 - t0)
        prep.add(t2 - t1)
    size = len(json.dumps(body))
    print(f"  the last request's body ({size / 1e3:.0f} KB): json.dumps {enc.fmt('ms', 2)}; the "
          f"SDK's prepare + encode {prep.fmt('ms', 2)} ({ratio(prep.median, enc.median)})")


def request_floors(fake: FakeProcess, repeat: int, n: int = 300) -> None:
    """Where one request's CPU goes below agent-cli: the same small streaming request (one
    tool call answered) sent n times by each client on one kept-alive connection, interleaved,
    CPU time of this process per request, medians. Each row adds one layer to the one above."""
    import http.client
    import json

    import httpx2

    from agent_cli.providers.anthropic import STREAM_HEADERS, AnthropicProvider
    from agent_cli.providers.sse import read_reply

    header(f"7. one request's CPU by layer ({n} small streaming requests each, interleaved)")
    warnings.filterwarnings("ignore", category=DeprecationWarning)
    body = {"model": MODEL, "max_tokens": 100,
            "messages": [{"role": "user", "content": "calls=1"}]}
    raw = json.dumps({**body, "stream": True}).encode()
    provider = AnthropicProvider(MODEL, api_key=API_KEY, base_url=fake.base_url, max_retries=0)
    client: Any = provider.client()
    plain = httpx2.Client()
    conn = http.client.HTTPConnection("127.0.0.1", fake.port)
    head = {"content-type": "application/json", "x-api-key": API_KEY}

    def stdlib() -> None:
        conn.request("POST", "/v1/messages", body=raw, headers=head)
        conn.getresponse().read()

    def bare_httpx2() -> None:
        with plain.stream("POST", fake.base_url + "/v1/messages", content=raw,
                          headers=head) as r:
            for _chunk in r.iter_bytes():
                pass

    def sdk_post() -> None:
        r = client.post("/v1/messages", cast_to=httpx2.Response, content=raw,
                        options={"headers": STREAM_HEADERS}, stream=True)
        r.read()
        r.close()

    def sdk_post_read() -> None:
        r = client.post("/v1/messages", cast_to=httpx2.Response, content=raw,
                        options={"headers": STREAM_HEADERS}, stream=True)
        try:
            read_reply(r.iter_bytes(), lambda _t: None).response()
        finally:
            r.close()

    def sdk_stream() -> None:
        with client.messages.stream(**body) as stream:
            stream.get_final_message()

    rows = {"http.client, read whole": stdlib, "httpx2 client, streamed": bare_httpx2,
            "SDK client.post(content=)": sdk_post, "+ providers/sse.py reader": sdk_post_read,
            "SDK messages.stream": sdk_stream}
    cpu = {k: Stats() for k in rows}
    for f in rows.values():
        for _ in range(20):
            f()
    for _ in range(repeat):
        for label, f in rows.items():
            t0 = time.process_time()
            for _ in range(n):
                f()
            cpu[label].add((time.process_time() - t0) / n)
    conn.close()
    plain.close()
    floor = cpu["http.client, read whole"].median
    for label in rows:
        print(f"  {label:<28} {cpu[label].median * 1e3:6.3f} ms CPU per request "
              f"({ratio(cpu[label].median, floor)} http.client)")


def run_vs_import(fake: FakeProcess, repeat: int, tmp: Path) -> float:
    """Goal 5, second part: `agent-cli run` answered with no tool call against `python -c
    "import anthropic"` (the floor: the SDK import every request needs), interleaved, medians.
    Returns the wall ratio."""
    header("5. `agent-cli run` with no tool call vs `python -c \"import anthropic\"`")
    home, ws = tmp / "home-run0", tmp / "ws-run0"
    home.mkdir(exist_ok=True)
    ws.mkdir(exist_ok=True)
    env = clean_env(ANTHROPIC_BASE_URL=fake.base_url, ANTHROPIC_API_KEY=API_KEY,
                    AGENT_CLI_HOME=str(home))
    problems = check_once(fake, 0, env, ws)
    if problems:
        print("the run is wrong; no figures:\n  " + "\n  ".join(problems))
        raise SystemExit(1)
    runs = {"python -c 'import anthropic'": [sys.executable, "-c", "import anthropic"],
            "python -c pass": [sys.executable, "-c", "pass"],
            "agent-cli run (no tool call)": agent_argv(0, ws)}
    wall = {k: Stats() for k in runs}
    cpu = {k: Stats() for k in runs}
    for argv in runs.values():  # warm the file cache and the bytecode
        run_child(argv, env=env)
    for _ in range(repeat):
        for label, argv in runs.items():
            fake.reset()
            r = run_child(argv, env=env, timeout_s=120)
            if r.returncode != 0:
                print(f"{label}: exit {r.returncode}; stopping")
                raise SystemExit(1)
            wall[label].add(r.wall_s)
            cpu[label].add(r.cpu_s)
    floor = "python -c 'import anthropic'"
    print(f"{'':<30} {'wall median':>11} {'min':>7} {'CPU median':>10}  x import anthropic "
          "(wall / CPU)")
    for label in runs:
        print(f"{label:<30} {wall[label].median:9.3f} s {wall[label].min:7.3f} "
              f"{cpu[label].median:8.3f} s  {wall[label].median / wall[floor].median:5.2f}x / "
              f"{cpu[label].median / cpu[floor].median:.2f}x")
    got = wall["agent-cli run (no tool call)"].median / wall[floor].median
    print(f"goal 5 (second part): agent-cli run <= {RUN_GOAL_RATIO}x import anthropic: "
          f"{got:.2f}x wall, {'MET' if got <= RUN_GOAL_RATIO else 'MISSED'}")
    return got


def _area(path: str) -> str:
    """Which package a profiled function's file belongs to (agent_cli module, or the library)."""
    p = path.replace("\\", "/")
    if "/agent_cli/" in p:
        return "agent_cli/" + p.split("/agent_cli/", 1)[1]
    if "site-packages/" in p:
        return p.split("site-packages/", 1)[1].split("/", 1)[0]
    if p.startswith("<") or p == "~":
        return "builtins"
    return "stdlib/" + p.rsplit("/", 1)[-1]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--ns", default="0,1,10,100,300")
    parser.add_argument("--quick", action="store_true", help="N up to 100, 3 repeats")
    parser.add_argument("--server-side", action="store_true",
                        help="only part 4 (the server's view at N=100 and 300)")
    parser.add_argument("--profile", action="store_true",
                        help="add a cProfile of one in-process 300-call turn")
    parser.add_argument("--run-vs-import", action="store_true",
                        help="only part 5: `agent-cli run` with no tool call vs import anthropic")
    parser.add_argument("--before", type=Path, default=None,
                        help="an export of an older checkout: its provider joins parts 4 and 6")
    parser.add_argument("--layers", action="store_true",
                        help="only part 7: one request's CPU by layer (stdlib, httpx2, SDK)")
    parser.add_argument("--sdk-ab", action="store_true",
                        help="only part 6: the shipped request path against messages.stream")
    args = parser.parse_args(argv)
    ns = sorted({0, *(int(x) for x in args.ns.split(","))})
    repeat = args.repeat
    if args.quick:
        ns, repeat = [n for n in ns if n <= 100], min(repeat, 3)
    print(f"bench_overhead: {machine_line()}; repeat={repeat}; fake server in its own process")
    sys.path.insert(0, str(REPO))
    if args.sdk_ab:
        with spawn_fake() as fake, tempfile.TemporaryDirectory(prefix="bench-overhead-") as t:
            public_api_ab(fake, repeat, Path(t), before=args.before)
        return 0
    if args.layers:
        with spawn_fake() as fake:
            request_floors(fake, repeat)
        return 0
    if args.run_vs_import:
        with spawn_fake() as fake, tempfile.TemporaryDirectory(prefix="bench-overhead-") as t:
            run_vs_import(fake, max(repeat, 5), Path(t))
        return 0
    if args.server_side:
        with spawn_fake() as fake, tempfile.TemporaryDirectory(prefix="bench-overhead-") as t:
            server_side(fake, repeat, Path(t), args.before)
            run_vs_import(fake, max(repeat, 5), Path(t))
            if args.profile:
                profile_turn(fake, Path(t))
        return 0
    with spawn_fake() as fake, tempfile.TemporaryDirectory(prefix="bench-overhead-") as t:
        tmp = Path(t)
        sub = headless(fake, ns, repeat, tmp)
        inproc, inside = in_process(fake, ns, repeat, tmp)
        sdk_wall, sdk_cpu = bare_sdk(fake, max(ns), max(1, repeat // 2))
        server_side(fake, max(1, repeat // 2), tmp)
        run_vs_import(fake, repeat, tmp)
        public_api_ab(fake, max(1, repeat // 2), tmp)
        if args.profile:
            profile_turn(fake, tmp)
    header("summary")
    big = max(ns)
    small = min((n for n in ns if n >= 10), default=big)
    h, i = sub[big], inproc[big]
    verdict = {True: "MET", False: "MISSED"}
    print(f"headless, N={big}: {h.wall * 1e3:.2f} ms per call (wall median), "
          f"{h.cpu * 1e3:.2f} ms (client CPU); goal < {GOAL_MS} ms: wall "
          f"{verdict[h.wall * 1e3 < GOAL_MS]}, CPU {verdict[h.cpu * 1e3 < GOAL_MS]}")
    print(f"in-process, N={big}: {i.wall * 1e3:.2f} ms per call (wall median), "
          f"{i.cpu * 1e3:.2f} ms (CPU); goal < {GOAL_MS} ms: wall "
          f"{verdict[i.wall * 1e3 < GOAL_MS]}, CPU {verdict[i.cpu * 1e3 < GOAL_MS]}")
    flat_h, flat_i = h.cpu / sub[small].cpu, i.cpu / inproc[small].cpu
    print(f"flat (CPU per call at N={big} / N={small}): headless {flat_h:.2f}, in-process "
          f"{flat_i:.2f}, inside one turn last/first {inside:.2f}; goal <= {FLAT_TOLERANCE}: "
          f"{verdict[max(flat_h, flat_i, inside) <= FLAT_TOLERANCE]}")
    own = i.cpu - sdk_cpu
    print(f"where the in-process CPU per call goes at N={big}: anthropic SDK request "
          f"{sdk_cpu * 1e3:.2f} ms + agent-cli's own loop, log and tool {own * 1e3:.2f} ms "
          f"(SDK wall {sdk_wall * 1e3:.2f} ms)")
    print("connection: one client and one connection per run (checked on every run)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
