"""What an MCP call returns, as the tool output the model sees.

Kept apart from the hub (hub.py) so the wording the model and the user read lives in
one place and can be tested without a server: a CallToolResult becomes text, and the ways a call
can fail (timeout, JSON-RPC error, closed connection, malformed result) become one clear
is_error output each. Nothing here imports the SDK at module level.
"""

from __future__ import annotations

import concurrent.futures
from typing import Any

from agent_cli.tools.base import ToolContext, ToolOutput


def flatten_exception(exc: BaseException) -> BaseException:
    """The first real cause inside nested exception groups (connect failures come wrapped)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def exception_text(exc: BaseException) -> str:
    exc = flatten_exception(exc)
    if isinstance(exc, FileNotFoundError):
        return f"command not found ({exc.filename or exc})"
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
"""What both providers accept as image blocks; other image types are described, not sent."""
IMAGE_MAX_BYTES = 5_000_000
"""The API's limit for one image; a bigger one is described, not sent."""


def format_result(result: Any) -> ToolOutput:
    """A CallToolResult as the output sent to the model.

    Text blocks are kept. Images go to the model as image blocks (the text says one is there,
    with its type and size; base64 is never pasted as text). Other blocks are described.
    Structured content is added as JSON only when no text block already carries it: servers
    SHOULD mirror it as text, and the filesystem server does (`{"content": TEXT}` beside TEXT),
    so sending both would double every result and put the cut in the wrong place."""
    import json

    parts: list[str] = []
    images: list[dict[str, str]] = []
    texts: list[str] = []
    structured = getattr(result, "structured_content", None)
    for block in getattr(result, "content", []) or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            text = str(getattr(block, "text", ""))
            parts.append(text)
            texts.append(text)
        elif kind == "image":
            parts.append(_image(block, images))
        elif kind == "audio":
            size = _b64_size(str(getattr(block, "data", "")))
            parts.append(f"[audio content: {getattr(block, 'mime_type', '?')}, {size:,} bytes, "
                         "not shown]")
        elif kind == "resource_link":
            parts.append(f"[resource link: {getattr(block, 'uri', '')} "
                         f"{getattr(block, 'name', '')}]".rstrip())
        elif kind == "resource":
            res = getattr(block, "resource", None)
            uri = getattr(res, "uri", "")
            body = getattr(res, "text", None)
            if isinstance(body, str):
                parts.append(f"[resource {uri}]\n{body}")
            else:
                size = _b64_size(str(getattr(res, "blob", "") or ""))
                parts.append(f"[binary resource {uri}: {getattr(res, 'mime_type', '?')}, "
                             f"{size:,} bytes, not shown]")
        else:
            parts.append(f"[{kind or 'unknown'} content, not shown]")
    if structured is not None and not any(_mirrors(t, structured) for t in texts) \
            and not _mirrors("\n".join(texts), structured):
        dumped = json.dumps(structured, ensure_ascii=False, indent=2)
        parts.append(dumped if not parts else "structured content:\n" + dumped)
    is_error = bool(getattr(result, "is_error", False))
    text = "\n".join(parts)
    if not text:
        text = "(the tool returned an error with no content)" if is_error else "(no content)"
    return ToolOutput(text, is_error, images)


def _b64_size(data: str) -> int:
    """Decoded size of base64 text, without decoding it."""
    data = data.strip()
    return max(0, len(data) * 3 // 4 - data[-2:].count("="))


def _image(block: Any, images: list[dict[str, str]]) -> str:
    """Queue an image block for the model (if it is a type and size the APIs take) and return
    the line that stands for it in the text, the panel and the log."""
    import base64
    import binascii

    mime = str(getattr(block, "mime_type", "") or "?")
    data = str(getattr(block, "data", "") or "")
    size = _b64_size(data)
    if mime not in IMAGE_TYPES:
        return f"[image: {mime}, {size:,} bytes, not sent: the model takes only " \
               f"{', '.join(IMAGE_TYPES)}]"
    if size > IMAGE_MAX_BYTES:
        return f"[image: {mime}, {size:,} bytes, not sent: over the {IMAGE_MAX_BYTES:,} byte limit]"
    try:
        base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return f"[image: {mime}, not sent: its data is not valid base64]"
    images.append({"media_type": mime, "data": data})
    return f"[image {len(images)}: {mime}, {size:,} bytes, sent to the model as an image]"


def _mirrors(text: str, structured: Any) -> bool:
    """Does this text already carry the structured value? As its JSON; or, for an object with
    one field (`{"result": v}` from the Python SDK, `{"content": v}` from the filesystem
    server, `{"entities": [...]}` from the memory server), as that field's value or its JSON."""
    import json

    candidates = [structured]
    if isinstance(structured, dict) and len(structured) == 1:
        candidates.append(next(iter(structured.values())))
    if text in candidates:
        return True
    if any(_is_blocks(c) for c in candidates):  # the SDK's copy of the content blocks
        return True
    try:
        parsed = json.loads(text)
    except ValueError:
        return False
    return parsed in candidates


CONTENT_TYPES = frozenset({"text", "image", "audio", "resource", "resource_link"})


def _is_blocks(value: Any) -> bool:
    """A list of content blocks (the Python SDK wraps a tool returning blocks as
    {"result": [blocks]}): the content itself, not extra data."""
    return (isinstance(value, list)
            and any(isinstance(v, dict) for v in value)
            and all(isinstance(v, str) or (isinstance(v, dict) and v.get("type") in CONTENT_TYPES)
                    for v in value))


def format_resource_list(resources: list[Any]) -> ToolOutput:
    """`list_resources` as lines: URI, name, MIME type, description."""
    if not resources:
        return ToolOutput("(this server lists no resources)")
    lines = []
    for r in resources:
        bits = [str(getattr(r, "uri", "")), str(getattr(r, "name", "") or "")]
        if getattr(r, "mime_type", None):
            bits.append(f"({r.mime_type})")
        if getattr(r, "description", None):
            bits.append(f"- {r.description}")
        lines.append(" ".join(b for b in bits if b))
    return ToolOutput("\n".join(lines))


def format_resource_read(result: Any) -> ToolOutput:
    """`read_resource`: text contents as text, images as image blocks, other binaries
    described."""
    parts: list[str] = []
    images: list[dict[str, str]] = []
    for c in getattr(result, "contents", []) or []:
        uri = str(getattr(c, "uri", ""))
        text = getattr(c, "text", None)
        if isinstance(text, str):
            parts.append(f"[resource {uri}]\n{text}")
            continue
        mime = str(getattr(c, "mime_type", "") or "?")

        class _Blob:
            mime_type = mime
            data = str(getattr(c, "blob", "") or "")

        if mime.startswith("image/"):
            parts.append(f"[resource {uri}] " + _image(_Blob, images))
        else:
            parts.append(f"[binary resource {uri}: {mime}, {_b64_size(_Blob.data):,} bytes, "
                         "not shown]")
    return ToolOutput("\n".join(parts) or "(empty resource)", False, images)


def call_error(server: str, timeout: float,
               exc: Exception) -> tuple[ToolOutput, str | None] | None:
    """A failed call as the output for the model, plus why the server counts as gone (None while
    it still is connected). None for an exception this does not know: the caller re-raises it.

    Runs on the portal thread, where the SDK is already imported."""
    import anyio
    from mcp import MCPError
    from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT
    from pydantic import ValidationError

    if isinstance(exc, TimeoutError):
        return ToolOutput(f"MCP server {server} did not answer within {timeout:g} s; the call "
                          "was cancelled, outcome unknown.", True), None
    if isinstance(exc, MCPError):
        if exc.code == CONNECTION_CLOSED:
            return ToolOutput(f"MCP server {server} closed the connection during the call (it "
                              "may have crashed); outcome unknown. Its tools were removed.",
                              True), "the connection closed during a call"
        if exc.code == REQUEST_TIMEOUT:
            return ToolOutput(f"MCP server {server} did not answer within {timeout:g} s; "
                              "outcome unknown.", True), None
        return ToolOutput(f"MCP server {server} returned an error ({exc.code}): {exc.message}",
                          True), None
    if isinstance(exc, anyio.ClosedResourceError | anyio.BrokenResourceError):
        return ToolOutput(f"MCP server {server} is no longer connected; the call was not sent. "
                          "Its tools were removed.", True), "the connection is closed"
    if isinstance(exc, ValidationError):
        return ToolOutput(f"MCP server {server} sent a malformed result: "
                          f"{exc.error_count()} validation error(s).", True), None
    if isinstance(exc, RuntimeError):  # structured content against the declared output schema
        return ToolOutput(f"MCP server {server} sent a result that breaks its own output "
                          f"schema: {exc}", True), None
    return None


def wait_for_call(future: concurrent.futures.Future[ToolOutput], ctx: ToolContext) -> ToolOutput:
    """Wait (on the loop's worker thread) for a call running on the portal, turning Ctrl-C
    (ctx.cancel) into a cancellation; whatever the portal raised becomes an error result."""
    while True:
        try:
            return future.result(timeout=0.05)
        except concurrent.futures.TimeoutError:
            if ctx.cancel.is_set():
                future.cancel()
                return ToolOutput("cancelled before the MCP server answered; outcome "
                                  "unknown", True)
        except concurrent.futures.CancelledError:
            return ToolOutput("cancelled before the MCP server answered; outcome unknown",
                              True)
        except BaseException as e:  # the async side maps what it knows; this is the rest
            return ToolOutput(f"MCP call failed: {exception_text(e)}", True)
