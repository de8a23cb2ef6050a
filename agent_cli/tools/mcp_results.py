"""What an MCP call returns, as the tool output the model sees.

Kept apart from the bridge (mcp_bridge.py) so the wording the model and the user read lives in
one place and can be tested without a server: a CallToolResult becomes text, and the ways a call
can fail (timeout, JSON-RPC error, closed connection, malformed result) become one clear
is_error output each. Nothing here imports the SDK at module level.
"""

from __future__ import annotations

from typing import Any

from agent_cli.tools.base import ToolOutput


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


def format_result(result: Any) -> tuple[str, bool]:
    """A CallToolResult as the text sent to the model, and whether it is an error.

    Text blocks are kept; other blocks are described; structured content is added as JSON unless
    a text block already carries exactly the same value (servers SHOULD mirror it as text)."""
    import json

    parts: list[str] = []
    mirrored = False
    structured = getattr(result, "structured_content", None)
    for block in getattr(result, "content", []) or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            text = str(getattr(block, "text", ""))
            parts.append(text)
            if structured is not None and not mirrored:
                mirrored = _mirrors(text, structured)
        elif kind in ("image", "audio"):
            size = len(str(getattr(block, "data", ""))) * 3 // 4
            parts.append(f"[{kind} content: {getattr(block, 'mime_type', '?')}, about {size} "
                         "bytes, not shown]")
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
                parts.append(f"[binary resource {uri}: {getattr(res, 'mime_type', '?')}, "
                             "not shown]")
        else:
            parts.append(f"[{kind or 'unknown'} content, not shown]")
    if structured is not None and not mirrored:
        dumped = json.dumps(structured, ensure_ascii=False, indent=2)
        parts.append(dumped if not parts else "structured content:\n" + dumped)
    is_error = bool(getattr(result, "is_error", False))
    text = "\n".join(parts)
    if not text:
        text = "(the tool returned an error with no content)" if is_error else "(no content)"
    return text, is_error


def _mirrors(text: str, structured: Any) -> bool:
    """Does this text block already carry the structured value? Either as its JSON, or as the
    SDK's wrapping of a plain return value ({"result": value})."""
    import json

    candidates = [structured]
    if isinstance(structured, dict) and list(structured) == ["result"]:
        candidates.append(structured["result"])
    if text in candidates:
        return True
    try:
        parsed = json.loads(text)
    except ValueError:
        return False
    return parsed in candidates


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
