"""The MCP views (ui/views/mcp.py) over the hub's frozen records: whole output on a pinned
Console for a canonical state, and nothing a server sends reaches the terminal raw."""

from __future__ import annotations

import io

from rich.console import Console, RenderableType

from agent_cli.tools.mcp.state import PromptInfo, ServerStatus, ToolStatus
from agent_cli.ui.views.mcp import MCPPrompts, MCPStatus, MCPToolList

READ = ToolStatus(name="time__now", remote="now", effect="read", description="The time now.",
                  warning="", status="offered", why=(), claims="read-only (unverified)",
                  annotations='{"readOnlyHint":true}', schema_hash="ab12")
HELD = ToolStatus(name="time__zone\x1b[2J", remote="zone", effect="write", description="Zones.",
                  warning="", status="held", why=("description changed",),
                  claims="may change things (default) (unverified)", annotations="{}",
                  schema_hash="cd34")
READY = ServerStatus(name="time", state="ready", reason="", trusted=True, mode="auto",
                     command="python -m mcp_server_time", progress="", protocol="2025-11-25",
                     info="time 1.0", errlog="/h/time.log", pinned=True, tools=(READ, HELD))
FAILED = ServerStatus(name="gone", state="failed", reason="it exited", trusted=False,
                      mode="legacy", command="srv", progress="", protocol="", info="",
                      errlog="/h/gone.log", pinned=False, tools=())


def lines(view: RenderableType) -> list[str]:
    console = Console(file=io.StringIO(), width=80, force_terminal=False, color_system=None)
    console.print(view)
    out = console.file.getvalue()  # type: ignore[attr-defined]
    assert "\x1b" not in out  # no escape from a server reaches the terminal
    return [line.rstrip() for line in out.splitlines()]


def test_status_shows_each_server_and_its_tools_whole() -> None:
    assert lines(MCPStatus([READY, FAILED])) == [
        "time  ready  trusted  mode auto  protocol 2025-11-25  time 1.0",
        "  command: python -m mcp_server_time",
        "  stderr: /h/time.log",
        "  tool                 effect    status     server says",
        "  time__now            read      offered    read-only (unverified)",
        "  time__zone\\x1b[2J    write     held       may change things (default)",
        "                                            (unverified)",
        "    held time__zone\\x1b[2J: description changed",
        "",
        "gone  failed  untrusted  mode legacy",
        "  command: srv",
        "  it exited",
        "  stderr: /h/gone.log",
        "",
        "Held tools changed since you first used their server; review the changes above,",
        "then accept them with /mcp accept NAME (REPL) or agent-cli mcp accept NAME.",
        "Effect: write unless the server is trusted in config AND the tool says",
        "read-only; the server's annotations are claims, not checked.",
    ]


def test_a_ready_server_not_yet_pinned_and_a_running_call_are_said() -> None:
    srv = ServerStatus(**{**READY.__dict__, "pinned": False, "tools": (READ,),
                          "progress": "now: 1/2 \u202ehalf"})
    shown = lines(MCPStatus([srv]))
    assert "  not pinned yet: the first session that uses this server records its tool" in shown
    assert "  running: now: 1/2 <U+202E>half" in shown  # a bidi override shown as a token
    assert not any("Held tools" in line for line in shown)


def test_tool_list_gives_source_schema_and_reasons() -> None:
    assert lines(MCPToolList([READY, FAILED])) == [
        "time__now  read  offered",
        "  source: mcp:time",
        "  schema ab12",
        "  The time now.",
        "time__zone\\x1b[2J  write  held",
        "  source: mcp:time",
        "  schema cd34",
        "  why: description changed",
        "  Zones.",
        "MCP server gone failed: it exited",
    ]


def test_prompts_read_as_the_command_that_sends_them() -> None:
    prompt = PromptInfo("time", "review", "Review a file.", [("path", True), ("style", False)])
    assert lines(MCPPrompts([prompt])) == [
        "/mcp prompt time review path=... [style=...]  Review a file.", ""]
    assert lines(MCPPrompts([])) == ["No running MCP server offers prompts."]
