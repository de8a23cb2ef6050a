"""session/cancel ends what is running: a command's processes are gone afterwards, an open
permission question resolves as cancelled, and the prompt answers stopReason "cancelled"."""

from __future__ import annotations

import asyncio
import os
import secrets
from pathlib import Path

from tests.acp.harness import (
    Recorder,
    command_call,
    log_records,
    prompting,
    script,
    session_in,
    text,
    until,
    write_call,
)


def _processes_with(marker: str) -> list[int]:
    """Pids (as this test sees them) whose command line holds `marker`: the command may run in
    a PID namespace of its own, so its pid inside is no use here."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if marker.encode() in argv:
            found.append(int(entry))
    return found


def test_cancel_during_a_running_command_ends_its_processes(tmp_path: Path,
                                                            workspace: Path) -> None:
    marker = f"{secrets.randbelow(10**6) + 10**6}.5"  # a `sleep` of ~12 days, named uniquely
    play = script(tmp_path / "script.json", [
        command_call("c1", ["sh", "-c", f"echo started up; exec sleep {marker}"]),
        text("never reached")])
    log = tmp_path / "session.jsonl"
    client = Recorder(policy="allow")

    async def scenario() -> str:
        async with session_in(workspace, client, "--script", str(play), "--log", str(log),
                              stderr=tmp_path / "stderr.txt") as (conn, new):
            turn = prompting(conn, new.session_id, "wait")
            await until(lambda: _processes_with(marker), "the command to start")
            await until(lambda: any("started up" in str(u.get("content")) for u in client.updates
                                    if u.get("status") == "in_progress"),
                        "the command's output, live")
            await conn.cancel(session_id=new.session_id)
            answer = await asyncio.wait_for(turn, 120)
            await until(lambda: not _processes_with(marker), "the command's processes to end")
            return str(answer.stop_reason)

    assert asyncio.run(scenario()) == "cancelled"
    records = log_records(log)
    [result] = [r for r in records if r["type"] == "tool_result"]
    assert result["id"] == "c1" and result["is_error"]
    assert [r["reason"] for r in records if r["type"] == "turn_end"] == ["interrupted"]
    assert client.updates[-1]["sessionUpdate"] != "tool_call" and any(
        u.get("toolCallId") == "c1" and u.get("status") == "failed" for u in client.updates)


def test_cancel_during_a_pending_question_resolves_it_as_cancelled(tmp_path: Path,
                                                                   workspace: Path) -> None:
    play = script(tmp_path / "script.json", [write_call("w1", "a.txt", "A\n"),
                                             text("never reached")])
    log = tmp_path / "session.jsonl"
    client = Recorder(policy="hold")

    async def scenario() -> str:
        async with session_in(workspace, client, "--script", str(play), "--log", str(log),
                              stderr=tmp_path / "stderr.txt") as (conn, new):
            turn = prompting(conn, new.session_id, "write")
            await until(lambda: client.held is not None, "the permission question")
            await conn.cancel(session_id=new.session_id)
            answer = await asyncio.wait_for(turn, 120)
            # As the protocol asks, the client answers its open question "cancelled" too; the
            # agent has already resolved it and ignores the late answer.
            assert client.held is not None
            client.held.set_result({"outcome": "cancelled"})
            return str(answer.stop_reason)

    assert asyncio.run(scenario()) == "cancelled"
    assert not (workspace / "a.txt").exists()
    records = log_records(log)
    [approval] = [r for r in records if r["type"] == "approval"]
    assert (approval["decision"], approval["by"], approval["via"]) == ("denied", "user",
                                                                       "acp:test-editor")
    assert [r["reason"] for r in records if r["type"] == "turn_end"] == ["interrupted"]


def test_a_cancelled_answer_denies_the_call(tmp_path: Path, workspace: Path) -> None:
    """The client itself answering {outcome: cancelled} (its user closed the question) is a no."""
    play = script(tmp_path / "script.json", [write_call("w1", "a.txt", "A\n"), text("ok")])
    log = tmp_path / "session.jsonl"
    client = Recorder(policy="hold")

    async def scenario() -> str:
        async with session_in(workspace, client, "--script", str(play), "--log", str(log),
                              stderr=tmp_path / "stderr.txt") as (conn, new):
            turn = prompting(conn, new.session_id, "write")
            await until(lambda: client.held is not None, "the permission question")
            assert client.held is not None
            client.held.set_result({"outcome": "cancelled"})
            return str((await asyncio.wait_for(turn, 120)).stop_reason)

    assert asyncio.run(scenario()) == "cancelled"
    assert not (workspace / "a.txt").exists()
    [approval] = [r for r in log_records(log) if r["type"] == "approval"]
    assert (approval["decision"], approval["by"]) == ("denied", "user")


def test_sigterm_during_a_running_command_ends_it_and_closes_the_log(tmp_path: Path,
                                                                   workspace: Path) -> None:
    """The editor ending the agent (SIGTERM) takes the cancel path: the command's processes end,
    the log is closed with its session_end, the process exits."""
    marker = f"{secrets.randbelow(10**6) + 10**6}.25"
    play = script(tmp_path / "script.json", [command_call("c1", ["sleep", marker])])
    log = tmp_path / "session.jsonl"
    client = Recorder(policy="allow")

    async def scenario() -> int:
        async with session_in(workspace, client, "--script", str(play), "--log", str(log),
                              stderr=tmp_path / "stderr.txt") as (conn, new):
            turn = prompting(conn, new.session_id, "wait")
            await until(lambda: _processes_with(marker), "the command to start")
            client.proc.terminate()
            code = await asyncio.wait_for(client.proc.wait(), 120)
            await until(lambda: not _processes_with(marker), "the command's processes to end")
            turn.cancel()  # (never answered: the agent ended first)
            return int(code)

    assert asyncio.run(scenario()) == 143
    records = log_records(log)
    assert records[-1]["type"] == "session_end" and records[-1]["reason"] == "signal SIGTERM"
    assert [r["id"] for r in records if r["type"] == "tool_result"] == ["c1"]
