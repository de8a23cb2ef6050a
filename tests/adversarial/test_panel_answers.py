"""Family: answers at the panel (issue 11 items 11 and 14; issue 16 item 8).

What the person types (or does not type) at a panel is the last defence, and the attacker's lever
is fatigue: a wall of near-identical calls, a panel so tall that `y` is typed before its end was
seen, a reply that goes on after the person wanted to stop. Each case runs through the real loop
and panel; the model must get exactly one tool_result per call, in order, whatever was typed.
"""

from __future__ import annotations

from typing import Any

import pytest

from agent_cli import events as ev
from agent_cli.tool_calls import STOPPED_AT_PANEL, TOO_MANY_AFTER_DENIAL
from tests.scripts import calls, done

from .conftest import ASK, PAGE, Answer, Harness, ScriptedInput, assert_terminal_clean, use


def _writes(n: int, prefix: str = "f") -> list[dict[str, Any]]:
    return [use("write_file", {"path": f"{prefix}{i}.txt", "content": f"payload {i}\n"},
                f"toolu_{i}") for i in range(n)]


def _ids(results: list[dict[str, Any]]) -> list[str]:
    return [r["tool_use_id"] for r in results]


# --------------------------------------------------------------------------- q / Esc / Ctrl-C

STOPS: dict[str, Answer] = {
    "q": "q",
    "Q-padded": " Q ",
    "quit": "quit",
    "esc": "\x1b",
    "ctrl-c": KeyboardInterrupt,
}


@pytest.mark.parametrize("case", list(STOPS))
def test_stop_at_a_panel_denies_the_rest_of_the_reply(harness: Harness, case: str) -> None:
    uses = [*_writes(2), use("read_file", {"path": "notes.txt"}, "toolu_r"),
            use("run_command", {"command": "rm -rf ./build"}, "toolu_c")]
    o = harness.run([calls(*uses), done("should never be asked for")], ["y", STOPS[case]])
    assert o.panels == 2  # the second panel was the last one
    results = o.results()
    assert _ids(results) == ["toolu_0", "toolu_1", "toolu_r", "toolu_c"]
    assert not results[0].get("is_error")
    assert all(r["is_error"] for r in results[1:])
    assert all(r["content"] == STOPPED_AT_PANEL for r in results[2:])
    assert len(o.requests) == 1, "the turn ends: no request goes back to the model"
    assert o.result is not None and o.result.reason == "interrupted"
    assert [e.during for e in o.of(ev.Interrupt)] == ["approval"]
    assert list(o.disk_changes()) == [str(harness.workspace / "f0.txt")]
    assert "the rest of this reply" in o.shown
    assert_terminal_clean(o.terminal)
    # every call has its result in the log as well
    assert [e.id for e in o.logged(ev.ToolResultEvent)] == _ids(results)


def test_the_next_turn_after_a_stop_is_a_valid_conversation(harness: Harness) -> None:
    o = harness.run([calls(*_writes(3)), done()], ["q"])
    history = o.session.history
    assert history[-1]["role"] == "user"
    assert _ids([b for b in history[-1]["content"] if b.get("type") == "tool_result"]) == \
        ["toolu_0", "toolu_1", "toolu_2"]


# --------------------------------------------------------------------------- bare words

WORDS = ["ok", "sure", "yes please", "yep", "Y!", "approve", "1"]


@pytest.mark.parametrize("word", WORDS)
def test_a_word_that_is_not_y_or_yes_denies_and_is_the_reason(harness: Harness,
                                                              word: str) -> None:
    o = harness.run([calls(use("write_file", {"path": "out.txt", "content": "x"})), done()],
                    [word])
    [result] = o.sent_back(1)
    assert result["is_error"] is True
    assert f"Their reason: {word.strip()}" in result["content"]
    assert "only y or yes approves" in o.shown
    [approval] = o.logged(ev.Approval)
    assert approval.decision == "denied" and approval.reason == word.strip()
    assert o.disk_changes() == {}


@pytest.mark.parametrize(("answers", "reason"), [
    (["n use ./tmp"], "use ./tmp"), (["n", "too risky"], "too risky"), (["no", ""], None),
    (["N: later"], "later"),
])
def test_n_with_a_reason_still_works(harness: Harness, answers: list[Answer],
                                     reason: str | None) -> None:
    o = harness.run([calls(use("write_file", {"path": "out.txt", "content": "x"})), done()],
                    answers)
    [approval] = o.logged(ev.Approval)
    assert approval.reason == reason
    assert "only y or yes approves" not in o.shown


# --------------------------------------------------------------------------- item 14

def test_thirty_denied_calls_open_five_panels(harness: Harness) -> None:
    o = harness.run([calls(*_writes(30)), done()], [""] * 30)
    assert o.panels == 5
    results = o.sent_back(1)
    assert _ids(results) == [f"toolu_{i}" for i in range(30)]
    assert all(r["is_error"] for r in results)
    assert [r["content"] for r in results[5:]] == [TOO_MANY_AFTER_DENIAL] * 25
    [notice] = [n for n in o.of(ev.Notice) if n.kind == "panel_limit"]
    assert "25 more calls" in notice.message and "max_panels_after_denial" in notice.message
    assert "25 more calls" in o.shown
    assert o.disk_changes() == {}


@pytest.mark.parametrize("limit", [1, 2, 8])
def test_the_panel_limit_is_configurable(harness: Harness, limit: int) -> None:
    o = harness.run([calls(*_writes(12)), done()], [""] * 12,
                    settings={"max_panels_after_denial": limit})
    assert o.panels == limit
    assert sum(r["content"] == TOO_MANY_AFTER_DENIAL for r in o.sent_back(1)) == 12 - limit


def test_no_limit_while_nothing_is_denied(harness: Harness) -> None:
    o = harness.run([calls(*_writes(9)), done()], ["y"] * 9)
    assert o.panels == 9
    assert len(o.disk_changes()) == 9


def test_the_limit_counts_from_the_first_denial(harness: Harness) -> None:
    """Approved panels before the first denial count too: a reply gets five panels in all once
    the person has said no to one of them."""
    o = harness.run([calls(*_writes(10)), done()], ["y", "y", "", "y", "y", "y", "y"])
    assert o.panels == 5
    results = o.sent_back(1)
    assert [bool(r.get("is_error")) for r in results[:5]] == [False, False, True, False, False]
    assert [r["content"] for r in results[5:]] == [TOO_MANY_AFTER_DENIAL] * 5


def test_read_calls_still_run_after_the_limit(harness: Harness) -> None:
    uses = [*_writes(6), use("read_file", {"path": "notes.txt"}, "toolu_r")]
    o = harness.run([calls(*uses), done()], [""] * 6)
    results = o.sent_back(1)
    assert results[-1]["tool_use_id"] == "toolu_r" and not results[-1].get("is_error")
    assert "remember the milk" in results[-1]["content"]


def test_the_limit_is_per_reply(harness: Harness) -> None:
    o = harness.run([calls(*_writes(6, "a")), calls(*_writes(3, "b")), done()],
                    [""] * 5 + ["y"] * 3)
    assert o.panels == 8
    assert len(o.disk_changes()) == 3


# --------------------------------------------------------------------------- the pager

TALL = {"path": "setup.py", "content": "import os  # HEAD\n" + "# filler\n" * 200}


def test_y_typed_at_a_page_does_not_approve(harness: Harness) -> None:
    person = ScriptedInput(["y"] * 40, pages=True)
    from agent_cli.ui.panel import TerminalApprover

    from .conftest import make_console

    console, buf = make_console()
    o = harness.run([calls(use("write_file", TALL)), done()],
                    approver=TerminalApprover(console, person, flush_typeahead=False))
    pages = [p for p in person.prompts if p.startswith(PAGE)]
    assert len(pages) >= 5
    [question] = [p for p in person.prompts if ASK.match(p)]
    assert person.prompts[-1] == question, "the question comes after the last page"
    # the y answers went to pages until the end; the question got the next one
    [approval] = o.logged(ev.Approval)
    assert approval.decision == "approved"
    shown = buf.getvalue()
    assert shown.index("HEAD") < shown.rindex("╯")  # the whole panel was written first
    assert (harness.workspace / "setup.py").exists()


def test_q_at_a_page_denies_before_the_end_was_seen(harness: Harness) -> None:
    person = ScriptedInput(["", "q"], pages=True)
    from agent_cli.ui.panel import TerminalApprover

    from .conftest import make_console

    console, _ = make_console()
    o = harness.run([calls(use("write_file", TALL), *_writes(2, "z")[1:]), done()],
                    approver=TerminalApprover(console, person, flush_typeahead=False))
    assert not [p for p in person.prompts if ASK.match(p)], "never asked: the end was not seen"
    results = o.results()
    assert all(r["is_error"] for r in results) and len(results) == 2
    assert o.result is not None and o.result.reason == "interrupted"
    assert o.disk_changes() == {}


@pytest.mark.parametrize("stop", [EOFError, KeyboardInterrupt])
def test_eof_or_ctrl_c_at_a_page_denies(harness: Harness, stop: type[BaseException]) -> None:
    person = ScriptedInput([stop], pages=True)
    from agent_cli.ui.panel import TerminalApprover

    from .conftest import make_console

    console, _ = make_console()
    o = harness.run([calls(use("write_file", TALL)), done()],
                    approver=TerminalApprover(console, person, flush_typeahead=False))
    assert not [p for p in person.prompts if ASK.match(p)]
    assert o.results()[0]["is_error"] is True
    assert o.disk_changes() == {}


def test_g_at_a_page_shows_the_rest_then_asks(harness: Harness) -> None:
    person = ScriptedInput(["G", "y"], pages=True)
    from agent_cli.ui.panel import TerminalApprover

    from .conftest import make_console

    console, buf = make_console()
    o = harness.run([calls(use("write_file", TALL)), done()],
                    approver=TerminalApprover(console, person, flush_typeahead=False))
    assert len([p for p in person.prompts if p.startswith(PAGE)]) == 1
    assert ASK.match(person.prompts[-1])
    assert buf.getvalue().count("# filler") == 200
    assert o.logged(ev.Approval)[0].decision == "approved"
