"""The REPL's `/mcp` command: the servers' state and tools, accepting a server's changed tool
definitions, and the servers' prompts (listed, or sent as the user's message).

A slash command is a function of the session and the typed argument that returns what to show
(ui/repl.py prints it); the views are in ui/views/mcp.py.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import RenderableType
from rich.text import Text

from agent_cli.tools.mcp.config import parse_pairs
from agent_cli.ui.safe_rich import safe
from agent_cli.ui.turns import Retry
from agent_cli.ui.views.mcp import MCPPrompts, MCPStatus

if TYPE_CHECKING:
    from agent_cli.session import Session
    from agent_cli.tools.mcp.hub import MCPHub


def repl_mcp(session: Session, arg: str) -> RenderableType | Retry:
    """`/mcp` (state and tools), `/mcp accept NAME` (pin a server's changed tools), `/mcp
    restart NAME` (connect it again), `/mcp prompts` and `/mcp prompt`."""
    hub = session.mcp
    if hub is None:
        return Text("No MCP servers are configured: add [mcp.servers.NAME] with command = ... "
                    "to the config (see docs/mcp.md).", style="dim")
    words = arg.split()
    if not words or words[0] in ("list", "status"):
        hub.sync()
        return MCPStatus(hub.snapshot())
    if words[0] == "accept" and len(words) == 2:
        return _accept_in_session(hub, words[1])
    if words[0] == "restart" and len(words) == 2:
        said = hub.restart(words[1])
        return safe(said, "green" if " restarted: " in said else "yellow")
    if words[0] == "prompts" and len(words) == 1:
        return MCPPrompts(hub.prompts())
    if words[0] == "prompt" and len(words) >= 3:
        return _send_prompt(session, hub, words[1], words[2], words[3:])
    return Text("Usage: /mcp (servers and tools), /mcp accept NAME (offer a server's changed "
                "tools again), /mcp restart NAME (stop and start it again), /mcp prompts (the "
                "servers' prompts), /mcp prompt SERVER NAME [ARG=VALUE ...] (send one as your "
                "message).", style="yellow")


def _send_prompt(session: Session, hub: MCPHub, server: str, name: str,
                 raw: list[str]) -> RenderableType | Retry:
    """Fetch a server's prompt and send it as the user's message: the user typed the command,
    so this is their turn, run by the REPL like a typed message (Esc and Ctrl-C included)."""
    try:
        args = parse_pairs(raw, "=", "a prompt argument")
        text = hub.get_prompt(server, name, args)
    except ValueError as e:
        return safe(str(e), "yellow")
    return Retry(f"(MCP prompt {server}/{name})\n{text}")


def _accept_in_session(hub: MCPHub, name: str) -> RenderableType:
    if name not in hub.servers:
        return Text("No MCP server named ", style="yellow") + safe(name) + safe(
            f"; configured: {', '.join(hub.servers) or '(none)'}.", "yellow")
    held = hub.held(name)
    if not held:
        return safe(f"Nothing to accept: no tool of {name} is held.", "dim")
    accepted = hub.accept(name)
    hub.sync()
    lines = safe(f"Accepted the current definitions of {len(accepted)} tool(s) from {name}; "
                 "they are offered to the model again:\n", "green")
    for remote, changes in held.items():
        lines.append_text(safe(f"  {remote}: {'; '.join(changes)}\n"))
    return lines
