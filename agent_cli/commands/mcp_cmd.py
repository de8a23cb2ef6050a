"""`agent-cli mcp list` / `agent-cli mcp accept NAME`, and the REPL's `/mcp` command.

Both views show each configured server, its state, and its tools with the effect class agent-cli
gives them and the annotations as the server's (unverified) claims.
"""

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

if TYPE_CHECKING:
    from rich.console import Console, RenderableType

    from agent_cli.config import Settings
    from agent_cli.session import Session
    from agent_cli.tools.mcp_bridge import MCPHub

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2

STATUS_STYLE = {"offered": "green", "held": "bold yellow", "refused": "red", "disabled": "dim"}
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
                if tool["warning"]:
                    parts.append(safe_line(f"    warning {tool['name']}: ", None, "yellow")
                                 + safe(one_line(tool["warning"], 400)))
        if srv.get("progress"):
            parts.append(Text("  running: ", style="dim") + safe(srv["progress"]))
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
    if words[0] == "prompts" and len(words) == 1:
        return _list_prompts(hub)
    if words[0] == "prompt" and len(words) >= 3:
        return _send_prompt(session, hub, words[1], words[2], words[3:])
    return Text("Usage: /mcp (servers and tools), /mcp accept NAME (offer a server's changed "
                "tools again), /mcp prompts (the servers' prompts), /mcp prompt SERVER NAME "
                "[ARG=VALUE ...] (send one as your message).", style="yellow")


def _list_prompts(hub: "MCPHub") -> "RenderableType":
    from rich.text import Text

    from agent_cli.safe_text import one_line
    from agent_cli.ui.safe_rich import safe

    found = hub.prompts()
    if not found:
        return Text("No running MCP server offers prompts.", style="dim")
    out = Text()
    for server, name, description, args in found:
        shown = " ".join(f"{a}=..." if required else f"[{a}=...]" for a, required in args)
        out.append_text(safe(one_line(f"/mcp prompt {server} {name} {shown}".rstrip()), "bold"))
        if description:
            out.append_text(Text("  ") + safe(one_line(description, 200), "dim"))
        out.append("\n")
    return out


def _send_prompt(session: "Session", hub: "MCPHub", server: str, name: str,
                 raw: list[str]) -> "RenderableType":
    """Fetch a server's prompt and send it as the user's message: the user typed the command,
    so this is their turn; the text is shown (sanitised) before it goes. Ctrl-C during the turn
    is settled like a typed message's."""
    from rich.text import Text

    from agent_cli.ui.safe_rich import safe

    try:
        args = _pairs(raw, "=", "a prompt argument")
        text = hub.get_prompt(server, name, args)
    except ValueError as e:
        return safe(str(e), "yellow")
    answered: set[str] = set()

    def note(event: Any) -> None:
        from agent_cli import events as ev

        if isinstance(event, ev.ToolResultEvent):
            answered.add(event.id)

    session.sinks.append(note)
    try:
        session.send(f"(MCP prompt {server}/{name})\n{text}")
    except KeyboardInterrupt:
        session.settle_interrupted_turn(answered)
    finally:
        session.sinks.remove(note)
    return Text("(that turn was the MCP prompt ", style="dim") + safe(f"{server}/{name}", "dim") \
        + Text(", sent as your message)", style="dim")


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

    @mcp_app.command("add")
    @with_common
    @guarded
    def add_cmd(
        common: Common,
        name: Annotated[str, typer.Argument(help="The server's name in [mcp.servers.NAME].")],
        cmd: Annotated[Optional[list[str]], typer.Argument(  # noqa: UP045
            help="After --: the command and its arguments (stdio).")] = None,
        url: Annotated[Optional[str], typer.Option(  # noqa: UP045
            "--url", help="Endpoint of an http or sse server.")] = None,
        kind: Annotated[Optional[str], typer.Option(  # noqa: UP045
            "--type", help="stdio, http or sse (default: http with --url, else stdio).")] = None,
        env: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
            "--env", help="KEY=VALUE for the server's environment; ${VAR} is expanded at "
            "start. Repeat for more.")] = None,
        header: Annotated[Optional[list[str]], typer.Option(  # noqa: UP045
            "--header", help="Name=Value HTTP header; ${VAR} is expanded at start.")] = None,
        cwd: Annotated[Optional[str], typer.Option(  # noqa: UP045
            "--cwd", help="The server's working folder.")] = None,
    ) -> None:
        """Add a server to the config (the --config file, else your user config):
        `agent-cli mcp add NAME -- CMD ARGS...` or `agent-cli mcp add NAME --url URL`."""
        from agent_cli.tools.mcp_config import append_servers, existing_servers, normalise

        target = _config_target(common)
        try:
            program = cmd[0] if cmd else None
            if program and "/" in program and not Path(program).is_absolute():
                program = str(Path(program).resolve())  # servers start in a neutral folder
            entry = normalise(name, {
                "type": kind, "command": program, "args": list(cmd[1:]) if cmd
                else [], "env": _pairs(env, "=", "--env"), "headers": _pairs(header, "=",
                                                                             "--header"),
                "url": url, "cwd": cwd})
            if name in existing_servers(target):
                raise ValueError(f"a server named {name} is already in {target}; edit or "
                                 "remove it there")
            append_servers(target, {name: entry})
        except ValueError as e:
            raise fail(str(e), EXIT_USAGE) from None
        print(f"Added MCP server {name} to {target} (untrusted: every call asks first). "
              "Check it with: agent-cli mcp list")

    @mcp_app.command("import")
    @with_common
    @guarded
    def import_cmd(
        common: Common,
        file: Annotated[Path, typer.Argument(
            help="A JSON file with an \"mcpServers\" object: Claude Desktop's "
            "claude_desktop_config.json, a .mcp.json, ...")],
    ) -> None:
        """Add every server of an `mcpServers` block to the config; names already there are
        left alone and named. Exit 1 if an entry could not be read."""
        from agent_cli.tools.mcp_config import (
            append_servers,
            existing_servers,
            normalise,
            read_mcp_servers,
        )

        target = _config_target(common)
        try:
            block = read_mcp_servers(file)
            have = existing_servers(target)
        except ValueError as e:
            raise fail(str(e), EXIT_USAGE) from None
        added: dict[str, Any] = {}
        problems: list[str] = []
        for name, raw in block.items():
            if name in have:
                problems.append(f"{name}: already configured in {target}; left as it is")
                continue
            try:
                added[name] = normalise(str(name), raw)
            except ValueError as e:
                problems.append(str(e))
        if added:
            append_servers(target, added)
        from agent_cli.safe_text import one_line

        for name in added:
            print(f"imported {one_line(name)} (untrusted)")
        for problem in problems:
            print(f"not imported: {one_line(problem)}", file=sys.stderr)
        print(f"{len(added)} server(s) added to {target}.")
        raise typer.Exit(EXIT_FAILED if any("already" not in p for p in problems) else EXIT_OK)

    app.add_typer(mcp_app, name="mcp")


def _pairs(items: list[str] | None, sep: str, flag: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items or []:
        key, found, value = item.partition(sep)
        if not found or not key:
            raise ValueError(f"{flag} takes KEY{sep}VALUE, not {item!r}")
        out[key] = value
    return out


def _config_target(common: Any) -> Path:
    from agent_cli.config import home

    return Path(common.config) if common.config else home() / "config.toml"


def print_tools(console: "Console", settings: "Settings", workspace: Path) -> bool:
    """The MCP part of `agent-cli tools`: start the configured servers (pinning nothing), list
    each tool with its full sanitised description and a warning where the server hid padding or
    control characters in it, and every refused tool with its reason. False if a server could
    not start."""
    from rich.padding import Padding
    from rich.text import Text

    from agent_cli.safe_text import one_line
    from agent_cli.tools.mcp_bridge import configured_servers, mcp_available
    from agent_cli.ui.safe_rich import safe

    servers = {n: s for n, s in configured_servers(settings).items() if s.enabled}
    if not servers:
        return True
    if not mcp_available():
        console.print(Text("MCP servers are configured but the mcp extra is not installed: "
                           "pip install mcp jsonschema (or pipx inject agent-cli-host mcp "
                           "jsonschema)",
                           style="yellow"))
        return True
    hub = _start_hub(servers, workspace)
    try:
        snapshot = hub.snapshot()
        tools = {e.name: e for st in hub.servers.values() for e in st.tools.values()}
    finally:
        hub.close()
    ok = True
    for srv in snapshot:
        if srv["state"] != "ready":
            ok = False
            console.print(Text("MCP server ", style="bold red") + safe(one_line(srv["name"]))
                          + safe(f" {srv['state']}: ", "bold red")
                          + safe(one_line(srv["reason"])))
            continue
        for tool in srv["tools"]:
            entry = tools.get(tool["name"])
            status = tool["status"]
            console.print(Text.assemble(
                safe(one_line(tool["name"]), "bold"), "  ",
                safe(tool["effect"], "green" if tool["effect"] == "read" else "red"), "  ",
                safe(status, STATUS_STYLE.get(status, ""))))
            console.print(Text("  source: ", style="dim") + safe(f"mcp:{srv['name']}", "dim"))
            if entry is not None and entry.tool is not None:
                console.print(Text("  schema ", style="dim") + safe(entry.tool.schema_hash(),
                                                                    "dim"))
            for why in tool["why"]:
                console.print(Text("  why: ", style="yellow") + safe(one_line(why)))
            if tool["warning"]:
                console.print(Text("  warning: ", style="bold yellow")
                              + safe(one_line(tool["warning"])))
            console.print(Padding(safe(tool["description"]), (0, 0, 0, 2)))
    return ok


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
