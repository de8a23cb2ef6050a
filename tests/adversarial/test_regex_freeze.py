"""Family: a hostile regular expression cannot freeze agent-cli.

search_text is read-only, so the model runs it without any panel. With the stdlib `re`, a
catastrophic pattern held the interpreter lock for the whole match: neither the tool timeout nor
Ctrl-C returned the prompt. Each test here would hang (or time out) on that code.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agent_cli import events as ev
from tests.scripts import calls, done
from tests.ui.test_repl_pty import REPO, Chat, of_type, pty_env, session_events, text, tool_use

from .conftest import Harness, use

pexpect = pytest.importorskip("pexpect")

EVIL_LINE = "a" * 40 + "b"


def run_search(harness: Harness, pattern: str, timeout_s: float) -> tuple[Any, float]:
    (harness.workspace / "data.txt").write_text(f"first line\n{EVIL_LINE}\nlast line\n")
    start = time.monotonic()
    o = harness.run([calls(use("search_text", {"pattern": pattern, "path": "."})), done()],
                    settings={"tool_timeout_s": timeout_s})
    return o, time.monotonic() - start


def test_the_classic_nested_quantifier_returns_at_once(harness: Harness) -> None:
    """`(a+)+$` on 'a'*40+'b' takes about 2**40 steps in `re`; here it answers."""
    o, took = run_search(harness, "(a+)+$", 20)
    [result] = o.sent_back(1)
    assert took < 20 + 10
    assert "tool timeout" in result["content"] or result["content"] == "no matches"


@pytest.mark.parametrize("pattern", ["(a|aa)+$", "(a|a)+$", "^(a|aa)+$"])
def test_a_catastrophic_pattern_returns_a_timeout_result(harness: Harness, pattern: str) -> None:
    o, took = run_search(harness, pattern, 3)
    [result] = o.sent_back(1)
    assert result["is_error"] is True
    assert "3 s tool timeout" in result["content"], result["content"]
    assert "data.txt:2" in result["content"], "it says where it stopped"
    # The tool stops itself at its deadline, before the loop's own timeout (3 s + 2 s grace)
    # would answer "timed out ... asked to stop" for it.
    assert "the tool was asked to stop" not in result["content"]
    assert took < 3 + 30, took
    [res_event] = o.of(ev.ToolResultEvent)
    assert res_event.duration < 3 + 2


def test_ordinary_patterns_still_work(harness: Harness) -> None:
    o, _ = run_search(harness, r"^l\w+ line$", 20)
    [result] = o.sent_back(1)
    assert result["content"] == "data.txt:3: last line"


@pytest.mark.pty
def test_ctrl_c_during_a_catastrophic_search_returns_the_prompt(workspace: Path,
                                                               tmp_path: Path) -> None:
    """A real `agent-cli chat` in a pty, tool timeout 600 s: Ctrl-C brings the prompt back."""
    (workspace / "data.txt").write_text(EVIL_LINE * 3 + "\n")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([
        tool_use("toolu_r1", "search_text", {"pattern": "(a|aa)+$", "path": "."}, "Searching."),
        text("SECOND-ANSWER")]))
    config = tmp_path / "config.toml"
    config.write_text("tool_timeout_s = 600\n")
    child = pexpect.spawn(sys.executable, ["-m", "agent_cli", "chat", "--script", str(script),
                                           "--workspace", str(workspace),
                                           "--config", str(config)],
                          env=pty_env(), cwd=str(REPO), dimensions=(40, 120), timeout=60)
    try:
        chat = Chat(child)
        chat.prompt()
        chat.say("search")
        chat.expect(b"search_text")
        start = time.monotonic()
        child.sendintr()
        chat.expect(b"Interrupted")
        chat.prompt()
        assert time.monotonic() - start < 60
        chat.say("and now?")
        chat.expect(b"SECOND-ANSWER")
        chat.prompt()
        assert chat.quit() == 0
    finally:
        if child.isalive():
            child.terminate(force=True)
    events = session_events()
    [result] = of_type(events, "tool_result")
    assert result["id"] == "toolu_r1" and result["is_error"] is True
    assert [e["during"] for e in of_type(events, "interrupt")] == ["tool"]
