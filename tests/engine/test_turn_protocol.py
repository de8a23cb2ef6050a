"""The turn protocol as a front end uses it: `prompt` from one thread, `ApprovalNeeded` out,
`answer` and `cancel` from another; the engine answers every call itself."""

from __future__ import annotations

import queue
import threading
from pathlib import Path
from typing import Any

from agent_cli import events as ev
from agent_cli.calls import Approved
from agent_cli.config import Settings
from agent_cli.errors import UsageError
from agent_cli.providers.scripted import ScriptedProvider
from agent_cli.session import Session, load_registry
from tests.scripts import calls, done, tool_use, use


class Inbox:
    """A front end's sink: every event, and the questions apart."""

    def __init__(self) -> None:
        self.events: list[Any] = []
        self.questions: queue.Queue[ev.ApprovalNeeded] = queue.Queue()

    def __call__(self, event: Any) -> None:
        self.events.append(event)
        if isinstance(event, ev.ApprovalNeeded):
            self.questions.put(event)


def _session(ws: Path, replies: list[Any], inbox: Inbox) -> Session:
    settings = Settings(provider="scripted")
    registry, _ = load_registry(settings)
    session = Session(settings, workspace=ws, provider=ScriptedProvider(replies),
                      registry=registry, sinks=[inbox], log_path=ws.parent / "s.jsonl")
    session.start()
    return session


def _approvals(inbox: Inbox) -> list[ev.Approval]:
    return [e for e in inbox.events if isinstance(e, ev.Approval)]


def test_a_question_is_answered_from_another_thread_with_the_call_shown(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    inbox = Inbox()
    session = _session(ws, [tool_use("w1", "write_file", {"path": "a.txt", "content": "hi\n"}),
                            done()], inbox)
    handle = session.prompt("write a.txt")
    asked = inbox.questions.get(timeout=60)
    assert asked.call.id == "w1" and asked.call.shown_args() == {"path": "a.txt",
                                                                 "content": "hi\n"}
    assert asked.call.preview and "+hi" in asked.call.preview  # the diff the panel shows
    assert not (ws / "a.txt").exists()  # nothing runs before the yes
    answered = threading.Thread(target=session.answer, args=(
        "w1", Approved("w1", asked.call.args_hash, via="test-client")))
    answered.start()
    result = handle.wait(60)
    answered.join()
    assert result is not None and result.reason == "end_turn"
    assert (ws / "a.txt").read_text() == "hi\n"
    (approval,) = _approvals(inbox)
    assert approval.decision == "approved" and approval.by == "user"
    assert approval.via == "test-client"
    session.close()


def test_a_yes_for_other_arguments_or_another_call_is_a_denial(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    inbox = Inbox()
    session = _session(ws, [calls(use("w1", "write_file", {"path": "a.txt", "content": "x"}),
                                  use("w2", "write_file", {"path": "b.txt", "content": "y"})),
                            done()], inbox)
    handle = session.prompt("write two")
    first = inbox.questions.get(timeout=60)
    assert session.answer("nope", Approved("nope", first.call.args_hash)) is False
    assert session.answer("w1", Approved("w1", "0" * 64)) is True  # the wrong hash
    second = inbox.questions.get(timeout=60)
    assert session.answer("w2", Approved("w1", second.call.args_hash)) is True  # another id
    result = handle.wait(60)
    assert result is not None
    assert [a.decision for a in _approvals(inbox)] == ["denied", "denied"]
    assert [a.by for a in _approvals(inbox)] == ["policy", "policy"]
    assert not (ws / "a.txt").exists() and not (ws / "b.txt").exists()
    session.close()


def test_a_cancel_while_a_question_waits_answers_it_and_every_call(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    inbox = Inbox()
    session = _session(ws, [calls(use("w1", "write_file", {"path": "a.txt", "content": "x"}),
                                  use("w2", "write_file", {"path": "b.txt", "content": "y"})),
                            done("after")], inbox)
    handle = session.prompt("write two")
    inbox.questions.get(timeout=60)
    with_turn = session.busy
    try:
        session.prompt("a second turn at once")
        raise AssertionError("a second turn started while one runs")
    except UsageError:
        pass
    assert session.cancel("user") is True
    result = handle.wait(60)
    assert with_turn and result is not None and result.reason == "interrupted"
    results = [e for e in inbox.events if isinstance(e, ev.ToolResultEvent)]
    assert [r.id for r in results] == ["w1", "w2"] and all(r.is_error for r in results)
    assert inbox.questions.empty()  # w2 was never asked
    assert [e.during for e in inbox.events if isinstance(e, ev.Interrupt)] == ["approval"]
    assert not session.busy and session.cancel() is False
    again = session.prompt("go on").wait(60)
    assert again is not None and again.reason == "end_turn" and again.text == "after"
    session.close()


def test_closing_a_session_with_a_turn_running_cancels_and_finishes_it(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    inbox = Inbox()
    session = _session(ws, [tool_use("w1", "write_file", {"path": "a.txt", "content": "x"})],
                       inbox)
    handle = session.prompt("write")
    inbox.questions.get(timeout=60)
    session.close("exit")
    assert handle.done
    records = (ws.parent / "s.jsonl").read_text().splitlines()
    assert '"tool_result"' in "".join(records) and '"session_end"' in records[-1]


def test_attachments_join_the_words_marked_and_are_logged_as_sent(tmp_path: Path) -> None:
    from agent_cli.conversation import Attachment

    ws = tmp_path / "ws"
    ws.mkdir()
    inbox = Inbox()
    provider = ScriptedProvider([done("seen")])
    settings = Settings(provider="scripted")
    registry, _ = load_registry(settings)
    session = Session(settings, workspace=ws, provider=provider, registry=registry,
                      sinks=[inbox], log_path=tmp_path / "s.jsonl")
    session.start()
    result = session.prompt("fix this", [Attachment("file:///w/a.py", "x = 1")]).wait(60)
    assert result is not None and result.text == "seen"
    sent = str(provider.requests[0].messages[-1]["content"])
    assert sent.index("fix this") < sent.index('<resource uri="file:///w/a.py">\\nx = 1\\n')
    (said,) = [e for e in inbox.events if isinstance(e, ev.UserMessage)]
    assert said.text == 'fix this\n\n<resource uri="file:///w/a.py">\nx = 1\n</resource>'
    session.close()
