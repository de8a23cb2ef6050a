"""The live sinks take every event type, hostile, and end their dispatch in `assert_never`.

The replay views have always named every event type; the live ones (ui/render.py's Renderer and
StatusOnly, ui/status.py's TerminalView) now do too, so a new event type is a mypy error until
someone decides how the terminal draws it. Here each of them is handed one event of every type
the engine emits (the logged ones built from the event models with every string hostile, as
test_boundary.py builds them, and the two transient ones), and must neither raise nor write a raw
control character. A static check makes sure the `assert_never` stays at the end of each match.
"""

from __future__ import annotations

import ast
import io
from pathlib import Path

import pytest
from rich.console import Console

from agent_cli import events as ev
from agent_cli.ui.render import Renderer, StatusOnly
from agent_cli.ui.status import TerminalView

from .conftest import assert_terminal_clean, make_console
from .test_boundary import EVENT_TYPES, PAYLOAD, _record

UI = Path(__file__).resolve().parents[2] / "agent_cli" / "ui"
LIVE_SINKS = {"render.py": {"Renderer", "StatusOnly"}, "status.py": {"TerminalView"}}


def every_event() -> list[ev.AnyEvent]:
    out: list[ev.AnyEvent] = []
    for seq, model in enumerate(EVENT_TYPES, start=1):
        out.append(model.model_validate({"v": 1, "seq": seq, **_record(model)}))
    out.append(ev.TextDelta(PAYLOAD))
    out.append(ev.ToolOutputDelta(PAYLOAD, PAYLOAD))
    return out


def test_every_event_type_is_built() -> None:
    built = {type(e) for e in every_event()}
    assert built == set(EVENT_TYPES) | {ev.TextDelta, ev.ToolOutputDelta}


@pytest.mark.parametrize("sink", ["Renderer", "Renderer-repl", "StatusOnly"])
def test_renderers_take_every_event_and_write_nothing_raw(sink: str) -> None:
    console, buf = make_console()
    draw = {"Renderer": lambda: Renderer(console), "Renderer-repl": lambda: Renderer(
        console, repl=True), "StatusOnly": lambda: StatusOnly(console)}[sink]()
    for event in every_event():
        draw(event)
    assert_terminal_clean(buf.getvalue())
    assert buf.getvalue().strip(), "something was drawn"


@pytest.mark.parametrize("markdown", [True, False])
def test_terminal_view_takes_every_event_and_writes_nothing_raw(markdown: bool) -> None:
    buf = io.StringIO()
    console = Console(file=buf, force_terminal=False, width=100, highlight=False)
    view = TerminalView(Renderer(console, repl=True), console, markdown=markdown)
    for event in every_event():
        view(event)
    view.stop()
    assert_terminal_clean(buf.getvalue())
    assert len(view.results.results) == 1


def test_terminal_view_on_a_terminal_takes_every_event() -> None:
    console, _buf = make_console()
    view = TerminalView(Renderer(console, repl=True), console)
    try:
        for event in every_event():
            view(event)
    finally:
        view.stop()
    assert view.spinner is None


def _sink_matches(path: Path, classes: set[str]) -> dict[str, ast.Match]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    out: dict[str, ast.Match] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name in classes:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == "__call__":
                    matches = [n for n in ast.walk(item) if isinstance(n, ast.Match)]
                    assert len(matches) == 1, f"{node.name}.__call__ dispatches in one match"
                    out[node.name] = matches[0]
    return out


@pytest.mark.parametrize("module", sorted(LIVE_SINKS))
def test_live_sinks_end_in_assert_never(module: str) -> None:
    found = _sink_matches(UI / module, LIVE_SINKS[module])
    assert set(found) == LIVE_SINKS[module]
    for name, match in found.items():
        last = match.cases[-1]
        assert isinstance(last.pattern, ast.MatchAs) and last.pattern.pattern is None, name
        assert last.guard is None, name
        [stmt] = last.body
        assert isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call), name
        assert ast.unparse(stmt.value) == "assert_never(event)", name
        guarded = [ast.unparse(c.pattern) for c in match.cases if c.guard is not None]
        assert not guarded, (f"{name}: a guarded case leaves its type to the catch-all; "
                             f"test inside the case instead: {guarded}")
