"""Progress lines of a running MCP call, on the terminal's stderr.

The hub calls `MCPHub.on_progress` (on its own thread) with each progress notification of a
running call, already sanitised to one line; what reaches the terminal, and when, is the UI's
choice, made here. Standard library only, so setting it up costs nothing at start.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable


def terminal_progress() -> Callable[[str], None] | None:
    """Progress lines of a running call, written to stderr while the call runs (the prompt is
    not up then), at most two a second; only on a terminal, so `run --output jsonl` and pipes
    stay clean. The line is already sanitised (one_line)."""
    try:
        if not sys.stderr.isatty():
            return None
    except (AttributeError, ValueError):
        return None
    last = [0.0]

    def show(line: str) -> None:
        now = time.monotonic()
        if now - last[0] < 0.5:
            return
        last[0] = now
        sys.stderr.write(f"  … {line}\n")
        sys.stderr.flush()

    return show
