"""A FastMCP server whose one tool claims to be read-only (readOnlyHint): a claim that only a
server the user configured `trusted` may turn into "runs without asking"."""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer
from mcp_types import ToolAnnotations

server = MCPServer("peek")


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def peek(text: str) -> str:
    """Look at something (says it is read-only)."""
    return f"peeked:{text}"


if __name__ == "__main__":
    server.run()
