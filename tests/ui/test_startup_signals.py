"""SIGTERM and SIGHUP while the session is built behind the first prompt are held, not raised.

The build runs in a thread beside the prompt (ui/startup.py). A signal raised as an exception at
a random point of the main thread can leave a lock held that the builder needs next (a module's
import lock: both threads import), and then neither ends: CI once saw `chat` hang for a minute
after a SIGTERM at its prompt. So while the build runs the handler only notes the signal and wakes
the prompt through its own event loop. These tests send real signals to this process: the
handler runs in the main thread, as it does in agent-cli.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from agent_cli.signals import Terminated, TerminationSignals
from agent_cli.ui.startup import FirstFrame, Loading, read_while_loading

WAIT = 60.0


def until(predicate: Callable[[], object], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.01)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP], ids=["TERM", "HUP"])
def test_a_held_signal_is_noted_and_wakes_the_waiter_but_raises_nothing(
        sig: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("agent_cli.signals._detach_from_terminal", lambda: None)
    woken: list[int | None] = []
    with TerminationSignals() as signals, signals.held():
        signals.waker = lambda: woken.append(signals.received)
        os.kill(os.getpid(), sig)
        until(lambda: signals.received is not None, "the handler")
        os.kill(os.getpid(), sig)  # a second one while ending: noted once, nothing more
        time.sleep(0.05)
    assert woken == [sig]
    assert signals.exit_code == 128 + sig
    assert signals.reason == "signal " + signal.Signals(sig).name


def test_outside_held_the_signal_is_raised_as_terminated() -> None:
    with TerminationSignals() as signals, pytest.raises(Terminated) as raised:
        with signals.held():
            pass
        os.kill(os.getpid(), signal.SIGTERM)
        until(lambda: False, "Terminated to be raised")
    assert raised.value.signum == signal.SIGTERM
    assert signals.received == signal.SIGTERM


@pytest.fixture
def ps() -> Iterator[Any]:
    """A real PromptSession reading a pipe nobody types into."""
    from prompt_toolkit import PromptSession
    from prompt_toolkit.input import create_pipe_input
    from prompt_toolkit.output import DummyOutput

    with create_pipe_input() as pipe:
        yield PromptSession(input=pipe, output=DummyOutput())


def _frame() -> FirstFrame:
    frame = FirstFrame(fd=-1, saved=None)
    frame.on_screen = False  # nothing of it to hand over or erase
    return frame


def test_sigterm_at_the_loading_prompt_ends_it_while_the_build_goes_on(ps: Any) -> None:
    started, release = threading.Event(), threading.Event()

    def build() -> str:
        started.set()  # the prompt is up: the build starts after its first frame
        release.wait(WAIT)
        return "built"

    loading: Loading[str] = Loading(build)

    def kill_once_building() -> None:
        started.wait(WAIT)
        os.kill(os.getpid(), signal.SIGTERM)

    killer = threading.Thread(target=kill_once_building)
    try:
        with TerminationSignals() as signals, signals.held():
            killer.start()
            first = read_while_loading(ps, loading, "› ", _frame(), signals)
            assert first.eof and first.sent is None
            assert not loading.settled, "the build was not cut short"
            assert signals.waker is None, "the prompt's waker is gone with it"
        release.set()
        assert loading.result() == "built"
    finally:
        release.set()
        killer.join(WAIT)


def test_a_signal_before_the_loading_prompt_started_means_it_never_waits_for_keys(
        ps: Any) -> None:
    release = threading.Event()
    loading: Loading[str] = Loading(lambda: "built" if release.wait(WAIT) else "late")
    try:
        with TerminationSignals() as signals, signals.held():
            os.kill(os.getpid(), signal.SIGTERM)
            until(lambda: signals.received is not None, "the handler")
            first = read_while_loading(ps, loading, "› ", _frame(), signals)
        assert first.eof
        release.set()
        assert loading.result() == "built"
    finally:
        release.set()
