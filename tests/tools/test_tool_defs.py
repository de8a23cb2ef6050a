"""Tool definitions as the model sees them (issue 18 item 4, and tool_choice for OpenAI):
input examples, strict schemas for the OpenAI-compatible provider, constraints in `agent-cli
tools`. Requests are read where they arrive: the loopback fakes in tests/fakes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agent_cli.approval import ScriptedApprover
from agent_cli.config import Settings
from agent_cli.providers.strict_schema import strict_schema
from agent_cli.session import Session, load_registry, make_provider, session_scope
from tests.conftest import REPO
from tests.fakes.anthropic_server import FakeAnthropic, text_reply
from tests.fakes.openai_server import FakeOpenAI
from tests.fakes.openai_server import text_reply as oa_text
from tests.fakes.openai_server import tool_reply as oa_tool
from tests.providers.test_anthropic_e2e import no_traceback
from tests.providers.test_anthropic_e2e import run_in_process as run_cli

EXAMPLES_PLUGIN = '''
from typing import Literal
from pydantic import BaseModel, Field
from agent_cli.tools import Tool


class Args(BaseModel):
    city: str = Field(pattern=r"^[A-Z][a-z]+$")
    days: int = Field(1, ge=1, le=7)
    units: Literal["metric", "imperial"] = "metric"


TOOL = Tool(name="forecast", description="Weather forecast for a city.", args=Args,
            effect="read", run=lambda a, c: f"sunny in {a.city}",
            input_examples=[{"city": "Paris", "days": 3}, {"city": "Oslo", "units": "imperial"}])
'''

BAD_EXAMPLE_PLUGIN = '''
from pydantic import BaseModel
from agent_cli.tools import Tool


class Args(BaseModel):
    n: int


TOOL = Tool(name="counted", description="Counts.", args=Args, effect="read",
            run=lambda a, c: "ok", input_examples=[{"n": "three"}])
'''


@pytest.fixture
def plugins(tmp_path: Path) -> Path:
    folder = tmp_path / "plugins"
    folder.mkdir()
    (folder / "forecast.py").write_text(EXAMPLES_PLUGIN)
    return folder


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "agent_cli", *args], env=env, cwd=REPO,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)


def test_input_examples_go_to_the_messages_api(plugins: Path, tmp_path: Path) -> None:
    with FakeAnthropic() as fake:
        fake.add(text_reply("ok"))
        proc = run_cli(["--workspace", str(tmp_path), "--tools-dir", str(plugins),
                        "--tools", "forecast,read_file", "hi"], fake)
        no_traceback(proc)
        assert proc.returncode == 0, proc.stderr
        tools = {t["name"]: t for t in fake.requests[0].body["tools"]}
    assert tools["forecast"]["input_examples"] == [{"city": "Paris", "days": 3},
                                                    {"city": "Oslo", "units": "imperial"}]
    assert "input_examples" not in tools["read_file"]  # only where a tool has some


def test_tools_listing_shows_examples_constraints_and_what_is_not_offered(
        plugins: Path) -> None:
    proc = cli("tools", "--tools-dir", str(plugins), "--exclude-tools", "run_command",
               "--read-only")
    no_traceback(proc)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert 'example: {"city": "Paris", "days": 3}' in out
    assert 'city: string [pattern "^[A-Z][a-z]+$"]' in out
    assert "days: integer = 1 [minimum 1, maximum 7]" in out
    assert 'units: string = "metric" [enum ["metric", "imperial"]]' in out
    assert "a: integer [minimum -1000000, maximum 1000000]" in out  # multiply
    assert "not offered: run_command (excluded by --tools / config exclude_tools pattern " \
        "'run_command')" in out
    assert "not offered: write_file (read-only mode (it is a write tool))" in out


def test_an_example_that_breaks_its_schema_is_a_plugin_error(tmp_path: Path) -> None:
    (tmp_path / "counted.py").write_text(BAD_EXAMPLE_PLUGIN)
    proc = cli("tools", "--tools-dir", str(tmp_path))
    no_traceback(proc)
    assert proc.returncode == 1
    assert "Input example 1 of tool 'counted'" in proc.stdout
    assert "counted  read" not in proc.stdout


# --------------------------------------------------------------------------- OpenAI


def test_strict_schema_shape() -> None:
    schema = {"type": "object", "additionalProperties": False, "required": ["a"],
              "properties": {"a": {"type": "string", "minLength": 1},
                             "b": {"type": "integer", "default": 3}}}
    out = strict_schema(schema)
    assert out == {"type": "object", "additionalProperties": False, "required": ["a", "b"],
                   "properties": {"a": {"type": "string", "minLength": 1},
                                  "b": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}}
    assert schema["required"] == ["a"]  # the original is untouched
    assert strict_schema({"type": "object", "additionalProperties": True,
                          "properties": {}}) is None
    assert strict_schema({"type": "object"}) is None  # a free-form object has no strict form


def openai_session(fake: FakeOpenAI, tmp_path: Path, answers: list[str],
                   **extra: Any) -> tuple[Session, list[Any]]:
    settings = Settings(provider="openai", model="gpt-test", base_url=fake.v1_url,
                        api_key="sk-test-key", retries=0, **extra)
    registry, _ = load_registry(settings)
    seen: list[Any] = []
    session = Session(settings, workspace=tmp_path, provider=make_provider(settings),
                      registry=session_scope(settings, registry),
                      approver=ScriptedApprover(answers), sinks=[seen.append],
                      log_path=tmp_path / "log.jsonl")
    session.start()
    return session, seen


def test_openai_strict_tools_and_tool_choice(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.txt").write_text("A A")
    with FakeOpenAI() as fake:
        # strict mode sends null for an optional argument it leaves out
        fake.add(oa_tool(("c1", "edit_file", {"path": "a.txt", "old_string": "A A",
                                              "new_string": "B", "replace_all": None})),
                 oa_text("done"))
        session, seen = openai_session(fake, ws, ["y"], tool_choice="any",
                                       tools=["edit_file", "read_file"])
        result = session.send("edit it")
        session.close()
        body = fake.requests[0].body
    assert result.reason == "end_turn"
    assert body["tool_choice"] == "required"
    fns = {t["function"]["name"]: t["function"] for t in body["tools"]}
    assert set(fns) == {"edit_file", "read_file"}
    edit = fns["edit_file"]
    assert edit["strict"] is True
    assert edit["parameters"]["additionalProperties"] is False
    assert edit["parameters"]["required"] == ["path", "old_string", "new_string", "replace_all"]
    assert edit["parameters"]["properties"]["replace_all"]["anyOf"][1] == {"type": "null"}
    # the null was dropped before validation: the call ran with the default
    assert (ws / "a.txt").read_text() == "B"
    proposed = next(e for e in seen if e.type == "tool_proposed")
    assert proposed.input == {"path": "a.txt", "old_string": "A A", "new_string": "B"}


@pytest.mark.parametrize(("choice", "wire"), [
    ("none", "none"), ("auto", "auto"),
    ("read_file", {"type": "function", "function": {"name": "read_file"}})])
def test_openai_tool_choice_formats(tmp_path: Path, choice: str, wire: Any) -> None:
    with FakeOpenAI() as fake:
        fake.add(oa_text("hi"))
        session, _ = openai_session(fake, tmp_path, [], tool_choice=choice, strict_tools=False)
        session.send("hello")
        session.close()
        body = fake.requests[0].body
    assert body["tool_choice"] == wire
    assert all("strict" not in t["function"] for t in body["tools"])  # strict_tools = false
    assert json.dumps(body)  # plain JSON
