"""Rendering cost: streamed answers and the approval panel.

1. A markdown answer streamed in 8-character deltas through `agent_cli.ui.render.Renderer` to a
   Rich console writing to memory (force_terminal, width 100): CPU time for 10 KB and 100 KB.
   The ratio must be about 10 (linear): no re-rendering of the whole answer on each delta.
2. The approval panel for a call with a 1 MB argument (many lines, then one single line).
3. The same answers through the REPL's TerminalView with Markdown on: streamed live (the tail
   of the text in a transient live region), then rendered once as Markdown when complete; and
   the final Markdown render alone (SafeMarkdown: sanitise, parse, highlight, lay out).

Usage: python bench/bench_render.py [--repeat R] [--delta 8]
"""

from __future__ import annotations

import argparse
import io
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import REPO, Stats, header, machine_line, ratio

sys.path.insert(0, str(REPO))

LINEAR_LIMIT = 13.0
"""CPU(100 KB) / CPU(10 KB) above this means the cost grows faster than the answer."""

WORDS = ("agent tool call model stream render panel approval session log replay terminal "  # noqa: SIM905
         "workspace argument schema result provider history budget token delta").split()


def markdown(size: int, seed: int = 7) -> str:
    """A deterministic markdown answer of exactly `size` characters: headings, prose, lists,
    code blocks and tables, the mix a coding assistant writes."""
    rng = random.Random(seed)
    parts: list[str] = []
    total = 0
    i = 0
    while total < size:
        i += 1
        kind = i % 5
        if kind == 0:
            block = f"## Section {i}\n\n"
        elif kind == 1:
            block = " ".join(rng.choice(WORDS) for _ in range(60)) + ".\n\n"
        elif kind == 2:
            block = "".join(f"- **{rng.choice(WORDS)}**: `{rng.choice(WORDS)}()` "
                            f"{' '.join(rng.choice(WORDS) for _ in range(8))}\n"
                            for _ in range(5)) + "\n"
        elif kind == 3:
            block = "```python\n" + "".join(
                f"def {rng.choice(WORDS)}_{j}(x: int) -> int:\n    return x * {j}\n"
                for j in range(4)) + "```\n\n"
        else:
            block = "| name | effect |\n|---|---|\n" + "".join(
                f"| {rng.choice(WORDS)} | {rng.choice(('read', 'write'))} |\n"
                for _ in range(4)) + "\n"
        parts.append(block)
        total += len(block)
    return "".join(parts)[:size]


def console() -> object:
    from rich.console import Console

    return Console(file=io.StringIO(), force_terminal=True, width=100, color_system="truecolor",
                   highlight=False)


def stream_cpu(text: str, delta: int) -> tuple[float, int]:
    """CPU seconds to stream `text` through a Renderer; also the number of characters written."""
    from agent_cli import events as ev
    from agent_cli.ui.render import Renderer

    con = console()
    renderer = Renderer(con)  # type: ignore[arg-type]
    pieces = [text[i:i + delta] for i in range(0, len(text), delta)]
    reply = ev.ModelReply(content=[{"type": "text", "text": text}], stop_reason="end_turn",
                          usage={}, model="bench")
    start = time.process_time()
    for piece in pieces:
        renderer(ev.TextDelta(piece))
    renderer(reply)
    cpu = time.process_time() - start
    return cpu, len(con.file.getvalue())  # type: ignore[attr-defined]


def view_cpu(text: str, delta: int) -> tuple[float, float]:
    """(CPU seconds for the whole streamed-then-rendered answer through TerminalView, CPU
    seconds for the final Markdown render alone)."""
    from agent_cli import events as ev
    from agent_cli.ui.markdown import render_answer
    from agent_cli.ui.render import Renderer
    from agent_cli.ui.status import TerminalView

    con = console()
    view = TerminalView(Renderer(con), con, markdown=True)  # type: ignore[arg-type]
    pieces = [text[i:i + delta] for i in range(0, len(text), delta)]
    reply = ev.ModelReply(content=[{"type": "text", "text": text}], stop_reason="end_turn",
                          usage={}, model="bench")
    start = time.process_time()
    view(ev.UserMessage(text="go"))
    for piece in pieces:
        view(ev.TextDelta(piece))
    view(reply)
    view.stop()
    whole = time.process_time() - start
    start = time.process_time()
    console().print(render_answer(text))  # type: ignore[attr-defined]
    return whole, time.process_time() - start


def panel_cpu(value: str, *, as_approver: bool = True) -> tuple[float, int]:
    """CPU seconds to lay out and render the approval panel for a write_file call holding
    `value`, as the terminal approver does before it shows the first page (captured to text,
    `crop=False`: the panel's lines are already the console's width); with `as_approver=False`,
    a plain `console.print(panel)` (Rich then crops every line again)."""
    from agent_cli.calls import Call
    from agent_cli.ui.panel import approval_panel

    con: Any = console()
    request = Call(id="toolu_bench", name="write_file", effect="write",
                   args={"path": "notes/big.md", "content": value},
                   args_hash="0" * 64, preview=None, description="Write a file.",
                   source="tools.d/write_file.py")
    start = time.process_time()
    if as_approver:
        with con.capture() as cap:
            con.print(approval_panel(request), crop=False)
        out = cap.get()
    else:
        con.print(approval_panel(request))
        out = con.file.getvalue()
    cpu = time.process_time() - start
    return cpu, len(out)


def floor_cpu(value: str) -> float:
    """The floor for part 2: sanitising the value (the output boundary) plus writing its lines,
    cut at the panel's value width, to memory: what any panel showing it must at least do."""
    from agent_cli.safe_text import sanitize

    start = time.process_time()
    text = sanitize(value)
    out = io.StringIO()
    for line in text.split("\n"):
        for i in range(0, max(len(line), 1), 71):
            out.write("| " + line[i:i + 71].ljust(71) + " |\n")
    return time.process_time() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--delta", type=int, default=8, help="characters per streamed delta")
    args = parser.parse_args(argv)
    print(f"bench_render: {machine_line()}; repeat={args.repeat}; "
          f"Console(StringIO, force_terminal, width=100)")
    stream_cpu(markdown(2000), args.delta)  # warm-up: imports, caches

    header(f"1. streaming a markdown answer in {args.delta}-character deltas (CPU time)")
    sizes = (10_000, 100_000)
    cpu = {n: Stats() for n in sizes}
    wrote = {}
    for _ in range(args.repeat):
        for n in sizes:
            t, w = stream_cpu(markdown(n), args.delta)
            cpu[n].add(t)
            wrote[n] = w
    for n in sizes:
        per_kb = cpu[n].median / (n / 1000) * 1e3
        print(f"  {n // 1000:>4} KB ({n // args.delta} deltas): {cpu[n].fmt('ms', 1)}; "
              f"{per_kb:.2f} ms per KB; {cpu[n].median / (n / args.delta) * 1e6:.1f} us per "
              f"delta; {wrote[n] // 1000} KB written")
    r = cpu[100_000].median / cpu[10_000].median
    verdict = "LINEAR" if r <= LINEAR_LIMIT else "SUPERLINEAR"
    print(f"  ratio 100 KB / 10 KB = {ratio(cpu[100_000].median, cpu[10_000].median)} "
          f"(linear = 10x; limit {LINEAR_LIMIT:.0f}x): {verdict}")

    header("2. approval panel with a 1 MB argument (CPU time; goal <= 0.2 s)")
    lines_value = markdown(1_000_000, seed=11)
    line_value = lines_value.replace("\n", " ")
    shapes = (("1 MB over many lines", lines_value), ("1 MB on one line", line_value),
              # other shapes, beyond the goal's case: every line through Rich's own wrap (tabs),
              # one token somewhere (the styled path), one-cell non-ASCII letters
              ("1 MB, indents as tabs", lines_value.replace("    ", "\t")),
              ("1 MB, one NUL in the middle",
               lines_value[:500_000] + "\x00" + lines_value[500_000:]),
              ("1 MB, Cyrillic a and e", lines_value.replace("a", "\u0430").replace("e", "\u0435")))
    for label, value in shapes:
        shown, printed, floor = Stats(), Stats(), Stats()
        for _ in range(max(1, args.repeat // 2)):
            t, w = panel_cpu(value)
            shown.add(t)
            printed.add(panel_cpu(value, as_approver=False)[0])
            floor.add(floor_cpu(value))
        verdict = "MET" if shown.median <= 0.2 else "MISSED"
        print(f"  {label}: as the approver renders it {shown.fmt('s', 3)} "
              f"({ratio(shown.median, floor.median)} the floor, {floor.median:.3f} s: sanitise + "
              f"write the cut lines); goal {verdict}; plain console.print {printed.fmt('s', 3)}; "
              f"{w // 1000} KB of terminal output")

    header(f"3. Markdown answers through TerminalView ({args.delta}-character deltas, CPU time)")
    view_cpu(markdown(2000), args.delta)  # warm-up: markdown-it, pygments
    for n in sizes:
        whole, final = Stats(), Stats()
        for _ in range(max(1, args.repeat // 2)):
            a, b = view_cpu(markdown(n), args.delta)
            whole.add(a)
            final.add(b)
        print(f"  {n // 1000:>4} KB: streamed + rendered {whole.fmt('ms', 0)}; final Markdown "
              f"render alone {final.fmt('ms', 0)}")
    header("4. the HTML replay's Markdown (log/html_text.py), hostile emphasis `*a `, CPU time "
           "(goal: 60 KB < 0.5 s)")
    from agent_cli.log.html_text import markdown as html_markdown

    html_markdown("warm-up")
    for size in (15_000, 30_000, 60_000):
        spent = Stats()
        for _ in range(max(1, args.repeat // 2)):
            t0 = time.process_time()
            html_markdown("*a " * (size // 3))
            spent.add(time.process_time() - t0)
        verdict = "" if size != 60_000 else (" goal MET" if spent.median < 0.5 else " goal MISSED")
        print(f"  {size // 1000:>4} KB: {spent.fmt('s', 3)}{verdict}")
    print(f"peak RSS of this process: {_peak():.0f} MB")
    return 0


def _peak() -> float:
    from common import self_peak_rss_mb

    return self_peak_rss_mb()


if __name__ == "__main__":
    sys.exit(main())
