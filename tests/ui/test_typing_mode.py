"""The early frame's terminal mode (ui/typing_mode.py), on a real pty: the kernel echoes each key
at once, and the keys still reach the line editor byte for byte (Ctrl-C, Ctrl-D and Enter as
keys, not a signal, an end of file or a line end); a frame that gives way leaves the keys typed
at it in the terminal, and hands on those it had read itself."""

from __future__ import annotations

import os
import select
import termios
import time
import tty
from collections.abc import Iterator

import pytest

from agent_cli.ui import startup
from agent_cli.ui.typing_mode import pending_count, read_pending, typing_mode

TIMEOUT = 60


@pytest.fixture
def terminal() -> Iterator[tuple[int, int]]:
    master, slave = os.openpty()
    try:
        yield master, slave
    finally:
        os.close(master)
        os.close(slave)


def read_until(fd: int, size: int) -> bytes:
    got = b""
    deadline = time.monotonic() + TIMEOUT
    while len(got) < size and time.monotonic() < deadline:
        if select.select([fd], [], [], 1)[0]:
            got += os.read(fd, 1024)
    return got


def wait_pending(slave: int, saved: list, size: int) -> None:
    """Until the kernel has taken in `size` typed bytes (they arrive a moment after the write)."""
    deadline = time.monotonic() + TIMEOUT
    while pending_count(slave, saved) < size:
        assert time.monotonic() < deadline, "the keys never arrived"
        time.sleep(0.01)


def test_keys_are_echoed_at_once_and_reach_the_editor_as_typed(
        terminal: tuple[int, int]) -> None:
    master, slave = terminal
    saved = termios.tcgetattr(slave)
    termios.tcsetattr(slave, termios.TCSANOW, typing_mode(saved))
    typed = b"ab\x03\x04\rc"
    os.write(master, typed)
    echo = read_until(master, len(b"ab^C^D^Mc"))
    assert echo == b"ab^C^D^Mc"  # echoed by the kernel, with no reader on the terminal
    wait_pending(slave, saved, len(typed))
    tty.setraw(slave, termios.TCSANOW)  # as prompt-toolkit reads: the bytes as they came
    assert read_until(slave, len(typed)) == typed


def test_backspace_edits_the_line_there_and_on_screen(terminal: tuple[int, int]) -> None:
    master, slave = terminal
    saved = termios.tcgetattr(slave)
    termios.tcsetattr(slave, termios.TCSANOW, typing_mode(saved))
    os.write(master, b"abc\x7f")
    assert read_until(master, len(b"abc\b \b")) == b"abc\b \b"
    wait_pending(slave, saved, 2)
    assert read_pending(slave, saved) == b"ab"


def test_a_frame_that_gives_way_leaves_the_typed_keys_and_hands_on_its_own(
        terminal: tuple[int, int], monkeypatch: pytest.MonkeyPatch) -> None:
    master, slave = terminal
    saved = termios.tcgetattr(slave)
    termios.tcsetattr(slave, termios.TCSANOW, typing_mode(saved))
    frame = startup.FirstFrame(slave, saved, "› ", typed=b"early ")
    monkeypatch.setattr(startup, "_EARLY", [frame])
    monkeypatch.setattr(startup, "_CARRIED", [])
    os.write(master, b"late")
    wait_pending(slave, saved, 4)
    startup.give_way()  # (its erase goes to this process's stdout)
    assert startup._CARRIED == [b"early "]
    assert termios.tcgetattr(slave) == saved
    tty.setraw(slave, termios.TCSANOW)
    assert read_until(slave, 4) == b"late"  # still there for the next reader
