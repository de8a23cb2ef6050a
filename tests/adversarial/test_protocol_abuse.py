"""Family 4: protocol abuse.

Model output that is malformed on purpose or by accident: odd tool names, wrong types, huge or
deeply nested inputs, calls cut off by max_tokens, the same failing call forever, endless tool
turns, enormous results, streams that break midway (through the real anthropic SDK against the
loopback fake), and duplicate tool_use ids. Each becomes an error result with a reason, exactly
one per tool_use id; nothing runs that was not shown and approved.
"""

from __future__ import annotations

from collections.abc import Iterator
from itertools import count
from pathlib import Path
from typing import Any

import pytest

from agent_cli import events as ev
from agent_cli.providers.anthropic import AnthropicProvider
from agent_cli.providers.base import ModelRequest
from agent_cli.ui.panel import TerminalApprover
from tests.fakes.anthropic_server import FakeAnthropic, _stream_events, text_reply, tool_reply
from tests.scripts import calls, done

from .conftest import (
    Harness,
    ScriptedInput,
    assert_terminal_clean,
    flat,
    make_console,
    use,
    write_plugin,
)

OUT = {"path": "out.txt", "content": "x"}


def _rejected(o: Any, needle: str, n: int = 1) -> None:
    assert o.panels == 0, "nothing reached the panel"
    assert_terminal_clean(o.terminal)
    results = o.sent_back(1)
    assert len(results) == n
    for r in results:
        assert r["is_error"] is True
        assert needle in r["content"], r["content"]
    assert o.of(ev.ToolStarted) == []
    assert o.disk_changes() == {}


# --------------------------------------------------------------------------- tool names

NAMES: dict[str, Any] = {
    "trailing-space": "write_file ",
    "leading-space": " write_file",
    "zero-width-suffix": "write_file\u200b",
    "bidi-prefix": "\u202ewrite_file",
    "other-case": "Write_File",
    "cyrillic-i": "wr\u0456te_file",
    "escape-sequence": "write_file\x1b[2K\r",
    "newline": "write_file\n",
    "empty": "",
    "null": None,
    "number": 123,
    "list": ["write_file"],
    "path-like": "../write_file",
}


@pytest.mark.parametrize("key", list(NAMES))
def test_odd_tool_name_is_an_unknown_tool(harness: Harness, key: str) -> None:
    o = harness.run([calls(use(NAMES[key], OUT)), done()], ["y"])
    _rejected(o, "Unknown tool")
    assert "Unknowntool" in flat(o.terminal), "the rejection is on screen"
    [invalid] = o.of(ev.ToolInvalid)
    assert invalid.id == "toolu_1"


# --------------------------------------------------------------------------- wrong shapes

SHAPES: dict[str, tuple[str, Any, str]] = {
    "path-number": ("write_file", {"path": 123, "content": "x"}, "- path:"),
    "path-null": ("write_file", {"path": None, "content": "x"}, "- path:"),
    "path-bool": ("write_file", {"path": True, "content": "x"}, "- path:"),
    "content-list": ("write_file", {"path": "a.txt", "content": ["a", "b"]}, "- content:"),
    "content-object": ("write_file", {"path": "a.txt", "content": {"text": "a"}}, "- content:"),
    "content-null": ("write_file", {"path": "a.txt", "content": None}, "- content:"),
    "content-missing": ("write_file", {"path": "a.txt"}, "required field is missing"),
    "input-string": ("write_file", '{"path": "a.txt", "content": "x"}', "must be a JSON object"),
    "input-list": ("write_file", [OUT], "must be a JSON object"),
    "input-null": ("write_file", None, "must be a JSON object"),
    "replace-all-string": ("edit_file", {"path": "notes.txt", "old_string": "milk",
                                         "new_string": "beer", "replace_all": "true"},
                           "- replace_all:"),
    "multiply-string": ("multiply", {"a": "24", "b": 17}, "- a:"),
    "timeout-string": ("run_command", {"command": "true", "timeout_s": "9999"}, "- timeout_s:"),
    "timeout-huge": ("run_command", {"command": "true", "timeout_s": 1e12}, "- timeout_s:"),
    "command-object": ("run_command", {"command": {"argv": ["rm", "-rf", "/"]}}, "- command"),
    "command-nul": ("run_command", {"command": "ls\x00; rm -rf ~"}, "NUL"),
    "argv-list-of-lists": ("run_command", {"command": [["rm"], ["-rf"]]}, "- command"),
}


@pytest.mark.parametrize("key", list(SHAPES))
def test_wrong_shape_is_rejected_with_a_reason(harness: Harness, key: str) -> None:
    tool, inp, needle = SHAPES[key]
    o = harness.run([calls(use(tool, inp)), done()], ["y"])
    _rejected(o, needle)


def _nested(depth: int) -> Any:
    value: Any = "rm -rf ~"
    for _ in range(depth):
        value = [value]
    return value


HUGE: dict[str, tuple[str, dict[str, Any], list[str], str]] = {
    # name -> (tool, input, answers, what the model must be told)
    "100k-path-approved": ("write_file", {"path": "a" * 100_000, "content": "x"}, ["y"],
                           "write_file failed"),
    "1mb-unknown-key": ("write_file", {**OUT, "k" * 1_000_000: 1}, ["y"], "unknown field"),
    "10k-unknown-keys": ("write_file", {**OUT, **{f"k{i}": i for i in range(10_000)}}, ["y"],
                         "unknown field"),
    "nested-100": ("write_file", {"path": "a.txt", "content": _nested(100)}, ["y"],
                   "- content:"),
}


@pytest.mark.parametrize("key", list(HUGE))
def test_huge_input(harness: Harness, key: str) -> None:
    tool, inp, answers, needle = HUGE[key]
    o = harness.run([calls(use(tool, inp)), done()], answers)
    assert_terminal_clean(o.terminal)
    [result] = o.sent_back(1)
    assert result["is_error"] is True
    assert needle in result["content"]
    assert len(result["content"]) <= 31_000, "what goes back is capped"
    assert o.disk_changes() == {}


@pytest.mark.parametrize("depth", [300, 5000])
def test_absurdly_nested_input_refuses_the_whole_reply(harness: Harness, depth: int) -> None:
    """Input nested deeper than any tool needs cannot even be logged or sent back to the API:
    the reply is refused as malformed, like a broken stream; nothing from it runs and the
    conversation goes on."""
    o = harness.run([calls(use("write_file", {"path": "a.txt", "content": _nested(depth)}),
                           use("read_file", {"path": "notes.txt"}, "toolu_2")),
                     done()], ["y"])
    assert o.result is not None and o.result.reason == "error"
    assert o.panels == 0
    assert_terminal_clean(o.terminal)
    [error] = o.of(ev.ErrorEvent)
    assert "nested" in error.message and "nothing from it was run" in error.message
    assert o.results() == [] and len(o.requests) == 1
    assert [m["role"] for m in o.session.history] == ["user"]
    assert o.disk_changes() == {}


def test_many_write_calls_in_one_reply_each_get_a_panel_and_one_result(harness: Harness) -> None:
    n = 150
    uses = [use("write_file", {"path": f"f{i}.txt", "content": "x"}, f"toolu_{i}")
            for i in range(n)]
    o = harness.run([calls(*uses), done()], ["y" if i == 7 else "" for i in range(n)],
                    settings={"max_panels_after_denial": n})
    assert o.panels == n
    results = o.sent_back(1)
    assert [r["tool_use_id"] for r in results] == [f"toolu_{i}" for i in range(n)]
    assert [i for i, r in enumerate(results) if not r.get("is_error")] == [7]
    assert list(o.disk_changes()) == [str(harness.workspace / "f7.txt")]


# --------------------------------------------------------------------------- max_tokens cut

CUTS: dict[str, list[dict[str, Any]]] = {
    "write-cut": [use("write_file", {"path": "config.ini", "content": "[main]\nmode = saf"})],
    "read-cut": [use("read_file", {"path": "notes.txt"})],
    "write-after-complete-write": [
        use("write_file", {"path": "a.txt", "content": "complete"}, "toolu_a"),
        use("run_command", {"command": "rm -rf ~/pro"}, "toolu_b")],
    "empty-input": [use("run_command", {})],
}


@pytest.mark.parametrize("key", list(CUTS))
def test_call_cut_by_max_tokens_is_not_run(harness: Harness, key: str) -> None:
    o = harness.run([calls(*CUTS[key], text="Working.", stop_reason="max_tokens"), done()],
                    ["y", "y"])
    assert o.result is not None and o.result.reason == "max_tokens"
    assert o.panels == 0
    assert_terminal_clean(o.terminal)
    results = o.results()
    assert len(results) == len(CUTS[key])
    assert all(r["is_error"] and "max_tokens" in r["content"] for r in results)
    assert len(o.requests) == 1, "the loop stops and tells the user"
    assert o.of(ev.ToolStarted) == []
    assert o.disk_changes() == {}


# --------------------------------------------------------------------------- endless loops


def _forever(reply: dict[str, Any]) -> Any:
    def fn(request: ModelRequest) -> dict[str, Any]:
        return reply
    return fn


REPEATS: dict[str, tuple[dict[str, Any], list[str]]] = {
    "missing-file": (calls(use("read_file", {"path": "nope.txt"})), []),
    "denied-write": (calls(use("write_file", OUT)), []),
    "unknown-tool": (calls(use("delete_everything", {})), []),
    "invalid-args": (calls(use("write_file", {"path": 1})), []),
    "outside-path": (calls(use("read_file", {"path": "../outside/secret.txt"})), []),
}


@pytest.mark.parametrize("key", list(REPEATS))
def test_same_failing_call_forever_stops(harness: Harness, key: str) -> None:
    reply, answers = REPEATS[key]
    o = harness.run(_forever(reply), answers)
    assert o.result is not None and o.result.reason == "repeated_failure"
    assert len(o.requests) == 3
    assert o.panels == (3 if key == "denied-write" else 0)
    assert_terminal_clean(o.terminal)
    for i in (1, 2):
        assert all(r["is_error"] for r in o.sent_back(i))
    assert o.disk_changes() == {}
    assert "TOP-SECRET-OUTSIDE" not in str(o.results())


@pytest.mark.parametrize("tool", ["write_file", "read_file"])
def test_same_failing_call_repeated_within_one_reply_stops(harness: Harness, tool: str) -> None:
    """Fifty copies of one call in a single reply: after `repeat_failures` identical failures
    (denials included) the rest are answered "not run" without a panel each, so a person cannot
    be worn down into a yes by a wall of identical panels."""
    args = OUT if tool == "write_file" else {"path": "missing.txt"}
    uses = [use(tool, args, f"toolu_{i}") for i in range(50)]
    o = harness.run([calls(*uses), done()], [""] * 50)
    assert o.result is not None and o.result.reason == "repeated_failure"
    assert o.panels == (3 if tool == "write_file" else 0)
    results = o.results()
    assert [r["tool_use_id"] for r in results] == [f"toolu_{i}" for i in range(50)]
    assert all(r["is_error"] for r in results)
    assert "not run" in results[3]["content"] and "not run" in results[-1]["content"]
    assert len(o.of(ev.ToolProposed)) == 50, "every call the model made is logged"
    gate_decisions = o.of(ev.Approval) + o.of(ev.ToolInvalid)
    assert len(gate_decisions) == 3, "the rest never reached the gate"
    assert_terminal_clean(o.terminal)
    assert o.disk_changes() == {}


def _counting(kind: str) -> Any:
    n = count()

    def fn(request: ModelRequest) -> dict[str, Any]:
        i = next(n)
        if kind == "read":
            return calls(use("multiply", {"a": i, "b": 2}, f"toolu_{i}"))
        return calls(use("write_file", {"path": f"f{i}.txt", "content": "x"}, f"toolu_{i}"))
    return fn


@pytest.mark.parametrize(("kind", "max_turns"), [("read", None), ("read", 200), ("write", None),
                                                 ("write", 40)],
                         ids=["read-default-limit", "read-200", "write-default-limit",
                              "write-40"])
def test_200_tool_turns_are_bounded(harness: Harness, kind: str, max_turns: int | None) -> None:
    settings = {"max_turns": max_turns} if max_turns else {}
    o = harness.run(_counting(kind), [], settings=settings)
    limit = max_turns or 25
    assert o.result is not None and o.result.reason == "max_turns"
    assert len(o.requests) == limit
    assert o.panels == (limit if kind == "write" else 0)
    assert len(o.results()) == limit, "every call of the last reply is answered too"
    assert_terminal_clean(o.terminal)
    assert o.disk_changes() == {}


# --------------------------------------------------------------------------- enormous results

BIG_PLUGIN = '''
from pydantic import BaseModel
from agent_cli.tools import Tool


class Args(BaseModel):
    pass


def run(args, ctx):
    return "HEAD-MARK" + ("\\x1b[2K" + "z" * 1000 + "\\n") * 5000 + "TAIL-MARK"


TOOL = Tool(name="big_read", description="Returns 5 MB.", args=Args, effect="read", run=run)
'''


@pytest.mark.parametrize("how", ["plugin", "read_file", "run_command"])
def test_5mb_result_is_capped_before_it_is_sent_back(harness: Harness, tmp_path: Path,
                                                     how: str) -> None:
    folder = tmp_path / "plugins"
    write_plugin(folder, "big_read", BIG_PLUGIN)
    if how == "plugin":
        call = use("big_read", {})
    elif how == "read_file":
        (harness.workspace / "big.log").write_text("HEAD-MARK" + "y" * 5_000_000 + "TAIL-MARK")
        call = use("read_file", {"path": "big.log"})
    else:
        call = use("run_command", {"command": "printf HEAD-MARK; head -c 5000000 /dev/zero | "
                                              "tr '\\0' a; printf TAIL-MARK"})
    before = harness.snapshot()
    o = harness.run([calls(call), done()], ["y"], tools_dirs=[folder])
    before.update({k: v for k, v in o.before.items() if k.endswith("big.log")})
    assert_terminal_clean(o.terminal)
    [result] = o.sent_back(1)
    content = result["content"]
    assert len(content) <= 30_000 + 200
    assert "HEAD-MARK" in content[:500]
    assert "cut" in content, "the cut is stated"
    if how != "read_file":
        assert content.endswith("TAIL-MARK") or "TAIL-MARK" in content[-2000:]
    [logged] = o.logged(ev.ToolResultEvent)
    assert logged.content == content
    assert logged.truncated or how == "run_command", "run_command states its own cut"
    assert o.disk_changes() == {}


# --------------------------------------------------------------------------- broken streams


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with FakeAnthropic() as server:
        yield server


def _stream_len(reply: dict[str, Any], fake: FakeAnthropic) -> tuple[int, int]:
    """(number of SSE events the fake sends for `reply` as the first reply, index of the first
    input_json_delta)."""
    message = {"id": "m", "type": "message", "role": "assistant", "model": "m",
               "content": reply["content"], "stop_reason": "tool_use", "stop_sequence": None,
               "usage": {"input_tokens": 1, "output_tokens": 1}}
    events = _stream_events(message, {}, fake.rng(1))
    first_delta = next(i for i, e in enumerate(events) if b"input_json_delta" in e)
    return len(events), first_delta


STREAM_FAULTS = ["reset-before-any-event", "reset-mid-text", "reset-mid-tool-input",
                 "reset-after-tool-block", "reset-before-message-stop", "error-mid-tool-input",
                 "error-before-message-delta", "error-before-message-stop"]


@pytest.mark.parametrize("fault", STREAM_FAULTS)
def test_broken_stream_never_runs_the_partial_turn(harness: Harness, fake: FakeAnthropic,
                                                   fault: str) -> None:
    reply = tool_reply(("toolu_w", "write_file", {"path": "pwned.txt", "content": "x" * 120}),
                       ("toolu_r", "run_command", {"command": "touch pwned2"}),
                       text="Sure, doing it now.")
    total, first_delta = _stream_len(reply, fake)
    position = {
        "reset-before-any-event": 0,
        "reset-mid-text": 4,
        "reset-mid-tool-input": first_delta + 3,
        "reset-after-tool-block": total - 4,
        "reset-before-message-stop": total - 1,
        "error-mid-tool-input": first_delta + 3,
        "error-before-message-delta": total - 2,
        "error-before-message-stop": total - 1,
    }[fault]
    key = "reset_after" if fault.startswith("reset") else "error_event_after"
    fake.add({**reply, key: position}, text_reply("Recovered."))
    console, buf = make_console()
    person = ScriptedInput(["y", "y", "y"])
    provider = AnthropicProvider("claude-test", api_key="test-key", base_url=fake.base_url,
                                 max_retries=0, retry_cap_s=0.01)
    before = harness.snapshot()
    session, events, _log = harness.session(provider, TerminalApprover(console, person), console)
    session.start()
    first = session.send("write it")
    second = session.send("try again")
    session.close()
    assert first.reason == "error"
    assert person.prompts == [], "no panel for a partial turn"
    assert not any(isinstance(e, ev.ToolProposed | ev.ToolStarted) for e in events)
    assert_terminal_clean(buf.getvalue())
    # (b) the next request carries no tool_result and no half reply
    assert second.reason == "end_turn"
    messages = fake.requests[-1].body["messages"]
    assert [m["role"] for m in messages] == ["user"]
    assert "tool_result" not in str(messages)
    # (c)
    assert harness.snapshot() == before


# --------------------------------------------------------------------------- duplicate ids


@pytest.mark.parametrize("ids", [("toolu_dup", "toolu_dup"), ("", ""), (None, None),
                                 ("toolu_a", "toolu_a", "toolu_a")],
                         ids=["duplicate", "empty", "missing", "triplicate"])
def test_duplicate_ids_each_answered_once(harness: Harness, fake: FakeAnthropic,
                                          ids: tuple[Any, ...]) -> None:
    """Decision: a repeated (or missing) id is given a fresh unique one in the history, so every
    call gets its own panel and exactly one result, and the next request pairs up (the fake
    validates the pairing as the real API does)."""
    uses = []
    for i, call_id in enumerate(ids):
        block: dict[str, Any] = {"type": "tool_use", "name": "write_file",
                                 "input": {"path": f"d{i}.txt", "content": str(i)}}
        if call_id is not None:
            block["id"] = call_id
        uses.append(block)
    o = harness.run([calls(*uses), done()], ["y"] + [""] * (len(ids) - 1))
    assert o.panels == len(ids)
    assistant = o.session.history[1]["content"]
    history_ids = [b["id"] for b in assistant if b["type"] == "tool_use"]
    assert len(set(history_ids)) == len(ids)
    results = o.sent_back(1)
    assert [r["tool_use_id"] for r in results] == history_ids
    assert [bool(r.get("is_error")) for r in results] == [False] + [True] * (len(ids) - 1)
    assert list(o.disk_changes()) == [str(harness.workspace / "d0.txt")]
    assert_terminal_clean(o.terminal)
    # the same history through the real SDK: the fake accepts it (ids pair up one to one)
    fake.add(text_reply("ok"))
    provider = AnthropicProvider("claude-test", api_key="test-key", base_url=fake.base_url,
                                 max_retries=0)
    # the tools go too: the API (and the fake) refuse tool blocks in a request without them
    reply = provider.complete(ModelRequest(messages=o.session.history,
                                           tools=o.session.registry.specs(),
                                           max_tokens=100, model="claude-test"),
                              lambda t: None, lambda s: None)
    assert reply.text() == "ok"
