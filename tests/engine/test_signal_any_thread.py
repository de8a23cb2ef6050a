"""Ctrl-C stops a turn also when the kernel hands SIGINT to another thread than the main one.

A signal sent to a process goes to any of its threads that does not block it (Linux passes over
a main thread that has a signal pending already). CPython's C handler, on that thread, only notes
it; the KeyboardInterrupt is raised when the main thread next runs Python code. A main thread
blocked in a wait with no timeout never does: CI saw `eval`'s Ctrl-C wait out a 60 s command
(tests/eval/test_eval.py::test_ctrl_c_stops_the_suite). Here the signal is sent, for real, to the
turn's own thread (pthread_kill), while the main thread waits as each front end does."""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path
from typing import Any

from agent_cli import events as ev
from agent_cli.eval.runner import _send
from agent_cli.ui.turns import TerminalTurns
from tests.scripts import done, make_session, tool_use

SLEEP = ["sleep", "30"]
WAIT_S = 60.0
"""Long enough that a turn which ends on its own is not mistaken for one that was stopped."""


def _main_thread_waits_in(name: str) -> None:
    """Until the main thread's stack holds a call of the function `name` (the signal must land
    while it waits there, not before, where it would end the test itself)."""
    main = threading.main_thread().ident
    pause = threading.Event()
    for _ in range(int(WAIT_S / 0.01)):
        frame = sys._current_frames().get(main or 0)
        while frame is not None:
            if frame.f_code.co_name == name:
                return
            frame = frame.f_back
        pause.wait(0.01)
    raise AssertionError(f"the main thread never waited in {name}")


def _session_signalled_from_the_tool_thread(workspace: Path, tmp_path: Path) -> Any:
    """A session whose first call runs `sleep 30`; as it starts, SIGINT is sent to the turn's
    own thread (not the main thread)."""
    session = make_session(workspace, [tool_use("t1", "run_command", {"command": SLEEP}),
                                       done()], answers=["y"], log=tmp_path / "s.jsonl")

    def on_event(event: Any) -> None:
        if isinstance(event, ev.ToolStarted):  # (emitted on the turn's own thread)
            assert threading.current_thread() is not threading.main_thread()
            _main_thread_waits_in("wait_on_main")
            signal.pthread_kill(threading.get_ident(), signal.SIGINT)

    session.sinks = (*session.sinks, on_event)
    session.start()
    return session


def test_evals_wait_is_interrupted_by_a_signal_on_another_thread(workspace: Path,
                                                                 tmp_path: Path) -> None:
    session = _session_signalled_from_the_tool_thread(workspace, tmp_path)
    try:
        result, ctrl_c = _send(session, "sleep")
    finally:
        session.close()
    assert ctrl_c
    assert result.reason == "interrupted"  # not the command's own end, 30 s later


def test_the_terminals_wait_is_interrupted_by_a_signal_on_another_thread(
        workspace: Path, tmp_path: Path) -> None:
    session = _session_signalled_from_the_tool_thread(workspace, tmp_path)
    turns = TerminalTurns(lambda event: None, lambda call: None)
    turns.attach(session)
    try:
        result = turns.run("sleep")
    finally:
        session.close()
    assert result.reason == "interrupted"


def test_a_queue_wait_on_the_main_thread_is_interrupted_too() -> None:
    """acp's and eval's main loops wait on a queue (cancel.get_on_main)."""
    import queue

    import pytest

    from agent_cli.cancel import get_on_main

    jobs: queue.Queue[str] = queue.Queue()

    def elsewhere() -> None:
        _main_thread_waits_in("get_on_main")
        signal.pthread_kill(threading.get_ident(), signal.SIGINT)
        threading.Event().wait(20)
        jobs.put("too late")  # ends the wait of a version that cannot be interrupted

    threading.Thread(target=elsewhere, daemon=True).start()
    with pytest.raises(KeyboardInterrupt):
        get_on_main(jobs)
