"""What a confined MCP server needs beyond its cwd, and what to say when the sandbox stopped it.

Three things live here, so they use one reading of a server's command line:

- `package_runner`: npx, bunx, uvx (`uv tool run`) and `pipx run`, also through an absolute
  path, fetch the server from a registry and keep it in a package cache: confined with no
  network and no write outside its cwd, such a server hangs or dies at start. Its start line says
  so and names the exact settings that grant it (`runner_line`).
- `propose`: the grants a command plausibly needs (the runner's cache and network, the folder of
  a path given after `--db-path`/`--db`/`--repository`/..., a directory argument, network for a
  fetch-like server), which `mcp add` and `mcp import` offer in one question.
- `sandbox_hint`: when a confined server fails (exits before the handshake, times out, a result
  or its stderr says EACCES/EPERM/EROFS/"Permission denied"/a refused connect), the one line that
  names the sandbox, the denied path when the text shows it, and the setting that allows it. The
  text matching itself is `agent_cli.sandbox.diagnose.sandbox_cause`, shared with run_command.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agent_cli.config import MCPServer


@dataclass(frozen=True)
class Runner:
    """A package runner a server's command goes through."""

    name: str
    """How the user typed it: npx, bunx, uvx, `uv tool run`, `pipx run`."""
    caches: tuple[str, ...]
    """The folders it writes (its package cache), `~` for the home folder."""
    package: str
    """The package it runs (its first non-option argument), for the fetch-like check."""


_CACHES = {
    "npx": ("npm_config_cache", "~/.npm"),
    "bunx": ("BUN_INSTALL_CACHE_DIR", "~/.bun/install/cache"),
    "uvx": ("UV_CACHE_DIR", "~/.cache/uv"),
    "uv tool run": ("UV_CACHE_DIR", "~/.cache/uv"),
    "pipx run": ("PIPX_HOME", "~/.local/share/pipx"),
}


def package_runner(command: str | None, args: list[str],
                   env: dict[str, str] | None = None) -> Runner | None:
    """The runner `command args` goes through, or None. Recognised by the program's name, so
    `/usr/local/bin/npx` counts; `pipx` and `uv` only with `run` / `tool run`."""
    if not command:
        return None
    base = os.path.basename(command)
    rest = list(args)
    if base in ("npx", "bunx", "uvx"):
        kind = base
    elif base == "pipx" and rest[:1] == ["run"]:
        kind, rest = "pipx run", rest[1:]
    elif base == "uv" and rest[:2] == ["tool", "run"]:
        kind, rest = "uv tool run", rest[2:]
    else:
        return None
    var, default = _CACHES[kind]
    cache = (env or {}).get(var) or default
    caches = (cache, "~/.cache/pipx") if kind == "pipx run" else (cache,)
    package = next((a for a in rest if not a.startswith("-")), "")
    return Runner(kind, caches, package)


def runner_line(name: str, cfg: MCPServer) -> str | None:
    """The start line of a confined server that runs through a package runner: what it needs,
    and either that its config grants it or the exact settings that would."""
    runner = package_runner(cfg.command, cfg.args, cfg.env)
    if runner is None or cfg.transport != "stdio" or cfg.sandbox == "off":
        return None
    missing = [c for c in runner.caches if not _covered(c, cfg)]
    needs = f"{name} runs through {runner.name}, which needs its package cache and the registry"
    if not missing and cfg.network:
        return f"MCP server {needs}: granted by its config (writable, network = true)."
    grant = []
    if missing:
        grant.append(f"writable = {_toml_list([*cfg.writable, *missing])}")
    if not cfg.network:
        grant.append("network = true")
    return (f"MCP server {needs}; confined, it cannot reach them: add "
            f"{' and '.join(grant)} to [mcp.servers.{name}] (or install the server and name "
            "its program as command).")


def grant_lines(servers: list[Any]) -> list[str]:
    """The start lines about the servers' grants (`servers`: the hub's ServerState records):
    what a package runner needs, and a warning for each server with sandbox = "off". Nothing
    when the session's sandbox confines nothing anyway."""
    from agent_cli.sandbox.policy import current

    box = current()
    if box is None or not box.enforced:
        return []
    out = []
    for st in servers:
        cfg = st.config
        if cfg.transport != "stdio":
            continue
        if cfg.sandbox == "off":
            out.append(f"MCP server {st.name} runs with sandbox = \"off\": NOT confined, with "
                       "all your rights (it can read and change every file you can, and reach "
                       "the network).")
            continue
        line = runner_line(st.name, cfg)
        if line is not None:
            out.append(line)
    return out


def _covered(path: str, cfg: MCPServer) -> bool:
    target = _abs(path)
    return any(target == g or g in target.parents for g in (_abs(w) for w in cfg.writable))


def _abs(path: str) -> Path:
    return Path(os.path.abspath(Path(path).expanduser()))


def _toml_list(items: list[str]) -> str:
    from agent_cli.tools.mcp.config import toml_string

    return "[" + ", ".join(toml_string(i) for i in items) + "]"


# -- proposals for `mcp add` / `mcp import` -------------------------------------------------------

PATH_FLAGS = ("--db-path", "--db", "--database", "--db-file", "--repository", "--repo",
              "--dir", "--directory", "--root", "--data-dir", "--path", "--file")
"""Options whose value is a file or folder the server works on (sqlite, duckdb, git, ...)."""
NETWORK_WORDS = ("fetch", "puppeteer", "playwright", "browser", "brave-search", "github",
                 "gitlab", "slack", "web-search")
"""A server whose package or program is named for one of these reaches the network."""


@dataclass
class Proposal:
    """Grants a command plausibly needs, each with the reason shown to the user."""

    writable: list[str] = field(default_factory=list)
    network: bool = False
    reasons: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.writable or self.network)

    def settings(self) -> str:
        """The grants as the TOML lines they become."""
        parts = [f"writable = {_toml_list(self.writable)}"] if self.writable else []
        if self.network:
            parts.append("network = true")
        return ", ".join(parts)

    def apply(self, entry: dict[str, object]) -> None:
        if self.writable:
            entry["writable"] = list(self.writable)
        if self.network:
            entry["network"] = True


def propose(command: str | None, args: list[str], env: dict[str, str] | None = None
            ) -> Proposal:
    """What `command args` will need confined (see the module docstring). Never proposes `/`,
    the home folder itself, or anything inside agent-cli's own state."""
    out = Proposal()
    runner = package_runner(command, args, env)
    if runner is not None:
        out.writable.extend(runner.caches)
        out.network = True
        out.reasons.append(f"{runner.name} downloads the server from its registry (network) "
                           f"and keeps it in {', '.join(runner.caches)}")
    for flag, value in _path_values(args):
        folder = _folder_of(value)
        if folder is not None and _add(out, folder):
            out.reasons.append(f"{flag} {value}: the server writes in {folder}")
    names = " ".join([os.path.basename(command or ""), runner.package if runner else ""]).lower()
    word = next((w for w in NETWORK_WORDS if w in names), None)
    if word is not None and not out.network:
        out.network = True
        out.reasons.append(f"a {word} server reaches the network")
    elif word is not None:
        out.reasons.append(f"a {word} server reaches the network")
    return out


def _path_values(args: list[str]) -> list[tuple[str, str]]:
    """(flag, value) of each path option, and ("directory", arg) of each argument that names an
    existing folder by an absolute or `~` path."""
    found: list[tuple[str, str]] = []
    skip = False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        flag, eq, value = arg.partition("=")
        if flag in PATH_FLAGS:
            if eq:
                found.append((flag, value))
            elif i + 1 < len(args):
                found.append((flag, args[i + 1]))
                skip = True
        elif not arg.startswith("-") and arg.startswith(("/", "~")) and "${" not in arg \
                and Path(arg).expanduser().is_dir():
            found.append(("directory", arg))
    return found


def _folder_of(value: str) -> str | None:
    """The folder to grant for a path value: the folder itself, or a file's folder (SQLite writes
    its journal next to the database)."""
    if not value or "${" in value or not value.startswith(("/", "~")):
        return None
    path = Path(value).expanduser()
    folder = path if path.is_dir() else path.parent
    shown = str(folder)
    home = str(Path.home())
    if value.startswith("~") and shown.startswith(home):
        shown = "~" + shown[len(home):]
    return shown


def _add(out: Proposal, folder: str) -> bool:
    from agent_cli.tools.mcp.review import inside_own_state

    target = _abs(folder)
    if target == Path("/") or target == Path.home() or inside_own_state(target):
        return False
    if folder in out.writable:
        return False
    out.writable.append(folder)
    return True


# -- saying it: a failure the sandbox probably caused -------------------------------------------

def sandbox_hint(name: str, cfg: MCPServer, text: str, *, cwd: str | None = None,
                 tmp: str | None = None) -> str | None:
    """The sandbox line (`agent_cli.sandbox.diagnose.explain`, the one for commands and servers)
    for what a confined stdio server's output `text` shows was refused, held against the
    server's capability record; None when the text shows no denial or the refused path is one it
    may write anyway. The path its arguments name (`--db-path ...`) stands in when the output
    names none (SQLite's "unable to open database file")."""
    from agent_cli.sandbox.capabilities import Capabilities
    from agent_cli.sandbox.diagnose import explain
    from agent_cli.sandbox.mcp import capabilities

    caps = capabilities(name)
    if caps is None:  # not started through this session's sandbox: what its config grants
        writes = tuple(str(_abs(p)) for p in (cwd, tmp, *cfg.writable) if p)
        caps = Capabilities("workspace", write=writes, network=cfg.network, name=name)
    hint = next((v for f, v in _path_values(cfg.args) if f != "directory"), None)
    return explain(text, caps, path_hint=hint, grants=list(cfg.writable))


def exit_hint(name: str) -> str:
    """The line for a confined server that exited before the handshake with nothing in its stderr
    that reads like a denial: the sandbox may still be the cause, and this is how to tell."""
    return ("it ran confined by the sandbox (writes only in its cwd, no network): if its stderr "
            "log shows a refused write or connection, grant it with writable = [...] or "
            f'network = true in [mcp.servers.{name}], or try sandbox = "off"')


def read_tail(path: str | Path, start: int | None = None, limit: int = 16_384) -> str:
    """The end of a server's stderr log (from `start`, if given), at most `limit` bytes."""
    try:
        with open(path, "rb") as f:
            size = f.seek(0, os.SEEK_END)
            begin = max(start if start is not None else 0, size - limit)
            f.seek(begin)
            return f.read(limit).decode("utf-8", "replace")
    except OSError:
        return ""
