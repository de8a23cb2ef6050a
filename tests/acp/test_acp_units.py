"""The pure parts of `agent-cli acp`: how an answer becomes a decision, what a client's MCP server
keeps of its entry, the prompt's blocks as text, events as updates, and the codec."""

from __future__ import annotations

import json
import os
import threading
from typing import Any

import pytest

from agent_cli import events as ev
from agent_cli.acp import permission
from agent_cli.acp.content import PromptError, prompt_parts, prompt_text
from agent_cli.acp.servers import client_servers
from agent_cli.acp.updates import EventMapper, stop_reason, tool_kind
from agent_cli.acp.wire import Channel, Message
from agent_cli.calls import Approved, Call, Denied
from agent_cli.conversation import Attachment

CALL = Call(id="c1", name="write_file", effect="write", args={"path": "a", "content": "b"},
            args_hash="h1", preview="--- a\n+++ a\n+b")


def selected(option: Any) -> dict[str, Any]:
    return {"outcome": {"outcome": "selected", "optionId": option}}


def test_only_the_allow_option_approves_and_binds_the_hash() -> None:
    d = permission.decision(CALL, selected("allow"), "acp:ed")
    assert isinstance(d, Approved) and (d.id, d.args_hash, d.by) == ("c1", "h1", "user")


@pytest.mark.parametrize("answer", [
    selected("reject"), selected("allow_always"), selected("ALLOW"), selected(None),
    {"outcome": {"outcome": "cancelled"}}, {"outcome": "selected"}, {}, None, "allow",
    {"outcome": {"outcome": "approved", "optionId": "allow"}},
])
def test_every_other_answer_denies(answer: Any) -> None:
    d = permission.decision(CALL, answer, "acp:ed")
    assert isinstance(d, Denied) and d.by == "user" and d.id == "c1"


def test_the_question_has_exactly_two_once_options_and_a_private_copy_of_the_args() -> None:
    q = permission.question("s", CALL)
    assert [o["kind"] for o in q["options"]] == ["allow_once", "reject_once"]
    q["toolCall"]["rawInput"]["path"] = "elsewhere"
    assert CALL.args["path"] == "a"
    assert q["toolCall"]["content"][0]["content"]["text"] == CALL.preview


def test_a_clients_server_gets_no_grant_and_keeps_no_configured_name() -> None:
    raw = [{"name": "mine", "command": "x", "args": [], "env": []},
           {"name": "new", "command": "srv", "args": ["-v"], "env": [{"name": "A", "value": "1"}],
            "trusted": True, "network": True, "writable": ["/"], "sandbox": "off"},
           {"name": "web", "type": "http", "url": "http://127.0.0.1:1/mcp", "headers": []},
           {"name": "bad", "command": 3}, {"command": "nameless"}]
    servers, notes = client_servers(raw, {"mine": object()}, "ed")
    assert sorted(servers) == ["new", "web"]
    new = servers["new"]
    assert (new.trusted, new.network, new.writable, new.sandbox) == (False, False, [],
                                                                     "workspace")
    assert (new.command, new.args, new.env) == ("srv", ["-v"], {"A": "1"})
    assert any("mine" in n and "configured already" in n for n in notes)
    assert any("bad" in n and "not started" in n for n in notes)
    assert any("no name" in n for n in notes)


@pytest.mark.parametrize("field,item", [
    ("env", {"name": "s", "command": "x", "env": [{"name": "K", "value": "${HOME}"}]}),
    ("url", {"name": "s", "type": "http", "url": "http://h/${TOKEN}"}),
    ("headers", {"name": "s", "type": "sse", "url": "http://h",
                 "headers": [{"name": "A", "value": "Bearer ${ANTHROPIC_API_KEY:-x}"}]}),
])
def test_a_clients_server_never_gets_our_environment(field: str, item: dict[str, Any]) -> None:
    servers, notes = client_servers([item], {}, "ed")
    assert not servers and "${VAR}" in notes[0], field


def test_prompt_blocks_become_marked_text() -> None:
    text = prompt_text([{"type": "text", "text": "fix it"},
                        {"type": "resource", "resource": {"uri": "file:///a.py", "text": "x=1"}},
                        {"type": "resource_link", "uri": "file:///b.py", "name": "b.py"},
                        {"type": "image", "data": "AAAA", "mimeType": "image/png"}])
    # The words first, in their order, then the embedded files as the engine marks them
    # (Session.prompt's attachments: conversation.with_attachments).
    assert text.split("\n\n") == ["fix it", "[linked resource: file:///b.py (b.py)]",
                                  "[an image was attached; agent-cli passes only text to the "
                                  "model]", '<resource uri="file:///a.py">\nx=1\n</resource>']
    words, attached = prompt_parts([{"type": "resource", "resource": {"uri": "u", "text": "t"}}])
    assert words == "" and attached == [Attachment("u", "t")]
    for bad in (None, "text", [{"type": "text", "text": "  "}], [3]):
        with pytest.raises(PromptError):
            prompt_text(bad)


def test_stop_reasons() -> None:
    assert [stop_reason(r) for r in ("end_turn", "max_tokens", "max_turns", "refusal",
                                     "interrupted", "budget", "repeated_failure", "error")] == [
        "end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled", "end_turn",
        "end_turn", "end_turn"]


def test_kinds_never_make_an_unknown_write_tool_look_harmless() -> None:
    assert tool_kind("run_command", "write") == "execute"
    assert tool_kind("write_file", "write") == "edit"
    assert tool_kind("read_file", "read") == "read"
    assert tool_kind("search_text", "read") == "search"
    assert tool_kind("git__status", "write") == "other"
    assert tool_kind("fetch__fetch", "write") == "fetch"


def test_a_result_update_carries_the_redacted_text_the_model_saw() -> None:
    mapper = EventMapper(lambda name: "write", "/ws")
    result = ev.ToolResultEvent(id="c1", name="run_command", is_error=False,
                                content="token [REDACTED:api_key]").with_whole("token sk-ant-x")
    [update] = mapper(result)
    assert "sk-ant" not in json.dumps(update) and update["status"] == "completed"


def test_the_codec_one_object_a_line_and_answers_to_our_requests() -> None:
    to_agent_r, to_agent_w = os.pipe()
    from_agent_r, from_agent_w = os.pipe()
    channel = Channel(to_agent_r, from_agent_w)
    got: list[Message] = []
    reader = threading.Thread(target=channel.serve, args=(got.append,), daemon=True)
    reader.start()
    pending = channel.request("session/request_permission", {"x": 1})
    channel.notify("session/update", {"y": "two\nlines"})
    out = os.fdopen(from_agent_r, "rb")
    sent = [json.loads(out.readline()), json.loads(out.readline())]
    assert sent[0]["id"] == pending.id and sent[1]["params"]["y"] == "two\nlines"
    lines = [b"not json\n", b"[1]\n",
             json.dumps({"jsonrpc": "2.0", "id": pending.id, "result": {"ok": 1}}).encode() + b"\n",
             json.dumps({"jsonrpc": "2.0", "id": 7, "method": "m", "params": {}}).encode()
             + b"\n"]
    os.write(to_agent_w, b"".join(lines))
    assert pending.wait(60) == {"ok": 1}
    errors = [json.loads(out.readline()), json.loads(out.readline())]
    assert [e["error"]["code"] for e in errors] == [-32700, -32600]
    os.close(to_agent_w)
    reader.join(60)
    assert [(m.method, m.id) for m in got] == [("m", 7)]
    os.close(from_agent_w)
    out.close()


def test_live_output_is_sent_at_a_bounded_rate_and_redacted() -> None:
    mapper = EventMapper(lambda name: "write", "/ws", lambda t: t.replace("sk-x", "[R]"))
    [first] = mapper(ev.ToolOutputDelta("c1", "one sk-x\n"))
    assert first["status"] == "in_progress"
    assert first["content"][0]["content"]["text"] == "one [R]\n"
    assert mapper(ev.ToolOutputDelta("c1", "two\n")) == []  # (within the interval: held)
    [done] = mapper(ev.ToolResultEvent(id="c1", name="run_command", is_error=False,
                                       content="all"))
    assert done["status"] == "completed"
    [again] = mapper(ev.ToolOutputDelta("c1", "three"))  # a new run of the id starts over
    assert again["content"][0]["content"]["text"] == "three"


def test_outside_text_reaches_the_editor_with_its_hidden_characters_shown() -> None:
    """Model text, a result and the preview the question shows: escapes, bidi overrides and
    zero-width characters become visible tokens, as in the terminal panel."""
    mapper = EventMapper(lambda name: "write", "/ws")
    [chunk] = mapper(ev.TextDelta("ok\x1b]52;c;cm0=\x07 \u202edone"))
    [result] = mapper(ev.ToolResultEvent(id="c1", name="t", is_error=False,
                                         content="fine\u200b\rFAKE"))
    hostile = Call(id="c2", name="write_file", effect="write", args={"path": "a"},
                   args_hash="h", preview="+safe\u202e line", panel_extra={"server": "x\x1b[2J"})
    shown = json.dumps([chunk, result, permission.question("s", hostile)], ensure_ascii=False)
    for raw in ("\x1b", "\u202e", "\u200b", "\r"):
        assert raw not in shown
    assert "<U+202E>" in shown and "\\\\x1b" in shown
