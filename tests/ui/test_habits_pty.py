"""The habits of issue 31 in a real pseudo-terminal, typed as a person does, against the fake
Messages API (what the model got is read from the requests it recorded): `!cmd` then a message
with `@path`; `/init` and its write panel; an AGENTS.md offered at start, and a no remembered."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_cli.ui.outgoing import INIT_PROMPT
from tests.fakes.anthropic_server import FakeAnthropic, text_reply, tool_reply
from tests.ui.test_repl_pty import ASK, TIMEOUT, Chat, pty_env

pexpect = pytest.importorskip("pexpect")
pytestmark = pytest.mark.pty

REPO = Path(__file__).resolve().parents[2]
OFFER = rb"Use AGENTS\.md \(\d+ B\) as project instructions\? \[y/N\]"


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


@pytest.fixture
def chat(fake: FakeAnthropic, workspace: Path, request: pytest.FixtureRequest
         ) -> Callable[[], Chat]:
    """Starts `agent-cli chat` on the fake API in a pty (ended at teardown if still alive)."""

    def start() -> Chat:
        env = pty_env()
        env.update(ANTHROPIC_API_KEY="test-key", ANTHROPIC_BASE_URL=fake.base_url)
        child = pexpect.spawn(sys.executable, ["-m", "agent_cli", "chat", "--provider",
                                               "anthropic", "--workspace", str(workspace)],
                              env=env, cwd=str(REPO), dimensions=(40, 120), timeout=TIMEOUT)
        request.addfinalizer(lambda: child.isalive() and child.terminate(force=True))
        return Chat(child)

    return start


def plain(raw: bytes) -> str:
    """What the screen says, colour codes left out."""
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", raw.decode("utf-8", "replace"))


def last_user_text(fake: FakeAnthropic, request: int) -> str:
    return json.dumps(fake.requests[request].body["messages"][-1])


def test_shell_command_then_a_mention_reach_the_model_with_the_next_message(
        fake: FakeAnthropic, chat: Any, workspace: Path) -> None:
    (workspace / "notes.txt").write_text("milk\neggs\n")
    fake.add(text_reply("SEEN-BOTH"))
    c = chat()
    c.prompt()
    c.say("!echo total-$((40+2))")
    shown = c.prompt()
    assert b"total-42" in shown and b"You ran a shell command" in shown
    assert not fake.requests, "a ! line is the user's own action: nothing is sent"
    c.say("compare with @notes.txt")
    before = c.expect(b"SEEN-BOTH")
    assert "Attached notes.txt (10 B)" in plain(before)
    c.prompt()
    assert c.quit() == 0
    body = last_user_text(fake, 0)
    assert "compare with @notes.txt" in body
    assert '<resource uri=\\"user-shell\\">' in body and "total-42" in body
    assert '<resource uri=\\"notes.txt\\">\\nmilk\\neggs\\n</resource>' in body


def test_init_drafts_agents_md_through_the_write_panel(fake: FakeAnthropic, chat: Any,
                                                       workspace: Path) -> None:
    fake.add(tool_reply(("toolu_w", "write_file", {"path": "AGENTS.md",
                                                   "content": "# How to work here\n"})),
             text_reply("DRAFTED"))
    c = chat()
    c.prompt()
    c.say("/init")
    c.expect(ASK)  # the normal write panel
    c.say("y")
    c.expect(b"DRAFTED")
    c.prompt()
    assert c.quit() == 0
    assert INIT_PROMPT[:60] in json.dumps(fake.requests[0].body["messages"][0])
    assert (workspace / "AGENTS.md").read_text() == "# How to work here\n"


def test_a_found_agents_md_is_offered_once_and_a_no_is_remembered(
        fake: FakeAnthropic, chat: Any, workspace: Path) -> None:
    (workspace / "AGENTS.md").write_text("Run the tests with make check.\n")
    fake.add(text_reply("ONE"), text_reply("TWO"))
    c = chat()
    c.expect(OFFER)
    c.say("n")
    c.prompt()
    c.say("hello")
    c.expect(b"ONE")
    c.prompt()
    assert c.quit() == 0
    c = chat()
    shown = c.prompt()  # straight to the prompt: the no was remembered
    assert b"as project instructions?" not in shown
    c.say("hello again")
    c.expect(b"TWO")
    c.prompt()
    assert c.quit() == 0
    for request in fake.requests:
        assert "make check" not in json.dumps(request.body["messages"])


def test_a_yes_to_the_offer_pins_and_passes_it(fake: FakeAnthropic, chat: Any,
                                                workspace: Path) -> None:
    (workspace / "AGENTS.md").write_text("Run the tests with make check.\n")
    fake.add(text_reply("ANSWERED"))
    c = chat()
    c.expect(b"Run the tests with make check.")  # the file is shown before the question
    c.expect(OFFER)
    c.say("y")
    c.prompt()
    c.say("hello")
    c.expect(b"ANSWERED")
    c.prompt()
    assert c.quit() == 0
    first = json.dumps(fake.requests[0].body["messages"][0])
    assert "project_instructions" in first and "make check" in first
