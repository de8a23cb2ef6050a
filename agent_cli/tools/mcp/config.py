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
WRITTEN = (*FIELDS, "writable", "network")
"""What `add` and `import` write: the fields, and the grants the user accepted."""
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
        if value in (None, "", [], {}, False):
            continue
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


def normalise(name: str, raw: Any) -> dict[str, Any]:
    """One entry of an `mcpServers` block as agent-cli fields (validated by MCPServer), or a
    ValueError saying what is wrong. Unknown keys of other clients are dropped."""
    from pydantic import ValidationError

    from agent_cli.config import MCPServer

    if not isinstance(raw, dict):
        raise ValueError(f"{name}: expected an object with command or url")
    entry = {k: raw[k] for k in FIELDS if k in raw}
    if entry.get("type") in ("streamable-http", "streamableHttp", "http"):
        entry["type"] = "http"
    if "serverUrl" in raw and "url" not in entry:  # Windsurf's spelling
        entry["url"] = raw["serverUrl"]
    try:
        MCPServer.model_validate(entry)
    except ValidationError as e:
        first = e.errors(include_url=False)[0]
        where = ".".join(str(p) for p in first["loc"]) or "entry"
        raise ValueError(f"{name}: {where}: {first['msg']}") from None
    return entry


def read_mcp_servers(path: Path) -> dict[str, Any]:
    """The `mcpServers` block of a Claude Desktop / `.mcp.json`-style JSON file (`servers` in
    VS Code's): a regular file of at most MAX_IMPORT_BYTES, read without waiting on a FIFO."""
    import os
    import stat

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
    return block


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
    from agent_cli.write_faults import write_atomic

    # Whole or not at all: a full disk must not leave the user's config truncated.
    write_atomic(Path(os.path.realpath(path)), text.encode("utf-8"), what="the config file")


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
