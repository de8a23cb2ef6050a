"""Writing `[mcp.servers.NAME]` tables: `agent-cli mcp add` and `mcp import`.

Other clients keep their servers in an `mcpServers` JSON block (Claude Desktop's
claude_desktop_config.json, a project's `.mcp.json`, Cursor, Gemini CLI); `import` reads that
shape. Servers are appended to a TOML file as new tables (the file's own text and comments stay
as they are); a name that is already configured is refused, never overwritten. Imported servers
are untrusted until the user edits `trusted = true` in themselves. No third-party TOML writer:
the values are strings, lists of strings and string tables, written by `toml_string`.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

FIELDS = ("type", "command", "args", "env", "cwd", "url", "headers")
"""What `import` takes from another client's entry: never a grant (trusted, writable, network,
sandbox), which only the user gives."""
WRITTEN = (*FIELDS, "enabled", "enabled_tools", "disabled_tools", "writable", "network")
"""What `add` and `import` write: the fields, what the other client narrowed (a server it kept
disabled, its tool lists), and the grants the user accepted."""
MAX_IMPORT_BYTES = 1_000_000


def toml_string(value: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's, except that TOML wants every control
    character (and DEL) escaped and takes no surrogates."""
    out = ['"']
    for ch in value:
        cp = ord(ch)
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif cp < 0x20 or cp == 0x7F:
            out.append({"\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(ch, f"\\u{cp:04x}"))
        elif 0xD800 <= cp <= 0xDFFF:
            raise ValueError("a lone surrogate cannot be written to TOML")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _key(name: str) -> str:
    return name if name and all(c.isalnum() or c in "-_" for c in name) else toml_string(name)


def server_table(name: str, server: dict[str, Any]) -> str:
    """The TOML text of one `[mcp.servers.NAME]` table."""
    lines = [f"[mcp.servers.{_key(name)}]"]
    for fld in WRITTEN:
        value = server.get(fld)
        if fld == "enabled":  # only `enabled = false` says something
            if value is False:
                lines.append("enabled = false")
            continue
        if value in (None, "", {}, False) or (value == [] and fld != "enabled_tools"):
            continue  # an empty enabled_tools offers no tool: it is kept
        if value is True:
            lines.append(f"{fld} = true")
        elif isinstance(value, str):
            lines.append(f"{fld} = {toml_string(value)}")
        elif isinstance(value, list):
            lines.append(f"{fld} = [{', '.join(toml_string(str(v)) for v in value)}]")
        elif isinstance(value, dict):
            pairs = ", ".join(f"{_key(str(k))} = {toml_string(str(v))}" for k, v in value.items())
            lines.append(f"{fld} = {{ {pairs} }}")
    return "\n".join(lines) + "\n"


def existing_servers(path: Path) -> dict[str, Any]:
    """The `[mcp.servers]` tables already in a TOML file (none when it does not exist)."""
    if not path.exists():
        return {}
    with open(path, "rb") as f:
        data = tomllib.load(f)
    servers = data.get("mcp", {}).get("servers", {}) if isinstance(data.get("mcp"), dict) else {}
    return servers if isinstance(servers, dict) else {}


def normalise(name: str, raw: dict[str, Any]) -> dict[str, Any]:
    """`mcp add`'s fields (None where not given) as an entry validated by MCPServer, or a
    ValueError saying what is wrong."""
    entry = {k: raw[k] for k in FIELDS if raw.get(k) is not None}
    _validate(name, entry)
    return entry


def import_entry(name: str, raw: Any, shape: str, ignored: tuple[str, ...]
                 ) -> tuple[dict[str, Any], list[str]]:
    """One entry of another client's `mcpServers` block as agent-cli fields, mapped by what its
    keys mean in a file of that shape (tools/mcp/foreign.py), and one sentence per key that was
    not imported; a ValueError saying what is wrong when it is no server agent-cli can run."""
    from agent_cli.tools.mcp.foreign import translate

    if not isinstance(raw, dict):
        raise ValueError(f"{name}: expected an object with command or url")
    entry, dropped = translate(raw, shape, ignored)
    _validate(name, entry)
    return entry, dropped


def _validate(name: str, entry: dict[str, Any]) -> None:
    from pydantic import ValidationError

    from agent_cli.config import MCPServer

    try:
        MCPServer.model_validate(entry)
    except ValidationError as e:
        first = e.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "entry"
        raise ValueError(f"{name}: {where}: {first['msg']}") from None


def read_mcp_servers(path: Path) -> tuple[dict[str, Any], str]:
    """The `mcpServers` block of a Claude Desktop / `.mcp.json`-style JSON file (`servers` in
    VS Code's) and the file's shape (foreign.file_shape: whose keys they are): a regular file
    of at most MAX_IMPORT_BYTES, read without waiting on a FIFO."""
    import os
    import stat

    from agent_cli.tools.mcp.foreign import file_shape

    try:  # O_NONBLOCK: a FIFO named as the file must not hang the import
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        raise ValueError(f"{path} not found") from None
    except OSError as e:
        raise ValueError(f"{path} cannot be read ({e.strerror or e})") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{path} is not a regular file; name the JSON file itself")
        raw = os.read(fd, MAX_IMPORT_BYTES + 1)
    finally:
        os.close(fd)
    if len(raw) > MAX_IMPORT_BYTES:
        raise ValueError(f"{path} is larger than {MAX_IMPORT_BYTES:,} bytes; not an MCP config")
    try:
        data = json.loads(raw.decode("utf-8"))
    except ValueError as e:
        raise ValueError(f"{path} is not valid JSON ({e})") from None
    block = (data.get("mcpServers") or data.get("servers")) if isinstance(data, dict) else None
    if not isinstance(block, dict):  # "servers": VS Code's .vscode/mcp.json
        raise ValueError(f"{path} has no \"mcpServers\" object")
    return block, file_shape(path, data)


def append_servers(path: Path, servers: dict[str, dict[str, Any]]) -> None:
    """Append the tables to the file (made 0600 in a 0700 folder if new), after checking that
    the result still parses."""
    import os

    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    old = path.read_text(encoding="utf-8") if path.exists() else ""
    text = old + ("\n" if old and not old.endswith("\n") else "")
    for name, server in servers.items():
        text += "\n" + server_table(name, server)
    tomllib.loads(text)  # never leave a file agent-cli cannot read
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)


def parse_pairs(items: list[str] | None, sep: str, flag: str) -> dict[str, str]:
    """`KEY=VALUE` words (`mcp add --env/--header`, `/mcp prompt ... ARG=VALUE`) as a dict, or a
    ValueError naming `flag` and the word that has no key or no separator."""
    out: dict[str, str] = {}
    for item in items or []:
        key, found, value = item.partition(sep)
        if not found or not key:
            raise ValueError(f"{flag} takes KEY{sep}VALUE, not {item!r}")
        out[key] = value
    return out
