"""`protected_roots` is kept between calls (it is asked for every path a tool touches), keyed on
what it depends on: a changed AGENT_CLI_HOME, between sessions of one process or with no session
at all, is still protected, and the old one stays protected once a session registered it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from agent_cli.tools.paths import protected_reason, protected_roots
from tests.adversarial.test_protected_state import CONFIG, REFUSAL, _run


def _home(base: Path, name: str) -> Path:
    state = base / name
    state.mkdir(parents=True)
    (state / "config.toml").write_text(CONFIG)
    return state


def test_a_changed_home_is_protected_at_once(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = _home(tmp_path, "a"), _home(tmp_path, "b")
    monkeypatch.setenv("AGENT_CLI_HOME", str(a))
    assert protected_reason(Path(os.path.realpath(a / "config.toml"))) is not None
    assert protected_roots() == protected_roots()  # kept: the same answer
    monkeypatch.setenv("AGENT_CLI_HOME", str(b))
    assert protected_reason(Path(os.path.realpath(b / "log.key"))) is not None
    assert Path(os.path.realpath(b)) in protected_roots()
    # a caller changing its copy does not change what the guard protects
    protected_roots().clear()
    assert Path(os.path.realpath(b)) in protected_roots()


def test_a_changed_xdg_home_is_protected_at_once(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENT_CLI_HOME", raising=False)
    for name in ("x1", "x2"):
        monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / name))
        state = Path(os.path.realpath(tmp_path / name / "agent-cli"))
        assert protected_reason(state / "log.key") is not None


def test_a_changed_home_between_sessions_is_refused(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    work = tmp_path / "work"
    a, b = _home(work, "a"), _home(work, "b")
    (work / "notes.txt").write_text("hello\n")
    monkeypatch.setenv("AGENT_CLI_HOME", str(a))
    first, _ = _run(work, [("read_file", {"path": "a/config.toml"}),
                           ("read_file", {"path": "notes.txt"})], [])
    assert first[0].is_error and REFUSAL in first[0].content
    assert first[1].content == "hello\n"
    monkeypatch.setenv("AGENT_CLI_HOME", str(b))
    second, _ = _run(work, [("read_file", {"path": "b/config.toml"}),
                            ("write_file", {"path": "b/config.toml", "content": "x"}),
                            ("read_file", {"path": "a/config.toml"})], ["y"])
    for result in second:
        assert result.is_error and REFUSAL in result.content, result.content
    assert (b / "config.toml").read_text() == CONFIG
