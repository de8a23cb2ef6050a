"""MCP servers as a tool source, behind a small synchronous bridge.

The official `mcp` SDK is async. All configured servers run in ONE background thread (an anyio
blocking portal); each server is one long-lived task that owns its `Client` context from connect
to stop, so cancel scopes nest the way anyio wants. The rest of agent-cli stays synchronous:

- `MCPHub.start()` returns at once; servers connect in the background.
- `MCPHub.sync()` runs where the session works, never on the portal's thread (before each model
  request on the turn's thread; at start and in `/mcp` between turns): it adds and removes the
  hub's tools in the registry and emits the notices the background thread queued.
- A tool's `run` (on the loop's worker thread) hands the call to the portal and waits, polling
  its cancel event so a cancel of the turn reaches the server as a cancellation.

Trust: annotations are hints from the server, shown as claims. Every MCP tool is `write` unless
its server is configured `trusted` and the tool says readOnlyHint true (see adapt.py, which turns
a listed tool into a Tool; results.py turns what a call returns into its output). Tool
definitions are pinned on first use (see pins.py); a changed one is kept out until the user
accepts it.

The package: hub (lifecycle, registry sync, calls), serve (each server's task), restart, features
(resources, prompts, progress, instructions), state, adapt, results, pins, transport, oauth, and
config and foreign (the `[mcp.servers.NAME]` tables, other clients' files).

`mcp` and `jsonschema` are an optional extra: nothing here imports them at module level.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import logging
import shutil
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_cli.sandbox import policy as sandbox_policy
from agent_cli.tools.base import Tool, ToolContext, ToolOutput, canonical_json
from agent_cli.tools.mcp.adapt import NAME_OK, describe_claims
from agent_cli.tools.mcp.features import HubFeatures
from agent_cli.tools.mcp.grants import grant_lines
from agent_cli.tools.mcp.pins import PinStore
from agent_cli.tools.mcp.restart import ServerRestarts
from agent_cli.tools.mcp.results import exception_text, format_result, wait_for_call
from agent_cli.tools.mcp.serve import ServerTasks
from agent_cli.tools.mcp.state import (
    BOOT_ALLOWANCE_S,
    BOOT_HEAD_START_S,
    MISSING_EXTRA,
    STOP_GRACE_S,
    ServerState,
    ServerStatus,
    ToolStatus,
    configured_servers,
    mcp_available,
)
from agent_cli.tools.mcp.transport import describe_endpoint, end_marked_processes

if TYPE_CHECKING:
    from agent_cli import events as ev
    from agent_cli.config import MCPServer, Settings
    from agent_cli.conversation import History
    from agent_cli.sandbox.policy import Sandbox
    from agent_cli.tools.registry import Registry


class MCPHub(ServerTasks, HubFeatures, ServerRestarts):
    """Owns the portal thread and every configured server; see the module docstring.

    What the rest of agent-cli uses: `start`, `sync` and `close` (main thread), `snapshot`,
    `held` and `accept` (the `/mcp` views and `agent-cli mcp`), `prompts`, `get_prompt` and
    `instructions` (features.py), `note`, and `on_progress`. Its tools reach it through `call`
    and `resource` (adapt.py builds them); everything else is internal."""

    def __init__(
        self,
        servers: dict[str, MCPServer],
        registry: Registry,
        emit: Callable[[ev.AnyEvent], None] | None,
        *,
        home: Path,
        session_id: str,
        pin_first_use: bool = True,
        workspace: Path | None = None,
        sandbox: Sandbox | None = None,
    ) -> None:
        self.registry = registry
        """The session's registry: `sync` adds the offered tools and removes the rest."""
        self.workspace = workspace
        """The session's workspace; never a server's working folder (see _neutral_cwd)."""
        self.sandbox = sandbox if sandbox is not None else sandbox_policy.current()  # its session's
        self.emit = emit
        """Where `sync` sends the queued notices (None: `agent-cli mcp`, which shows state)."""
        self.pins = PinStore(home / "mcp-pins.json")
        """The tool definitions accepted per server (pins.py)."""
        self.pin_first_use = pin_first_use
        """Pin a never-seen server's definitions (off for `agent-cli mcp list` and `tools`,
        which only look)."""
        self.log_dir = home / "mcp-logs"
        """The 0700 folder of the servers' stderr logs and the SDK's own log."""
        self.session_id = session_id
        """Names this session's log files."""
        self.available = mcp_available()
        """Whether the optional mcp extra is installed."""
        self.servers: dict[str, ServerState] = {}
        """Every configured server by name, enabled or not."""
        for name, cfg in servers.items():
            errlog = self.log_dir / f"{session_id}-{NAME_OK.sub('_', name)}.log"
            st = ServerState(name, cfg, errlog)
            if not cfg.enabled:
                st.state = "disabled"
            elif not self.available:
                st.state, st.reason = "unavailable", "the mcp extra is not installed"
            self.servers[name] = st
        self._lock = threading.Lock()
        self._notices: list[tuple[str, str]] = []
        self._registered: dict[str, Tool] = {}
        self._portal: Any = None
        self._boot: threading.Thread | None = None
        self._go = threading.Event()
        self._thread: threading.Thread | None = None
        self._files: list[Any] = []
        self._log_handler: logging.Handler | None = None
        self._closed = False
        self._cwd: Path | None = None
        self.on_progress: Callable[[str], None] | None = None
        """Called (on the MCP thread) with each sanitised progress line of a running call; the
        terminal's owner sets it (ui/mcp_progress.py writes to stderr when it is a terminal)."""
        self._check_name_clashes()
        enabled = [n for n, s in self.servers.items() if s.config.enabled]
        if enabled and not self.available:
            self.note(MISSING_EXTRA.format(names=", ".join(enabled)), "mcp_error")

    def _check_name_clashes(self) -> None:
        """Two servers whose names normalise alike (`files.a`, `files_a`) would give their tools
        one registry name: refuse the later one, naming both, instead of one shadowing the
        other."""
        seen: dict[str, str] = {}
        for name, st in self.servers.items():
            key = NAME_OK.sub("_", name)
            if key not in seen:
                seen[key] = name
                continue
            if st.state in ("disabled",):
                continue
            st.state = "failed"
            st.reason = (f"its name becomes {key} in tool names, like the server "
                         f"{seen[key]}; rename one of them in the config")
            self.note(f"MCP server {name} is not started: {st.reason}.", "mcp_error")
            st.ready.set()

    def _neutral_cwd(self) -> Path:
        """An empty private folder for stdio servers with no `cwd`: never the workspace, so
        `python -m server` cannot run a `server.py` planted in a cloned repository."""
        if self._cwd is None:
            self._cwd = Path(tempfile.mkdtemp(prefix="agent-cli-mcp-cwd-"))
        return self._cwd

    # -- lifecycle (main thread) ---------------------------------------------------------------

    def start(self) -> None:
        """Start every enabled server in the background and return at once: even anyio is
        imported off the main thread, which is busy bringing up the prompt."""
        todo = [s for s in self.servers.values() if s.state == "starting"]
        if not todo or self._boot is not None:
            return
        from agent_cli.private_files import private_dir
        from agent_cli.write_faults import writing

        with writing(self.log_dir, "the MCP server logs' folder"):
            private_dir(self.log_dir)  # 0700: server logs can hold what a server printed
        self._neutral_cwd()
        self._route_sdk_logging()
        now = time.monotonic()
        for st in todo:  # bounds the wait for the boot and the SDK import; _serve resets it
            st.deadline = now + BOOT_HEAD_START_S + BOOT_ALLOWANCE_S + st.config.startup_timeout_s
        self._boot = threading.Thread(target=self._in_scope, args=(self._boot_servers, todo),
                                      name="agent-cli-mcp-boot", daemon=True)
        self._boot.start()
        atexit.register(self.close)
        self.note(f"MCP: starting {', '.join(s.name for s in todo)} in the background; "
                  "their tools join when ready (/mcp shows the state).")
        for line in grant_lines(todo):
            self.note(line, "mcp_error")

    def _in_scope(self, work: Callable[..., None], *args: Any) -> None:
        """A hub thread: its servers are confined by this session's sandbox, whoever else runs."""
        with sandbox_policy.scope(self.sandbox):
            work(*args)

    def _boot_servers(self, todo: list[ServerState]) -> None:
        # Give the main thread a head start to bring up the prompt (the SDK import and two
        # Python servers starting would compete with it for the GIL and the cores), unless
        # someone needs the servers now: the first model request (sync(wait=True)) or a list.
        self._go.wait(BOOT_HEAD_START_S)
        if self._closed:
            for st in todo:
                st.state = "closed"
                st.ready.set()
            return
        try:
            portal = self._start_portal()
            self._portal = portal
            for st in todo:
                st.task = portal.start_task_soon(self._serve, st)
        except Exception as e:  # the event loop itself could not start: say so, go on
            for st in todo:
                self._failed(st, f"the MCP event loop could not start ({exception_text(e)})")

    def _start_portal(self) -> Any:
        """One daemon thread runs the event loop for every server. Not anyio's
        start_blocking_portal: its context manager, if never exited, hangs interpreter exit."""
        import anyio
        from anyio.from_thread import BlockingPortal

        box: concurrent.futures.Future[Any] = concurrent.futures.Future()

        async def main() -> None:
            async with BlockingPortal() as portal:
                box.set_result(portal)
                await portal.sleep_until_stopped()

        def target() -> None:
            try:
                anyio.run(main)
            except BaseException as e:
                if not box.done():
                    box.set_exception(e)

        self._thread = threading.Thread(target=self._in_scope, args=(target,),
                                        name="agent-cli-mcp", daemon=True)
        self._thread.start()
        return box.result(timeout=10)

    def wait_ready(self, names: list[str] | None = None) -> None:
        """Block until the named (default: all) servers left the `starting` state."""
        self._go.set()
        for st in self.servers.values():
            if names is not None and st.name not in names:
                continue
            # The server's task moves its deadline when it really begins (after the SDK import),
            # so re-read it rather than trusting the first value.
            while st.state == "starting" and time.monotonic() < st.deadline + 1.0:
                st.ready.wait(0.25)

    def close(self) -> None:
        """Stop every server and the portal thread; leaves no process behind."""
        if self._closed:
            return
        self._closed = True
        for st in self.servers.values():
            st.closing = True
        self._go.set()
        if self._boot is not None:
            self._boot.join(STOP_GRACE_S)
        portal = self._portal
        if portal is not None:
            for st in self.servers.values():
                st.closing = True
                if st.state == "starting" and st.task is not None:
                    st.task.cancel()
                elif st.stop is not None:
                    with contextlib.suppress(Exception):
                        portal.call(st.stop.set)
            tasks = [st.task for st in self.servers.values() if st.task is not None]
            concurrent.futures.wait(tasks, timeout=STOP_GRACE_S)
            with contextlib.suppress(Exception):
                portal.call(portal.stop, True)
            if self._thread is not None:
                self._thread.join(STOP_GRACE_S)
            self._portal = None
        atexit.unregister(self.close)
        end_marked_processes([st.marker for st in self.servers.values()
                              if st.config.transport == "stdio" and st.state != "disabled"])
        for st in self.servers.values():
            if st.state in ("ready", "starting"):
                st.state = "closed"
        self._drop_all_tools()
        if self._cwd is not None:
            shutil.rmtree(self._cwd, ignore_errors=True)
        for f in self._files:
            with contextlib.suppress(OSError):
                f.close()
        if self._log_handler is not None:
            logging.getLogger("mcp").removeHandler(self._log_handler)
            self._log_handler.close()

    def _route_sdk_logging(self) -> None:
        """The SDK logs through `logging`; with no handler Python would print warnings to the
        terminal, over the REPL. Send them to this session's MCP log file instead."""
        handler = logging.FileHandler(self.log_dir / f"{self.session_id}-sdk.log",
                                      encoding="utf-8", delay=True)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
        # A full or read-only disk loses these lines; it must not print a traceback over the REPL.
        handler.handleError = lambda record: None  # type: ignore[method-assign]
        logger = logging.getLogger("mcp")
        if not any(type(h) is logging.NullHandler for h in logger.handlers):
            # Stays after close: with no handler at all, logging's last resort prints warnings.
            logger.addHandler(logging.NullHandler())
        logger.addHandler(handler)
        logger.propagate = False
        self._log_handler = handler

    # -- main-thread sync ------------------------------------------------------------------------

    def sync(self, wait: bool = False) -> None:
        """Apply server changes to the registry and emit queued notices (main thread only).

        With `wait`, first wait for servers still starting (bounded by their timeout), so the
        first model request of a session sees their tools."""
        if wait and any(s.state == "starting" for s in self.servers.values()):
            self.wait_ready()
        with self._lock:
            desired: dict[str, Tool] = {}
            for st in self.servers.values():
                for entry in st.tools.values():
                    if st.offers(entry) and entry.tool is not None:
                        desired[entry.name] = entry.tool
            notices, self._notices = self._notices, []
        for name in list(self._registered):
            if desired.get(name) is not self._registered[name]:
                self.registry.remove(name)
                del self._registered[name]
        for name, tool in desired.items():
            if name in self._registered:
                continue
            try:
                self.registry.add(tool)
            except ValueError as e:
                self._refuse(name, f"name clash: {e}")
                notices.append((f"MCP tool {name} was not added: {e}", "mcp_error"))
                continue
            self._registered[name] = tool
        if self.emit is not None:
            from agent_cli import events as ev

            for message, kind in notices:
                self.emit(ev.Notice(message=message, kind=kind))

    def _refuse(self, name: str, why: str) -> None:
        with self._lock:
            for st in self.servers.values():
                for entry in st.tools.values():
                    if entry.name == name:
                        entry.status, entry.why = "refused", [why]

    def _drop_all_tools(self) -> None:
        for name in list(self._registered):
            self.registry.remove(name)
        self._registered.clear()

    def note(self, message: str, kind: str = "mcp") -> None:
        """Queue a notice (any thread); the next `sync` emits it as a Notice event."""
        with self._lock:
            self._notices.append((message, kind))

    # -- pins ------------------------------------------------------------------------------------

    def held(self, server: str) -> dict[str, list[str]]:
        """The server's held tools (remote name -> what changed since the pin)."""
        st = self.servers.get(server)
        if st is None:
            return {}
        with self._lock:
            return {e.remote: list(e.why) for e in st.tools.values() if e.status == "held"}

    def accept(self, server: str) -> list[str]:
        """Pin the current definitions of a server's held tools and offer them again."""
        st = self.servers.get(server)
        if st is None:
            raise KeyError(server)
        with self._lock:
            held = [e for e in st.tools.values() if e.status == "held"]
            for e in held:
                e.status, e.why = "offered", []
        if held:
            self.pins.accept(server, {e.remote: e.definition for e in held},
                             [e.remote for e in held])
        return [e.name for e in held]

    # -- calls (loop worker thread) --------------------------------------------------------------

    def call(self, server: str, remote: str, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        """Run one tool call on its server and wait for the result (loop worker thread); every
        failure, a cancel included, is an error result, never an exception."""
        st = self.servers[server]
        if st.state != "ready" or self._portal is None:
            why = f": {st.reason}" if st.reason else ""
            return ToolOutput(f"MCP server {server} is not running ({st.state}{why}); this tool "
                              "is unavailable.", True)
        try:
            future = self._portal.start_task_soon(self._call_async, st, remote, args)
        except RuntimeError:
            return ToolOutput(f"MCP server {server} is shutting down; the call was not sent.",
                              True)
        return wait_for_call(future, ctx)

    async def _call_async(self, st: ServerState, remote: str, args: dict[str, Any]) -> ToolOutput:
        import anyio

        timeout = st.config.timeout_s
        client = st.client
        if client is None:
            return ToolOutput(f"MCP server {st.name} is not running.", True)

        async def progress(done: float, total: float | None, message: str | None) -> None:
            self._progress(st, remote, done, total, message)

        logged = _size(st.errlog)
        try:
            with anyio.fail_after(timeout + 1.0):
                result = await client.call_tool(remote, args, read_timeout_seconds=timeout,
                                                progress_callback=progress)
        except Exception as e:
            return self._say_sandbox(st, self._call_failed(st, timeout, e), logged)
        finally:
            st.progress = ""
        if st.dirty:  # the call changed the server's tools: the next request should see them
            await self._relist(st, client)
        return self._say_sandbox(st, format_result(result), logged)

    def _say_sandbox(self, st: ServerState, out: ToolOutput, logged: int) -> ToolOutput:
        """A confined server's failed result (or what it wrote to stderr meanwhile) that reads
        like a denial the sandbox caused: the model is told the server is confined and how it
        could be allowed, and the user gets the same line as a notice."""
        if not st.confined:
            return out
        from agent_cli.tools.mcp.grants import read_tail, sandbox_hint

        # A successful result is data (a file that happens to say "Permission denied"); only a
        # failed one, and what the server wrote to stderr meanwhile, can tell of a denial.
        text = (out.content if out.is_error else "") + "\n" + read_tail(st.errlog, logged)
        hint = sandbox_hint(st.name, st.config, text, cwd=st.cwd, tmp=st.tmp)
        if hint is None:
            return out
        self.note(f"MCP server {st.name}: {hint}", "mcp_error")
        return ToolOutput(f"{out.content}\n\n[agent-cli: {hint} Only the user can change "
                          "that.]", out.is_error, out.images)

    # -- views -----------------------------------------------------------------------------------

    def snapshot(self) -> list[ServerStatus]:
        """A frozen copy of every server's state and tools, for `/mcp`, `agent-cli mcp list`
        and `agent-cli tools` (ui/views/mcp.py shows it)."""
        pinned = {name: self.pins.pinned(name) is not None for name in self.servers}
        with self._lock:
            return [ServerStatus(
                name=st.name, state=st.state, reason=st.reason, trusted=st.config.trusted,
                mode=st.config.mode, command=describe_endpoint(st.config), progress=st.progress,
                protocol=st.protocol, info=st.info, errlog=str(st.errlog),
                pinned=pinned[st.name],
                tools=tuple(ToolStatus(
                    name=e.name, remote=e.shown, effect=e.effect, description=e.description,
                    warning=e.warning, status=st.shown_status(e)[0],
                    why=st.shown_status(e)[1],
                    claims=describe_claims(e.annotations),
                    annotations=canonical_json(e.annotations),
                    schema_hash=e.tool.schema_hash() if e.tool is not None else "")
                    for e in st.tools.values()))
                for st in self.servers.values()]

    def request_hook(self, messages: History, system: str | None
                     ) -> tuple[History, str | None]:
        """The loop's hook before each model request: wait for servers still starting and let
        their tools join (sync(wait=True)), then add the ready servers' instructions to the
        system prompt. The messages go through unchanged."""
        self.sync(wait=True)
        extra = self.instructions()
        return messages, ((system or "") + extra) if extra else system


def start_hub(settings: Settings, registry: Registry, emit: Callable[[ev.AnyEvent], None], *,
              session_id: str, workspace: Path, sandbox: Sandbox | None = None
              ) -> MCPHub | None:
    """Start the configured MCP servers in the background (their tools join `registry` when
    ready, through the hub's sync); None when none is configured. The caller gives the loop
    `hub.request_hook` and closes the hub with the session."""
    from agent_cli.config import home

    servers = configured_servers(settings)
    if not servers:
        return None
    hub = MCPHub(servers, registry, emit, home=home(), session_id=session_id,
                 workspace=workspace, sandbox=sandbox)
    try:
        hub.start()
    except Exception as e:  # never let a broken MCP setup stop the session
        hub.note(f"MCP servers could not be started: {exception_text(e)}", "mcp_error")
    return hub


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
