"""The conversation's one home for tool_use/tool_result bookkeeping (agent_cli/conversation.py):
every tool_use gets exactly one tool_result, in order, whoever closes the turn."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agent_cli import conversation as conv
from agent_cli import events as ev
from agent_cli.log import resume as rs


def _use(call_id: Any, name: str = "t") -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_use", "name": name, "input": {}}
    if call_id is not None:
        block["id"] = call_id
    return block


def test_close_dangling_answers_every_call_in_order_and_keeps_given_results() -> None:
    history: list[dict[str, Any]] = [
        {"role": "user", "content": [conv.text_block("go")]},
        {"role": "assistant", "content": [conv.text_block("calling"), _use("a"), "junk",
                                          _use("b"), _use(None)]},
    ]
    given = {"a": conv.tool_result("a", "done")}
    closed = conv.close_dangling(history, "not run: test", given)
    assert [(call_id, found is not None) for _u, call_id, found in closed] == [
        ("a", True), ("b", False), ("toolu_missing_2", False)]
    assert history[-1] == {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "a", "content": "done"},
        {"type": "tool_result", "tool_use_id": "b", "content": "not run: test", "is_error": True},
        {"type": "tool_result", "tool_use_id": "toolu_missing_2", "content": "not run: test",
         "is_error": True}]}
    assert conv.close_dangling(history) == []  # nothing waits any more: nothing is added
    assert len(history) == 3


def test_a_conversation_without_calls_is_left_alone() -> None:
    history: list[dict[str, Any]] = [{"role": "user", "content": "hi"},
                                     {"role": "assistant", "content": "plain words"}]
    assert conv.close_dangling(history) == [] and len(history) == 2
    assert conv.tool_uses("not a list") == [] and conv.pending_uses([]) == []


def test_user_text_joins_a_trailing_user_message() -> None:
    history: list[dict[str, Any]] = [{"role": "user", "content": "old"}]
    conv.add_user_text(history, "new")
    assert history == [{"role": "user", "content": [conv.text_block("old"),
                                                    conv.text_block("new")]}]


def test_images_ride_beside_the_text_of_a_result() -> None:
    block = conv.tool_result("i", "a picture", images=[{"media_type": "image/png", "data": "QQ=="}])
    assert block["content"] == [
        {"type": "text", "text": "a picture"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "QQ=="}}]
    assert "is_error" not in block


def test_the_open_exchange_is_the_last_call_and_its_results() -> None:
    ask = {"role": "assistant", "content": [_use("a")]}
    answer = {"role": "user", "content": [conv.tool_result("a", "x")]}
    history = [{"role": "user", "content": "go"}, ask, answer]
    assert conv.open_exchange(history) == [ask, answer]
    assert conv.open_exchange([*history, {"role": "assistant", "content": "ok"}]) == []


def test_resume_and_the_loop_agree_on_a_call_without_an_id(tmp_path: Path) -> None:
    """A hand-written log whose reply has a tool_use without an id: resume answers it under the
    same id the loop would (one fallback, in conversation.use_id)."""
    path = tmp_path / "s.jsonl"
    records = [ev.SessionStart(version="0", model="m", provider="scripted",
                               workspace=str(tmp_path)),
               ev.UserMessage(text="go"),
               ev.ModelReply(content=[_use(None, "multiply")], stop_reason="tool_use")]
    path.write_text("".join(r.model_dump_json() + "\n" for r in records), encoding="utf-8")
    rebuilt = rs.rebuild(path)
    assert rebuilt.interrupted == [conv.use_id(_use(None), 0)]
    assert rebuilt.history[-1]["content"] == [
        conv.tool_result("toolu_missing_0", conv.INTERRUPTED, True)]
