"""The three host costs the round-2 profile ranked after the SDK, measured alone, in-process, CPU.

    python bench/bench_hotpath.py [--calls 300] [--rounds 5] [--before OLD_CHECKOUT]

One scripted session of N `read_file` calls (no network, no model) gives the real events and the
real history. Then, each timed with the process CPU clock, median of the rounds:

1. redaction: `Redactor.value` of every logged record (what the log writer redacts);
2. the context budget: one `ContextBudget` called on the history as it grew, request by request
   (N + 1 calls, as in one turn), and the per-request cost of the last one;
3. `tools.paths.protected_roots`, 1,000 calls.

With `--before DIR` (a checkout of an older agent-cli, e.g. `git worktree add /tmp/old <rev>`),
the same three are run with that checkout's `redact.py`, `context.py` and `tools/paths.py`
(loaded beside this tree's, the rest of the package shared), interleaved round by round, and the
ratio is printed. Figures only; nothing is asserted.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def session_material(calls: int, tmp: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(the log's records, the final history) of one scripted session of `calls` reads."""
    from agent_cli.config import Settings
    from tests.scripts import done, make_session, tool_use

    ws = tmp / "ws"
    ws.mkdir()
    for i in range(calls):  # a different file each time (the same call repeated is stopped)
        (ws / f"notes{i}.txt").write_text(f"Note {i}: the result is 42.\n" * 20)
    replies = [tool_use(f"toolu_{i:04d}", "read_file", {"path": f"notes{i}.txt"}, f"Step {i}.")
               for i in range(calls)] + [done()]
    settings = Settings(provider="scripted", max_turns=calls + 5)
    session = make_session(ws, replies, tmp / "session.jsonl", settings=settings)
    session.start()
    session.send("read the notes many times")
    history = list(session.history)
    session.close()
    lines = (tmp / "session.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines], history


def _cpu(fn: Callable[[], object]) -> float:
    t0 = time.process_time()
    fn()
    return time.process_time() - t0


def measure(redact: ModuleType, context: ModuleType, paths: ModuleType,
            records: list[dict[str, Any]], history: list[dict[str, Any]]) -> dict[str, float]:
    redactor = redact.Redactor()

    def redact_all() -> None:
        for record in records:
            redactor.value(record)

    budget_box: list[Any] = []

    def budget_turn() -> None:
        budget = context.ContextBudget(400_000)
        budget_box[:] = [budget]
        for k in range(1, len(history) + 1, 2):  # each request's history ends with a user message
            budget(history[:k])

    def last_request() -> None:
        budget = budget_box[0]
        for _ in range(20):
            budget(history)

    def roots() -> None:
        for _ in range(1000):
            paths.protected_roots()

    return {"redact": _cpu(redact_all), "budget": _cpu(budget_turn),
            "budget_last": _cpu(last_request) / 20, "roots": _cpu(roots) / 1000}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--before", type=Path, help="an older checkout to compare with")
    args = parser.parse_args()

    from agent_cli import context, redact
    from agent_cli.tools import paths

    trees: dict[str, tuple[ModuleType, ModuleType, ModuleType]] = {
        "this tree": (redact, context, paths)}
    if args.before is not None:
        old = args.before.resolve() / "agent_cli"
        trees = {"before": (_load(old / "redact.py", "before_redact"),
                            _load(old / "context.py", "before_context"),
                            _load(old / "tools" / "paths.py", "before_paths")), **trees}
    with tempfile.TemporaryDirectory(prefix="bench-hotpath-") as t:
        records, history = session_material(args.calls, Path(t))
    strings = sum(1 for _ in _strings(records))
    print(f"{args.calls} calls: {len(records)} log records holding {strings} strings, "
          f"{len(history)} messages; CPU, median of {args.rounds} interleaved rounds")
    got: dict[str, dict[str, list[float]]] = {k: {} for k in trees}
    for _ in range(args.rounds):
        for label, mods in trees.items():
            for key, value in measure(*mods, records, history).items():
                got[label].setdefault(key, []).append(value)
    requests = (len(history) + 1) // 2
    rows = (("redact", "redaction of every record", 1e3, "ms"),
            ("budget", f"context budget, {requests} requests (one turn)", 1e3, "ms"),
            ("budget_last", "context budget, the last request", 1e6, "us"),
            ("roots", "protected_roots, one call", 1e6, "us"))
    labels = list(trees)
    print(f"{'':<46}" + "".join(f"{label:>14}" for label in labels)
          + ("   before / now" if len(labels) == 2 else ""))
    for key, title, scale, unit in rows:
        meds = [statistics.median(got[label][key]) for label in labels]
        line = f"{title:<46}" + "".join(f"{m * scale:>11.1f} {unit}" for m in meds)
        if len(meds) == 2 and meds[1] > 0:
            line += f"   {meds[0] / meds[1]:6.1f}x"
        print(line)
    body_line(history, args.rounds)
    per_call = {label: (statistics.median(got[label]["redact"])
                        + statistics.median(got[label]["budget"])) / args.calls
                for label in labels}
    print("redaction + budget per call: " + ", ".join(
        f"{label} {v * 1e3:.3f} ms" for label, v in per_call.items()))
    return 0


def body_line(history: list[dict[str, Any]], rounds: int) -> None:
    """4. the request body's JSON over one turn: one json.dumps of the whole body per request
    (before) against each message's JSON kept between requests (providers/body_json.py)."""
    from agent_cli.providers.anthropic import _encode, with_cache_breakpoints
    from agent_cli.providers.body_json import BodyEncoder

    bodies = [with_cache_breakpoints({"model": "m", "max_tokens": 1024,
                                      "messages": history[:k], "system": "s"})
              for k in range(1, len(history) + 1, 2)]

    def whole() -> None:
        for body in bodies:
            _encode(body)

    def kept() -> None:
        encoder = BodyEncoder()
        for body in bodies:
            _encode(body, encoder)

    w = statistics.median(_cpu(whole) for _ in range(rounds))
    k = statistics.median(_cpu(kept) for _ in range(rounds))
    last = bodies[-1]
    size = len(_encode(last)[0])
    print(f"{'request body JSON, one turn (' + str(len(bodies)) + ' requests)':<46}"
          f"{w * 1e3:>11.1f} ms{k * 1e3:>11.1f} ms   {w / k:6.1f}x   "
          f"(whole json.dumps vs kept per message; last body {size / 1024:.0f} KB)")


def _strings(obj: Any) -> Any:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for k, v in obj.items():
            yield from _strings(k)
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)


if __name__ == "__main__":
    sys.exit(main())
