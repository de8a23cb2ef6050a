"""Shared helpers for the bench scripts: timing statistics, child-process runs with their own peak
memory, and a fake Anthropic server in its own process.

Why the fake runs in a separate process: a real API is on another machine, so its work must not
compete with the client for the GIL, and the server's own time per request has to be measured
apart from the client's so it can be subtracted. Everything talks to 127.0.0.1 only.

Run directly (``python bench/common.py serve``) it is that server process: it prints
``PORT <n>`` and serves until its standard input closes.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
LOOPBACK = "127.0.0.1"
API_KEY = "test-key"
MODEL = "claude-sonnet-4-5"
SERVE_TIMEOUT_S = 1800.0
"""A server process left behind by a crashed bench ends itself after this long."""
MAX_WALLS = 10_000


# --------------------------------------------------------------------------- statistics


@dataclass
class Stats:
    """Median, min and max of repeated samples (these machines are noisy: never trust one run)."""

    samples: list[float] = field(default_factory=list)

    def add(self, value: float) -> None:
        self.samples.append(value)

    @property
    def median(self) -> float:
        return statistics.median(self.samples) if self.samples else float("nan")

    @property
    def min(self) -> float:
        return min(self.samples) if self.samples else float("nan")

    @property
    def max(self) -> float:
        return max(self.samples) if self.samples else float("nan")

    def fmt(self, unit: str = "s", digits: int = 3) -> str:
        """`median (min .. max) unit, n=k` with values scaled to the unit (s, ms, us, MB)."""
        scale = {"s": 1.0, "ms": 1e3, "us": 1e6, "MB": 1.0, "x": 1.0}[unit]
        med, lo, hi = (v * scale for v in (self.median, self.min, self.max))
        return (f"{med:.{digits}f} {unit} (min {lo:.{digits}f}, max {hi:.{digits}f}, "
                f"n={len(self.samples)})")


def per_call(base: Stats, at: Stats, n: int, server_per_request: float = 0.0,
             *, use_min: bool = False) -> float:
    """(T(N) - T(0)) / N - server time per request, from medians (or minimums)."""
    if use_min:
        return (at.min - base.min) / n - server_per_request
    return (at.median - base.median) / n - server_per_request


def ratio(a: float, b: float) -> str:
    """a / b as `12.3x`, or `n/a` when b is zero or missing."""
    if not b or b != b or a != a:
        return "n/a"
    return f"{a / b:.1f}x"


def self_peak_rss_mb() -> float:
    """Peak resident memory of this process so far (ru_maxrss is KiB on Linux)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def header(title: str) -> None:
    print(f"\n== {title}", flush=True)


def machine_line() -> str:
    """One line saying where the figures come from."""
    import platform

    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    return (f"python {platform.python_version()} on {platform.system()} {platform.machine()}, "
            f"{os.cpu_count()} cores, load average {load}")


# --------------------------------------------------------------------------- child processes


@dataclass
class ChildRun:
    wall_s: float
    returncode: int
    peak_rss_mb: float
    cpu_s: float
    """User + system CPU of the child: far less disturbed than wall time by other load."""
    stdout: str = ""
    stderr: str = ""


def run_child(
    argv: Sequence[str],
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    timeout_s: float = 300.0,
    capture: bool = False,
) -> ChildRun:
    """Run a program to completion; wall time, CPU time and that child's own peak RSS (wait4).

    Output goes to /dev/null unless `capture`; captured output is read from temporary files so a
    chatty child can never block on a full pipe.
    """
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sink_out: Any = out if capture else subprocess.DEVNULL
        sink_err: Any = err if capture else subprocess.DEVNULL
        start = time.perf_counter()
        proc = subprocess.Popen(list(argv), stdin=subprocess.DEVNULL, stdout=sink_out,
                                stderr=sink_err, env=env, cwd=cwd)
        timer = threading.Timer(timeout_s, proc.kill)
        timer.start()
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        finally:
            timer.cancel()
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        text_out = text_err = ""
        if capture:
            out.seek(0)
            err.seek(0)
            text_out = out.read().decode("utf-8", "replace")
            text_err = err.read().decode("utf-8", "replace")
    return ChildRun(wall, proc.returncode, usage.ru_maxrss / 1024,
                    usage.ru_utime + usage.ru_stime, text_out, text_err)


def clean_env(**extra: str) -> dict[str, str]:
    """The current environment without anything that could point a client at a real API, nor
    settings from the developer's shell that change what is measured."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "OPENAI_", "AGENT_CLI_", "LLM_"))}
    for var in ("NO_COLOR", "FORCE_COLOR", "COLUMNS", "LINES"):
        env.pop(var, None)
    # children must start as an installed program does: from cached bytecode, not recompiling
    # every module on each start (a sandbox may set this variable)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(extra)
    return env


# --------------------------------------------------------------------------- the fake server


def multiply_calls_wanted(body: dict[str, Any]) -> int | None:
    """`N` from a first user message containing `calls=N`; None when there is none."""
    messages = body.get("messages") or []
    if not messages:
        return None
    content = messages[0].get("content")
    if isinstance(content, list):
        content = " ".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    text = str(content)
    marker = text.find("calls=")
    if marker < 0:
        return None
    digits = ""
    for ch in text[marker + 6:]:
        if not ch.isdigit():
            break
        digits += ch
    return int(digits) if digits else None


def multiply_responder(body: dict[str, Any]) -> dict[str, Any]:
    """Stateless: one multiply tool_use per request until `calls=N` results are in the history,
    then a short end_turn answer. Without `calls=N`, a plain text answer (no tool use).

    Stateless, so any client (agent-cli, llm) can be driven by the same server, and a retry or a
    client that resends the history never confuses it.
    """
    wanted = multiply_calls_wanted(body)
    done = 0
    for msg in body.get("messages") or []:
        content = msg.get("content")
        if msg.get("role") == "user" and isinstance(content, list):
            done += sum(1 for b in content
                        if isinstance(b, dict) and b.get("type") == "tool_result")
    if wanted is None or done >= wanted:
        text = "Hello! This is the fake model." if wanted is None else f"Done: {done} calls."
        return {"content": [{"type": "text", "text": text}], "stop_reason": "end_turn"}
    return {
        "content": [{"type": "tool_use", "id": f"toolu_bench_{done:05d}", "name": "multiply",
                     "input": {"a": done + 2, "b": 3}}],
        "stop_reason": "tool_use",
    }


@dataclass
class ServerStats:
    """What the fake saw since the last reset."""

    requests: int
    handler_wall_s: float
    handler_cpu_s: float
    client_ports: list[int]
    streamed: int
    request_bytes: int
    walls_s: list[float] = field(default_factory=list)
    """Handler wall time of each request, in order (the first MAX_WALLS)."""
    arrivals_s: list[float] = field(default_factory=list)
    """`time.perf_counter()` in the server when each request's head had arrived (the first
    MAX_WALLS). CLOCK_MONOTONIC: the same clock in every process of this machine."""
    ends_s: list[float] = field(default_factory=list)
    """`time.perf_counter()` when the server had written the last byte of each answer."""

    def gaps_s(self) -> list[float]:
        """Host time between requests, seen from the server: the next request's arrival minus
        the end of this one's answer (so the server's own time per request is not in it). One
        gap per request after the first: the client's work for one model reply + tool call."""
        return [b - a for a, b in zip(self.ends_s, self.arrivals_s[1:], strict=False)]

    @property
    def per_request_wall_s(self) -> float:
        return self.handler_wall_s / self.requests if self.requests else 0.0


class FakeProcess:
    """Handle on the fake server process: its URL, and its stats over loopback."""

    def __init__(self, proc: subprocess.Popen[str], port: int) -> None:
        self.proc = proc
        self.port = port
        self.base_url = f"http://{LOOPBACK}:{port}"

    def _call(self, method: str, path: str) -> dict[str, Any]:
        req = urllib.request.Request(self.base_url + path, method=method,
                                     data=b"{}" if method == "POST" else None)
        with urllib.request.urlopen(req, timeout=10) as resp:
            data: dict[str, Any] = json.loads(resp.read())
            return data

    def reset(self) -> None:
        self._call("POST", "/__bench/reset")

    def stats(self, expect: int | None = None) -> ServerStats:
        """What the fake saw; with `expect`, wait (up to 10 s) until it has counted that many
        requests: the client may read the end of an answer before the server's thread has
        added it up."""
        deadline = time.monotonic() + 10.0
        while True:
            s = self._stats()
            if expect is None or s.requests >= expect or time.monotonic() > deadline:
                return s
            time.sleep(0.001)

    def _stats(self) -> ServerStats:
        d = self._call("GET", "/__bench/stats")
        return ServerStats(d["requests"], d["handler_wall_s"], d["handler_cpu_s"],
                           d["client_ports"], d["streamed"], d["request_bytes"], d["walls_s"],
                           d["arrivals_s"], d["ends_s"])


@contextmanager
def spawn_fake() -> Iterator[FakeProcess]:
    """Start the fake Anthropic server in its own process; stop it on exit."""
    proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "serve"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            env=clean_env(), cwd=REPO)
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().split()
        if len(line) != 2 or line[0] != "PORT":
            raise RuntimeError(f"fake server did not start (said {line!r})")
        yield FakeProcess(proc, int(line[1]))
    finally:
        if proc.stdin is not None:
            proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _serve() -> None:
    """The server process: FakeAnthropic with the multiply responder and handler timing."""
    sys.path.insert(0, str(REPO))
    from tests.fakes import anthropic_server as fa

    fake = fa.FakeAnthropic(responder=multiply_responder)
    lock = threading.Lock()
    totals: dict[str, Any] = {}

    def reset() -> None:
        with lock:
            totals.update(requests=0, wall=0.0, cpu=0.0, ports=[], streamed=0, bytes=0,
                          walls=[], arrivals=[], ends=[])
        with fake._lock:
            fake.requests.clear()

    reset()
    original: Callable[[Any], None] = fa.FakeHandler._dispatch

    def timed_dispatch(handler: Any) -> None:
        if handler.path.startswith("/__bench/"):
            _bench_endpoint(handler)
            return
        arrival, cpu = time.perf_counter(), time.thread_time()
        original(handler)
        handler.wfile.flush()
        end = time.perf_counter()
        wall, cpu = end - arrival, time.thread_time() - cpu
        with fake._lock:
            last = fake.requests[-1] if fake.requests else None
            fake.requests.clear()  # keep memory flat over long runs
        with lock:
            totals["requests"] += 1
            totals["wall"] += wall
            totals["cpu"] += cpu
            if len(totals["walls"]) < MAX_WALLS:
                totals["walls"].append(wall)
                totals["arrivals"].append(arrival)
                totals["ends"].append(end)
            if last is not None:
                if last.client_port not in totals["ports"]:
                    totals["ports"].append(last.client_port)
                totals["streamed"] += int(last.stream)
                totals["bytes"] += len(last.raw_body)

    def _bench_endpoint(handler: Any) -> None:
        handler.headers_sent = False
        length = int(handler.headers.get("content-length") or 0)
        if length:
            handler.rfile.read(length)
        if handler.path == "/__bench/reset":
            reset()
            handler.send_json(200, {"ok": True})
            return
        with lock:
            handler.send_json(200, {"requests": totals["requests"],
                                    "handler_wall_s": totals["wall"],
                                    "handler_cpu_s": totals["cpu"],
                                    "client_ports": list(totals["ports"]),
                                    "streamed": totals["streamed"],
                                    "request_bytes": totals["bytes"],
                                    "walls_s": list(totals["walls"]),
                                    "arrivals_s": list(totals["arrivals"]),
                                    "ends_s": list(totals["ends"])})
        handler.close_connection = True

    fa.FakeHandler._dispatch = timed_dispatch  # type: ignore[method-assign,assignment]
    fake.start()
    print(f"PORT {fake._server.server_port if fake._server else 0}", flush=True)
    watchdog = threading.Timer(SERVE_TIMEOUT_S, lambda: os._exit(3))
    watchdog.daemon = True
    watchdog.start()
    sys.stdin.read()  # the parent closes our stdin to stop us
    fake.stop()


if __name__ == "__main__":
    if sys.argv[1:] == ["serve"]:
        _serve()
    else:
        print("usage: python bench/common.py serve   (the fake server process used by benches)")
        sys.exit(2)
