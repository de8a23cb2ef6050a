"""What an imported server would be granted, field by field: someone else's file is data.

A repository's `.mcp.json` (or another client's config) was written by someone else. Before
`agent-cli mcp import` writes any of it into the user's config, each server is shown with every
field that grants something (command, args, cwd, env and header values, url) and each risky
value is called out on its own line: a relative or home `cwd`, every `${VAR}` reference (its
value would be sent to the server), keys that try to grant trust or sandbox rights (dropped:
only the user grants those). A server that can never be imported as written (a cwd inside
agent-cli's own state, a `${VAR}` in its command line) is refused with the reason. Nothing is
imported that was not in the view the user accepted (cli/mcp.py asks).

No terminal code here: `review` returns data, the command prints it through the output
boundary.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

GRANTING = ("trusted", "writable", "network", "sandbox", "alwaysAllow", "autoApprove",
            "autoapprove", "trust", "enabled_tools")
"""Keys of a foreign entry that would grant something; never imported (the user sets them)."""
LOADS_CODE = ("LD_PRELOAD", "LD_LIBRARY_PATH", "NODE_OPTIONS", "NODE_PATH", "PYTHONPATH",
              "PYTHONSTARTUP", "PATH", "BASH_ENV", "ENV", "PERL5OPT", "RUBYOPT",
              "GIT_SSH_COMMAND", "GIT_CONFIG_GLOBAL")
"""Environment variables that make a program (or what it runs) load other code."""
SECRET_WORDS = re.compile(r"KEY|TOKEN|SECRET|PASSW|CREDENTIAL|AUTH|SESSION|COOKIE", re.I)


def inside_own_state(path: Path) -> str | None:
    """Where `path` meets agent-cli's own state (the data folder, the config folder): "inside
    agent-cli's config folder" or, for a folder that holds it (the home folder), "a folder that
    holds agent-cli's data folder"; None when it does neither. A process that may write such a
    folder could change agent-cli's config, pins or logs. Compared resolved, so a link counts."""
    from agent_cli.locations import locations

    try:
        target = Path(os.path.realpath(path.expanduser()))
    except (OSError, ValueError):
        return None
    where = locations()
    names = {where.config_file.parent: "agent-cli's config folder",
             where.data: "agent-cli's data folder (AGENT_CLI_HOME)"}  # wins when they are one
    for folder, what in names.items():
        root = Path(os.path.realpath(folder))
        if target == root or root in target.parents:
            return f"inside {what}"
    for folder, what in names.items():
        if target in Path(os.path.realpath(folder)).parents:
            return f"a folder that holds {what}"
    return None


@dataclass
class Review:
    """One imported server as the user is shown it."""

    name: str
    entry: dict[str, Any]
    """The fields that would be written (after the fixes below, e.g. a resolved cwd)."""
    fields: list[tuple[str, str]] = field(default_factory=list)
    """(field, value) of every field that grants something, as written."""
    callouts: list[str] = field(default_factory=list)
    """One sentence per risky value."""
    refused: str | None = None
    """Why this server cannot be imported at all; None when it can."""
    dropped: list[str] = field(default_factory=list)
    """One sentence per key of the file that was not imported (foreign.translate)."""


def review(name: str, entry: dict[str, Any], raw: dict[str, Any], source: Path) -> Review:
    """The view of one normalised entry (`entry`, from config.normalise) of the file `source`;
    `raw` is the entry as the file had it (for the keys that were dropped)."""
    from agent_cli.tools.mcp.transport import VAR_RE

    out = Review(name, dict(entry))
    for key in ("type", "command", "args", "cwd", "url", "env", "headers"):
        value = entry.get(key)
        if value in (None, "", [], {}):
            continue
        if isinstance(value, list):
            out.fields.append((key, " ".join(_quote(str(v)) for v in value)))
        elif isinstance(value, dict):
            for k, v in value.items():
                out.fields.append((f"{key}.{k}", str(v)))
        else:
            out.fields.append((key, str(value)))
    if entry.get("enabled") is False:
        out.fields.append(("enabled", "false (disabled in the file: kept, not started)"))
    for key in ("enabled_tools", "disabled_tools"):
        if entry.get(key) is not None:
            out.fields.append((key, " ".join(_quote(str(v)) for v in entry[key]) or "(none)"))
    for key in GRANTING:
        if key in raw:
            out.callouts.append(f"{key} in the file is ignored: only you can grant that, by "
                                "editing your own config after the import")
    _check_cwd(out, entry.get("cwd"), source)
    for var in entry.get("env") or {}:
        if var in LOADS_CODE or var.startswith("DYLD_"):
            out.callouts.append(f"env.{var} makes the server (or what it starts) load other "
                                "code or programs")
    command = entry.get("command")
    if isinstance(command, str) and "/" in command and not command.startswith(("/", "~")):
        out.callouts.append(f"command {command!r} is a relative path: it is looked up from the "
                            "server's cwd, a program the file's authors ship")
    for where, value in _strings(entry):
        for m in VAR_RE.finditer(value):
            var = m.group(1)
            secret = " (a secret-shaped name)" if SECRET_WORDS.search(var) else ""
            if where == "command" or where.startswith("args"):
                out.refused = (f"{where} holds ${{{var}}}, whose value would be readable by "
                               "every process from the server's command line; pass it by env "
                               "instead (docs/mcp.md)")
            elif where == "url" or where.startswith("headers"):
                out.callouts.append(f"{where} sends the value of your environment variable "
                                    f"{var}{secret} to {_host(entry.get('url'))}")
            else:
                out.callouts.append(f"{where} gives the server the value of your environment "
                                    f"variable {var}{secret}")
    return out


def _check_cwd(out: Review, cwd: Any, source: Path) -> None:
    if not isinstance(cwd, str) or not cwd:
        return
    if cwd.startswith("~"):
        out.callouts.append(f"cwd {cwd!r} is in your home folder: the server may write "
                            "everything under it (~/.bashrc, ~/.ssh, ...)")
        path = Path(cwd).expanduser()
    elif not Path(cwd).is_absolute():
        path = Path(os.path.normpath(source.resolve().parent / cwd))
        out.entry["cwd"] = str(path)
        out.callouts.append(f"cwd {cwd!r} is relative: it means the file's folder, imported as "
                            f"{path} (in your config a relative cwd would mean agent-cli's "
                            "config folder); the server may write everything under it")
    else:
        path = Path(cwd)
        if Path(os.path.realpath(path)) == Path(os.path.realpath(Path.home())):
            out.callouts.append(f"cwd {cwd!r} is your home folder: the server may write "
                                "everything under it (~/.bashrc, ~/.ssh, ...)")
    where = inside_own_state(path)
    if where is not None:
        out.refused = (f"its cwd {cwd!r} is {where}: a server may write in its cwd and must "
                       "never write agent-cli's config, pins or logs")


def _strings(entry: dict[str, Any]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for key in ("command", "url", "cwd"):
        if isinstance(entry.get(key), str):
            out.append((key, entry[key]))
    for i, arg in enumerate(entry.get("args") or []):
        out.append((f"args[{i}]", str(arg)))
    for key in ("env", "headers"):
        for k, v in (entry.get(key) or {}).items():
            out.append((f"{key}.{k}", str(v)))
    return out


def _host(url: Any) -> str:
    if not isinstance(url, str) or not url:
        return "the server"
    from urllib.parse import urlsplit

    try:
        netloc = urlsplit(url).netloc
    except ValueError:
        netloc = ""
    return netloc.rsplit("@", 1)[-1] or url


def _quote(arg: str) -> str:
    import shlex

    return shlex.quote(arg)
