"""Scoped agency (issue 18): which tools a session offers, read-only mode and tool_choice.

The end-to-end tests run `agent-cli run` against the real anthropic SDK and the loopback fake
(tests/fakes/anthropic_server.py) and read the `tools` and `tool_choice` fields of the requests
the fake received: what the real API would have seen.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agent_cli.tools.loader import load_tools
from agent_cli.tools.registry import CallRejected
from agent_cli.tools.scope import Scope, ScopedRegistry, scoped
from tests.fakes.anthropic_server import FakeAnthropic, text_reply, tool_reply
from tests.providers.test_anthropic_e2e import no_traceback
from tests.providers.test_anthropic_e2e import run_in_process as run_cli


@pytest.fixture
def fake() -> Any:
    with FakeAnthropic() as server:
        yield server


def offered(req: Any) -> list[str]:
    return [t["name"] for t in req.body.get("tools", [])]


def log_of(proc: subprocess.CompletedProcess[str]) -> list[dict[str, Any]]:
    """`run --output jsonl` prints the session's events."""
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def builtin() -> ScopedRegistry:
    registry, report = load_tools([])
    assert not report.errors
    return ScopedRegistry(Scope(), registry)


# --------------------------------------------------------------------------- the scope itself


def test_globs_excludes_and_reasons() -> None:
    reg = builtin()
    reg.scope = Scope.of(["read_*,list_dir", "write_file"], exclude=["read_file"])
    assert reg.names() == ["list_dir", "write_file"]
    why = dict((t.name, w) for t, w in reg.hidden())
    assert why["run_command"] == "not in config tools (read_*, list_dir, write_file)"
    assert why["read_file"] == "excluded by config exclude_tools pattern 'read_file'"
    # a call to a tool that is not offered is an unknown tool, listing only what is offered
    with pytest.raises(CallRejected) as e:
        reg.validate("t1", "run_command", {"command": "ls"})
    assert e.value.reason == 'Unknown tool "run_command". Available tools: list_dir, write_file.'


def test_read_only_hides_writes_but_keeps_them_known() -> None:
    reg = builtin()
    reg.scope.read_only = True
    assert all(t.effect == "read" for t in reg) and "read_file" in reg.names()
    assert "write_file" not in [s["name"] for s in reg.specs()]
    # still validated, so the Gate (not the registry) refuses it, by policy, before a panel
    assert reg.validate("t1", "write_file", {"path": "a", "content": "b"}).tool.name == \
        "write_file"
    assert dict((t.name, w) for t, w in reg.hidden())["write_file"] == \
        "read-only mode (it is a write tool)"


def test_scopes_narrow_each_other_and_hold_for_late_tools() -> None:
    reg = scoped(builtin(), Scope.of(["read_file", "list_dir", "get_*"], origin="--tools"))
    reg = scoped(reg, Scope.of(["list_dir", "mcp__*"], origin="eval task t"))
    assert reg.names() == ["list_dir"]
    from dataclasses import replace

    late = replace(next(iter(load_tools([])[0])), name="mcp__x")  # a tool that joins later
    reg.add(late)
    assert "mcp__x" not in reg.names()  # not in the first include list
    assert reg.scope.unmatched(t.name for t in reg.all_tools()) == []
    assert Scope.of(["wirte_file"]).unmatched(["write_file"]) == ["wirte_file"]


# --------------------------------------------------------------------------- end to end


def test_tools_flag_offers_only_those_and_refuses_the_rest(fake: FakeAnthropic,
                                                           tmp_path: Path) -> None:
    fake.add(tool_reply(("t1", "run_command", {"command": "echo hi"}),
                        ("t2", "read_file", {"path": "a.txt"})),
             text_reply("done"))
    (tmp_path / "a.txt").write_text("A")
    proc = run_cli(["--output", "jsonl", "--workspace", str(tmp_path),
                    "--tools", "read_file,list_dir", "--tools", "search_*",
                    "--exclude-tools", "list_dir", "hello"], fake)
    no_traceback(proc)
    assert proc.returncode == 0, proc.stderr
    for req in fake.requests:
        assert offered(req) == ["read_file", "search_text"]
        assert req.body["tool_choice"] == {"type": "auto"}
    events = log_of(proc)
    assert [t["name"] for t in events[0]["tools"]] == ["read_file", "search_text"]
    invalid = [e for e in events if e["type"] == "tool_invalid"]
    assert [e["id"] for e in invalid] == ["t1"]
    assert invalid[0]["reason"].startswith('Unknown tool "run_command"')
    assert not any(e["type"] == "tool_started" and e["id"] == "t1" for e in events)
    results = {b["tool_use_id"]: b for b in fake.requests[1].body["messages"][-1]["content"]}
    assert results["t1"]["is_error"] and results["t2"]["content"] == "A"


def test_config_tools_and_flag_override(fake: FakeAnthropic, tmp_path: Path) -> None:
    cfg = tmp_path / "cfg.toml"
    cfg.write_text('tools = ["read_file"]\nexclude_tools = ["multiply"]\n')
    fake.add(text_reply("one"), text_reply("two"))
    ws = str(tmp_path)
    assert run_cli(["--config", str(cfg), "--workspace", ws, "hi"], fake).returncode == 0
    assert offered(fake.requests[0]) == ["read_file"]
    assert run_cli(["--config", str(cfg), "--workspace", ws, "--tools", "*", "hi"],
                   fake).returncode == 0
    names = offered(fake.requests[1])
    assert "run_command" in names and "multiply" not in names


def test_read_only_flag_refuses_writes_before_any_panel(fake: FakeAnthropic,
                                                       tmp_path: Path) -> None:
    fake.add(tool_reply(("w1", "write_file", {"path": "x.txt", "content": "no"})),
             text_reply("ok"))
    proc = run_cli(["--output", "jsonl", "--workspace", str(tmp_path), "--read-only", "go"], fake)
    no_traceback(proc)
    assert proc.returncode == 7, proc.stderr  # finished, but a write call was refused
    names = offered(fake.requests[0])
    assert "read_file" in names and "write_file" not in names and "run_command" not in names
    decision = next(e for e in log_of(proc) if e["type"] == "approval")
    assert decision["decision"] == "denied" and decision["by"] == "policy"
    assert "read-only mode" in decision["reason"]
    assert not (tmp_path / "x.txt").exists()
    result = fake.requests[1].body["messages"][-1]["content"][0]
    assert result["is_error"] and "read-only mode" in result["content"]


@pytest.mark.parametrize(("choice", "wire"), [
    ("any", {"type": "any"}),
    ("none", {"type": "none"}),
    ("read_file", {"type": "tool", "name": "read_file"}),
])
def test_tool_choice_reaches_the_api(fake: FakeAnthropic, tmp_path: Path, choice: str,
                                     wire: dict[str, str]) -> None:
    (tmp_path / "a.txt").write_text("A")
    fake.add(tool_reply(("r1", "read_file", {"path": "a.txt"})), text_reply("done"))
    proc = run_cli(["--workspace", str(tmp_path), "--tool-choice", choice, "go"], fake)
    no_traceback(proc)
    # with `none` the tools are still sent: the second request's history holds tool blocks,
    # and the fake (like the API) refuses those without tool definitions
    assert proc.returncode == 0, proc.stderr
    assert len(fake.requests) == 2
    # A forced choice is the first request's; after the calls the turn goes on with auto
    # (tool_choice_after_call), so the model can answer. `none` stays.
    assert fake.requests[0].body["tool_choice"] == wire
    assert fake.requests[1].body["tool_choice"] == (wire if choice == "none" else {"type": "auto"})
    for req in fake.requests:
        assert "read_file" in offered(req)


def test_tool_choice_of_a_tool_not_offered_is_a_usage_error(fake: FakeAnthropic,
                                                            tmp_path: Path) -> None:
    proc = run_cli(["--workspace", str(tmp_path), "--read-only", "--tool-choice", "write_file",
                    "go"], fake)
    no_traceback(proc)
    assert proc.returncode == 2
    assert "no tool of that name is offered" in proc.stderr
    assert fake.requests == []


def test_a_pattern_that_matches_nothing_is_pointed_out(fake: FakeAnthropic,
                                                       tmp_path: Path) -> None:
    fake.add(text_reply("ok"))
    proc = run_cli(["--workspace", str(tmp_path), "--tools", "read_file,wirte_file", "hi"], fake)
    no_traceback(proc)
    assert proc.returncode == 0
    assert "The tool pattern 'wirte_file' matches no loaded tool" in " ".join(
        (proc.stdout + proc.stderr).split())  # notices go to stderr when stdout is piped
    assert offered(fake.requests[0]) == ["read_file"]
