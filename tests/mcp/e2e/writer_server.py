"""A FastMCP server that needs more than the sandbox gives by default, as real servers do:

- `--state-dir DIR` makes it create DIR/state.json at start (desktop-commander creates
  `~/.claude-server-commander` that way), so confined without a grant it exits before the
  handshake;
- `--db-path FILE` makes it open (create) a SQLite database at start, as mcp-server-sqlite
  does: confined, SQLite says only "unable to open database file";
- its `write` tool writes a file anywhere (a server asked to write into the workspace);
- its `connect` tool opens a TCP connection to 127.0.0.1:PORT (a fetch-like server);
- its `argv` and `env_has` tools say what its command line and environment hold;
- it declares the resources capability (every FastMCP server does) but lists none, until its
  `add_note` tool adds one and says so (resources/list_changed); `nudge` says its tools
  changed when nothing did.

`--hang-list` makes it answer the handshake and then never list its tools (a start that times
out although the server spoke). Run as `python writer_server.py [--state-dir DIR]
[--db-path FILE] [--hang-list]` (stdio).
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("writer")


@server.tool()
def write(path: str, text: str) -> str:
    """Write text to a file."""
    Path(path).write_text(text)
    return f"wrote {len(text)} characters to {path}"


@server.tool()
def echo(text: str) -> str:
    """Return the text (a result that is data, whatever it says)."""
    return text


@server.tool()
def connect(port: int) -> str:
    """Open a TCP connection to 127.0.0.1:port and read one line."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        return s.recv(100).decode()


@server.tool()
def argv() -> str:
    """This process's command line."""
    return "\n".join(sys.argv)


@server.tool()
def env_has(name: str) -> str:
    """Whether the environment holds `name`, and its length."""
    return f"{name} holds {len(os.environ.get(name, ''))} characters"


@server.tool()
async def add_note(ctx: Context) -> str:
    """Add the resource note://late and tell the client the resource list changed."""

    def late_note() -> str:
        return "a late note"

    server.resource("note://late", name="late", mime_type="text/plain")(late_note)
    await ctx.session.send_resource_list_changed()  # 2025-11-25 and older
    await ctx.notify_resources_changed()  # 2026-07-28 listen streams
    return "added note://late"


@server.tool()
async def nudge(ctx: Context) -> str:
    """Say the tool list changed although it did not."""
    await ctx.session.send_tool_list_changed()
    await ctx.notify_tools_changed()
    return "nudged"


async def _hang() -> list[object]:
    import anyio

    await anyio.sleep(3600)
    return []


if __name__ == "__main__":
    if "--hang-list" in sys.argv:  # answers the handshake, then never lists its tools
        server.list_tools = _hang  # type: ignore[method-assign]
    if "--db-path" in sys.argv:  # as mcp-server-sqlite does: open (create) the database
        import sqlite3

        db = sqlite3.connect(sys.argv[sys.argv.index("--db-path") + 1])
        db.execute("CREATE TABLE IF NOT EXISTS notes (text TEXT)")
        db.commit()
    if "--state-dir" in sys.argv:
        state = Path(sys.argv[sys.argv.index("--state-dir") + 1])
        state.mkdir(parents=True, exist_ok=True)
        (state / "state.json").write_text("{}")
    server.run()
