"""The conversation's wire shapes, and the one home of the tool_use/tool_result bookkeeping.

The history is kept in the Messages API shape (role + content blocks as plain dicts, so the
log, replay and every provider read it without an SDK class). The TypedDicts below name that
shape for the type checker; at run time a block is still a dict, because model output is
untrusted data and may hold anything: the functions here read it defensively.

The invariant kept here: every tool_use id gets exactly one tool_result, in the model's order,
in the user message that follows. The loop (failures, denials, limits), the REPL's interrupt
path (through the loop), resume and the context budget all use these functions, so the rule has
one wording and one implementation.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NotRequired, TypedDict, cast


class TextBlock(TypedDict):
    """Words from the user or the model."""

    type: Literal["text"]
    text: str


class ToolUseBlock(TypedDict):
    """A call the model proposes: `id` pairs it with its result, `input` is untrusted JSON."""

    type: Literal["tool_use"]
    id: str
    name: str
    input: Any


class ToolResultBlock(TypedDict):
    """The answer to one tool_use: `content` is text, or text and image blocks side by side."""

    type: Literal["tool_result"]
    tool_use_id: str
    content: str | list[dict[str, Any]]
    is_error: NotRequired[bool]


Block = TextBlock | ToolUseBlock | ToolResultBlock | dict[str, Any]
"""A content block. Other kinds (images, thinking) pass through as plain dicts."""


class Message(TypedDict):
    """One turn of the conversation: `content` is a list of blocks (a bare string only in
    messages that came from elsewhere, e.g. an old log)."""

    role: Literal["user", "assistant"]
    content: str | list[Any]


RawMessage = dict[str, Any]
"""One message as the history holds it: the `Message` shape, kept a plain dict because it came
from a model, a log or a provider (read it defensively, as the functions here do)."""

History = list[RawMessage]
"""The conversation as the loop keeps it (messages of the `Message` shape), and every list of
messages in that shape: what a provider is sent, what a hook rewrites, what resume rebuilds."""

INTERRUPTED = "interrupted; outcome unknown"
"""The result a resumed conversation gives a call that was running when the session died."""

NOT_RUN_INTERRUPTED = "not run: the user interrupted the turn before this call"
"""The result of a call that never started because the user interrupted the turn."""


def text_block(text: str) -> TextBlock:
    return {"type": "text", "text": text}


@dataclass(frozen=True)
class Attachment:
    """Something the user attached to a message (an editor's open file or selection): its text,
    marked with where it came from, so the model can tell the user's words from the file's."""

    uri: str
    text: str

    def marked(self) -> str:
        body = self.text if self.text.endswith("\n") else self.text + "\n"
        return f'<resource uri="{self.uri}">\n{body}</resource>'


def with_attachments(text: str, attachments: Sequence[Attachment] = ()) -> str:
    """The user's turn as one text: their words, then each attachment marked (what is logged as
    the `user_message` and sent, so a resumed or replayed session has the same)."""
    return "\n\n".join([p for p in [text] if p] + [a.marked() for a in attachments])


def add_user_text(history: History, text: str) -> None:
    """Append the user's words; after an interrupted or limited turn the last message may already
    be the user's (tool results), so the text joins it rather than breaking role alternation."""
    if history and history[-1].get("role") == "user":
        content = history[-1]["content"]
        if isinstance(content, str):
            content = [text_block(content)]
        history[-1] = {"role": "user", "content": [*content, text_block(text)]}
    else:
        history.append({"role": "user", "content": [text_block(text)]})


def tool_result(call_id: str, content: str, is_error: bool = False,
                images: Iterable[dict[str, str]] = ()) -> ToolResultBlock:
    """The tool_result block answering `call_id`. `images` ({"media_type", "data"} each, base64)
    become image blocks beside the text (the Anthropic shape; providers convert it)."""
    pictures = [{"type": "image", "source": {"type": "base64", "media_type": i["media_type"],
                                             "data": i["data"]}} for i in images]
    block: ToolResultBlock = {"type": "tool_result", "tool_use_id": call_id,
                              "content": [{"type": "text", "text": content}, *pictures]
                              if pictures else content}
    if is_error:
        block["is_error"] = True
    return block


def tool_uses(content: Any) -> list[ToolUseBlock]:
    """The tool_use blocks of a message's content, in order (anything else is skipped)."""
    if not isinstance(content, list):
        return []
    return [cast(ToolUseBlock, b) for b in content
            if isinstance(b, dict) and b.get("type") == "tool_use"]


def has_tool_use(content: Any) -> bool:
    return bool(tool_uses(content))


def use_id(use: Mapping[str, Any], index: int) -> str:
    """The id a tool_use is answered under: its own, or (when a hand-written script left it out)
    one made from its position in the reply. The loop and resume must agree on it."""
    value = use.get("id")
    return value if isinstance(value, str) and value else f"toolu_missing_{index}"


def pending_uses(history: History) -> list[ToolUseBlock]:
    """The tool calls the model is still waiting on: those of a last assistant message."""
    if not history or history[-1].get("role") != "assistant":
        return []
    return tool_uses(history[-1].get("content"))


def close_dangling(history: History, why: str = NOT_RUN_INTERRUPTED,
                   answered: dict[str, ToolResultBlock] | None = None
                   ) -> list[tuple[ToolUseBlock, str, ToolResultBlock | None]]:
    """Answer every tool_use of a last assistant message, so the next request stays valid.

    A call with a result in `answered` (by id) gets that one; any other gets an error result
    saying `why`. Appends one user message with every result, in order. Returns, per call, the
    use, its id, and the result it got from `answered` (None when it was closed here), so the
    caller can log what it closed."""
    uses = pending_uses(history)
    done: list[tuple[ToolUseBlock, str, ToolResultBlock | None]] = []
    blocks: list[ToolResultBlock] = []
    for i, use in enumerate(uses):
        call_id = use_id(use, i)
        found = answered.pop(call_id, None) if answered is not None else None
        blocks.append(found if found is not None else tool_result(call_id, why, True))
        done.append((use, call_id, found))
    if blocks:
        history.append({"role": "user", "content": blocks})
    return done


def is_tool_answer(message: dict[str, Any]) -> bool:
    """A user message that carries tool results."""
    content = message.get("content")
    return message.get("role") == "user" and isinstance(content, list) and any(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


INTERRUPTED_MARK = "[interrupted by the user]"
"""Ends the assistant message that stands for a reply the user interrupted."""


def keep_interrupted(history: History, so_far: str) -> bool:
    """After the user interrupted the model's reply: the conversation keeps their message, and
    the reply's text so far as the assistant's, marked interrupted, so the next message ("no,
    focus on X") comes with its context and the roles still alternate. Only text is kept: the
    calls of an unfinished reply are never run, so never sent as tool_use. True when kept (the
    last message is the user's: their words, or the results the model was answering)."""
    if not history or history[-1].get("role") != "user":
        return False
    text = so_far.rstrip()
    marked = f"{text}\n\n{INTERRUPTED_MARK}" if text else INTERRUPTED_MARK
    history.append({"role": "assistant", "content": [text_block(marked)]})
    return True


def ends_interrupted(history: History) -> bool:
    """The last message is a reply the user cut (`keep_interrupted`)."""
    if not history or history[-1].get("role") != "assistant":
        return False
    content = history[-1].get("content")
    last = content[-1] if isinstance(content, list) and content else None
    return isinstance(last, dict) and str(last.get("text", "")).endswith(INTERRUPTED_MARK)


def retract_unanswered(history: History, text: str) -> bool:
    """Take back a message the model never answered (the request failed or was interrupted), so it
    is not silently merged into the next one. True when it was taken back."""
    if not history or history[-1].get("role") != "user":
        return False
    content = history[-1].get("content")
    if not isinstance(content, list) or not content:
        return False
    block = content[-1]
    if not (isinstance(block, dict) and block.get("type") == "text" and block.get("text") == text):
        return False
    if len(content) == 1:
        history.pop()
    else:
        history[-1] = {**history[-1], "content": content[:-1]}
    return True


def open_exchange(history: History) -> History:
    """The last tool exchange the model has not answered yet (a turn cut by an error, a limit or
    Ctrl-C): the assistant message that asked and the user message with the results. It must be
    kept whole wherever the history is cut (compaction)."""
    if len(history) < 2:
        return []
    prev, last = history[-2], history[-1]
    if not is_tool_answer(last) or prev.get("role") != "assistant":
        return []
    return [prev, last]


def tool_names(message: dict[str, Any] | None) -> dict[str, str]:
    """call id -> tool name, for the tool_use blocks of an assistant message."""
    if message is None:
        return {}
    return {str(b.get("id")): str(b.get("name")) for b in tool_uses(message.get("content"))}


SUMMARY_PREFIX = (
    "[This conversation was compacted by agent-cli; the full record is in the session log. "
    "Summary of everything so far:]\n\n"
)
SUMMARY_ACK = "Understood. I will continue from this summary."


def compacted(history: History, summary: str) -> History:
    """The history that `/compact` leaves: [user: summary, assistant: ack], or the pending tool
    exchange (open_exchange) in place of the ack, so no call is left unanswered. One function
    for the live session (context.compact) and resume (log/resume.py), so both send the same."""
    pending = open_exchange(history)
    fresh: History = [{"role": "user", "content": [text_block(SUMMARY_PREFIX + summary)]}]
    return fresh + (pending or [{"role": "assistant", "content": [text_block(SUMMARY_ACK)]}])
