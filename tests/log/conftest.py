"""Fixtures of the log tests."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.scripts import PLUGIN


@pytest.fixture
def tools(tmp_path: Path) -> Path:
    """A plugin folder holding the echo_write tool (tests/scripts.PLUGIN)."""
    d = tmp_path / "tools"
    d.mkdir()
    (d / "echo_write.py").write_text(PLUGIN, encoding="utf-8")
    return d
