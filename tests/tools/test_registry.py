"""The registry and the plugin loader: strict validation, the schemas offered to the model, and
load errors that name the file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

from agent_cli.tools.base import Tool, ToolContext, canonical_json, sha256_json
from agent_cli.tools.loader import bundled_tools_dir, load_tools
from agent_cli.tools.registry import CallRejected, Registry

BUILTIN_READ = {"read_file", "list_dir", "search_text", "multiply"}


@pytest.fixture(scope="module")
def registry() -> Registry:
    reg, report = load_tools([])
    assert report.errors == []
    return reg


def reject(registry: Registry, name: Any, raw: Any) -> str:
    with pytest.raises(CallRejected) as info:
        registry.validate("c1", name, raw)
    return info.value.reason


def fields_listed(reason: str) -> list[str]:
    return [line[2:].split(":")[0] for line in reason.splitlines()[1:]]


# --------------------------------------------------------------------------- validation


def test_valid_call_is_frozen_in_canonical_form(registry: Registry) -> None:
    call = registry.validate("c1", "multiply", {"b": 7, "a": 6})
    assert call.args_json == '{"a":6,"b":7}'
    assert call.shown_args() == {"a": 6, "b": 7}
    assert call.args_hash == registry.args_hash({"a": 6, "b": 7})
    assert call.args_hash != sha256_json({"a": 6, "b": 7})  # an HMAC, never a bare hash
    # each caller gets its own copy of the shown args
    first = call.shown_args()
    first["a"] = 999
    assert call.shown_args() == {"a": 6, "b": 7}


def test_defaults_are_part_of_what_is_shown(registry: Registry) -> None:
    call = registry.validate("c1", "list_dir", {})
    assert call.shown_args() == {"path": "."}
    search = registry.validate("c2", "search_text", {"pattern": "x"})
    assert search.shown_args() == {"pattern": "x", "path": "."}


@pytest.mark.parametrize(
    ("raw", "fields", "fragments"),
    [
        ({"a": "24", "b": 2}, ["a"], ['(got "24")', "valid integer"]),
        ({"a": 2.0, "b": 2}, ["a"], ["(got 2.0)"]),
        ({"a": 2.5, "b": 2}, ["a"], ["(got 2.5)"]),
        ({"a": True, "b": 2}, ["a"], ["(got true)"]),
        ({"a": 2}, ["b"], ["required field is missing"]),
        ({}, ["a", "b"], ["required field is missing"]),
        ({"a": None, "b": 1}, ["a"], ["(got null)"]),
        ({"a": [1], "b": 1}, ["a"], ["(got [1])"]),
        ({"a": 1, "b": 2, "approved": True}, ["approved"], ["unknown field"]),
        ({"a": 1_000_001, "b": 1}, ["a"], ["less than or equal to 1000000"]),
        ({"a": -1_000_001, "b": 1}, ["a"], ["greater than or equal to -1000000"]),
        ({"a": "x", "b": None, "c": 3}, ["a", "b", "c"], []),
    ],
)
def test_multiply_is_strict(registry: Registry, raw: dict[str, Any], fields: list[str],
                            fragments: list[str]) -> None:
    reason = reject(registry, "multiply", raw)
    assert reason.splitlines()[0] == "Invalid arguments for multiply:"
    assert fields_listed(reason) == fields
    for fragment in fragments:
        assert fragment in reason


@pytest.mark.parametrize(
    ("name", "raw", "field"),
    [
        ("read_file", {"path": ["a", "b"]}, "path"),
        ("read_file", {"path": 3}, "path"),
        ("read_file", {"path": None}, "path"),
        ("read_file", {"path": {"x": 1}}, "path"),
        ("write_file", {"path": "a", "content": 5}, "content"),
        ("write_file", {"path": "a", "content": "x", "mode": "append"}, "mode"),
        ("list_dir", {"path": ".", "recursive": True}, "recursive"),
    ],
)
def test_no_coercion_for_strings_either(registry: Registry, name: str, raw: dict[str, Any],
                                        field: str) -> None:
    assert fields_listed(reject(registry, name, raw)) == [field]


@pytest.mark.parametrize(
    ("raw", "got"), [(None, "null"), ([], "array"), ("a.txt", "string"), (3, "number"),
                     (True, "boolean")])
def test_input_must_be_an_object(registry: Registry, raw: Any, got: str) -> None:
    reason = reject(registry, "read_file", raw)
    assert reason == f"Invalid arguments for read_file: the input must be a JSON object, got {got}."


@pytest.mark.parametrize("name", ["nope", "Read_File", "read_file ", "", None, 3, ["read_file"]])
def test_unknown_tool_names_the_available_ones(registry: Registry, name: Any) -> None:
    reason = reject(registry, name, {})
    assert reason.startswith("Unknown tool ")
    assert reason.endswith("Available tools: " + ", ".join(registry.names()) + ".")
    assert {"list_dir", "multiply", "read_file", "search_text", "write_file"} <= set(
        registry.names())


def test_unknown_tool_name_is_shown_escaped(registry: Registry) -> None:
    reason = reject(registry, "evil\x1b[2K\u202ename", {})
    assert "\x1b" not in reason and "\u202e" not in reason
    assert json.dumps("evil\x1b[2K\u202ename") in reason


def test_long_values_are_shortened_in_the_reason(registry: Registry) -> None:
    reason = reject(registry, "multiply", {"a": "9" * 500, "b": 1})
    assert len(reason) < 300


def test_extra_fields_rejected_even_when_the_author_forgot() -> None:
    class Loose(BaseModel):
        text: str

    reg = Registry([Tool("echo", "Echo.", Loose, lambda a, c: a.text, effect="read")])
    assert reg.validate("c", "echo", {"text": "hi"}).shown_args() == {"text": "hi"}
    reason = reject(reg, "echo", {"text": "hi", "approved": True})
    assert fields_listed(reason) == ["approved"]
    schema = next(iter(reg)).schema()
    assert schema["additionalProperties"] is False


def test_the_validated_model_is_what_runs() -> None:
    class Args(BaseModel):
        n: int = Field(ge=0)
        label: str = "none"

    got: list[Any] = []
    reg = Registry([Tool("t", "T.", Args, lambda a, c: got.append(a) or "ok", effect="read")])
    call = reg.validate("c", "t", {"n": 3})
    assert isinstance(call.value, BaseModel)
    assert call.value.model_dump(mode="json") == call.shown_args() == {"n": 3, "label": "none"}
    assert canonical_json(call.shown_args()) == call.args_json


def test_raw_validator_tools_use_their_own_validation() -> None:
    def check(raw: dict[str, Any]) -> dict[str, Any]:
        if set(raw) - {"q"}:
            raise ValueError("- unknown fields: " + ", ".join(sorted(set(raw) - {"q"})))
        return raw

    tool = Tool("remote", "MCP-like.", BaseModel, lambda a, c: "ok",
                input_schema={"type": "object", "properties": {"q": {"type": "string"}},
                              "additionalProperties": False},
                validate_raw=check)
    reg = Registry([tool])
    assert reg.validate("c", "remote", {"q": "x"}).shown_args() == {"q": "x"}
    reason = reject(reg, "remote", {"q": "x", "zzz": 1})
    assert "zzz" in reason and reason.startswith("Invalid arguments for remote:")


# --------------------------------------------------------------------------- schemas


def test_every_tool_schema_forbids_additional_properties(registry: Registry) -> None:
    specs = registry.specs()
    assert BUILTIN_READ | {"write_file"} <= {s["name"] for s in specs}
    assert [s["name"] for s in specs] == sorted(s["name"] for s in specs)
    for spec in specs:
        assert set(spec) == {"name", "description", "input_schema"}
        schema = spec["input_schema"]
        assert schema["type"] == "object"
        assert schema["additionalProperties"] is False, spec["name"]
        assert spec["description"].strip()


def test_builtin_argument_names_are_the_documented_ones(registry: Registry) -> None:
    props = {t.name: set(t.schema()["properties"]) for t in registry}
    assert props["read_file"] == {"path"}
    assert props["list_dir"] == {"path"}
    assert props["search_text"] == {"pattern", "path"}
    assert props["multiply"] == {"a", "b"}
    assert props["write_file"] == {"path", "content"}
    effects = {t.name: t.effect for t in registry}
    for name in BUILTIN_READ:
        assert effects[name] == "read"
    assert effects["write_file"] == "write"


def test_multiply_schema_has_its_bounds(registry: Registry) -> None:
    schema = registry.get("multiply").schema()  # type: ignore[union-attr]
    assert schema["required"] == ["a", "b"]
    for field in ("a", "b"):
        prop = schema["properties"][field]
        assert prop["type"] == "integer"
        assert prop["minimum"] == -1_000_000
        assert prop["maximum"] == 1_000_000


def test_schema_hash_changes_with_the_description() -> None:
    class A(BaseModel):
        x: int

    one = Tool("t", "first", A, lambda a, c: "")
    two = Tool("t", "second", A, lambda a, c: "")
    assert one.schema_hash() != two.schema_hash()
    assert len(one.schema_hash()) == 16


# --------------------------------------------------------------------------- loading


PLUGIN = '''
from pydantic import BaseModel
from agent_cli.tools import Tool


class Args(BaseModel):
    x: int


TOOL = Tool(name={name!r}, description="test plugin", args=Args,
            run=lambda a, c: str(a.x), effect="read")
'''


def write_plugin(folder: Path, filename: str, tool_name: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / filename
    path.write_text(PLUGIN.format(name=tool_name))
    return path


def test_duplicate_names_are_an_error_naming_both_files(tmp_path: Path) -> None:
    first = write_plugin(tmp_path / "one", "alpha.py", "twin")
    second = write_plugin(tmp_path / "two", "beta.py", "twin")
    reg, report = load_tools([tmp_path / "one", tmp_path / "two"], include_bundled=False)
    assert reg.names() == ["twin"]
    assert len(report.errors) == 1
    error = report.errors[0]
    assert str(first) in error and str(second) in error
    assert "twin" in error and "Rename" in error


def test_duplicate_of_a_builtin_names_the_builtin_file(tmp_path: Path) -> None:
    mine = write_plugin(tmp_path / "mine", "my_multiply.py", "multiply")
    reg, report = load_tools([tmp_path / "mine"])
    assert len(report.errors) == 1
    assert str(mine) in report.errors[0]
    assert str(bundled_tools_dir() / "multiply.py") in report.errors[0]
    assert reg.get("multiply").source == str(bundled_tools_dir() / "multiply.py")  # type: ignore[union-attr]
    # the rest still load
    assert {"read_file", "write_file", "list_dir", "search_text"} <= set(reg.names())


def test_broken_plugins_are_reported_by_file_and_the_rest_load(tmp_path: Path) -> None:
    folder = tmp_path / "plugins"
    write_plugin(folder, "good.py", "good_tool")
    (folder / "syntax.py").write_text("def (:\n")
    (folder / "exits.py").write_text("import sys\nsys.exit(3)\n")
    (folder / "empty.py").write_text("X = 1\n")
    write_plugin(folder, "badname.py", "bad name!")
    (folder / "_private.py").write_text("raise RuntimeError('never imported')\n")
    reg, report = load_tools([folder], include_bundled=False)
    assert reg.names() == ["good_tool"]
    text = "\n".join(report.errors)
    for name in ("syntax.py", "exits.py", "empty.py", "badname.py"):
        assert str(folder / name) in text
    assert "_private.py" not in text
    assert len(report.errors) == 4
    assert reg.get("good_tool").source == str(folder / "good.py")  # type: ignore[union-attr]


def test_missing_folder_is_reported(tmp_path: Path) -> None:
    _, report = load_tools([tmp_path / "nowhere"], include_bundled=False)
    assert report.errors == [f"{tmp_path / 'nowhere'}: tools folder not found."]


def test_registry_add_refuses_a_duplicate_directly() -> None:
    class A(BaseModel):
        pass

    reg = Registry([Tool("t", "x", A, lambda a, c: "", source="/a.py")])
    with pytest.raises(ValueError, match=r"/b\.py and /a\.py"):
        reg.add(Tool("t", "y", A, lambda a, c: "", source="/b.py"))


def test_tool_context_defaults(tmp_path: Path) -> None:
    ctx = ToolContext(workspace=tmp_path, timeout_s=1.0, output_cap=100)
    assert not ctx.cancel.is_set()


def test_an_unpaired_surrogate_is_refused_with_a_clear_reason() -> None:
    """Not "Invalid JSON: unexpected end of hex escape", which points nowhere."""
    from agent_cli.tools.loader import load_tools
    from agent_cli.tools.registry import CallRejected

    registry, _ = load_tools([])
    with pytest.raises(CallRejected, match="unpaired UTF-16 surrogate"):
        registry.validate("t1", "write_file", {"path": "a\ud800.txt", "content": "x"})
    # a proper pair is one code point and passes
    call = registry.validate("t2", "write_file", {"path": "a\U0001F600.txt", "content": "x"})
    assert call.shown_args()["path"] == "a\U0001F600.txt"
