"""Fixtures of the sandbox tests: a folder outside the workspace, a loopback TCP listener."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.sandbox.harness import Listener


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    return folder


@pytest.fixture
def listener() -> Iterator[Listener]:
    lst = Listener()
    yield lst
    lst.close()
