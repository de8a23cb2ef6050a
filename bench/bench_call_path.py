"""The path of one tool call, measured: which of agent-cli's modules run between the model's
reply arriving and the call's result being logged.

A profiler hook records every agent_cli module whose code runs while one approved write_file
call is proposed, validated, previewed, approved, run and answered (a scripted reply, a
scripted yes, a real log and undo recorder). "own path" leaves out what runs inside the
session's event fan-out (the sinks: log writer, usage meter, context budget, undo recorder);
"with sinks" counts everything. Fewer modules on the own path means fewer corridors a feature
has to be threaded through. Run: python bench/bench_call_path.py [--list]
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path
from types import FrameType
from typing import Any


def _module_of(frame: FrameType) -> str | None:
    name = frame.f_globals.get("__name__", "")
    if isinstance(name, str) and (name.startswith("agent_cli") or name.startswith("tools_d")
                                  or "tools.d" in frame.f_code.co_filename):
        return name if name.startswith("agent_cli") else Path(frame.f_code.co_filename).stem
    return None


def measure() -> tuple[set[str], set[str]]:
    from agent_cli.approval import ScriptedApprover
    from agent_cli.config import Settings
    from agent_cli.providers.scripted import ScriptedProvider
    from agent_cli.session import Session, load_registry

    tmp = Path(tempfile.mkdtemp(prefix="bench-call-path-"))
    ws = tmp / "ws"
    ws.mkdir()
    settings = Settings(provider="scripted")
    replies: list[dict[str, Any]] = [
        {"content": [{"type": "tool_use", "id": "toolu_1", "name": "write_file",
                      "input": {"path": "a.txt", "content": "hello\n"}}],
         "stop_reason": "tool_use"},
        {"content": [{"type": "text", "text": "Done."}], "stop_reason": "end_turn"}]
    registry, _ = load_registry(settings)
    session = Session(settings, workspace=ws, provider=ScriptedProvider(replies),
                      registry=registry, approver=ScriptedApprover(["y"]),
                      log_path=tmp / "session.jsonl")
    session.start()
    own: set[str] = set()
    every: set[str] = set()
    state = {"on": False, "in_sink": 0}
    emit_code = type(session).emit.__code__

    def hook(frame: FrameType, event: str, arg: object) -> None:
        if event not in ("call", "return"):
            return
        if frame.f_code is emit_code:
            state["in_sink"] += 1 if event == "call" else -1
            return
        if event != "call" or not state["on"]:
            return
        mod = _module_of(frame)
        if mod is None:
            return
        every.add(mod)
        if not state["in_sink"]:
            own.add(mod)

    # From the reply to the result: switch on when the call is proposed, off at its result.
    from agent_cli import events as ev

    def watch(event: object) -> None:
        if isinstance(event, ev.ToolProposed):
            state["on"] = True
        elif isinstance(event, ev.ToolResultEvent):
            state["on"] = False

    session.observers_for_bench = watch  # type: ignore[attr-defined]
    original_emit = session.emit

    def emit(event: Any) -> None:
        watch(event)
        original_emit(event)

    session.emit = emit  # type: ignore[method-assign]
    _rewire(session, emit)
    sys.setprofile(hook)
    threading_setprofile(hook)
    try:
        session.send("write a.txt")
    finally:
        sys.setprofile(None)
        threading_setprofile(None)
        session.close()
    assert (ws / "a.txt").read_text() == "hello\n", "the call did not run"
    return own, every


def threading_setprofile(hook: Any) -> None:
    import threading

    threading.setprofile(hook)


def _rewire(session: Any, emit: Any) -> None:
    """Point the engine's emit at the watching one (the loop took the bound method)."""
    for holder in (session.loop, getattr(session.loop, "calls", None)):
        if holder is not None and hasattr(holder, "emit"):
            holder.emit = emit


def main() -> None:
    own, every = measure()
    print(f"one approved write_file call: {len(own)} modules on its own path, "
          f"{len(every)} with every sink")
    if "--list" in sys.argv:
        for name in sorted(every):
            print(("  own   " if name in own else "  sink  ") + name)


if __name__ == "__main__":
    main()
