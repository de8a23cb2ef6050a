"""What a person types while the model streams or a tool runs, in a real pseudo-terminal: a line
finished with Enter is shown as `queued: …` and sent as the next message once the turn ends; an
unfinished line is the next prompt's text; at an approval question all of it is dropped (a line
typed ahead is never an answer). The real anthropic SDK talks to the loopback fake, whose
request log shows what the model was sent."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

pexpect = pytest.importorskip("pexpect")

from tests.fakes.anthropic_server import FakeAnthropic, Reply, text_reply  # noqa: E402
from tests.ui.test_repl_pty import (  # noqa: E402 (after the importorskip)
    ASK,
    PROMPT,
    Chat,
    of_type,
    session_events,
    spawn_on_fake,
)

pytestmark = pytest.mark.pty
TIMEOUT = 60


@contextmanager
def chat_on_fake(replies: list[Any], workspace: Path) -> Iterator[tuple[Chat, FakeAnthropic]]:
    """`agent-cli chat` in a pty on the loopback fake serving `replies` (its requests stay
    readable after the block)."""
    with FakeAnthropic(replies) as fake:
        child = spawn_on_fake(fake.base_url, workspace, TIMEOUT)
        try:
            yield Chat(child), fake
        finally:
            if child.isalive():
                child.terminate(force=True)


def user_texts(request: Any) -> list[str]:
    """The text blocks of the user messages a request carried, in order."""
    texts: list[str] = []
    for message in request.body["messages"]:
        if message["role"] != "user":
            continue
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        texts += [b["text"] for b in blocks if b.get("type") == "text"]
    return texts


def slow(words: int = 400) -> Reply:
    return Reply(content=[{"type": "text", "text": "word " * words + "END-SLOW"}],
                 event_delay_s=0.02)


def test_a_line_typed_while_the_model_streams_is_the_next_message(workspace: Path) -> None:
    with chat_on_fake([slow(), text_reply("QUEUED-ANSWER")], workspace) as (chat, fake):
        child = chat.child
        chat.prompt()
        chat.say("first")
        chat.expect(b"word word word")
        child.send(b"and th")  # typed as a person does, one burst at a time
        child.send(b"en \xc3\xa9t\x7f\x7fthis\r")  # Backspace edits the line
        child.send(b"half")  # unfinished: the next prompt's text
        shown = chat.expect(b"queued: and then this")
        chat.expect(b"QUEUED-ANSWER")
        chat.expect(rb"half")  # the next prompt, with the unfinished text in it
        child.send(b"\x15")  # Ctrl-U empties it
        child.send(b"\x04")
        child.expect(pexpect.EOF)
    requests = list(fake.requests)
    assert b"Traceback" not in shown
    assert len(requests) == 2
    assert user_texts(requests[1])[-1] == "and then this"
    assert [e["text"] for e in of_type(session_events(), "user_message")] == [
        "first", "and then this"]


def test_lines_typed_ahead_are_dropped_at_a_question(workspace: Path) -> None:
    """A tool call's panel comes while lines wait: they are dropped and the screen says so;
    the `y` typed ahead did not approve the call."""
    args = {"path": "out.txt", "content": "x\n"}
    call = Reply(content=[{"type": "text", "text": "word " * 200},
                          {"type": "tool_use", "id": "toolu_w", "name": "write_file",
                           "input": args}], stop_reason="tool_use", event_delay_s=0.02)
    with chat_on_fake([call, text_reply("DENIED-OK")], workspace) as (chat, fake):
        child = chat.child
        chat.prompt()
        chat.say("write")
        chat.expect(b"word word word")
        child.send(b"y\r")
        chat.expect(b"queued: y")
        shown = chat.expect(ASK)
        child.send(b"n\r")
        chat.expect(b"Reason \\(optional\\):")
        child.send(b"\r")
        chat.expect(b"DENIED-OK")
        chat.prompt()
        assert chat.quit() == 0
    requests = list(fake.requests)
    assert b"Dropped what was typed ahead" in shown
    assert not (workspace / "out.txt").exists()
    assert len(requests) == 2  # nothing queued was sent after the turn
    assert [e["text"] for e in of_type(session_events(), "user_message")] == ["write"]


def test_after_an_interrupt_what_was_typed_is_back_in_the_input_line(workspace: Path) -> None:
    with chat_on_fake([slow(3000), text_reply("NEXT")], workspace) as (chat, fake):
        child = chat.child
        chat.prompt()
        chat.say("go")
        chat.expect(b"word word word")
        child.send(b"no, focus on X\r")
        chat.expect(b"queued: no, focus on X")
        child.send(b"\x1b")  # Esc: the turn stops; nothing is sent unasked
        chat.expect(b"back in the input line")
        chat.expect(PROMPT)
        chat.expect(b"no, focus on X")
        child.send(b"\r")  # the person sends it
        chat.expect(b"NEXT")
        chat.prompt()
        assert chat.quit() == 0
    requests = list(fake.requests)
    assert len(requests) == 2
    assert user_texts(requests[1])[-1] == "no, focus on X"


def test_an_interrupted_answer_stays_marked_and_the_correction_has_its_context(
        workspace: Path) -> None:
    """"Esc, then 'no, focus on X'": the next request carries the question, the answer so far
    marked interrupted, and the correction; a call in the cut reply is never sent."""
    cut = Reply(content=[{"type": "text", "text": "word " * 3000},
                         {"type": "tool_use", "id": "toolu_never", "name": "write_file",
                          "input": {"path": "x", "content": "y"}}],
                stop_reason="tool_use", event_delay_s=0.02)
    with chat_on_fake([cut, text_reply("FOCUSED")], workspace) as (chat, fake):
        child = chat.child
        chat.prompt()
        chat.say("explain the code")
        chat.expect(b"word word word")
        child.send(b"\x1b")
        chat.expect(b"Interrupted")
        chat.expect(b"the answer so far stay in the conversation, marked interrupted")
        chat.prompt()
        chat.say("no, focus on X")
        chat.expect(b"FOCUSED")
        chat.prompt()
        assert chat.quit() == 0
    requests = list(fake.requests)
    assert len(requests) == 2
    messages = requests[1].body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert user_texts(requests[1]) == ["explain the code", "no, focus on X"]
    [answer] = messages[1]["content"]
    assert answer["type"] == "text"
    assert answer["text"].startswith("word word")
    assert answer["text"].endswith("[interrupted by the user]")
    [interrupt] = of_type(session_events(), "interrupt")
    assert interrupt["during"] == "model" and interrupt["reply_so_far"].startswith("word")
