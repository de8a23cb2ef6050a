"""Billed input tokens over a 50-turn session, with and without prompt caching.

The real Session, loop, tools and anthropic SDK run against the fake Messages API
(tests/fakes/anthropic_server.py), which bills each request as the API would from the
cache_control breakpoints it receives (a token per 4 characters; a prefix is read back only when
its bytes are exactly those of a prefix cached before; at least 1,024 tokens to be cached). Each
turn: the user asks, the model reads a workspace file (about 2 KB) and answers: 2 requests a turn.

    python bench/bench_cache.py [--turns 50] [--quick]

"Input-price equivalent" weighs the three kinds of input by what the API charges for them
(uncached 1x, cache write 1.25x, cache read 0.1x); cost is at the shipped claude-sonnet-5-5 price.
Figures only; the tests assert the behaviour (tests/providers/test_prompt_cache.py).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from agent_cli import events as ev
from agent_cli.approval import NonInteractiveApprover
from agent_cli.config import Settings
from agent_cli.providers.anthropic import AnthropicProvider
from agent_cli.session import Session
from agent_cli.tools.loader import load_tools
from agent_cli.usage import builtin_prices, cost_of
from tests.fakes.anthropic_server import FakeAnthropic, text_reply, tool_reply

MODEL = "claude-sonnet-5-5"
KINDS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def run(turns: int, prompt_cache: bool, root: Path) -> dict[str, int]:
    ws = root / ("cached" if prompt_cache else "plain")
    ws.mkdir()
    for n in range(turns):
        (ws / f"notes{n}.txt").write_text(f"note {n}: " + "the quick brown fox. " * 100)
    usage = dict.fromkeys(KINDS, 0)
    usage["requests"] = 0

    def count(event: ev.AnyEvent) -> None:
        if isinstance(event, ev.ModelReply):
            usage["requests"] += 1
            for k in KINDS:
                usage[k] += int(event.usage.get(k, 0))

    with FakeAnthropic() as fake:
        registry, report = load_tools([])
        provider = AnthropicProvider(MODEL, api_key="bench-key", base_url=fake.base_url,
                                     prompt_cache=prompt_cache)
        session = Session(Settings(prompt_cache=prompt_cache, model=MODEL), workspace=ws,
                          provider=provider, registry=registry,
                          approver=NonInteractiveApprover(), sinks=[count],
                          log_path=root / f"{ws.name}.jsonl", load_report=report)
        session.start()
        for n in range(turns):
            fake.add(tool_reply((f"toolu_{n}", "read_file", {"path": f"notes{n}.txt"}),
                                text=f"Reading notes{n}.txt."),
                     text_reply(f"notes{n}.txt says the fox is quick ({n})."))
            session.send(f"What does notes{n}.txt say?")
        session.close()
    return usage


def equivalent(u: dict[str, int]) -> float:
    return (u["input_tokens"] + 1.25 * u["cache_creation_input_tokens"]
            + 0.1 * u["cache_read_input_tokens"])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--quick", action="store_true", help="10 turns")
    args = parser.parse_args()
    turns = 10 if args.quick else args.turns
    os.environ.setdefault("AGENT_CLI_HOME", tempfile.mkdtemp(prefix="bench-cache-home-"))
    price = builtin_prices()[MODEL]
    print(f"== prompt caching: {turns}-turn session, {MODEL}, fake API billing")
    with tempfile.TemporaryDirectory(prefix="bench-cache-") as tmp:
        rows = []
        for cached in (False, True):
            t0 = time.perf_counter()
            u = run(turns, cached, Path(tmp))
            rows.append((cached, u, time.perf_counter() - t0))
    for cached, u, secs in rows:
        total = sum(u[k] for k in KINDS)
        print(f"prompt_cache = {str(cached).lower():5}  {u['requests']} requests  "
              f"prompt tokens {total:,}: uncached {u['input_tokens']:,}, "
              f"cache write {u['cache_creation_input_tokens']:,}, "
              f"cache read {u['cache_read_input_tokens']:,}  "
              f"input-price equivalent {equivalent(u):,.0f}  "
              f"input cost ${cost_of({**u, 'output_tokens': 0}, price):.4f}  ({secs:.1f} s)")
    plain, cached_u = rows[0][1], rows[1][1]
    print(f"billed input with caching: {equivalent(cached_u) / equivalent(plain):.1%} of "
          "without")
    return 0


if __name__ == "__main__":
    sys.exit(main())
