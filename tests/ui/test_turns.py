"""The terminal front end's driver (ui/turns.py) over a real session, in process."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

from agent_cli import events as ev
from agent_cli.approval import ScriptedApprover
from agent_cli.config import Settings
from agent_cli.providers.scripted import ScriptedProvider
from agent_cli.session import Session, load_registry
from agent_cli.ui.turns import TerminalTurns
from tests.scripts import done


def _waiting(ident: int | None) -> bool:
    """Whether thread `ident` is blocked in the driver's wait for news (`run` in ui/turns.py
    waiting through cancel.wait_on_main; not the wait inside starting the turn's thread)."""
    frame = sys._current_frames().get(ident) if ident is not None else None
    while frame is not None and frame.f_back is not None:
        caller = frame.f_back.f_code
        if (frame.f_code.co_name == "wait_on_main" and caller.co_name == "run"
                and caller.co_filename.endswith("turns.py")):
            return True
        frame = frame.f_back
    return False


class Refused(Exception):
    """What a sink before the log raises for the turn's first record."""


def test_a_turn_that_ends_without_an_event_does_not_leave_the_terminal_waiting(
        tmp_path: Path) -> None:
    """The turn raises before any event reaches the front end (here a tagger refuses the
    user's message, as a full disk makes the log do): the driver wakes and raises it."""
    driver: dict[str, int] = {}

    def refuse(event: Any) -> None:
        if isinstance(event, ev.UserMessage):
            # Refused only once the driver waits for news (its thread is inside Event.wait),
            # so the turn ends while it waits: the moment a hang would begin.
            deadline = time.monotonic() + 60
            while not _waiting(driver.get("id")) and time.monotonic() < deadline:
                time.sleep(0.01)
            raise Refused("the first record of the turn was refused")

    seen: list[Any] = []
    turns = TerminalTurns(seen.append, ScriptedApprover([]))
    settings = Settings(provider="scripted")
    registry, _ = load_registry(settings)
    session = Session(settings, workspace=tmp_path, provider=ScriptedProvider([done()]),
                      registry=registry, sinks=[turns.outbox], taggers=[refuse],
                      log_path=tmp_path / "s.jsonl")
    turns.attach(session)
    session.start()
    outcome: dict[str, BaseException] = {}

    def drive() -> None:
        try:
            turns.run("hello")
        except BaseException as e:
            outcome["error"] = e

    # The driver is the terminal's main thread in the program; here a thread stands in, owning
    # the outbox, so a hang shows as a join that times out rather than a stuck suite.
    turns.outbox.owner = -1
    def owner() -> None:
        driver["id"] = turns.outbox.owner = threading.get_ident()
        drive()

    thread = threading.Thread(target=owner, daemon=True)
    thread.start()
    thread.join(60)
    assert not thread.is_alive(), "the driver kept waiting after the turn had ended"
    assert isinstance(outcome.get("error"), Refused)
    assert not session.busy
    session.close()


def test_an_answer_at_the_panel_reaches_the_engine_and_the_call_runs(tmp_path: Path) -> None:
    from tests.scripts import tool_use

    asked: list[Any] = []

    class Panel:
        def decide(self, call: Any) -> Any:
            from agent_cli.calls import Approved

            asked.append(call)
            return Approved(call.id, call.args_hash)

    seen: list[Any] = []
    turns = TerminalTurns(seen.append, Panel())
    settings = Settings(provider="scripted")
    registry, _ = load_registry(settings)
    session = Session(settings, workspace=tmp_path, provider=ScriptedProvider([
        tool_use("w1", "write_file", {"path": "a.txt", "content": "A\n"}), done("written")]),
        registry=registry, sinks=[turns.outbox], log_path=tmp_path / "s.jsonl")
    turns.attach(session)
    session.start()
    result = turns.run("write it")
    assert result.reason == "end_turn" and result.text == "written"
    assert [c.id for c in asked] == ["w1"] and (tmp_path / "a.txt").read_text() == "A\n"
    assert any(isinstance(e, ev.ApprovalNeeded) for e in seen)  # drawn before the panel
    session.close()
