"""Ctrl-C may land at any moment, also while Rich starts or stops the spinner's live region. A
KeyboardInterrupt inside Live.start left it half set up, and the next stop() raised IndexError
(pop from empty list): `agent-cli chat` died with a traceback instead of showing the prompt
(seen as tests/adversarial/test_regex_freeze.py failing under load). Real SIGINTs, sent from a
thread as fast as they come, hit the view while it starts and stops over and over."""

from __future__ import annotations

import io
import os
import signal
import threading
import time
from types import FrameType

from rich.console import Console

from agent_cli.ui.status import TerminalView


def test_ctrl_c_at_any_moment_leaves_the_live_region_whole() -> None:
    console = Console(file=io.StringIO(), force_terminal=True, width=80)
    view = TerminalView(lambda event: None, console)
    armed = [False]  # a plain flag: a handler must not take the locks of a threading.Event

    def on_sigint(signum: int, frame: FrameType | None) -> None:
        if armed[0]:  # one KeyboardInterrupt per arming, raised inside the view's calls
            armed[0] = False
            raise KeyboardInterrupt

    old = signal.signal(signal.SIGINT, on_sigint)
    end = time.monotonic() + 6.0
    done = threading.Event()

    def pester() -> None:
        while not done.is_set():
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(0.0002)

    sender = threading.Thread(target=pester, daemon=True)
    interrupted = rounds = 0
    try:
        sender.start()
        while time.monotonic() < end:
            rounds += 1
            try:
                armed[0] = True
                view.wait("Waiting for the model")
                view.stop()
                armed[0] = False
            except KeyboardInterrupt:
                interrupted += 1
        armed[0] = False
        view.stop()  # whatever state the last interrupt left, stopping works
        view.wait("Running search_text")
        view.stop()
    finally:
        done.set()
        sender.join(timeout=30)
        signal.signal(signal.SIGINT, old)
    assert interrupted > 0 and rounds > interrupted, (interrupted, rounds)
