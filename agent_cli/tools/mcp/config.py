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
import re
import stat
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


_HEADER = re.compile(r"^\s*\[\[?(?P<key>[^\]]*)\]\]?\s*(#.*)?$")
_KEY_PART = re.compile(r'\s*("(?:[^"\\]|\\.)*"|\'[^\']*\'|[A-Za-z0-9_-]+)\s*(\.|$)')


def _key_parts(key: str) -> list[str] | None:
    """The parts of a dotted TOML key (`mcp.servers."my server".env`), or None when it is not
    one this editor reads."""
    parts: list[str] = []
    pos = 0
    while pos < len(key):
        m = _KEY_PART.match(key, pos)
        if m is None:
            return None
        raw = m.group(1)
        parts.append(tomllib.loads(f"k = {raw}")["k"] if raw[0] in "\"'" else raw)
        pos = m.end()
    return parts


def _sections(lines: list[str], name: str) -> list[tuple[int, int, bool]]:
    """(first line, end line, is the main table) of every table of server `name`:
    `[mcp.servers.NAME]` and its sub-tables (`[mcp.servers.NAME.env]`)."""
    heads: list[tuple[int, list[str] | None]] = []
    for i, line in enumerate(lines):
        m = _HEADER.match(line)
        if m is not None:
            heads.append((i, _key_parts(m.group("key"))))
    out = []
    for n, (start, parts) in enumerate(heads):
        end = heads[n + 1][0] if n + 1 < len(heads) else len(lines)
        if parts is not None and parts[:3] == ["mcp", "servers", name]:
            out.append((start, end, len(parts) == 3))
    return out


def edit_server(path: Path, name: str, action: str) -> tuple[str, str, str]:
    """The text of `path` before and after `action` ("remove", "enable", "disable") on
    `[mcp.servers.NAME]`, and the lines that go (remove) or the line written (enable/disable).
    Only the server's own tables change: the result is parsed and compared with the old file
    minus that change, and a file this editor cannot change that way (the server written
    inline, say) is a ValueError that says to edit it by hand."""
    import copy

    old_text = read_config_text(path)
    old = tomllib.loads(old_text)
    lines = old_text.splitlines(keepends=True)
    found = _sections(lines, name)
    hand = (f"[mcp.servers.{_key(name)}] in {path} is written in a form agent-cli does not "
            "edit; change it there yourself")
    if not found or not any(main for _, _, main in found):
        raise ValueError(hand)
    expected = copy.deepcopy(old)
    servers = expected.get("mcp", {}).get("servers", {})
    if name not in servers:
        raise ValueError(hand)
    if action == "remove":
        gone = {i for start, end, _ in found for i in range(start, end)}
        shown = "".join(lines[i] for i in sorted(gone))
        new_lines = [line for i, line in enumerate(lines) if i not in gone]
        del servers[name]
    else:
        value = action == "enable"
        shown = f"enabled = {'true' if value else 'false'}"
        start, end, _ = next(s for s in found if s[2])
        new_lines = list(lines)
        at = next((i for i in range(start + 1, end)
                   if re.match(r"\s*enabled\s*=", lines[i])), None)
        if at is not None:
            new_lines[at] = shown + "\n"
        else:
            new_lines.insert(start + 1, shown + "\n")
        servers[name]["enabled"] = value
    new_text = "".join(new_lines)
    try:
        parsed = tomllib.loads(new_text)
    except tomllib.TOMLDecodeError:
        raise ValueError(hand) from None
    if _drop_empty(parsed) != _drop_empty(expected):
        raise ValueError(hand)
    return old_text, new_text, shown


def _drop_empty(data: dict[str, Any]) -> dict[str, Any]:
    """`data` without the empty `mcp.servers` / `mcp` tables a removal may leave or take."""
    out = dict(data)
    mcp = dict(out.get("mcp", {})) if isinstance(out.get("mcp"), dict) else None
    if mcp is not None:
        if mcp.get("servers") == {}:
            mcp.pop("servers")
        if mcp:
            out["mcp"] = mcp
        else:
            out.pop("mcp")
    return out


def read_config_text(path: Path) -> str:
    """A config file's text: a regular file, read without waiting on a FIFO."""
    import os

    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{path} is not a regular file")
        with os.fdopen(os.dup(fd), "rb") as f:
            return f.read().decode("utf-8")
    finally:
        os.close(fd)


def write_edited(path: Path, before: str, text: str) -> None:
    """Write the edited text over `path`, in place (a linked config stays linked), only if the
    file still holds `before` (what the edit and the question were made from)."""
    import os

    fd = os.open(path, os.O_RDWR | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ValueError(f"{path} is not a regular file; nothing was written")
        with os.fdopen(os.dup(fd), "rb") as f:
            now = f.read()
        if now != before.encode("utf-8"):
            raise ValueError(f"{path} changed while this command ran; nothing was written: "
                             "run it again")
        os.lseek(fd, 0, os.SEEK_SET)
        os.ftruncate(fd, 0)
        data = memoryview(text.encode("utf-8"))
        while data:
            data = data[os.write(fd, data):]
    finally:
        os.close(fd)
