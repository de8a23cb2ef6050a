"""Which client wrote an `mcpServers` file, and what its keys mean (tools/mcp/foreign.py)."""

from __future__ import annotations

from pathlib import Path

from agent_cli.tools.mcp.foreign import file_shape, translate


def test_file_shape_is_gemini_only_on_gemini_signs(tmp_path: Path) -> None:
    plain = {"mcpServers": {"a": {"url": "http://h/mcp"}}}
    assert file_shape(tmp_path / ".mcp.json", plain) == "generic"
    assert file_shape(tmp_path / ".gemini" / "settings.json", plain) == "gemini"
    assert file_shape(tmp_path / "s.json", {**plain, "selectedAuthType": "x"}) == "gemini"
    assert file_shape(tmp_path / ".claude.json", {**plain, "theme": "dark"}) == "generic"
    both = {"mcpServers": {"a": {"url": "http://h/sse"}, "b": {"httpUrl": "http://h/mcp"}}}
    assert file_shape(tmp_path / "s.json", both) == "gemini"


def test_translate_maps_and_names_every_dropped_key() -> None:
    entry, dropped = translate({"url": "http://h/sse", "httpUrl": "http://h/mcp",
                                "includeTools": "notalist", "disabled": "yes", "odd": 1},
                               "gemini", ())
    assert entry == {"url": "http://h/mcp", "type": "http"}  # Gemini takes httpUrl first
    assert len(dropped) == 4
    assert any(d.startswith("url (the file also has httpUrl") for d in dropped)
    assert any("includeTools is not a list" in d for d in dropped)
    assert any("disabled = 'yes'" in d for d in dropped)
    assert any(d.startswith("odd (") for d in dropped)
    typed, _ = translate({"type": "sse", "url": "http://h/x"}, "generic", ())
    assert typed["type"] == "sse"
    explicit, _ = translate({"type": "streamableHttp", "url": "http://h/x"}, "gemini", ())
    assert explicit["type"] == "http"  # an explicit type wins over the shape
    ignored, dropped = translate({"command": "x", "trust": True}, "gemini", ("trust",))
    assert ignored == {"command": "x"} and dropped == []  # the caller says why
