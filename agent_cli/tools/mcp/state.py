"""What the hub knows about each server, and the typed views of it that it hands out.

`ServerState` is the hub's own mutable record of one configured server (written on the portal
thread under the hub's lock). `ServerStatus`, `ToolStatus` and `PromptInfo` are frozen copies for
readers outside the hub (`/mcp`, `agent-cli mcp list`, `agent-cli tools`): plain data, every
string as the server sent it, so the view that shows them sanitises them. No SDK import here.
"""

from __future__ import annotations

import concurrent.futures
import importlib.util
import secrets
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from agent_cli.tools.mcp.adapt import ToolEntry

if TYPE_CHECKING:
    from agent_cli.config import MCPServer, Settings

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
    """The `[mcp.servers.NAME]` tables of the settings, by name (enabled or not)."""
    return dict(settings.mcp.get("servers", {}))


def import_sdk() -> None:
    """Import the optional extra (about 0.35 s): done off the event loop, once per server."""
    import jsonschema  # noqa: F401
    import mcp  # noqa: F401


@dataclass
class ServerState:
    """The hub's record of one configured server (see the module docstring)."""

    name: str
    config: MCPServer
    errlog: Path
    """Where the server's stderr and log lines go (0600, under AGENT_CLI_HOME/mcp-logs)."""
    state: str = "starting"
    """disabled | unavailable | starting | ready | failed | stopped | closed"""
    reason: str = ""
    """Why it is failed, stopped or unavailable."""
    protocol: str = ""
    info: str = ""
    """The server's own name and version, from the handshake."""
    tools: dict[str, ToolEntry] = field(default_factory=dict)
    """Registry name -> entry, offered or not; replaced whole on a re-list."""
    ready: threading.Event = field(default_factory=threading.Event)
    """Set when the server left `starting` (ready, failed or closed)."""
    deadline: float = 0.0
    """Monotonic time by which it must be ready; moved when its task really begins."""
    client: Any = None
    """The SDK client while connected, else None."""
    stop: Any = None
    """anyio.Event set (on the portal thread) to end the server task."""
    task: concurrent.futures.Future[None] | None = None
    """The server's task on the portal."""
    closing: bool = False
    """Set by close(): an ending connection is then not reported as a crash."""
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
    via_sse: bool = False
    """Its url has no `type` and answered every POST with a 4xx: it is reached over SSE (the
    spec's backwards-compatibility fallback, tried once)."""
    post_statuses: list[int] = field(default_factory=list)
    """The HTTP status of each POST of its current connection (streamable HTTP)."""
    was_ready: bool = False
    """It was ready at least once in this session (only then is a drop reconnected)."""
    connected: bool = False
    """Its current connection became ready (the reconnect count starts again after it)."""
    reconnects: int = 0
    """Reconnect tries since it last was ready (restart.py)."""
    relists: int = 0
    """How many times its tools were listed again after a change notification (a test waits
    on it; `/mcp` could show it)."""
    resources_dirty: bool = False
    """A resources/list_changed arrived: whether it lists any resource is looked at again."""
    confined: bool = False
    """Its process runs in the kernel sandbox (set when it is started): only then does a denial
    in its output get the line that names the sandbox (grants.sandbox_hint)."""
    heard: bool = False
    """It sent at least one message: a server that answered discovery (or anything) did not
    time out for ignoring it, so "try mode = legacy" would be the wrong advice."""
    cwd: str = ""
    """The folder it was started in (a confined server may write there)."""
    tmp: str = ""
    """Its private temporary folder (TMPDIR), when confined."""

    def offers(self, entry: ToolEntry) -> bool:
        """Whether `entry` is in the model's tool list: the one rule the registry sync and
        every view follow (a tool of a server that is not running is not offered)."""
        return self.state == "ready" and entry.status == "offered" and entry.tool is not None

    def shown_status(self, entry: ToolEntry) -> tuple[str, tuple[str, ...]]:
        """The status and reasons `/mcp` shows for `entry`: its own, except that an offered
        tool of a server that stopped (or failed, or is still starting) shows as not
        offered, with why."""
        if entry.status != "offered" or self.offers(entry):
            return entry.status, tuple(entry.why)
        return "not offered", (f"its server is {self.state}",)



@dataclass(frozen=True)
class ToolStatus:
    """One tool of a server as the hub offers, holds or refuses it."""

    name: str
    """The registry name the model sees (`SERVER__tool`, sanitised)."""
    remote: str
    """The tool's own name on its server, as shown (sanitised by the view)."""
    effect: str
    """`read` or `write`: the effect class agent-cli gives it (read only for a trusted server's
    readOnlyHint tool)."""
    description: str
    """The server's description of the tool, in full."""
    warning: str
    """Set when the description hid padding or control characters; empty otherwise."""
    status: str
    """offered | held (its definition differs from the pin) | refused (cannot be offered) |
    disabled (by the config) | not offered (its server is not running)."""
    why: tuple[str, ...]
    """What changed since the pin (held) or why it is refused; empty when offered."""
    claims: str
    """The annotations as the server's unverified claims, with the spec defaults marked."""
    annotations: str
    """The annotations exactly as sent, as canonical JSON."""
    schema_hash: str
    """The hash of the Tool agent-cli built from it (as the session log records it); empty when
    no Tool was built (refused)."""


@dataclass(frozen=True)
class ServerStatus:
    """One configured server at one moment: its state and its tools."""

    name: str
    """The server's name, as in `[mcp.servers.NAME]`."""
    state: str
    """disabled | unavailable | starting | ready | failed | stopped | closed"""
    reason: str
    """Why it failed, stopped or is unavailable; empty otherwise."""
    trusted: bool
    """The config's `trusted`: only then may a readOnlyHint tool run without a panel."""
    mode: str
    """The protocol negotiation configured (`auto`, `legacy`, `2026-07-28`)."""
    command: str
    """Its command line or URL, unexpanded (a `${TOKEN}` is never printed)."""
    progress: str
    """The latest progress line of a call running now; empty when none."""
    protocol: str
    """The protocol version the server agreed to; empty before the handshake."""
    info: str
    """The server's own name and version, as it says; empty before the handshake."""
    errlog: str
    """The file that receives the server's stderr and log lines."""
    pinned: bool
    """Whether its tool definitions were pinned (a session used it before)."""
    tools: tuple[ToolStatus, ...]
    """Every tool it lists, offered or not, plus the two resource tools when it has resources."""


class PromptInfo(NamedTuple):
    """One prompt a ready server offers, for `/mcp prompts`."""

    server: str
    """The server that offers it."""
    name: str
    """The prompt's name, as `/mcp prompt SERVER NAME` takes it."""
    description: str
    """The server's description of it (empty when none)."""
    arguments: list[tuple[str, bool]]
    """(argument name, required) for each argument it takes."""
