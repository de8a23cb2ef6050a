"""ACP content blocks in and out: a prompt's blocks as the user's text, and a resumed
conversation as the updates that show it again (session/load).

A `resource` block (the editor's embedded file or selection) reaches the model as text marked
with its uri, so the model can tell the user's words from the file's; a `resource_link` is
mentioned by its uri (agent-cli does not fetch it: the model may read it with a tool, which asks
like any other call). Images and audio are not offered (promptCapabilities says so); one sent
anyway is mentioned, not passed on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agent_cli.acp.updates import text_chunk
from agent_cli.conversation import Attachment, with_attachments


class PromptError(ValueError):
    """The prompt is not a list of content blocks."""


def prompt_parts(blocks: Any) -> tuple[str, list[Attachment]]:
    """The user's words (text blocks and what is said about other blocks, in their order) and
    the embedded resources as attachments, for `Session.prompt`."""
    if not isinstance(blocks, list):
        raise PromptError("prompt must be a list of content blocks")
    parts: list[str] = []
    attachments: list[Attachment] = []
    for block in blocks:
        if not isinstance(block, dict):
            raise PromptError("each prompt block must be an object with a type")
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "resource":
            attached = _resource(block.get("resource"))
            if isinstance(attached, Attachment):
                attachments.append(attached)
            else:
                parts.append(attached)
        elif kind == "resource_link":
            name = block.get("name") or block.get("title") or ""
            uri = str(block.get("uri", ""))
            parts.append(f"[linked resource: {uri}" + (f" ({name})" if name and name != uri
                                                         else "") + "]")
        elif kind in ("image", "audio"):
            parts.append(f"[an {kind} was attached; agent-cli passes only text to the model]")
        else:
            parts.append(f"[a {kind!s} block was attached; agent-cli does not read that kind]")
    text = "\n\n".join(p for p in parts if p)
    if not text.strip() and not attachments:
        raise PromptError("the prompt holds no text")
    return text, attachments


def prompt_text(blocks: Any) -> str:
    """The user's turn as one text, as the model and the log get it."""
    return with_attachments(*prompt_parts(blocks))


def _resource(resource: Any) -> str | Attachment:
    if not isinstance(resource, dict):
        return "[a resource without content]"
    uri = str(resource.get("uri", ""))
    if isinstance(resource.get("text"), str):
        return Attachment(uri, resource["text"])
    mime = resource.get("mimeType") or "binary"
    return f"[resource {uri} ({mime}) attached as binary data; not passed to the model]"


def replay_updates(history: list[dict[str, Any]],
                   effect_of: Callable[[str], str | None] = lambda name: None
                   ) -> list[dict[str, Any]]:
    """The conversation as session/update payloads: what the user said, what the model said,
    and each call with how it ended (its result as the model got it)."""
    results: dict[str, tuple[str, bool]] = {}
    for message in history:
        for block in _blocks(message):
            if block.get("type") == "tool_result":
                results[str(block.get("tool_use_id"))] = (_result_text(block.get("content")),
                                                          bool(block.get("is_error")))
    from agent_cli.acp.updates import progress, text_content, tool_kind, tool_title

    out: list[dict[str, Any]] = []
    for message in history:
        role = message.get("role")
        for block in _blocks(message):
            kind = block.get("type")
            if kind == "text" and block.get("text"):
                out.append(text_chunk(str(block["text"]), "user_message_chunk" if role == "user"
                                      else "agent_message_chunk"))
            elif kind == "tool_use" and role == "assistant":
                call_id = str(block.get("id"))
                name = str(block.get("name"))
                text, failed = results.get(call_id, ("(no result)", True))
                out.append({"sessionUpdate": "tool_call", "toolCallId": call_id,
                            "title": tool_title(name, block.get("input")),
                            "kind": tool_kind(name, effect_of(name)),
                            "status": "pending", "rawInput": block.get("input")})
                out.append(progress(call_id, "failed" if failed else "completed",
                                    [text_content(text)]))
    return out


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content
                         if isinstance(b, dict) and b.get("type") == "text")
    return ""
