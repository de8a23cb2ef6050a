"""`agent-cli mcp list` / `agent-cli mcp accept NAME`, and the REPL's `/mcp` command.

Both views show each configured server, its state, and its tools with the effect class agent-cli
gives them and the annotations as the server's (unverified) claims.
"""

import sys
import time
from typing import TYPE_CHECKING, Annotated, Any

import typer

if TYPE_CHECKING:
    from rich.console import RenderableType

    from agent_cli.session import Session
    from agent_cli.tools.mcp_bridge import MCPHub

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

STATUS_STYLE = {"offered": "green", "held": "bold yellow", "refused": "red"}
STATE_STYLE = {"ready": "green", "starting": "cyan", "failed": "bold red", "stopped": "bold red",
               "unavailable": "bold red", "disabled": "dim", "closed": "dim"}


def render_status(snapshot: list[dict[str, Any]]) -> "RenderableType":
    """Servers and their tools, every server-supplied string through the sanitiser."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from agent_cli.safe_text import one_line
    from agent_cli.ui.safe_rich import safe, safe_line

    parts: list[Text | Table] = []
    for srv in snapshot:
        head = Text.assemble(safe(one_line(srv["name"]), "bold"), "  ",
                             safe_line(srv["state"], 40, STATE_STYLE.get(srv["state"], "")),
                             "  ", ("trusted" if srv["trusted"] else "untrusted",
                                    "yellow" if srv["trusted"] else "dim"),
                             safe_line(f"  mode {srv['mode']}", 60, "dim"))
        if srv["protocol"]:
            head.append_text(safe_line(f"  protocol {srv['protocol']}", 60, "dim"))
        if srv["info"]:
            head.append("  ")
            head.append_text(safe(one_line(srv["info"], 60), "dim"))
        parts.append(head)
        parts.append(Text("  command: ", style="dim") + safe(one_line(srv["command"], 200),
                                                             "dim"))
        if srv["reason"]:
            parts.append(Text("  ") + safe(one_line(srv["reason"], 300), "red"))
        if srv["state"] == "ready" and not srv["pinned"]:
            parts.append(Text("  not pinned yet: the first session that uses this server records "
                              "its tool definitions", style="dim"))
        if srv["state"] not in ("disabled", "unavailable"):
            parts.append(Text("  stderr: ", style="dim") + safe(srv["errlog"], "dim"))
        if srv["tools"]:
            table = Table(show_header=True, header_style="bold", box=None, padding=(0, 2))
            table.add_column("tool", no_wrap=True)
            table.add_column("effect")
            table.add_column("status")
            table.add_column("server says", overflow="fold")
            for tool in srv["tools"]:
                table.add_row(safe(one_line(tool["name"])),
                              safe_line(tool["effect"], 20, "green" if tool["effect"] == "read"
                                        else "red"),
                              safe_line(tool["status"], 20, STATUS_STYLE.get(tool["status"], "")),
                              safe(tool["claims"], "italic"))
            parts.append(table)
            for tool in srv["tools"]:
                for why in tool["why"]:
                    parts.append(safe_line(f"    {tool['status']} {tool['name']}: ", None,
                                           "yellow") + safe(one_line(why, 400)))
        parts.append(Text(""))
    if any(t["status"] == "held" for s in snapshot for t in s["tools"]):
        parts.append(Text("Held tools changed since you first used their server; review the "
                          "changes above, then accept them with /mcp accept NAME (REPL) or "
                          "agent-cli mcp accept NAME.", style="yellow"))
    parts.append(Text("Effect: write unless the server is trusted in config AND the tool says "
                      "read-only; the server's annotations are claims, not checked.", style="dim"))
    return Group(*parts)


def repl_command(session: "Session", arg: str) -> "RenderableType":
    """`/mcp` (state and tools) and `/mcp accept NAME` (pin a server's changed tools)."""
    from rich.text import Text

    hub = session.mcp
    if hub is None:
        return Text("No MCP servers are configured: add [mcp.servers.NAME] with command = ... "
                    "to the config (see docs/mcp.md).", style="dim")
    words = arg.split()
    if not words or words[0] in ("list", "status"):
        hub.sync()
        return render_status(hub.snapshot())
    if words[0] == "accept" and len(words) == 2:
        return _accept_in_session(session, hub, words[1])
    return Text("Usage: /mcp (servers and tools) or /mcp accept NAME (offer a server's changed "
                "tools again).", style="yellow")


def _accept_in_session(session: "Session", hub: "MCPHub", name: str) -> "RenderableType":
    from rich.text import Text

    from agent_cli.ui.safe_rich import safe

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


def register(app: typer.Typer) -> None:
    from agent_cli.cli import Common, fail, guarded, with_common

    mcp_app = typer.Typer(help="MCP servers: their state, tools, and changed tool definitions.",
                          no_args_is_help=True, add_completion=False, rich_markup_mode=None)

    @mcp_app.command("list")
    @with_common
    @guarded
    def list_cmd(common: Common) -> None:
        """Start each configured server, list its tools with their effect class and the
        server's annotations, then stop it. Exit 1 when a server could not start."""
        from rich.console import Console

        from agent_cli.tools.mcp_bridge import (
            MISSING_EXTRA,
            configured_servers,
            mcp_available,
        )

        console = Console(highlight=False, markup=False)
        servers = configured_servers(common.settings())
        if not servers:
            console.print("No MCP servers are configured: add [mcp.servers.NAME] with "
                          "command = ... to the config (see docs/mcp.md).")
            raise typer.Exit(EXIT_OK)
        if not mcp_available():
            enabled = [n for n, s in servers.items() if s.enabled]
            raise fail(MISSING_EXTRA.format(names=", ".join(enabled) or "none enabled"),
                       EXIT_FAILED)
        hub = _start_hub(servers, common.workspace_dir())
        try:
            console.print(render_status(hub.snapshot()))
        finally:
            hub.close()
        failed = [s for s in hub.snapshot() if s["state"] in ("failed", "stopped")]
        raise typer.Exit(EXIT_FAILED if failed else EXIT_OK)

    @mcp_app.command("accept")
    @with_common
    @guarded
    def accept_cmd(
        common: Common,
        name: Annotated[str, typer.Argument(help="The server, as named in [mcp.servers.NAME].")],
        yes: Annotated[bool, typer.Option(
            "--yes", help="Accept without asking (needed when there is no terminal).")] = False,
    ) -> None:
        """Show what changed in a server's tool definitions since they were pinned, and pin the
        current ones so those tools are offered to the model again."""
        from rich.console import Console
        from rich.text import Text

        from agent_cli.tools.mcp_bridge import configured_servers, mcp_available
        from agent_cli.ui.safe_rich import safe

        console = Console(highlight=False, markup=False)
        servers = configured_servers(common.settings())
        if name not in servers:
            raise fail(f"No MCP server named {name!r} in the config; configured: "
                       f"{', '.join(servers) or '(none)'}.", EXIT_USAGE)
        if not mcp_available():
            raise fail("The optional MCP support is not installed; install it with: "
                       "pip install mcp jsonschema (with pipx: pipx inject agent-cli-host mcp "
                       "jsonschema).", EXIT_FAILED)
        cfg = servers[name].model_copy(update={"enabled": True})
        hub = _start_hub({name: cfg}, common.workspace_dir())
        try:
            st = hub.servers[name]
            if st.state != "ready":
                raise fail(f"MCP server {name} did not start ({st.reason or st.state}); nothing "
                           "was accepted.", EXIT_FAILED)
            if hub.pins.pinned(name) is None:
                defs = {e.remote: e.definition for e in st.tools.values()
                        if e.status != "refused"}
                hub.pins.accept(name, defs)
                console.print(safe(f"Pinned {len(defs)} tool definition(s) of {name} (first "
                                   "use)."))
                raise typer.Exit(EXIT_OK)
            held = hub.held(name)
            if not held:
                console.print(safe(f"Nothing to accept: every tool of {name} matches its pin."))
                raise typer.Exit(EXIT_OK)
            for remote, changes in held.items():
                console.print(Text("changed ", style="bold yellow") + safe(remote, "bold"))
                for change in changes:
                    console.print(Text("  ") + safe(change))
            if not yes:
                if not sys.stdin.isatty():
                    raise fail("No terminal to confirm on: run again with --yes to accept "
                               "these definitions.", EXIT_USAGE)
                answer = typer.prompt(f"Accept these {len(held)} definition(s)? [y/N]",
                                      default="", show_default=False)
                if answer.strip().lower() not in ("y", "yes"):
                    console.print("Not accepted; those tools stay out.")
                    raise typer.Exit(EXIT_FAILED)
            accepted = hub.accept(name)
            console.print(safe(f"Accepted {len(accepted)} tool definition(s) of {name}."))
        finally:
            hub.close()

    app.add_typer(mcp_app, name="mcp")


def _start_hub(servers: dict[str, Any], workspace: Any) -> "MCPHub":
    """A hub that only looks: it starts the servers, waits for them, and pins nothing."""
    from agent_cli.config import home
    from agent_cli.tools.mcp_bridge import MCPHub
    from agent_cli.tools.registry import Registry

    stamp = time.strftime("%Y%m%d-%H%M%S")
    hub = MCPHub(servers, Registry(), None, home=home(), session_id=f"mcp-cli-{stamp}",
                 pin_first_use=False, workspace=workspace)
    hub.start()
    hub.wait_ready()
    return hub
