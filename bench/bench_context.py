"""Request size and peak memory across a long session, with and without the context budget.

A 1,000-call session, in process: a scripted model asks for one read-only tool call per request,
and the tool returns 100 KB each time. The real Session, loop, log and budget run; the provider
serialises each request to JSON as an HTTP provider would, and records its size. Memory is the
peak of Python allocations (tracemalloc) during the session, which includes the history (every
result, capped at output_cap by the loop), the request body being built and the budget's copies.

    python bench/bench_context.py [--calls 1000] [--budget 400000] [--result-kb 100]

Figures only; nothing is asserted (the tests assert the behaviour).
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent_cli.approval import NonInteractiveApprover
from agent_cli.config import Settings
from agent_cli.providers.base import ModelRequest
from agent_cli.providers.scripted import FunctionProvider
from agent_cli.session import Session
from agent_cli.tools.base import Tool, ToolContext
from agent_cli.tools.registry import Registry


class _Args(BaseModel):
    model_config = ConfigDict(extra="forbid")

    n: int


def big_tool(result_bytes: int) -> Tool:
    def run(args: _Args, ctx: ToolContext) -> str:
        return f"chunk {args.n}\n" + ("0123456789abcdef" * (result_bytes // 16 + 1))[:result_bytes]

    return Tool(name="read_chunk", description="Read a large chunk.", args=_Args, run=run,
                effect="read")


def run_session(calls: int, budget: int | None, result_bytes: int) -> dict[str, Any]:
    sizes: list[int] = []

    def model(request: ModelRequest) -> dict[str, Any]:
        body = json.dumps({"messages": request.messages}, ensure_ascii=False)  # as sent
        sizes.append(len(body))
        del body
        n = len(sizes)
        if n <= calls:
            return {"content": [{"type": "tool_use", "id": f"toolu_{n}", "name": "read_chunk",
                                 "input": {"n": n}}], "stop_reason": "tool_use",
                    "usage": {"input_tokens": 1, "output_tokens": 1}}
        return {"content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn"}

    with tempfile.TemporaryDirectory() as tmp:
        ws = Path(tmp) / "ws"
        ws.mkdir()
        settings = Settings(provider="scripted", max_turns=calls + 5,
                            context_budget_chars=budget or 10**12)
        session = Session(settings, workspace=ws, provider=FunctionProvider(model),
                          registry=Registry([big_tool(result_bytes)]),
                          approver=NonInteractiveApprover(), log_path=Path(tmp) / "s.jsonl")
        if budget is None:
            session.loop.hooks = ()
        session.start()
        gc.collect()
        tracemalloc.start()
        t0 = time.perf_counter()
        result = session.send("read every chunk")
        elapsed = time.perf_counter() - t0
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        session.close()
        log_bytes = session.log_path.stat().st_size
    return {
        "reason": result.reason,
        "requests": len(sizes),
        "max_request": max(sizes),
        "last_request": sizes[-1],
        "median_request": int(statistics.median(sizes)),
        "total_sent": sum(sizes),
        "peak_mb": peak / 1e6,
        "seconds": elapsed,
        "log_mb": log_bytes / 1e6,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--budget", type=int, default=400_000)
    ap.add_argument("--result-kb", type=int, default=100)
    a = ap.parse_args()
    print(f"{a.calls} tool calls, each returning {a.result_kb} KB (the loop caps each result at "
          f"output_cap = {Settings().output_cap:,} characters, head and tail kept)")
    print(f"{'':>16} {'max request':>13} {'last request':>13} {'median':>11} "
          f"{'sum sent':>14} {'peak MB':>9} {'seconds':>8} {'log MB':>7}")
    for label, budget in ((f"budget {a.budget:,}", a.budget), ("no budget", None)):
        r = run_session(a.calls, budget, a.result_kb * 1000)
        assert r["reason"] == "end_turn", r
        print(f"{label:>16} {r['max_request']:>13,} {r['last_request']:>13,} "
              f"{r['median_request']:>11,} {r['total_sent']:>14,} {r['peak_mb']:>9.1f} "
              f"{r['seconds']:>8.1f} {r['log_mb']:>7.1f}")
    print("request sizes are characters of the JSON request body (messages only; tools and "
          "system prompt add a constant)")


if __name__ == "__main__":
    main()
