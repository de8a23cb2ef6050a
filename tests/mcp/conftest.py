"""Fixtures of every MCP test (unit and end to end)."""

from __future__ import annotations

import os
import signal
import uuid
from collections.abc import Iterator

import pytest

from tests.mcp.test_mcp import procs_with


@pytest.fixture
def marker() -> Iterator[str]:
    """A unique environment marker for the servers a test starts; any still running when the
    test ends (even a failing one) is killed, so no server leaks into the next test."""
    value = f"AGENT_CLI_MCP_TEST_{uuid.uuid4().hex}"
    yield value
    for pid in procs_with(value):
        os.kill(pid, signal.SIGKILL)
