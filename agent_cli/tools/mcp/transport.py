"""How agent-cli reaches one MCP server: the stdio command it starts, or the HTTP/SSE endpoint.

Kept apart from the hub (hub.py) so the two things a reviewer checks first are in one
short place: what runs (`stdio_params` is the ONLY place a server's command line, environment
and working folder are built), and what goes over the wire (`${VAR}` expansion of headers and
URLs), and how what it started is ended. Nothing here imports the SDK at module level.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agent_cli.tools.procs import MARKER_VAR

if TYPE_CHECKING:
    from agent_cli.config import MCPServer

VAR_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")
"""`${NAME}` or `${NAME:-default}`, as Claude Code and Codex spell it in their MCP configs."""


class StartRefused(ValueError):
    """The server's config asks for something agent-cli does not start: the message is the one
    line that says what and how to fix it."""


class ExpandError(StartRefused):
    """A `${VAR}` in a server's config names a variable that is not set (and has no default)."""


ARGV_VAR = ("{where} holds ${{{var}}}: a value put in a program's command line is readable by "
            "every process on this machine (/proc/PID/cmdline), so agent-cli never expands it "
            "there. Pass it by environment instead: env = {{ {var} = \"${{{var}}}\" }} in "
            "[mcp.servers.{name}], and have the server read {var} from its environment (most "
            "servers take their token that way)")
"""Why `${VAR}` is refused in `command` and `args` (docs/mcp.md says the same)."""


def refuse_argv_vars(name: str, command: str | None, args: list[str]) -> None:
    """StartRefused when `command` or `args` holds a `${VAR}`: its value would be in the
    server's /proc/PID/cmdline, which any process may read (an environment is readable only by
    the same user's processes that may trace it)."""
    for where, value in [("command", command or ""), *(("args", a) for a in args)]:
        m = VAR_RE.search(value)
        if m:
            raise StartRefused(ARGV_VAR.format(where=where, var=m.group(1), name=name))


def check_cwd(name: str, folder: Path, what: str = "cwd") -> None:
    """StartRefused when a folder a server may write (its cwd, a `writable` folder) is inside
    agent-cli's own state (the data or config folder) or holds it (the home folder): a server
    must never be able to write its own config (`trusted = true`), pins or logs."""
    from agent_cli.tools.mcp.review import inside_own_state

    where = inside_own_state(folder)
    if where is not None:
        raise StartRefused(f"its {what} {folder} is {where}, and a server may write there: a "
                           "server must never be able to change agent-cli's config, pins or "
                           f"logs; set {what} in [mcp.servers.{name}] to a folder of its own")


def check_grants(name: str, cfg: MCPServer) -> None:
    """Every `writable` folder of a server, checked like its cwd (`check_cwd`)."""
    for folder in cfg.writable:
        check_cwd(name, Path(folder).expanduser(), "writable folder")


def expand(value: str, environ: Mapping[str, str] | None = None) -> str:
    """Replace every `${VAR}` (or `${VAR:-default}`) in `value`; a missing one is an error that
    names it, never an empty string sent to a server as a token."""
    env = os.environ if environ is None else environ

    def sub(m: re.Match[str]) -> str:
        name, default = m.group(1), m.group(2)
        if name in env:
            return env[name]
        if default is not None:
            return default
        raise ExpandError(f"the environment variable {name} is not set (the config uses "
                          f"${{{name}}})")

    return VAR_RE.sub(sub, value)


def expand_map(values: Mapping[str, str], environ: Mapping[str, str] | None = None
               ) -> dict[str, str]:
    return {k: expand(v, environ) for k, v in values.items()}


def stdio_params(cfg: MCPServer, cwd: Path, marker: str, name: str) -> tuple[Any, bool]:
    """The StdioServerParameters for a stdio server, and whether it runs confined: its command
    and args as written (a `${VAR}` there is refused, see `refuse_argv_vars`), its `${VAR}`-
    expanded env (on top of the SDK's minimal environment: API keys are not passed on), a marker
    so every process it starts can be found and ended at close, and its working folder (the
    configured `cwd`, or the neutral empty folder `cwd` the hub made; never the workspace by
    default, never agent-cli's own state)."""
    from mcp import StdioServerParameters

    refuse_argv_vars(name, cfg.command, cfg.args)
    env = expand_map(cfg.env)
    env[MARKER_VAR] = marker
    folder = Path(expand(cfg.cwd)).expanduser() if cfg.cwd else cwd
    check_cwd(name, folder)
    check_grants(name, cfg)
    params = StdioServerParameters(command=cfg.command or "", args=list(cfg.args), env=env,
                                   cwd=str(folder))
    # The server runs confined (its record says how); `sandbox = "off"` for this one server
    # runs it with the user's rights, and its record says that too (shown at its start).
    from agent_cli.sandbox.mcp import confine_server

    confined = confine_server(params, name=name, network=cfg.network, writable=cfg.writable,
                              sandbox=cfg.sandbox)
    return confined, (confined.command, confined.args) != (params.command, params.args)


@contextlib.asynccontextmanager
async def http_streams(cfg: MCPServer, timeout_s: float, *, kind: str | None = None,
                       statuses: list[int] | None = None,
                       auth: Any = None) -> AsyncIterator[tuple[Any, Any]]:
    """The read/write streams of a streamable HTTP or SSE server (`kind`, default its
    configured transport), with its expanded headers and `auth` (an OAuth sign-in, oauth.py).
    The HTTP status of every POST is appended to `statuses` (what `sse_fallback` looks at)."""
    url = expand(cfg.url or "")
    headers = expand_map(cfg.headers)
    if (kind or cfg.transport) == "sse":
        from mcp.client.sse import sse_client

        async with sse_client(url, headers=headers or None, timeout=timeout_s,
                              auth=auth) as streams:
            yield streams[0], streams[1]
        return
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async def seen(response: Any) -> None:
        if statuses is not None and response.request.method == "POST":
            statuses.append(int(response.status_code))

    async with create_mcp_http_client(headers=headers or None, auth=auth) as http:
        http.event_hooks["response"].append(seen)
        async with streamable_http_client(url, http_client=http) as streams:
            yield streams[0], streams[1]


def sse_fallback(cfg: MCPServer, statuses: list[int]) -> bool:
    """Whether a failed start should be tried again over SSE: the spec's backwards
    compatibility rule for a `url` configured without `type` whose every POST was answered
    with a 4xx (not 401/403, which ask for credentials): it may be an older SSE server, which
    a GET of the same url tells."""
    return (cfg.type is None and cfg.transport == "http" and bool(statuses)
            and all(400 <= s < 500 and s not in (401, 403) for s in statuses))


def describe_endpoint(cfg: MCPServer) -> str:
    """What `/mcp` and `mcp list` show as the server's command or URL (unexpanded: a token from
    the environment is never printed)."""
    if cfg.transport == "stdio":
        return " ".join([cfg.command or "", *cfg.args])
    return f"{cfg.transport} {cfg.url}"


def end_marked_processes(markers: list[str]) -> None:
    """End every process a stdio server started that outlived it: the SDK ends the server's
    process group, but a child that called setsid (or a daemon) left that group. Each carries
    its server's marker in its environment; SIGTERM, a short grace, then SIGKILL."""
    from agent_cli.tools.procs import is_running, marked_pids

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


class EofWatch:
    """Wraps the transport's read stream to notice when the server goes away (EOF) between
    calls, so its tools can be removed before the model tries them, and (`on_message`) that it
    said anything at all."""

    def __init__(self, inner: Any, on_eof: Callable[[], None],
                 on_message: Callable[[], None] | None = None) -> None:
        self._inner = inner
        self._on_eof = on_eof
        self._on_message = on_message

    def __aiter__(self) -> EofWatch:
        return self

    async def __anext__(self) -> Any:
        try:
            item = await self._inner.__anext__()
        except StopAsyncIteration:
            self._on_eof()
            raise
        if self._on_message is not None:
            self._on_message()
        return item

    async def receive(self) -> Any:
        import anyio

        try:
            item = await self._inner.receive()
        except anyio.EndOfStream:
            self._on_eof()
            raise
        if self._on_message is not None:
            self._on_message()
        return item

    async def __aenter__(self) -> EofWatch:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._inner.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
