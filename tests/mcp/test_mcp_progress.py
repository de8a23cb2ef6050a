"""MCP progress lines (ui/mcp_progress.py): written to stderr only when it is a terminal, at most
two a second, so pipes and `run --output jsonl` stay clean. Real pipes and a real pty."""

from __future__ import annotations

import os
import pty
import select
import sys
import time

import pytest

from agent_cli.ui.mcp_progress import terminal_progress


def test_no_progress_lines_on_a_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    read_fd, write_fd = os.pipe()
    with os.fdopen(write_fd, "w") as pipe:
        monkeypatch.setattr(sys, "stderr", pipe)
        assert terminal_progress() is None
    os.close(read_fd)


def test_progress_lines_on_a_terminal_at_most_two_a_second(monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    master, slave = pty.openpty()
    try:
        with os.fdopen(slave, "w", encoding="utf-8") as tty:
            monkeypatch.setattr(sys, "stderr", tty)
            show = terminal_progress()
            assert show is not None
            start = time.monotonic()
            show("MCP time now: 1/3")
            show("MCP time now: 2/3")  # within half a second of the first: dropped
            quick = time.monotonic() - start < 0.5  # a loaded machine may take longer
            time.sleep(0.6)  # the rate limit itself is what is tested
            show("MCP time now: 3/3")
            want = ["  … MCP time now: 1/3", "  … MCP time now: 3/3"]
            if not quick:
                want.insert(1, "  … MCP time now: 2/3")
            got = b""
            deadline = time.monotonic() + 30
            while got.count(b"\n") < len(want) and time.monotonic() < deadline:
                if select.select([master], [], [], 1.0)[0]:
                    got += os.read(master, 4096)
    finally:
        os.close(master)
    text = got.decode("utf-8").replace("\r\n", "\n")
    assert text.splitlines() == want
