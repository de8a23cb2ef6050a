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
