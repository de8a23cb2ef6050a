"""config.example.toml documents every setting: a field added to Settings without a line there
fails here."""

from __future__ import annotations

import re

from agent_cli.config import MCPServer, Settings
from tests.conftest import REPO


def test_every_setting_is_documented() -> None:
    text = (REPO / "config.example.toml").read_text()
    for name in Settings.model_fields:
        assert re.search(rf"^# {name} = ", text, re.M), f"{name} missing from config.example.toml"
    for name in MCPServer.model_fields:
        assert re.search(rf"^# {name} = ", text, re.M), f"mcp {name} missing"


def test_example_values_parse_as_settings() -> None:
    """Uncommenting the simple `key = value` lines must give a valid configuration."""
    import tomllib

    lines = []
    for line in (REPO / "config.example.toml").read_text().splitlines():
        m = re.match(r"^# ([a-z_]+ = .*?)(\s{2,}.*)?$", line)
        if m and not line.startswith("# [") and "..." not in line:
            lines.append(m.group(1))
    data: dict[str, object] = {}
    for line in lines:
        key = line.split(" = ", 1)[0]
        if key in Settings.model_fields and key not in data:
            data.update(tomllib.loads(line))
    Settings.model_validate(data)


SETTING_LINE = r"^# ((?:\[\[?[a-z_.\"0-9-]+\]\]?)|(?:[a-z_]+ = .*))$"


def test_every_commented_setting_line_is_valid_toml_when_uncommented() -> None:
    """Uncommenting a line (dropping `# `) must never give a TOML syntax error: no trailing
    prose after a value, no placeholder that is not a value."""
    import tomllib

    checked = 0
    for lineno, line in enumerate((REPO / "config.example.toml").read_text().splitlines(), 1):
        m = re.match(SETTING_LINE, line)
        if not m:
            continue
        try:
            tomllib.loads(m.group(1))
        except tomllib.TOMLDecodeError as e:
            raise AssertionError(f"config.example.toml line {lineno}: {line!r}: {e}") from None
        checked += 1
    assert checked >= len(Settings.model_fields)


def test_uncommented_blocks_load_as_settings() -> None:
    """Each commented table, uncommented with the settings lines under it, loads: the [[deny]]
    rule, the prices table, the MCP server (a default line after a table header would land
    inside the table)."""
    import tomllib

    text = (REPO / "config.example.toml").read_text()
    for header in ("[[deny]]", '[prices."my-model"]', "[mcp.servers.time]"):
        lines = text[text.index("# " + header):].splitlines()
        block = [lines[0][2:]]
        for line in lines[1:]:
            m = re.match(r"^# ([a-z_]+ = .*)$", line)
            if not m:
                break
            block.append(m.group(1))
        Settings.model_validate(tomllib.loads("\n".join(block)))


def test_no_paragraph_is_repeated() -> None:
    """A comment paragraph said twice (the prices block once was) reads as two settings."""
    text = (REPO / "config.example.toml").read_text()
    firsts = [p.splitlines()[0] for p in text.split("\n\n") if p.strip()]
    assert len(firsts) == len(set(firsts)), [f for f in firsts if firsts.count(f) > 1]
