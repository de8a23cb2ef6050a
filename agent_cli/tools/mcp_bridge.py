"""MCP servers as a tool source, behind a small synchronous bridge.

The official `mcp` SDK is async. All configured servers run in ONE background thread (an anyio
blocking portal); each server is one long-lived task that owns its `Client` context from connect
to stop, so cancel scopes nest the way anyio wants. The rest of agent-cli stays synchronous:

- `MCPHub.start()` returns at once; servers connect in the background.
- `MCPHub.sync()` runs on the main thread only (before each model request, at session start, in
  `/mcp`): it adds and removes the hub's tools in the registry and emits the notices queued by the
  background thread. The registry and the session log are never touched from another thread.
- A tool's `run` (already on the loop's worker thread) hands the call to the portal and waits,
  polling the loop's cancel flag so Ctrl-C reaches the server as a cancellation.

Trust: annotations are hints from the server, shown as claims. Every MCP tool is `write` unless
its server is configured `trusted` and the tool says readOnlyHint true (see mcp_tools.py, which
turns a listed tool into a Tool; mcp_results.py turns what a call returns into its output). Tool
definitions are pinned on first use (see mcp_pins.py); a changed one is kept out until the user
accepts it.

`mcp` and `jsonschema` are an optional extra: nothing here imports them at module level.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import contextlib
import importlib.util
import logging
import os
import secrets
import shutil
import signal
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_cli.tools.base import Tool, ToolContext, ToolOutput, canonical_json
from agent_cli.tools.mcp_features import HubFeatures, list_pages
from agent_cli.tools.mcp_pins import PinStore
from agent_cli.tools.mcp_results import exception_text, flatten_exception, format_result
from agent_cli.tools.mcp_tools import (
    NAME_OK,
    ToolEntry,
    describe_claims,
    resource_entries,
    tool_entries,
)
from agent_cli.tools.mcp_transport import ExpandError, describe_endpoint, http_streams, stdio_params

if TYPE_CHECKING:
    from agent_cli import events as ev
    from agent_cli.config import MCPServer, Settings
    from agent_cli.tools.registry import Registry

MISSING_EXTRA = (
    "MCP servers are configured ({names}) but the optional MCP support is not installed; "
    "install it into agent-cli's environment: pip install mcp jsonschema (with pipx: pipx inject "
    "agent-cli-host mcp jsonschema), or set enabled = false for those servers."
)
STOP_GRACE_S = 8.0
"""Longest wait for all servers to stop on close (the SDK's own shutdown is bounded at ~6 s)."""
BOOT_HEAD_START_S = 0.3
"""How long the servers' start waits for the REPL prompt to come up, unless needed sooner."""
BOOT_ALLOWANCE_S = 15.0
"""Longest wait for the event loop and the SDK import before a server's own timeout starts."""


def mcp_available() -> bool:
    """True when the optional extra (mcp + jsonschema) is importable; imports neither."""
    for module in ("mcp", "jsonschema"):
        try:
            if importlib.util.find_spec(module) is None:
                return False
        except (ImportError, ValueError):  # blocked or half-installed
            return False
    return True


def configured_servers(settings: Settings) -> dict[str, MCPServer]:
    return dict(settings.mcp.get("servers", {}))


def _import_sdk() -> None:
    import jsonschema  # noqa: F401
    import mcp  # noqa: F401


@dataclass
class ServerState:
    name: str
    config: MCPServer
    errlog: Path
    state: str = "starting"
    """disabled | unavailable | starting | ready | failed | stopped | closed"""
    reason: str = ""
    protocol: str = ""
    info: str = ""
    tools: dict[str, ToolEntry] = field(default_factory=dict)
    ready: threading.Event = field(default_factory=threading.Event)
    deadline: float = 0.0
    client: Any = None
    stop: Any = None
    """anyio.Event set (on the portal thread) to end the server task."""
    task: concurrent.futures.Future[None] | None = None
    closing: bool = False
    marker: str = field(default_factory=lambda: secrets.token_hex(12))
    """In the environment of every process a stdio server starts, so close can end them all,
    also those that left its process group."""
    instructions: str = ""
    """The server's `instructions`, as it sent them (sanitised when passed on)."""
    relist: Any = None
    """anyio memory stream (send side): a tools/list_changed notification puts a token here."""
    progress: str = ""
    """The latest progress notification of a running call, for `/mcp`."""
    dirty: bool = False
    """A tools/list_changed arrived and the tools were not listed again since."""


class _EofWatch:
    """Wraps the transport's read stream to notice when the server goes away (EOF) between
    calls, so its tools can be removed before the model tries them."""

    def __init__(self, inner: Any, on_eof: Callable[[], None]) -> None:
        self._inner = inner
        self._on_eof = on_eof

    def __aiter__(self) -> _EofWatch:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self._inner.__anext__()
        except StopAsyncIteration:
            self._on_eof()
            raise

    async def receive(self) -> Any:
        import anyio

        try:
            return await self._inner.receive()
        except anyio.EndOfStream:
            self._on_eof()
            raise

    async def __aenter__(self) -> _EofWatch:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._inner.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)




class MCPHub(HubFeatures):
    """Owns the portal thread and every configured server; see the module docstring."""

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
    ) -> None:
        self.registry = registry
        self.workspace = workspace
        """The session's workspace; never a server's working folder (see _neutral_cwd)."""
        self.emit = emit
        self.pins = PinStore(home / "mcp-pins.json")
        self.pin_first_use = pin_first_use
        self.log_dir = home / "mcp-logs"
        self.session_id = session_id
        self.available = mcp_available()
        self.servers: dict[str, ServerState] = {}
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
        """Called (on the MCP thread) with each sanitised progress line of a running call;
        the command line sets it to a write to the terminal's stderr when there is one."""
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

        private_dir(self.log_dir)  # 0700: server logs can hold what a server printed
        self._neutral_cwd()
        self._route_sdk_logging()
        now = time.monotonic()
        for st in todo:  # bounds the wait for the boot and the SDK import; _serve resets it
            st.deadline = now + BOOT_HEAD_START_S + BOOT_ALLOWANCE_S + st.config.startup_timeout_s
        self._boot = threading.Thread(target=self._boot_servers, args=(todo,),
                                      name="agent-cli-mcp-boot", daemon=True)
        self._boot.start()
        atexit.register(self.close)
        self.note(f"MCP: starting {', '.join(s.name for s in todo)} in the background; "
                  "their tools join when ready (/mcp shows the state).")

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

        self._thread = threading.Thread(target=target, name="agent-cli-mcp", daemon=True)
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
        self._end_leftovers()
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

    def _end_leftovers(self) -> None:
        """End every process a stdio server started that outlived it: the SDK ends the server's
        process group, but a child that called setsid (or a daemon) left that group. Each carries
        its server's marker in its environment; SIGTERM, a short grace, then SIGKILL."""
        from agent_cli.tools.procs import is_running, marked_pids

        markers = [st.marker for st in self.servers.values()
                   if st.config.transport == "stdio" and st.state != "disabled"]
        if not markers or not os.path.isdir("/proc/self"):
            return
        pids = [pid for m in markers for pid in marked_pids(m)]
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, sig)
            end = time.monotonic() + 2.0
            while any(is_running(p) for p in pids) and time.monotonic() < end:
                time.sleep(0.02)
            pids = [p for p in pids if is_running(p)]
            if not pids:
                return

    def _route_sdk_logging(self) -> None:
        """The SDK logs through `logging`; with no handler Python would print warnings to the
        terminal, over the REPL. Send them to this session's MCP log file instead."""
        handler = logging.FileHandler(self.log_dir / f"{self.session_id}-sdk.log",
                                      encoding="utf-8", delay=True)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s %(message)s"))
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
                if st.state != "ready":
                    continue
                for entry in st.tools.values():
                    if entry.status == "offered" and entry.tool is not None:
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

    def take_notices(self) -> list[str]:
        """For callers without an event sink (`agent-cli mcp list`)."""
        with self._lock:
            notices, self._notices = self._notices, []
        return [m for m, _ in notices]

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
        with self._lock:
            self._notices.append((message, kind))

    # -- pins ------------------------------------------------------------------------------------

    def held(self, server: str) -> dict[str, list[str]]:
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
        return self._wait(future, ctx)

    @staticmethod
    def _wait(future: concurrent.futures.Future[ToolOutput], ctx: ToolContext) -> ToolOutput:
        """Wait for a call on the portal, turning Ctrl-C (ctx.cancel) into a cancellation."""
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

    async def _call_async(self, st: ServerState, remote: str, args: dict[str, Any]) -> ToolOutput:
        import anyio

        timeout = st.config.timeout_s
        client = st.client
        if client is None:
            return ToolOutput(f"MCP server {st.name} is not running.", True)

        async def progress(done: float, total: float | None, message: str | None) -> None:
            self._progress(st, remote, done, total, message)

        try:
            with anyio.fail_after(timeout + 1.0):
                result = await client.call_tool(remote, args, read_timeout_seconds=timeout,
                                                progress_callback=progress)
        except Exception as e:
            return self._call_failed(st, timeout, e)
        finally:
            st.progress = ""
        if st.dirty:  # the call changed the server's tools: the next request should see them
            await self._relist(st, client)
        return format_result(result)

    def _lost(self, st: ServerState, why: str) -> None:
        """The server went away (on the portal thread): drop its tools at the next sync."""
        if st.closing or st.state != "ready":
            return
        with self._lock:
            st.state, st.reason = "stopped", why
            self._notices.append((f"MCP server {st.name} stopped ({why}; it may have crashed); "
                                  f"its tools were removed. Server stderr: {st.errlog}",
                                  "mcp_error"))

    # -- the server task (portal thread) ---------------------------------------------------------

    async def _serve(self, st: ServerState) -> None:
        """Connect, list tools, stay connected until asked to stop. Raises only cancellation."""
        import anyio

        cancelled = anyio.get_cancelled_exc_class()
        st.stop = anyio.Event()
        startup = st.config.startup_timeout_s
        st.deadline = time.monotonic() + BOOT_ALLOWANCE_S + startup
        # Importing the SDK takes ~0.35 s: do it off the event loop, which must stay free to
        # accept the other servers' start requests without blocking the main thread.
        try:
            await anyio.to_thread.run_sync(_import_sdk)
        except Exception as e:  # a broken install: one line, like any other start failure
            self._failed(st, f"the mcp SDK cannot be imported ({exception_text(e)})")
            return
        try:
            import os

            from agent_cli.private_files import open_private

            errlog = os.fdopen(open_private(Path(st.errlog), os.O_WRONLY | os.O_APPEND), "a",
                               encoding="utf-8")  # 0600; closed in close()
        except (OSError, ValueError) as e:
            self._failed(st, f"cannot open its stderr log {st.errlog}: {e}")
            return
        self._files.append(errlog)
        started = anyio.Event()
        relist_send, relist_recv = anyio.create_memory_object_stream[None](1)
        st.relist = relist_send

        st.deadline = time.monotonic() + startup

        async def watchdog(scope: anyio.CancelScope) -> None:
            # Fail at the deadline itself (not after the slow kill of a hung process), so
            # the one line about it is there when the first request waits for the servers.
            with anyio.move_on_after(startup):
                await started.wait()
                return
            if st.state == "starting":
                self._failed(st, self._timeout_text(st))
                scope.cancel()

        async def relister(client: Any) -> None:
            async for _ in relist_recv:
                await self._relist(st, client)

        async def listener(client: Any) -> None:
            # 2026-07-28 servers announce changes on a subscriptions/listen stream instead of
            # a notification; older ones are handled by on_message in _connect.
            if str(client.protocol_version) < "2026-07-28":
                return
            with contextlib.suppress(Exception):
                async with client.listen(tools_list_changed=True) as sub:
                    async for _event in sub:
                        st.dirty = True
                        with contextlib.suppress(Exception):
                            relist_send.send_nowait(None)

        try:
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(watchdog, scope)
                    async with self._connect(st, errlog) as client:
                        listed = await self._list_tools(client)
                        resources = self._has_resources(client)
                        self._ready(st, client, listed, resources)
                        started.set()
                        tg.start_soon(relister, client)
                        tg.start_soon(listener, client)
                        await st.stop.wait()
                        st.client = None
                        tg.cancel_scope.cancel()
        except cancelled:
            raise
        except BaseException as e:  # connect failures arrive as nested exception groups
            if isinstance(e, KeyboardInterrupt | SystemExit):
                raise
            if st.closing:
                pass
            elif st.state == "starting":
                leaf = flatten_exception(e)
                text = exception_text(e)
                if isinstance(leaf, ExpandError):
                    text = str(leaf)
                elif "timed out" in text or isinstance(leaf, TimeoutError):
                    text = self._timeout_text(st)
                elif text in ("Connection closed", "MCPError: Connection closed"):
                    text = "it exited or closed the connection before the handshake finished"
                self._failed(st, text)
            else:
                self._lost(st, exception_text(e))
        finally:
            st.client = None
            st.relist = None
            st.ready.set()

    async def _relist(self, st: ServerState, client: Any) -> None:
        """List the tools again after a tools/list_changed (once per notification burst)."""
        if not st.dirty:
            return
        st.dirty = False
        try:
            listed = await self._list_tools(client)
        except Exception as e:  # keep the old list; say so once per failure
            self.note(f"MCP server {st.name} said its tools changed, but listing them failed "
                      f"({exception_text(e)}); its old tools stay.", "mcp_error")
            return
        self._relisted(st, listed)

    @staticmethod
    def _timeout_text(st: ServerState) -> str:
        text = f"it did not finish starting within {st.config.startup_timeout_s:g} s"
        if st.config.mode == "auto":
            text += (" (a server that ignores the 2026-07-28 discovery request costs 10 s in "
                     'mode "auto": try mode = "legacy" for it)')
        return text

    @staticmethod
    def _has_resources(client: Any) -> bool:
        caps = getattr(client, "server_capabilities", None)
        return getattr(caps, "resources", None) is not None

    @contextlib.asynccontextmanager
    async def _connect(self, st: ServerState, errlog: Any) -> AsyncIterator[Any]:
        from mcp import Client, stdio_client
        from mcp_types import (
            Implementation,
            LoggingMessageNotificationParams,
            ToolListChangedNotification,
        )

        from agent_cli import __version__

        cfg = st.config
        lost = "the connection closed"

        @contextlib.asynccontextmanager
        async def transport() -> AsyncIterator[Any]:
            if cfg.transport == "stdio":
                params = stdio_params(cfg, self._neutral_cwd(), st.marker, st.name)
                async with stdio_client(params, errlog=errlog) as (read, write):
                    yield _EofWatch(read, lambda: self._lost(st, lost)), write
            else:
                async with http_streams(cfg, cfg.startup_timeout_s) as (read, write):
                    yield read, write

        async def on_message(message: Any) -> None:
            if isinstance(message, ToolListChangedNotification) and st.relist is not None:
                st.dirty = True
                with contextlib.suppress(Exception):  # one pending re-list is enough
                    st.relist.send_nowait(None)

        async def on_log(params: LoggingMessageNotificationParams) -> None:
            # The server's log lines go to its log file, never raw to the terminal.
            from agent_cli.safe_text import one_line

            data = params.data if isinstance(params.data, str) else canonical_json(params.data)
            self._server_log(st, one_line(f"server log {params.level} {params.logger or ''}: "
                                          f"{data}", 4000))

        client = Client(transport(), mode=cfg.mode, read_timeout_seconds=cfg.startup_timeout_s,
                        client_info=Implementation(name="agent-cli", version=__version__),
                        cache=None, message_handler=on_message, logging_callback=on_log,
                        log_level="info")
        async with client:
            st.protocol = str(client.protocol_version)
            info = client.server_info
            st.info = f"{info.name} {info.version}" if info is not None else ""
            st.instructions = client.instructions or ""
            yield client

    @staticmethod
    async def _list_tools(client: Any) -> list[Any]:
        return await list_pages(client.list_tools, "tools")

    def _entries(self, st: ServerState, listed: list[Any],
                 resources: bool = False) -> dict[str, ToolEntry]:
        entries = tool_entries(st.name, st.config, listed, self.call)
        if resources:
            for entry in resource_entries(st.name, st.config, self.resource):
                entries.setdefault(entry.name, entry)
        return entries

    def _pin_check(self, st: ServerState, entries: dict[str, ToolEntry]) -> list[str]:
        """Hold every offered entry whose definition differs from its pin; returns the pinned
        tools the server no longer lists. Resource tools are agent-cli's own: not pinned."""
        defs = {e.remote: e.definition for e in entries.values()
                if e.status != "refused" and not e.builtin}
        check = self.pins.check(st.name, defs, pin_first_use=self.pin_first_use)
        for entry in entries.values():
            if entry.remote in check.held and entry.status == "offered" and not entry.builtin:
                entry.status, entry.why = "held", check.held[entry.remote]
        return check.gone

    def _ready(self, st: ServerState, client: Any, listed: list[Any],
               resources: bool = False) -> None:
        entries = self._entries(st, listed, resources)
        gone = self._pin_check(st, entries)
        with self._lock:
            st.tools, st.client, st.state = entries, client, "ready"
            offered = [e.name for e in entries.values() if e.status == "offered"]
            self._notices.append((f"MCP server {st.name} ready: {len(offered)} tool"
                                  f"{'' if len(offered) == 1 else 's'}"
                                  f"{' (' + ', '.join(offered) + ')' if offered else ''}.",
                                  "mcp"))
            self._entry_notices(st, entries.values())
            if gone:
                self._notices.append((f"MCP server {st.name} no longer lists: "
                                      f"{', '.join(gone)}.", "mcp"))
        st.ready.set()

    def _entry_notices(self, st: ServerState, entries: Any) -> None:
        """One line per held or refused tool (caller holds the lock)."""
        for e in entries:
            if e.status == "held":
                self._notices.append((
                    f"MCP tool {e.name} is kept out: its definition changed since you accepted "
                    f"it ({'; '.join(e.why)}). Review and accept with /mcp accept {st.name} or "
                    f"`agent-cli mcp accept {st.name}`.", "mcp_pin"))
            elif e.status == "refused":
                self._notices.append((f"MCP tool {st.name}/{e.shown} is not offered: "
                                      f"{'; '.join(e.why)}.", "mcp_error"))
            elif e.warning:
                self._notices.append((f"MCP tool {e.name}: {e.warning}", "mcp_error"))

    def _relisted(self, st: ServerState, listed: list[Any]) -> None:
        """A tools/list_changed notification (portal thread): the new list replaces the old
        one, each tool through the pin check again (a new or changed tool is held until the user
        accepts it), and the user is told what changed. The registry follows at the next sync."""
        if st.state != "ready":
            return
        resources = any(e.builtin for e in st.tools.values())
        entries = self._entries(st, listed, resources)
        self._pin_check(st, entries)
        with self._lock:
            old = st.tools
            st.tools = entries
            added = [e for n, e in entries.items() if n not in old]
            removed = [e.name for n, e in old.items() if n not in entries]
            changed = [e for n, e in entries.items()
                       if n in old and old[n].definition != e.definition]
            parts = []
            if added:
                parts.append("added " + ", ".join(e.name for e in added))
            if removed:
                parts.append("removed " + ", ".join(removed))
            if changed:
                parts.append("changed " + ", ".join(e.name for e in changed))
            self._notices.append((f"MCP server {st.name} changed its tools: "
                                  f"{'; '.join(parts) or 'no visible change'}.", "mcp"))
            self._entry_notices(st, [*added, *changed])

    def _failed(self, st: ServerState, why: str) -> None:
        with self._lock:
            if st.state != "starting":
                return
            st.state, st.reason = "failed", why
            self._notices.append((f"MCP server {st.name} could not start: {why}. Its tools are "
                                  f"not offered; server stderr: {st.errlog}", "mcp_error"))
        st.ready.set()

    # -- views -----------------------------------------------------------------------------------

    def snapshot(self) -> list[dict[str, Any]]:
        """A plain copy of every server's state and tools, for `/mcp` and `agent-cli mcp list`."""
        out: list[dict[str, Any]] = []
        pinned = {name: self.pins.pinned(name) is not None for name in self.servers}
        with self._lock:
            for st in self.servers.values():
                out.append({
                    "name": st.name, "state": st.state, "reason": st.reason,
                    "trusted": st.config.trusted, "mode": st.config.mode,
                    "command": describe_endpoint(st.config),
                    "progress": st.progress,
                    "protocol": st.protocol, "info": st.info, "errlog": str(st.errlog),
                    "pinned": pinned[st.name],
                    "tools": [{"name": e.name, "remote": e.shown, "effect": e.effect,
                               "description": e.description, "warning": e.warning,
                               "status": e.status, "why": list(e.why),
                               "claims": describe_claims(e.annotations),
                               "annotations": canonical_json(e.annotations)}
                              for e in st.tools.values()],
                })
        return out

    def request_hook(self, messages: list[dict[str, Any]], system: str | None
                     ) -> tuple[list[dict[str, Any]], str | None]:
        """The loop's hook before each model request: wait for servers still starting and let
        their tools join (sync(wait=True)), then add the ready servers' instructions to the
        system prompt. The messages go through unchanged."""
        self.sync(wait=True)
        extra = self.instructions()
        return messages, ((system or "") + extra) if extra else system


def start_hub(settings: Settings, registry: Registry, emit: Callable[[ev.AnyEvent], None], *,
              session_id: str, workspace: Path) -> MCPHub | None:
    """Start the configured MCP servers in the background (their tools join `registry` when
    ready, through the hub's sync); None when none is configured. The caller gives the loop
    `hub.request_hook` and closes the hub with the session."""
    from agent_cli.config import home

    servers = configured_servers(settings)
    if not servers:
        return None
    hub = MCPHub(servers, registry, emit, home=home(), session_id=session_id,
                 workspace=workspace)
    try:
        hub.start()
    except Exception as e:  # never let a broken MCP setup stop the session
        hub.note(f"MCP servers could not be started: {exception_text(e)}", "mcp_error")
    return hub
