"""MCP views: the servers and their tools (`/mcp`, `agent-cli mcp list`), the MCP part of
`agent-cli tools`, and the servers' prompts (`/mcp prompts`).

Each is a renderable over the frozen records the hub hands out (tools/mcp/state.py), so the
command that shows it only fetches them and prints. Every string in them came from a server or
the config, so every one goes through the sanitiser (`safe`, `safe_line`, `one_line`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from rich.console import Group, RenderableType
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from agent_cli.safe_text import one_line
from agent_cli.tools.mcp.state import PromptInfo, ServerStatus
from agent_cli.ui.safe_rich import safe, safe_line

STATUS_STYLE = {"offered": "green", "held": "bold yellow", "refused": "red", "disabled": "dim",
                "not offered": "dim red"}
STATE_STYLE = {"ready": "green", "starting": "cyan", "failed": "bold red", "stopped": "bold red",
               "unavailable": "bold red", "disabled": "dim", "closed": "dim"}


def _effect(effect: str, limit: int | None = None) -> Text:
    return safe_line(effect, limit, "green" if effect == "read" else "red")


@dataclass(frozen=True)
class MCPStatus:
    """Each server: its state, trust, mode and endpoint, then its tools with the effect class
    agent-cli gives them and the annotations as the server's (unverified) claims."""

    servers: Sequence[ServerStatus]

    def __rich__(self) -> RenderableType:
        parts: list[RenderableType] = []
        for srv in self.servers:
            parts.extend(self._server(srv))
        if any(t.status == "held" for s in self.servers for t in s.tools):
            parts.append(Text("Held tools changed since you first used their server; review the "
                              "changes above, then accept them with /mcp accept NAME (REPL) or "
                              "agent-cli mcp accept NAME.", style="yellow"))
        parts.append(Text("Effect: write unless the server is trusted in config AND the tool "
                          "says read-only; the server's annotations are claims, not checked.",
                          style="dim"))
        return Group(*parts)

    @staticmethod
    def _server(srv: ServerStatus) -> list[RenderableType]:
        head = Text.assemble(safe(one_line(srv.name), "bold"), "  ",
                             safe_line(srv.state, 40, STATE_STYLE.get(srv.state, "")),
                             "  ", ("trusted" if srv.trusted else "untrusted",
                                    "yellow" if srv.trusted else "dim"),
                             safe_line(f"  mode {srv.mode}", 60, "dim"))
        if srv.protocol:
            head.append_text(safe_line(f"  protocol {srv.protocol}", 60, "dim"))
        if srv.info:
            head.append("  ")
            head.append_text(safe(one_line(srv.info, 60), "dim"))
        parts: list[RenderableType] = [
            head, Text("  command: ", style="dim") + safe(one_line(srv.command, 200), "dim")]
        if srv.reason:
            parts.append(Text("  ") + safe(one_line(srv.reason, 300), "red"))
        if srv.state == "ready" and not srv.pinned:
            parts.append(Text("  not pinned yet: the first session that uses this server records "
                              "its tool definitions", style="dim"))
        if srv.state not in ("disabled", "unavailable"):
            parts.append(Text("  stderr: ", style="dim") + safe(srv.errlog, "dim"))
        if srv.tools:
            table = Table(show_header=True, header_style="bold", box=None, padding=(0, 2))
            table.add_column("tool", no_wrap=True)
            table.add_column("effect")
            table.add_column("status")
            table.add_column("server says", overflow="fold")
            for tool in srv.tools:
                table.add_row(safe(one_line(tool.name)), _effect(tool.effect, 20),
                              safe_line(tool.status, 20, STATUS_STYLE.get(tool.status, "")),
                              safe(tool.claims, "italic"))
            parts.append(table)
            for tool in srv.tools:
                for why in tool.why:
                    parts.append(safe_line(f"    {tool.status} {tool.name}: ", None, "yellow")
                                 + safe(one_line(why, 400)))
                if tool.warning:
                    parts.append(safe_line(f"    warning {tool.name}: ", None, "yellow")
                                 + safe(one_line(tool.warning, 400)))
        if srv.progress:
            parts.append(Text("  running: ", style="dim") + safe(srv.progress))
        parts.append(Text(""))
        return parts


@dataclass(frozen=True)
class MCPToolList:
    """The MCP part of `agent-cli tools`: each tool with its full sanitised description (and a
    warning where the server hid padding or control characters in it), every refused tool with
    its reason, and one line for each server that did not start."""

    servers: Sequence[ServerStatus]

    def __rich__(self) -> RenderableType:
        parts: list[RenderableType] = []
        for srv in self.servers:
            if srv.state != "ready":
                parts.append(Text("MCP server ", style="bold red") + safe(one_line(srv.name))
                             + safe(f" {srv.state}: ", "bold red") + safe(one_line(srv.reason)))
                continue
            for tool in srv.tools:
                parts.append(Text.assemble(
                    safe(one_line(tool.name), "bold"), "  ", _effect(tool.effect), "  ",
                    safe(tool.status, STATUS_STYLE.get(tool.status, ""))))
                parts.append(Text("  source: ", style="dim") + safe(f"mcp:{srv.name}", "dim"))
                if tool.schema_hash:
                    parts.append(Text("  schema ", style="dim") + safe(tool.schema_hash, "dim"))
                for why in tool.why:
                    parts.append(Text("  why: ", style="yellow") + safe(one_line(why)))
                if tool.warning:
                    parts.append(Text("  warning: ", style="bold yellow")
                                 + safe(one_line(tool.warning)))
                parts.append(Padding(safe(tool.description), (0, 0, 0, 2)))
        return Group(*parts)


@dataclass(frozen=True)
class MCPPrompts:
    """`/mcp prompts`: each prompt as the command that sends it, with its description."""

    prompts: Sequence[PromptInfo]

    def __rich__(self) -> RenderableType:
        if not self.prompts:
            return Text("No running MCP server offers prompts.", style="dim")
        out = Text()
        for prompt in self.prompts:
            shown = " ".join(f"{a}=..." if required else f"[{a}=...]"
                             for a, required in prompt.arguments)
            out.append_text(safe(one_line(f"/mcp prompt {prompt.server} {prompt.name} "
                                          f"{shown}".rstrip()), "bold"))
            if prompt.description:
                out.append_text(Text("  ") + safe(one_line(prompt.description, 200), "dim"))
            out.append("\n")
        return out
