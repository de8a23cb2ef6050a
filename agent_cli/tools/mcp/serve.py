"""The hub's server tasks, on the portal thread: connect, list, pin-check, re-list, lose.

A part of the hub (hub.MCPHub mixes it in), kept apart so the hub module holds the main-thread
side (lifecycle, the registry sync, calls) and this one the life of each connection: `_serve` is
one long-lived task per server that owns its SDK `Client` from connect to stop, so cancel scopes
nest the way anyio wants. Everything it learns goes into the server's `ServerState` and the
hub's notice queue under the hub's lock; the registry and the session log are never touched from
here. Nothing here imports the SDK at module level.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

from agent_cli.tools.base import canonical_json
from agent_cli.tools.mcp.adapt import CallFn, ResourceFn, ToolEntry, resource_entries, tool_entries
from agent_cli.tools.mcp.features import list_pages
from agent_cli.tools.mcp.grants import exit_hint, read_tail, runner_line, sandbox_hint
from agent_cli.tools.mcp.pins import PinStore
from agent_cli.tools.mcp.results import exception_text, flatten_exception
from agent_cli.tools.mcp.state import BOOT_ALLOWANCE_S, ServerState, import_sdk
from agent_cli.tools.mcp.transport import (
    EofWatch,
    StartRefused,
    http_streams,
    sse_fallback,
    stdio_params,
)

GOODBYE_S = 3.0
"""How long a stopping connection may take to say goodbye (the DELETE that ends a streamable
HTTP session; a stdio server's stdin closed): well inside the hub's STOP_GRACE_S."""


class ServerTasks:
    """The portal-thread side of the hub (see the module docstring)."""

    pins: PinStore
    pin_first_use: bool
    _lock: threading.Lock
    _notices: list[tuple[str, str]]
    _files: list[Any]

    # Provided by MCPHub and its features (declared here for the type checker).
    call: CallFn
    resource: ResourceFn
    note: Callable[..., None]
    _neutral_cwd: Callable[[], Path]
    _server_log: Callable[[ServerState, str], None]
    _reconnects: Callable[[ServerState, Any], Any]

    def _lost(self, st: ServerState, why: str) -> None:
        """The server went away (on the portal thread): drop its tools at the next sync."""
        if st.closing or st.state != "ready":
            return
        with self._lock:
            st.state, st.reason = "stopped", why
            self._notices.append((f"MCP server {st.name} stopped ({why}; it may have crashed); "
                                  f"its tools were removed. Server stderr: {st.errlog}",
                                  "mcp_error"))
        if st.config.transport != "stdio" and st.stop is not None:
            st.stop.set()  # end this connection: the reconnect (restart.py) takes over

    # -- the server task (portal thread) ---------------------------------------------------------

    async def _serve(self, st: ServerState) -> None:
        """Connect, list tools, stay connected until asked to stop. Raises only cancellation."""
        import anyio

        st.stop = anyio.Event()
        startup = st.config.startup_timeout_s
        st.deadline = time.monotonic() + BOOT_ALLOWANCE_S + startup
        # Importing the SDK takes ~0.35 s: do it off the event loop, which must stay free to
        # accept the other servers' start requests without blocking the main thread.
        try:
            await anyio.to_thread.run_sync(import_sdk)
        except Exception as e:  # a broken install: one line, like any other start failure
            self._failed(st, f"the mcp SDK cannot be imported ({exception_text(e)})")
            return
        try:
            import os

            from agent_cli.private_files import open_private

            errlog = os.fdopen(open_private(Path(st.errlog), os.O_WRONLY | os.O_APPEND), "a",
                               encoding="utf-8")  # 0600; closed in close()
        except (OSError, ValueError) as e:
            from agent_cli.write_faults import fault

            self._failed(st, str(fault(e, st.errlog, what="its stderr log", doing="open"))
                         if isinstance(e, OSError) else f"cannot open its stderr log "
                         f"{st.errlog}: {e}")
            return
        self._files.append(errlog)
        while await self._connection(st, errlog):
            pass  # once: the SSE try of a url without type (transport.sse_fallback)
        await self._reconnects(st, errlog)  # a remote server that dropped (restart.py)

    async def _connection(self, st: ServerState, errlog: Any) -> bool:
        """One connection from connect to stop. True when it failed in a way that asks for
        the one SSE try (then `st.via_sse` is set and nothing was reported yet)."""
        import anyio

        cancelled = anyio.get_cancelled_exc_class()
        startup = st.config.startup_timeout_s
        retry = False
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
            from mcp.shared.subscriptions import ResourcesListChanged

            with contextlib.suppress(Exception):
                async with client.listen(tools_list_changed=True,
                                         resources_list_changed=True) as sub:
                    async for event in sub:
                        if isinstance(event, ResourcesListChanged):
                            st.resources_dirty = True
                        else:
                            st.dirty = True
                        with contextlib.suppress(Exception):
                            relist_send.send_nowait(None)

        try:
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(watchdog, scope)
                    async with self._connect(st, errlog) as client:
                        listed = await self._list_tools(client)
                        resources = await self._lists_resources(client)
                        self._ready(st, client, listed, resources)
                        started.set()
                        if st.via_sse:
                            self.note(f"MCP server {st.name}: its url answered POST with "
                                      f"{st.post_statuses[0]} and is an SSE endpoint (the "
                                      "older transport), reached that way; set type = \"sse\" "
                                      f"in [mcp.servers.{st.name}] to skip the first try.", "mcp")
                        async with anyio.create_task_group() as inner:
                            inner.start_soon(relister, client)
                            inner.start_soon(listener, client)
                            await st.stop.wait()
                            st.client = None
                            inner.cancel_scope.cancel()
                        # Leave the connection uncancelled, so the transport's own goodbye
                        # (streamable HTTP's DELETE of the session) is sent, but bounded.
                        scope.deadline = anyio.current_time() + GOODBYE_S
        except cancelled:
            raise
        except BaseException as e:  # connect failures arrive as nested exception groups
            if isinstance(e, KeyboardInterrupt | SystemExit):
                raise
            if st.closing:
                pass
            elif (st.state == "starting" and not st.via_sse
                  and sse_fallback(st.config, st.post_statuses)):
                st.via_sse = retry = True
            elif st.state == "starting":
                leaf = flatten_exception(e)
                text = exception_text(e)
                if isinstance(leaf, StartRefused):
                    text = str(leaf)
                elif "timed out" in text or isinstance(leaf, TimeoutError):
                    text = self._timeout_text(st)
                elif text in ("Connection closed", "MCPError: Connection closed"):
                    text = "it exited or closed the connection before the handshake finished"
                    if st.confined:
                        text += "; " + (self._start_hint(st) or exit_hint(st.name))
                self._failed(st, text + _post_hint(st))
            else:
                self._lost(st, exception_text(e))
        finally:
            st.client = None
            st.relist = None
            if not retry:
                st.ready.set()
        return retry

    async def _relist(self, st: ServerState, client: Any) -> None:
        """List the tools again after a tools/list_changed, and look again whether the server
        lists any resource after a resources/list_changed (once per notification burst)."""
        if not (st.dirty or st.resources_dirty):
            return
        resources = any(e.builtin for e in st.tools.values())
        if st.resources_dirty:
            st.resources_dirty = False
            resources = await self._lists_resources(client)
        st.dirty = False
        try:
            listed = await self._list_tools(client)
        except Exception as e:  # keep the old list; say so once per failure
            self.note(f"MCP server {st.name} said its tools changed, but listing them failed "
                      f"({exception_text(e)}); its old tools stay.", "mcp_error")
            return
        self._relisted(st, listed, resources)
        st.relists += 1

    @staticmethod
    def _start_hint(st: ServerState) -> str | None:
        """The sandbox line for a confined server that failed to start, from its stderr log."""
        if not st.confined:
            return None
        return sandbox_hint(st.name, st.config, read_tail(st.errlog), cwd=st.cwd, tmp=st.tmp)

    @classmethod
    def _timeout_text(cls, st: ServerState) -> str:
        """Why a start timed out, with the one piece of advice that fits: the sandbox line when
        its stderr shows a denial, the package runner's grants when it runs through npx and
        the like, `mode = "legacy"` only for a server that never said anything in mode auto
        (one that answered did not ignore discovery)."""
        text = f"it did not finish starting within {st.config.startup_timeout_s:g} s"
        hint = cls._start_hint(st)
        runner = runner_line(st.name, st.config) if st.confined else None
        if hint is not None:
            return f"{text}; {hint}"
        if runner is not None and "cannot reach" in runner:
            return f"{text}; {runner[len('MCP server '):]}"
        if st.config.mode == "auto" and not st.heard:
            text += (" (a server that ignores the 2026-07-28 discovery request costs 10 s in "
                     'mode "auto": try mode = "legacy" for it)')
        return text

    @staticmethod
    async def _lists_resources(client: Any) -> bool:
        """Whether the resource tools would reach anything: the server declares the resources
        capability and lists at least one resource or resource template (first page). A
        server that declares it and lists none gets no list_resources/read_resource: two dead
        tools in every request otherwise. A failing list counts as none."""
        caps = getattr(client, "server_capabilities", None)
        if getattr(caps, "resources", None) is None:
            return False
        for method, key in ((client.list_resources, "resources"),
                            (client.list_resource_templates, "resource_templates")):
            try:
                page = await method()
            except Exception:  # a server without templates answers an error
                continue
            if getattr(page, key, None):
                return True
        return False

    @contextlib.asynccontextmanager
    async def _connect(self, st: ServerState, errlog: Any) -> AsyncIterator[Any]:
        from mcp import Client, stdio_client
        from mcp_types import (
            Implementation,
            LoggingMessageNotificationParams,
            ResourceListChangedNotification,
            ToolListChangedNotification,
        )

        from agent_cli import __version__

        cfg = st.config
        lost = "the connection closed"

        @contextlib.asynccontextmanager
        async def transport() -> AsyncIterator[Any]:
            if cfg.transport == "stdio":
                params, st.confined = stdio_params(cfg, self._neutral_cwd(), st.marker, st.name)
                st.cwd = str(params.cwd or "")
                st.tmp = _session_tmp() if st.confined else ""
                from agent_cli.sandbox.mcp import start_line

                if (confinement := start_line(st.name)) is not None:
                    self.note(confinement, "sandbox")

                def heard() -> None:
                    st.heard = True

                async with stdio_client(params, errlog=errlog) as (read, write):
                    yield EofWatch(read, lambda: self._lost(st, lost), heard), write
            else:
                def heard_http() -> None:
                    st.heard = True

                kind = "sse" if st.via_sse else cfg.transport
                if not st.via_sse:  # the SSE try keeps what the POSTs were answered
                    st.post_statuses = []
                from agent_cli.tools.mcp.oauth import session_auth
                from agent_cli.tools.mcp.transport import expand

                auth = session_auth(st.name, expand(cfg.url or ""))
                async with http_streams(cfg, cfg.startup_timeout_s, kind=kind,
                                        statuses=st.post_statuses, auth=auth) as (read, write):
                    yield EofWatch(read, lambda: None, heard_http), write

        async def on_message(message: Any) -> None:
            if st.relist is None:
                return
            if isinstance(message, ToolListChangedNotification | ResourceListChangedNotification):
                if isinstance(message, ResourceListChangedNotification):
                    st.resources_dirty = True
                else:
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
            st.tools, st.client, st.state, st.reason = entries, client, "ready", ""
            st.was_ready = st.connected = True
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

    def _relisted(self, st: ServerState, listed: list[Any], resources: bool) -> None:
        """A tools/list_changed notification (portal thread): the new list replaces the old
        one, each tool through the pin check again (a new or changed tool is held until the user
        accepts it), and the user is told what changed. The registry follows at the next sync."""
        if st.state != "ready":
            return
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
            if parts:  # a list_changed with nothing new says nothing
                self._notices.append((f"MCP server {st.name} changed its tools: "
                                      f"{'; '.join(parts)}.", "mcp"))
            self._entry_notices(st, [*added, *changed])

    def _failed(self, st: ServerState, why: str) -> None:
        with self._lock:
            if st.state != "starting":
                return
            st.state, st.reason = "failed", why
            if not st.reconnects:  # a reconnect's try already said it (restart.py)
                self._notices.append((f"MCP server {st.name} could not start: {why}. Its tools "
                                      f"are not offered; server stderr: {st.errlog}",
                                      "mcp_error"))
        st.ready.set()


def _post_hint(st: ServerState) -> str:
    """What a failed HTTP start says about the POSTs' answers: the SSE endpoint that the
    fallback did not reach, or the `type = "sse"` a typed url may need."""
    codes = st.post_statuses
    if st.config.transport != "http" or not codes or not all(400 <= c < 500 for c in codes):
        return ""
    if st.via_sse:
        return (f"; its url answered POST with {codes[0]} and did not open an SSE stream on "
                "GET either: check the url")
    if codes[0] in (401, 403):
        return (f"; it answered {codes[0]}: it wants credentials: sign in with `agent-cli mcp "
                f"login {st.name}` (OAuth), or set its headers")
    return (f"; it answered POST with {codes[0]}: if this looks like an SSE endpoint, set "
            f"type = \"sse\" in [mcp.servers.{st.name}]")


def _session_tmp() -> str:
    """The session sandbox's temporary folder (each confined server's TMPDIR is inside it)."""
    from agent_cli.sandbox.policy import current

    box = current()
    return str(box.tmpdir()) if box is not None else ""
