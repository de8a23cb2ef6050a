"""`agent-cli mcp list|accept|add|import`, and the MCP part of `agent-cli tools`.

The views they print are in ui/views/mcp.py; the REPL's `/mcp` command is ui/mcp_repl.py.
"""

import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

if TYPE_CHECKING:
    from rich.console import Console, ConsoleRenderable

    from agent_cli.config import Settings
    from agent_cli.tools.mcp.hub import MCPHub

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


def register(app: typer.Typer) -> None:
    from agent_cli.cli.common import Common, fail, guarded, with_common

    mcp_app = typer.Typer(help="MCP servers: their state, tools, and changed tool definitions.",
                          no_args_is_help=True, add_completion=False, rich_markup_mode=None)

    @mcp_app.command("list")
    @with_common
    @guarded
    def list_cmd(common: Common) -> None:
        """Start each configured server, list its tools with their effect class and the
        server's annotations, then stop it. Exit 1 when a server could not start."""
        from rich.console import Console

        from agent_cli.tools.mcp.state import MISSING_EXTRA, configured_servers, mcp_available
        from agent_cli.ui.views.mcp import MCPStatus

        console = Console(highlight=False, markup=False)
        settings = common.settings()
        servers = configured_servers(settings)
        if not servers:
            console.print("No MCP servers are configured: add [mcp.servers.NAME] with "
                          "command = ... to the config (see docs/mcp.md).")
            raise typer.Exit(EXIT_OK)
        if not mcp_available():
            enabled = [n for n, s in servers.items() if s.enabled]
            raise fail(MISSING_EXTRA.format(names=", ".join(enabled) or "none enabled"),
                       EXIT_FAILED)
        with _looking_hub(servers, common.workspace_dir(), settings) as hub:
            _print_notes(console, hub)
            console.print(MCPStatus(hub.snapshot()))
            _print_confinement(console, list(servers))
        failed = [s for s in hub.snapshot() if s.state in ("failed", "stopped")]
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

        from agent_cli.tools.mcp.state import configured_servers, mcp_available
        from agent_cli.ui.safe_rich import safe

        console = Console(highlight=False, markup=False)
        settings = common.settings()
        servers = configured_servers(settings)
        if name not in servers:
            raise fail(f"No MCP server named {name!r} in the config; configured: "
                       f"{', '.join(servers) or '(none)'}.", EXIT_USAGE)
        if not mcp_available():
            raise fail("The optional MCP support is not installed; install it with: "
                       "pip install mcp jsonschema (with pipx: pipx inject agent-cli-host mcp "
                       "jsonschema).", EXIT_FAILED)
        cfg = servers[name].model_copy(update={"enabled": True})
        with _looking_hub({name: cfg}, common.workspace_dir(), settings) as hub:
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
            from agent_cli.ui.confirm import terminal_asker

            rows = Text()
            for remote, changes in held.items():
                rows.append_text(Text("changed ", style="bold yellow") + safe(remote, "bold"))
                for change in changes:
                    rows.append_text(Text("\n  ") + safe(change))
                rows.append("\n")
            rows.rstrip()
            asker = None if yes else terminal_asker(console)
            if asker is None:
                console.print(rows)
                if not yes:
                    raise fail("No terminal to confirm on: run again with --yes to accept "
                               "these definitions.", EXIT_USAGE)
            elif not asker.confirm(rows, f"Accept these {len(held)} definition(s)? [y/N] "):
                console.print("Not accepted; those tools stay out.")
                raise typer.Exit(EXIT_FAILED)
            accepted = hub.accept(name)
            console.print(safe(f"Accepted {len(accepted)} tool definition(s) of {name}."))

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
        grant: Annotated[bool, typer.Option(
            "--grant", help="Accept the grants proposed for the command (package cache, "
            "a --db-path folder, network) without asking.")] = False,
    ) -> None:
        """Add a server to the config (the --config file, else your user config):
        `agent-cli mcp add NAME -- CMD ARGS...` or `agent-cli mcp add NAME --url URL`.
        The grants its command needs in the sandbox are proposed in one question."""
        from agent_cli.tools.mcp.config import (
            append_servers,
            existing_servers,
            normalise,
            parse_pairs,
        )
        from agent_cli.tools.mcp.transport import check_cwd, refuse_argv_vars

        target = _config_target(common)
        try:
            program = cmd[0] if cmd else None
            if program and "/" in program and not Path(program).is_absolute():
                program = str(Path(program).resolve())  # servers start in a neutral folder
            entry = normalise(name, {
                "type": kind, "command": program, "args": list(cmd[1:]) if cmd
                else [], "env": parse_pairs(env, "=", "--env"), "headers": parse_pairs(header, "=",
                                                                             "--header"),
                "url": url, "cwd": cwd})
            refuse_argv_vars(name, entry.get("command"), entry.get("args", []))
            if cwd:
                check_cwd(name, Path(cwd).expanduser())
            if name in existing_servers(target):
                raise ValueError(f"a server named {name} is already in {target}; edit or "
                                 "remove it there")
        except ValueError as e:
            raise fail(str(e), EXIT_USAGE) from None
        granted = _offer_grants({name: entry}, grant)
        append_servers(target, {name: entry})
        print(f"Added MCP server {name} to {target} (untrusted: every call asks first"
              f"{'; with the grants above' if granted else ''}). Check it with: agent-cli mcp "
              "list")

    @mcp_app.command("import")
    @with_common
    @guarded
    def import_cmd(
        common: Common,
        file: Annotated[Path, typer.Argument(
            help="A JSON file with an \"mcpServers\" object: Claude Desktop's "
            "claude_desktop_config.json, a .mcp.json, ...")],
        yes: Annotated[bool, typer.Option(
            "--yes", help="Import the servers shown without asking (needed when there is no "
            "terminal).")] = False,
        grant: Annotated[bool, typer.Option(
            "--grant", help="Also accept the grants proposed for them without asking.")] = False,
    ) -> None:
        """Show every server of an `mcpServers` block with each field that grants something,
        and add the servers to the config once you accept that view; names already there are
        left alone and named. Exit 1 if an entry could not be read or was refused."""
        from agent_cli.tools.mcp.config import existing_servers, read_mcp_servers

        target = _config_target(common)
        try:
            block, shape = read_mcp_servers(file)
            have = existing_servers(target)
        except ValueError as e:
            raise fail(str(e), EXIT_USAGE) from None
        from agent_cli.cli.mcp_import import run_import

        raise typer.Exit(run_import(block, have, file, target, yes=yes, grant=grant,
                                    shape=shape))

    @mcp_app.command("remove")
    @with_common
    @guarded
    def remove_cmd(
        common: Common,
        name: Annotated[str, typer.Argument(help="The server, as named in [mcp.servers.NAME].")],
        yes: Annotated[bool, typer.Option(
            "--yes", help="Remove without asking (needed when there is no terminal).")] = False,
    ) -> None:
        """Remove a server's [mcp.servers.NAME] tables (and only those) from every config file
        that is read and has them, after showing the lines that go."""
        _edit_server(common, name, "remove", yes)

    @mcp_app.command("enable")
    @with_common
    @guarded
    def enable_cmd(common: Common, name: Annotated[str, typer.Argument(
            help="The server, as named in [mcp.servers.NAME].")]) -> None:
        """Set enabled = true in the server's table (in the config file that decides it)."""
        _edit_server(common, name, "enable", True)

    @mcp_app.command("disable")
    @with_common
    @guarded
    def disable_cmd(common: Common, name: Annotated[str, typer.Argument(
            help="The server, as named in [mcp.servers.NAME].")]) -> None:
        """Set enabled = false in the server's table: kept in the config, not started."""
        _edit_server(common, name, "disable", True)

    @mcp_app.command("login")
    @with_common
    @guarded
    def login_cmd(common: Common, name: Annotated[str, typer.Argument(
            help="The http or sse server, as named in [mcp.servers.NAME].")]) -> None:
        """Sign in to a remote server with OAuth (authorization code, PKCE, dynamic client
        registration): prints the sign-in URL and opens it when a browser is there, waits for
        the browser to come back, and keeps the tokens (0600) for the sessions that follow."""
        import anyio
        from rich.console import Console

        from agent_cli.tools.mcp.oauth import login, token_file
        from agent_cli.tools.mcp.results import exception_text, flatten_exception
        from agent_cli.tools.mcp.state import configured_servers, mcp_available
        from agent_cli.tools.mcp.transport import StartRefused
        from agent_cli.ui.safe_rich import safe

        console = Console(highlight=False, markup=False)
        servers = configured_servers(common.settings())
        if name not in servers:
            raise fail(f"No MCP server named {name!r} in the config; configured: "
                       f"{', '.join(servers) or '(none)'}.", EXIT_USAGE)
        cfg = servers[name]
        if cfg.transport == "stdio":
            raise fail(f"MCP server {name} runs as a local command; only http and sse servers "
                       "sign in.", EXIT_USAGE)
        if not mcp_available():
            raise fail("The optional MCP support is not installed; install it with: "
                       "pip install mcp jsonschema.", EXIT_FAILED)

        def show(url: str) -> None:
            console.print(safe(f"Open this URL to sign in to {name}:", "bold"))
            console.print(safe(url), soft_wrap=True)  # one line, to copy whole

        try:
            count = anyio.run(login, name, cfg, show)
        except Exception as e:  # the SDK's failures arrive as nested exception groups
            leaf = flatten_exception(e)
            why = str(leaf) if isinstance(leaf, StartRefused) else exception_text(e)
            raise fail(f"Signing in to {name} failed: {why}.", EXIT_FAILED) from None
        console.print(safe(f"Signed in to {name} ({count} tools); the sign-in is kept in "
                           f"{token_file(name)} (only you can read it) and refreshed by the "
                           "sessions that use it."))

    app.add_typer(mcp_app, name="mcp")


def _edit_server(common: Any, name: str, action: str, yes: bool) -> None:
    """`mcp remove|enable|disable NAME` on the config files that are read (the user config,
    then --config FILE, which wins): remove takes the server out of each that has it (else a
    lower one would bring it back); enable/disable edits the last one that has it."""
    from rich.console import Console
    from rich.text import Text

    from agent_cli.cli.common import fail
    from agent_cli.locations import user_config_file
    from agent_cli.tools.mcp.config import edit_server, existing_servers, write_edited
    from agent_cli.ui.safe_rich import safe

    console = Console(highlight=False, markup=False)
    files = list(dict.fromkeys(p for p in (user_config_file(), *(
        [Path(common.config)] if common.config else [])) if p.is_file()))
    try:
        having = [p for p in files if name in existing_servers(p)]
    except ValueError as e:  # tomllib's errors are ValueErrors
        raise fail(f"A config file cannot be read ({e}); fix it first.", EXIT_USAGE) from None
    if not having:
        where = ", ".join(map(str, files)) or "any config file"
        raise fail(f"No MCP server named {name!r} in {where}; `agent-cli mcp list` shows the "
                   "configured ones.", EXIT_USAGE)
    for path in having if action == "remove" else having[-1:]:
        try:
            before, text, shown = edit_server(path, name, action)
            if action == "remove" and not yes:
                body = Text()
                body.append_text(safe(f"These lines of {path} go:", "bold"))
                body.append_text(Text("\n") + safe(shown.rstrip("\n")))
                answer = mcp_question(f"Remove MCP server {name} from {path}?", body)
                if answer is None:
                    console.print(body)
                    raise fail("No terminal to confirm on: run again with --yes to remove it; "
                               "nothing was removed.", EXIT_USAGE)
                if not answer:
                    console.print(safe("Nothing was removed."))
                    raise typer.Exit(EXIT_FAILED)
            write_edited(path, before, text)
        except (OSError, ValueError) as e:
            raise fail(f"{e}.".replace("..", "."), EXIT_FAILED) from None
        done = {"remove": "Removed", "enable": "Enabled", "disable": "Disabled"}[action]
        console.print(safe(f"{done} MCP server {name} in {path}"
                           + (f" ({shown})." if action != "remove" else ".")))


def _print_confinement(console: "Console", names: list[str]) -> None:
    """Each started server's capability record, one line (agent_cli.sandbox.mcp)."""
    from agent_cli.sandbox.mcp import start_line
    from agent_cli.ui.safe_rich import safe

    for name in names:
        line = start_line(name)
        if line is not None:
            console.print(safe(line, "bold red" if "SANDBOX OFF" in line else "dim"))


def _config_target(common: Any) -> Path:
    """The file `add` and `import` write: --config FILE, else the user config that is really
    read (the XDG one, or the legacy data-folder one only while it is the only one)."""
    from agent_cli.locations import user_config_file

    return Path(common.config) if common.config else user_config_file()


def mcp_question(question: str, body: "ConsoleRenderable | None" = None
                           ) -> bool | None:
    """The y/N of `mcp add`, `mcp import` and `mcp remove`, asked through the product's one confirm
    (ui/confirm.py): `body` shown whole (paged when taller than the screen) before the
    question, type-ahead discarded, only y/yes accepts; None when there is no terminal."""
    from rich.console import Console

    from agent_cli.ui.confirm import confirm_if_terminal

    return confirm_if_terminal(Console(highlight=False, markup=False), body,
                               f"{question} [y/N] ")


def _offer_grants(entries: dict[str, dict[str, Any]], given: bool) -> bool:
    """Propose the grants each entry's command needs in the sandbox (one line each, with why)
    and apply them all on one yes (or `given`: --grant). True when they were applied."""
    from rich.console import Console
    from rich.text import Text

    from agent_cli.tools.mcp.grants import propose
    from agent_cli.ui.safe_rich import safe

    console = Console(highlight=False, markup=False)
    proposals = {n: p for n, e in entries.items()
                 if (p := propose(e.get("command"), e.get("args", []), e.get("env")))}
    if not proposals:
        return False
    body = Text()
    for n, p in proposals.items():
        body.append_text(safe(f"{n} needs, confined by the sandbox: {p.settings()}", "bold"))
        for why in p.reasons:
            body.append_text(Text("\n") + safe(f"  because {why}"))
        body.append("\n")
    body.rstrip()
    if given:
        console.print(body)
    answer = True if given else mcp_question("Grant these?", body)
    if answer is None:
        console.print(body)
    if not answer:
        console.print(safe("Not granted" + (" (no terminal to ask on; --grant accepts them)"
                                            if answer is None else "")
                           + ": the server may fail confined; add them to its table later."))
        return False
    for n, p in proposals.items():
        p.apply(entries[n])
    return True


def _print_notes(console: "Console", hub: "MCPHub") -> None:
    """The hub's queued notices (start lines such as a package runner's needs) for the
    commands that show state instead of running a session."""
    from agent_cli.ui.safe_rich import safe

    with hub._lock:
        notes, hub._notices = hub._notices, []
    for message, kind in notes:
        if kind == "mcp_error" and "could not start" not in message:
            console.print(safe(message, "yellow"))


def print_tools(console: "Console", settings: "Settings", workspace: Path) -> bool:
    """The MCP part of `agent-cli tools`: start the configured servers (pinning nothing), list
    each tool with its full sanitised description and a warning where the server hid padding or
    control characters in it, and every refused tool with its reason. False if a server could
    not start."""
    from rich.text import Text

    from agent_cli.tools.mcp.state import configured_servers, mcp_available
    from agent_cli.ui.views.mcp import MCPToolList

    servers = {n: s for n, s in configured_servers(settings).items() if s.enabled}
    if not servers:
        return True
    if not mcp_available():
        console.print(Text("MCP servers are configured but the mcp extra is not installed: "
                           "pip install mcp jsonschema (or pipx inject agent-cli-host mcp "
                           "jsonschema)",
                           style="yellow"))
        return True
    with _looking_hub(servers, workspace, settings) as hub:
        _print_notes(console, hub)
        snapshot = hub.snapshot()
    console.print(MCPToolList(snapshot))
    return all(srv.state == "ready" for srv in snapshot)


@contextlib.contextmanager
def _looking_hub(servers: dict[str, Any], workspace: Path, settings: "Settings"
                 ) -> Iterator["MCPHub"]:
    """A hub that only looks: it starts the servers, waits for them, and pins nothing. Its
    servers are confined exactly as a chat session's are: the sandbox is built from the same
    setting (`sandbox`, --sandbox off) and installed while the hub lives."""
    from agent_cli.config import home
    from agent_cli.sandbox.policy import Sandbox, install
    from agent_cli.tools.mcp.hub import MCPHub
    from agent_cli.tools.registry import Registry

    box = Sandbox.for_settings(settings, workspace)
    install(box)
    try:
        stamp = time.strftime("%Y%m%d-%H%M%S")
        hub = MCPHub(servers, Registry(), None, home=home(), session_id=f"mcp-cli-{stamp}",
                     pin_first_use=False, workspace=workspace)
        notice = box.start_notice() if hub.servers else None
        if notice is not None:  # e.g. "sandbox off: ... run with all your rights", as chat says
            hub.note(notice, "mcp_error")
        try:
            hub.start()
            hub.wait_ready()
            yield hub
        finally:
            hub.close()
    finally:
        box.close()
