"""The one pin-file helper (tools/pin_file.py) behind plugin pins and MCP tool pins: files written
before it still load, a write that fails leaves the old pins and no stray file, and a tool
definition no UTF-8 encoder can write (a lone surrogate, which JSON allows) still pins."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from agent_cli.tools.mcp.pins import PinStore, definition_hash
from agent_cli.tools.pin_file import read_pin_file, write_pin_file
from agent_cli.tools.trust import PluginPins


def _definition(description: str) -> dict[str, object]:
    return {"name": "t", "description": description, "inputSchema": {"type": "object"}}


def test_pins_written_in_the_old_layouts_still_load(tmp_path: Path) -> None:
    plugin = tmp_path / "p.py"
    plugin.write_bytes(b"x = 1\n")
    import hashlib

    digest = hashlib.sha256(b"x = 1\n").hexdigest()
    old_plugin_pins = tmp_path / "plugin-pins.json"
    old_plugin_pins.write_text(json.dumps(  # the layout trust.py wrote: indent 1, ASCII
        {"version": 1, "files": {str(plugin.resolve()): {"sha256": digest, "size": 6,
                                                         "trusted_at": 1.0}}},
        indent=1, ensure_ascii=True, sort_keys=True) + "\n")
    pins = PluginPins(old_plugin_pins)
    assert pins.problem is None
    check = pins.check(plugin, plugin.read_bytes())
    assert check.ok and not check.first_use

    definition = _definition("Zeit für die Uhr: «jetzt»")
    old_mcp_pins = tmp_path / "mcp-pins.json"
    old_mcp_pins.write_text(json.dumps(  # the layout mcp_pins.py wrote: indent 2, raw UTF-8
        {"version": 1, "servers": {"time": {"pinned_at": 1.0, "tools": {"t": {
            "hash": definition_hash(definition), "definition": definition}}}}},
        indent=2, ensure_ascii=False, sort_keys=True) + "\n", encoding="utf-8")
    result = PinStore(old_mcp_pins).check("time", {"t": definition})
    assert not result.first_use and result.held == {}


def test_a_lone_surrogate_in_a_definition_still_pins(tmp_path: Path) -> None:
    """JSON lets a server send "\\ud800"; the pin must be written (and match next time), not
    fail the server's start with an encoding error."""
    definition = _definition("time \ud800 now")
    store = PinStore(tmp_path / "mcp-pins.json")
    assert store.check("s", {"t": definition}).first_use
    again = PinStore(tmp_path / "mcp-pins.json").check("s", {"t": definition})
    assert not again.first_use and again.held == {}


@pytest.mark.parametrize("name", ["plugin-pins.json", "mcp-pins.json"])
def test_a_failed_write_keeps_the_old_pins_and_leaves_no_temporary_file(tmp_path: Path,
                                                                        name: str) -> None:
    path = tmp_path / "home" / name
    write_pin_file(path, {"version": 1, "servers": {}, "files": {}})
    before = path.read_bytes()
    with pytest.raises(TypeError):
        write_pin_file(path, {"version": 1, "servers": {"s": {object()}}})
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == [name]


def test_a_failed_mcp_pin_leaves_no_temporary_file(tmp_path: Path) -> None:
    store = PinStore(tmp_path / "mcp-pins.json")
    store.accept("s", {"t": _definition("d")})
    before = store.path.read_bytes()
    with pytest.raises(TypeError):
        store.accept("s", {"t": {**_definition("d"), "annotations": {"x": {1, 2}}}})
    assert store.path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mcp-pins.json"]


def test_the_file_is_private_and_replaced_not_rewritten(tmp_path: Path) -> None:
    os.umask(0o022)
    path = tmp_path / "home" / "mcp-pins.json"
    write_pin_file(path, {"a": 1})
    first = path.stat().st_ino
    write_pin_file(path, {"a": 2})
    assert path.stat().st_ino != first  # a new file renamed over the old: never half-written
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert read_pin_file(path).data == {"a": 2}


@pytest.mark.parametrize("content,problem", [
    (b"{not json", "could not be read"),
    (b"\xff\xfe", "could not be read"),
    (b"[1, 2]", "not a JSON object"),
])
def test_a_bad_file_is_a_problem_never_an_exception(tmp_path: Path, content: bytes,
                                                    problem: str) -> None:
    path = tmp_path / "pins.json"
    path.write_bytes(content)
    read = read_pin_file(path)
    assert read.data is None and read.problem is not None and problem in read.problem
    assert read_pin_file(tmp_path / "absent.json") == type(read)(None)
    # Each store says what a bad file means for it: plugin pins start afresh and say so,
    # MCP pins hold every tool until accepted again.
    assert PluginPins(path).problem is not None
    assert set(PinStore(path).check("s", {"t": _definition("d")}).held) == {"t"}
