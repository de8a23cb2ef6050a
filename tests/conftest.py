"""Shared fixtures. Every test gets its own AGENT_CLI_HOME, no API key, no colour settings from
the developer's shell, and no way to reach a non-loopback API."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

LOOPBACK = ("http://127.0.0.1", "http://localhost", "http://[::1]")


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C tests need SIGINT as Python sets it up. A suite launched with SIGINT ignored (from
    `nohup` or a background `&` in a script) would hand that on to every process it starts, and
    the interrupt tests would test the launcher; take it back once, for the run."""
    import signal

    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(autouse=True)
def _isolated_env(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path_factory.mktemp("agent_cli_home")
    monkeypatch.setenv("AGENT_CLI_HOME", str(home))
    for var in ("NO_COLOR", "FORCE_COLOR", "COLUMNS", "LINES", "ANTHROPIC_API_KEY",
                "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY", "OPENAI_BASE_URL",
                "AGENT_CLI_MODEL", "AGENT_CLI_PROVIDER", "AGENT_CLI_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PROMPT_TOOLKIT_NO_CPR", "1")


@pytest.fixture(autouse=True)
def _no_leftover_sandbox() -> object:
    """A session a test started and never closed must not confine the next test's processes."""
    yield
    from agent_cli.sandbox.policy import install

    install(None)


@pytest.fixture(autouse=True)
def _no_remote_api(monkeypatch: pytest.MonkeyPatch) -> None:
    """Refuse any Anthropic client whose base URL is not loopback: no test reaches a real API."""
    try:
        import anthropic
    except ImportError:  # pragma: no cover
        return
    original = anthropic.Anthropic.__init__

    def guarded(self: object, *args: object, **kwargs: object) -> None:
        url = str(kwargs.get("base_url") or os.environ.get("ANTHROPIC_BASE_URL") or "")
        if not url.startswith(LOOPBACK):
            raise RuntimeError(f"test tried to reach a non-loopback API: {url or '(default)'}")
        original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(anthropic.Anthropic, "__init__", guarded)


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    return ws


REPO = Path(__file__).resolve().parent.parent
