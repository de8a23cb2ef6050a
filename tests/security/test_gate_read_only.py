"""The gate in read-only mode, with a person who would say yes.

Read-only mode is a policy, not a default answer: a write call is refused before any panel, so
the approver (here one that records being asked and always approves, the most dangerous person
to have at the keyboard) is never consulted. `would_ask`, which the call runner uses to decide
whether a call would open a panel, must agree. The calls are real: validated by the registry of
the built-in tools, exactly as the loop makes them.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agent_cli.approval import Approved, Decision, Gate
from agent_cli.calls import Call
from agent_cli.tools.loader import load_tools
from agent_cli.tools.registry import Registry
from agent_cli.tools.scope import READ_ONLY_REASON


class WouldSayYes:
    """An approver that approves whatever it is shown, and remembers every call it was shown."""

    def __init__(self) -> None:
        self.asked: list[Call] = []

    def decide(self, call: Call) -> Decision:
        self.asked.append(call)
        return Approved(call.id, call.args_hash)


class Mode:
    """The session's read-only switch as the gate sees it: asked at each decision."""

    def __init__(self, on: bool) -> None:
        self.on = on

    def reason(self) -> str | None:
        return READ_ONLY_REASON if self.on else None


@pytest.fixture(scope="module")
def registry() -> Registry:
    registry, report = load_tools([])
    assert report.errors == []
    return registry


def _write(registry: Registry, workspace: Path) -> Call:
    call = registry.validate("w1", "write_file", {"path": "out.txt", "content": "x\n"},
                             workspace=str(workspace))
    assert call.effect != "read"
    return call


def _read(registry: Registry, workspace: Path) -> Call:
    call = registry.validate("r1", "read_file", {"path": "out.txt"}, workspace=str(workspace))
    assert call.effect == "read"
    return call


def test_read_only_denies_a_write_by_policy_and_never_asks(registry: Registry,
                                                           workspace: Path) -> None:
    person = WouldSayYes()
    gate = Gate(person, read_only=Mode(True).reason)
    call = _write(registry, workspace)
    decision = gate.decide(call)
    assert not isinstance(decision, Approved)
    assert decision.id == call.id
    assert decision.by == "policy"
    assert decision.reason is not None and READ_ONLY_REASON in decision.reason
    assert person.asked == [], "read-only mode refuses before any panel"
    assert not (workspace / "out.txt").exists()


def test_read_only_is_asked_at_each_decision(registry: Registry, workspace: Path) -> None:
    """The mode is read when the call is decided, not when the gate is made: `/mode normal`
    lets the next write reach the person, `/mode read-only` stops the one after."""
    person = WouldSayYes()
    mode = Mode(False)
    gate = Gate(person, read_only=mode.reason)
    call = _write(registry, workspace)
    assert isinstance(gate.decide(call), Approved) and len(person.asked) == 1
    mode.on = True
    assert gate.decide(call).by == "policy"
    assert len(person.asked) == 1


def test_read_calls_still_run_in_read_only_mode(registry: Registry, workspace: Path) -> None:
    person = WouldSayYes()
    gate = Gate(person, read_only=Mode(True).reason)
    call = _read(registry, workspace)
    decision = gate.decide(call)
    assert isinstance(decision, Approved) and decision.by == "policy"
    assert person.asked == []


def test_would_ask_is_false_for_a_write_in_read_only_mode(registry: Registry,
                                                          workspace: Path) -> None:
    person = WouldSayYes()
    mode = Mode(True)
    gate = Gate(person, read_only=mode.reason)
    write, read = _write(registry, workspace), _read(registry, workspace)
    assert gate.would_ask(write) is False
    assert gate.would_ask(read) is False
    mode.on = False
    assert gate.would_ask(write) is True, "the same call opens a panel once the mode is off"
    assert gate.would_ask(read) is False
    assert person.asked == [], "would_ask only predicts; it never asks"
