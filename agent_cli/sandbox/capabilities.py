"""One capability record per confined process: what it may read, write, and reach.

`Sandbox.capabilities` computes it (for an approved command, for an MCP server); the kernel
enforces exactly this record (`readplan` turns it into Landlock rules, `seccomp` into the socket
filter); the panel, the server start line, `mcp list` and the `tool_started.sandbox` field show
it. Nothing else decides what a confined process may do, so what is shown is what is enforced.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

Kind = Literal["workspace", "off", "none"]
"""`workspace`: confined by the kernel; `off`: the user turned the sandbox off; `none`: the
kernel cannot confine (no Landlock)."""

CREDENTIAL_STORES = (
    "~/.ssh", "~/.aws", "~/.gnupg", "~/.netrc", "~/.git-credentials", "~/.config/gh",
    "~/.config/gcloud", "~/.azure", "~/.kube", "~/.docker/config.json", "~/.pgpass",
    "~/.pypirc", "~/.npmrc", "~/.password-store", "~/.mozilla", "~/.config/google-chrome",
    "~/.config/chromium", "~/.config/BraveSoftware", "~/.config/microsoft-edge",
    "~/.var/app/org.mozilla.firefox", "~/snap/firefox", "~/.local/share/keyrings",
)
"""The user's credential stores and browser profiles: unreadable to every confined process
unless `sandbox_read_allow` names them (README "The sandbox" lists them)."""


def expand_path(path: str) -> str:
    """`~` and `$VAR` expanded, made absolute and resolved (the kernel checks real paths)."""
    return os.path.realpath(os.path.expanduser(os.path.expandvars(path)))


def own_state_paths(extra: Iterable[str | Path] = ()) -> list[str]:
    """agent-cli's own state, wherever it is: the data and config folders in use (log key,
    sessions of every project, history, undo store, pins), the XDG ones even when AGENT_CLI_HOME
    points elsewhere, and `extra` (a `log_dir`, config files read)."""
    from agent_cli.locations import locations

    where = locations()
    paths = [str(p) for p in where.own_paths()]
    home = Path.home()
    xdg_data = os.environ.get("XDG_DATA_HOME") or str(home / ".local" / "share")
    xdg_config = os.environ.get("XDG_CONFIG_HOME") or str(home / ".config")
    paths += [os.path.join(xdg_data, "agent-cli"), os.path.join(xdg_config, "agent-cli")]
    paths += [str(p) for p in extra]
    return paths


def default_read_deny(extra_state: Iterable[str | Path] = ()) -> list[str]:
    """The default read-deny list: agent-cli's own state and the credential stores, resolved."""
    out: list[str] = []
    for raw in [*own_state_paths(extra_state), *CREDENTIAL_STORES]:
        path = expand_path(raw)
        if path not in out:
            out.append(path)
    return out


def off_warning(name: str | None = None) -> str:
    """The bold warning shown at start and on every panel of a process that runs unconfined by
    the user's choice (`sandbox = "off"` for one server, or --sandbox off)."""
    who = f"MCP server {name}" if name else "this process"
    return (f"SANDBOX OFF for {who}: it runs with all your rights (reads your credentials, "
            "writes anywhere, uses the network)")


@dataclass(frozen=True)
class Capabilities:
    """What one confined process may do, and which parts of that the kernel cannot enforce."""

    kind: Kind
    read: tuple[str, ...] = ()
    """Readable roots (beneath each, everything but `read_denied`)."""
    read_denied: tuple[str, ...] = ()
    """Carved out of `read` (and of `write`): agent-cli's state, credential stores."""
    state: tuple[str, ...] = ()
    """agent-cli's own state (part of `read_denied`): no grant reaches inside it."""
    write: tuple[str, ...] = ()
    """Writable roots (also readable), minus `read_denied`."""
    network: bool = False
    """True: any socket; False: none but socketpair and the kernel's own route netlink."""
    gaps: tuple[str, ...] = ()
    """Parts of the above the kernel here cannot enforce, each naming why."""
    landlock_abi: int = 0
    reason: str | None = None
    """Why nothing is confined (kind "none")."""
    name: str | None = None
    """The MCP server this record belongs to, if any."""

    def record(self) -> dict[str, Any]:
        """The `sandbox` field of a tool_started event: the process's real confinement."""
        if self.kind == "off":
            out: dict[str, Any] = {"mode": "off"}
            if self.name:
                out["server"] = self.name
            return out
        if self.kind == "none":
            return {"mode": "none", "reason": self.reason or "kernel has no Landlock"}
        out = {"mode": "workspace", "landlock_abi": self.landlock_abi, "network": self.network,
               "reads": list(self.read), "reads_denied": list(self.read_denied),
               "writes": list(self.write), "gaps": list(self.gaps)}
        if self.name:
            out["server"] = self.name
        return out

    def reads_line(self) -> str:
        """One line on what it may read."""
        home = str(Path.home())
        others = [p for p in self.read_denied if "agent-cli" not in p]
        shown = [p.replace(home, "~", 1) if p.startswith(home + os.sep) else p
                 for p in others[:4]]
        more = len(others) - len(shown)
        tail = f", +{more} more" if more > 0 else ""
        return ("reads: everything except agent-cli's own state and your credential stores ("
                + ", ".join(shown) + tail + ")")

    def writes_line(self, workspace: str | None = None) -> str:
        home = str(Path.home())
        shown = ["the workspace" if p == workspace else
                 (p.replace(home, "~", 1) if p.startswith(home + os.sep) else p)
                 for p in self.write]
        return "writes: " + (", ".join(shown) if shown else "nothing")

    def server_lines(self) -> list[str]:
        """What a server's start line and `mcp list` say about its confinement."""
        if self.kind == "off":
            return [off_warning(self.name)]
        if self.kind == "none":
            return [f"not sandboxed: {self.reason or 'kernel has no Landlock'}"]
        lines = [self.writes_line(), "network: ALLOWED" if self.network else "network: none",
                 self.reads_line()]
        lines.extend(f"not confined: {gap}" for gap in self.gaps)
        return lines
