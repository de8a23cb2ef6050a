"""A write call asks the editor (session/request_permission) with exactly two options and the
exact arguments; allow runs it (and the log says the user approved, via the editor), reject does
not. Driven end to end by the protocol package's own client."""

from __future__ import annotations

import asyncio
from pathlib import Path

from tests.acp.harness import (
    Recorder,
    agent,
    log_records,
    prompting,
    script,
    session_in,
    text,
    until,
    write_call,
)


def _run(policy: str, tmp_path: Path, workspace: Path) -> tuple[Recorder, str, Path]:
    replies = [write_call("w1", "notes.txt", "hello from the model\n"), text("Done.")]
    play = script(tmp_path / "script.json", replies)
    log = tmp_path / "session.jsonl"
    client = Recorder(policy=policy)

    async def scenario() -> str:
        async with session_in(workspace, client, "--script", str(play), "--log", str(log),
                              stderr=tmp_path / "stderr.txt") as (conn, new):
            answer = await conn.prompt(session_id=new.session_id,
                                       prompt=[{"type": "text", "text": "write the notes"}])
            return str(answer.stop_reason)

    return client, asyncio.run(scenario()), log


def test_allowed_write_runs_and_is_logged_as_the_users(tmp_path: Path, workspace: Path) -> None:
    client, stop, log = _run("allow", tmp_path, workspace)
    assert stop == "end_turn"
    assert (workspace / "notes.txt").read_text() == "hello from the model\n"
    [question] = client.questions
    assert [(o["optionId"], o["kind"]) for o in question["options"]] == [
        ("allow", "allow_once"), ("reject", "reject_once")]
    call = question["toolCall"]
    assert call["toolCallId"] == "w1"
    assert call["rawInput"] == {"path": "notes.txt", "content": "hello from the model\n"}
    assert call["kind"] == "edit"
    assert any("hello from the model" in c["content"]["text"] for c in call["content"])  # preview
    [approval] = [r for r in log_records(log) if r["type"] == "approval"]
    assert (approval["decision"], approval["by"]) == ("approved", "user")
    assert approval["via"] == "acp:test-editor"
    # The client saw the call's life: proposed (pending), running, done with a diff.
    states = [(u["sessionUpdate"], u.get("status")) for u in client.updates
              if u.get("toolCallId") == "w1"]
    assert states == [("tool_call", "pending"), ("tool_call_update", "in_progress"),
                      ("tool_call_update", "completed")]
    done = next(u for u in client.updates if u.get("status") == "completed")
    [diff] = [c for c in done["content"] if c["type"] == "diff"]
    assert diff["path"] == str(workspace / "notes.txt")
    assert diff.get("oldText") is None and diff["newText"] == "hello from the model\n"
    assert "Done." in client.text()


def test_rejected_write_is_not_run(tmp_path: Path, workspace: Path) -> None:
    client, stop, log = _run("reject", tmp_path, workspace)
    assert stop == "end_turn"
    assert not (workspace / "notes.txt").exists()
    [approval] = [r for r in log_records(log) if r["type"] == "approval"]
    assert (approval["decision"], approval["by"], approval["via"]) == ("denied", "user",
                                                                       "acp:test-editor")
    assert [u.get("status") for u in client.updates if u.get("toolCallId") == "w1"] == [
        "pending", "failed", "failed"]


def test_a_commands_diff_reaches_the_editor_redacted(tmp_path: Path, workspace: Path) -> None:
    """A file a command wrote is in the diff, but a secret in it is redacted as in the log: the
    model never saw the file whole, and the stream to the editor is a record too."""
    from tests.acp.harness import command_call

    secret = "sk-ant-api03-" + "Q" * 40
    replies = [command_call("c1", ["sh", "-c", f"printf 'key {secret}\\n' > made.txt"]),
               text("made")]
    play = script(tmp_path / "script.json", replies)
    client = Recorder(policy="allow")

    async def scenario() -> None:
        async with agent(client, "--script", str(play), stderr=tmp_path / "e.txt") as conn:
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            await conn.prompt(session_id=new.session_id,
                              prompt=[{"type": "text", "text": "make it"}])

    asyncio.run(scenario())
    assert secret in (workspace / "made.txt").read_text()
    done = next(u for u in client.updates if u.get("toolCallId") == "c1"
                and u.get("status") == "completed")
    [diff] = [c for c in done["content"] if c["type"] == "diff"]
    assert diff["path"] == str(workspace / "made.txt")
    assert "[REDACTED:anthropic]" in diff["newText"] and secret not in str(done)


def test_read_only_mode_refuses_writes_without_asking(tmp_path: Path, workspace: Path) -> None:
    play = script(tmp_path / "script.json", [write_call("w1", "x.txt", "x"), text("ok")])
    log = tmp_path / "s.jsonl"
    client = Recorder(policy="allow")

    async def scenario() -> None:
        async with session_in(workspace, client, "--script", str(play), "--log", str(log),
                              stderr=tmp_path / "e.txt") as (conn, new):
            assert new.modes is not None and new.modes.current_mode_id == "normal"
            assert [m.id for m in new.modes.available_modes] == ["normal", "read-only"]
            await conn.set_session_mode(session_id=new.session_id, mode_id="read-only")
            await conn.prompt(session_id=new.session_id,
                              prompt=[{"type": "text", "text": "write"}])

    asyncio.run(scenario())
    assert client.questions == [] and not (workspace / "x.txt").exists()
    assert {"sessionUpdate": "current_mode_update", "currentModeId": "read-only"} in \
        client.updates
    [approval] = [r for r in log_records(log) if r["type"] == "approval"]
    assert (approval["decision"], approval["by"]) == ("denied", "policy")


def test_a_yes_covers_one_call(tmp_path: Path, workspace: Path) -> None:
    """Two identical write calls in one reply: two questions, and the second answer decides the
    second call alone."""
    same = {"path": "twice.txt", "content": "same\n"}
    reply = {"content": [{"type": "tool_use", "id": "a1", "name": "write_file", "input": same},
                         {"type": "tool_use", "id": "a2", "name": "write_file", "input": same}],
             "stop_reason": "tool_use"}
    play = script(tmp_path / "script.json", [reply, text("ok")])
    log = tmp_path / "s.jsonl"
    client = Recorder(policy="hold")

    async def scenario() -> None:
        async with session_in(workspace, client, "--script", str(play), "--log", str(log),
                              stderr=tmp_path / "e.txt") as (conn, new):
            turn = prompting(conn, new.session_id, "go")
            await until(lambda: client.held is not None, "the first question")
            first = client.held
            assert first is not None
            first.set_result({"optionId": "allow"})
            await until(lambda: client.held is not first, "the second question")
            assert client.held is not None
            client.held.set_result({"optionId": "reject"})
            await turn

    asyncio.run(scenario())
    assert [q["toolCall"]["toolCallId"] for q in client.questions] == ["a1", "a2"]
    decisions = [(r["id"], r["decision"]) for r in log_records(log) if r["type"] == "approval"]
    assert decisions == [("a1", "approved"), ("a2", "denied")]


def test_the_editor_leaving_during_a_question_denies_and_closes_the_log(
        tmp_path: Path, workspace: Path) -> None:
    play = script(tmp_path / "script.json", [write_call("w1", "gone.txt", "x"), text("ok")])
    log = tmp_path / "s.jsonl"
    client = Recorder(policy="hold")

    async def scenario() -> None:
        async with session_in(workspace, client, "--script", str(play), "--log", str(log),
                              stderr=tmp_path / "e.txt") as (conn, new):
            turn = prompting(conn, new.session_id, "go")
            await until(lambda: client.held is not None, "the question")
        turn.cancel()  # (the connection is closed: it is never answered)
        await asyncio.wait_for(client.proc.wait(), 120)

    asyncio.run(scenario())
    assert not (workspace / "gone.txt").exists()
    records = log_records(log)
    assert [(r["decision"], r["by"]) for r in records if r["type"] == "approval"] == [
        ("denied", "user")]
    assert records[-1]["type"] == "session_end"
