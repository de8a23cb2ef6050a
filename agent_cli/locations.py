"""Where agent-cli keeps its own files (config file, data folder), and the environment variables
that feed settings: computed from the environment alone.

Stdlib only, apart from config.py (which re-exports every name here): `log verify`, `replay
--output jsonl` and the log key need the data folder and must not pay for building the settings
and event models to find it.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from pathlib import Path

__all__ = ["ENV_MAP", "Locations", "home", "locations", "user_config_file"]

ENV_MAP = {
    "AGENT_CLI_PROVIDER": "provider",
    "AGENT_CLI_MODEL": "model",
    "AGENT_CLI_BASE_URL": "base_url",
    "AGENT_CLI_MAX_TURNS": "max_turns",
    "AGENT_CLI_LOG_DIR": "log_dir",
}


@dataclass(frozen=True)
class Locations:
    """Where agent-cli keeps its own files. Computed in one place (`locations`)."""

    config_file: Path
    """The user's settings file."""
    data: Path
    """Sessions, the log key, pins, history, the undo store."""
    legacy_config_file: Path | None = None
    """Where older versions read the settings file (data/config.toml), still read if it is the
    only one present, so an upgrade does not silently drop a user's settings."""

    def own_paths(self) -> tuple[Path, ...]:
        """Every folder of agent-cli's own state (data, and the config folder when it is
        elsewhere): what a guard keeping tools out of that state must cover."""
        config_dir = self.config_file.parent
        return (self.data,) if config_dir == self.data else (self.data, config_dir)


def locations() -> Locations:
    """Every user-level path, from the environment.

    AGENT_CLI_HOME overrides everything (tests, sandboxes): config at AGENT_CLI_HOME/config.toml,
    data in AGENT_CLI_HOME. Otherwise, on Linux and other Unix systems, the XDG base directories:
    config at $XDG_CONFIG_HOME/agent-cli/config.toml (default ~/.config), data under
    $XDG_DATA_HOME/agent-cli (default ~/.local/share); a relative XDG value is ignored, as the
    specification says. macOS and Windows keep one folder for both (Application Support, APPDATA).
    """
    env = os.environ.get("AGENT_CLI_HOME")
    if env:
        root = Path(env).expanduser()
        return Locations(config_file=root / "config.toml", data=root)
    if sys.platform == "win32":
        root = Path(os.environ.get("APPDATA", Path.home() / "AppData" / "Roaming")) / "agent-cli"
        return Locations(config_file=root / "config.toml", data=root)
    if sys.platform == "darwin":
        root = Path.home() / "Library" / "Application Support" / "agent-cli"
        return Locations(config_file=root / "config.toml", data=root)
    data = _xdg("XDG_DATA_HOME", Path.home() / ".local" / "share") / "agent-cli"
    config = _xdg("XDG_CONFIG_HOME", Path.home() / ".config") / "agent-cli" / "config.toml"
    return Locations(config_file=config, data=data, legacy_config_file=data / "config.toml")


def _xdg(var: str, default: Path) -> Path:
    value = os.environ.get(var, "")
    return Path(value) if value and Path(value).is_absolute() else default


def home() -> Path:
    """agent-cli's data folder (sessions, log key, pins, history); see `locations`."""
    return locations().data


def user_config_file() -> Path:
    """The settings file actually read: the XDG one, or the legacy one if only that exists."""
    where = locations()
    legacy = where.legacy_config_file
    if not where.config_file.is_file() and legacy is not None and legacy.is_file():
        return legacy
    return where.config_file
