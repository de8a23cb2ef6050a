"""Connecting a server again inside a session: `/mcp restart NAME`, and the automatic
reconnect, with backoff, of an HTTP or SSE server that dropped.

A part of the hub (hub.MCPHub mixes it in). A stdio server that dies is not restarted behind
the user's back (it may crash on every start, and each start runs a program); a remote server
that drops usually comes back (a deploy, a network blip), so it is tried again a bounded number
of times, each try said once, and the user can always ask for one more with `/mcp restart`.
The restarted server goes through everything a first start does: the sandbox, the pin check
(a changed tool is held), the ready line.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import threading
import time
from collections.abc import Callable
from typing import Any

from agent_cli.tools.mcp.state import STOP_GRACE_S, ServerState

RECONNECT_TRIES = 3
"""How many times a remote server that dropped is connected again before giving up."""
RECONNECT_FIRST_S = 1.0
"""The wait before the first try; it doubles before each next one (1, 2, 4 s)."""


class ServerRestarts:
    """`restart` (main thread) and the reconnect loop (portal thread); see the module
    docstring."""

    servers: dict[str, ServerState]
    _portal: Any
    _lock: threading.Lock
    _notices: list[tuple[str, str]]

    # Provided by MCPHub and ServerTasks (declared here for the type checker).
    note: Callable[..., None]
    sync: Callable[..., None]
    wait_ready: Callable[..., None]
    _serve: Callable[[ServerState], Any]
    _connection: Callable[[ServerState, Any], Any]

    def restart(self, name: str) -> str:
        """Stop the server if it runs and start it again (main thread); the sentence that says
        how it went. Its tools leave the model's list until it is ready again."""
        from agent_cli.tools.mcp.transport import end_marked_processes

        st = self.servers.get(name)
        if st is None:
            return (f"No MCP server named {name}; configured: "
                    f"{', '.join(self.servers) or '(none)'}.")
        if st.state in ("disabled", "unavailable"):
            return (f"MCP server {name} is {st.state}"
                    f"{' (' + st.reason + ')' if st.reason else ''}; it cannot be restarted.")
        if self._portal is None:
            return f"MCP server {name} has not started yet; /mcp shows when it is ready."
        if st.task is None and st.state == "failed":  # refused before any start (a name clash)
            return f"MCP server {name} is not started: {st.reason}."
        st.closing = True  # its ending is not a crash, and no reconnect follows
        if st.stop is not None:
            with contextlib.suppress(Exception):
                self._portal.call(st.stop.set)
        if st.task is not None:
            if st.state == "starting":
                st.task.cancel()
            concurrent.futures.wait([st.task], timeout=STOP_GRACE_S)
        if st.config.transport == "stdio":
            end_marked_processes([st.marker])
        with self._lock:
            st.state, st.reason, st.closing = "starting", "", False
            st.tools, st.client, st.via_sse, st.reconnects = {}, None, False, 0
            st.ready.clear()
            st.deadline = time.monotonic() + STOP_GRACE_S + st.config.startup_timeout_s
        self.sync()  # its tools leave the model's list now
        st.task = self._portal.start_task_soon(self._serve, st)
        self.wait_ready([name])
        self.sync()
        if st.state == "ready":
            offered = sum(1 for e in st.tools.values() if st.offers(e))
            return f"MCP server {name} restarted: {offered} tool(s) offered."
        return f"MCP server {name} did not restart: {st.reason or st.state}."

    async def _reconnects(self, st: ServerState, errlog: Any) -> None:
        """After a connection ended (portal thread): connect a remote server that dropped
        again, waiting 1, 2, 4 s before the tries; a connection that became ready starts the
        count again. Each try is one line; giving up is one line that names /mcp restart."""
        import anyio

        while self._wants_reconnect(st):
            if st.connected:
                st.reconnects, st.connected = 0, False
            if st.reconnects >= RECONNECT_TRIES:
                self.note(f"MCP server {st.name} is still unreachable after {RECONNECT_TRIES} "
                          f"tries ({st.reason}); its tools stay removed. /mcp restart "
                          f"{st.name} tries again.", "mcp_error")
                return
            delay = RECONNECT_FIRST_S * 2 ** st.reconnects
            st.reconnects += 1
            self.note(f"MCP server {st.name} dropped ({st.reason}); connecting again in "
                      f"{delay:g} s (try {st.reconnects} of {RECONNECT_TRIES}).", "mcp_error")
            stop = st.stop = anyio.Event()  # the old one ended the connection that dropped
            with anyio.move_on_after(delay):
                await stop.wait()  # close() or /mcp restart while waiting
            if st.closing or stop.is_set():
                return
            with self._lock:
                st.state = "starting"
            st.deadline = time.monotonic() + st.config.startup_timeout_s
            while await self._connection(st, errlog):
                pass

    @staticmethod
    def _wants_reconnect(st: ServerState) -> bool:
        """A remote server that was ready in this session and is now stopped (dropped) or
        failed to come back, with no one closing it."""
        return (not st.closing and st.config.transport in ("http", "sse") and st.was_ready
                and st.state in ("stopped", "failed"))
