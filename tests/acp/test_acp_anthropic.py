"""`agent-cli acp` with the real anthropic SDK against the loopback fake Messages API: streamed
text reaches the client as it arrives, a write call asks, a cancel mid-stream answers
"cancelled", and the model's stop reasons map to ACP's."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tests.acp.harness import Recorder, agent, log_records, prompting, script, session_in, until
from tests.fakes.anthropic_server import FakeAnthropic, Reply, text_reply, tool_reply


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-not-a-real-key")


def _args(fake: FakeAnthropic, tmp_path: Path, log: Path) -> list[str]:
    config = tmp_path / "c.toml"
    config.write_text("retries = 0\n", encoding="utf-8")
    return ["--provider", "anthropic", "--base-url", fake.base_url, "--model", "claude-test",
            "--config", str(config), "--log", str(log)]


def test_a_write_call_through_the_real_sdk(tmp_path: Path, workspace: Path,
                                           api_key: None) -> None:
    log = tmp_path / "s.jsonl"
    client = Recorder(policy="allow")
    with FakeAnthropic() as fake:
        fake.add(tool_reply(("t1", "write_file", {"path": "out.md", "content": "# hi\n"}),
                            text="Writing it."),
                 text_reply("All written down, in small pieces of streamed text."))

        async def scenario() -> str:
            async with session_in(workspace, client, *_args(fake, tmp_path, log),
                                  stderr=tmp_path / "e.txt") as (conn, new):
                answer = await conn.prompt(session_id=new.session_id,
                                           prompt=[{"type": "text", "text": "write out.md"}])
                return str(answer.stop_reason)

        assert asyncio.run(scenario()) == "end_turn"
    assert (workspace / "out.md").read_text() == "# hi\n"
    assert client.questions[0]["toolCall"]["rawInput"] == {"path": "out.md", "content": "# hi\n"}
    chunks = [u for u in client.updates if u["sessionUpdate"] == "agent_message_chunk"
              and "[agent-cli]" not in u["content"]["text"]]
    assert len(chunks) > 2  # streamed in deltas, not one block at the end
    assert "Writing it." in client.text() and "in small pieces" in client.text()
    [approval] = [r for r in log_records(log) if r["type"] == "approval"]
    assert (approval["decision"], approval["by"]) == ("approved", "user")


def test_cancel_while_the_model_streams(tmp_path: Path, workspace: Path, api_key: None) -> None:
    log = tmp_path / "s.jsonl"
    client = Recorder()
    with FakeAnthropic() as fake:
        fake.add(Reply(content=[{"type": "text", "text": "word " * 400}], event_delay_s=0.2))

        async def scenario() -> str:
            async with session_in(workspace, client, *_args(fake, tmp_path, log),
                                  stderr=tmp_path / "e.txt") as (conn, new):
                turn = prompting(conn, new.session_id, "talk")
                await until(lambda: "word" in client.text(), "the first streamed words")
                await conn.cancel(session_id=new.session_id)
                return str((await asyncio.wait_for(turn, 120)).stop_reason)

        assert asyncio.run(scenario()) == "cancelled"
    records = log_records(log)
    assert [r["reason"] for r in records if r["type"] == "turn_end"] == ["interrupted"]
    assert not [r for r in records if r["type"] == "model_reply"]  # an unfinished reply: none


@pytest.mark.parametrize("stop,expected", [("max_tokens", "max_tokens"),
                                           ("refusal", "refusal")])
def test_stop_reasons_map_to_acps(stop: str, expected: str, tmp_path: Path,
                                  workspace: Path) -> None:
    play = script(tmp_path / "s.json", [{"content": [{"type": "text", "text": "cut"}],
                                         "stop_reason": stop}])
    client = Recorder()

    async def scenario() -> str:
        async with agent(client, "--script", str(play), stderr=tmp_path / "e.txt") as conn:
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            answer = await conn.prompt(session_id=new.session_id,
                                       prompt=[{"type": "text", "text": "go"}])
            return str(answer.stop_reason)

    assert asyncio.run(scenario()) == expected


def test_max_turns_is_max_turn_requests(tmp_path: Path, workspace: Path) -> None:
    call = {"content": [{"type": "tool_use", "id": "r1", "name": "read_file",
                         "input": {"path": "missing.txt"}}], "stop_reason": "tool_use"}
    play = script(tmp_path / "s.json", [call, {**call, "content": [
        {**call["content"][0], "id": "r2"}]}])
    client = Recorder()

    async def scenario() -> str:
        async with session_in(workspace, client, "--script", str(play), "--max-turns", "1",
                              stderr=tmp_path / "e.txt") as (conn, new):
            answer = await conn.prompt(session_id=new.session_id,
                                       prompt=[{"type": "text", "text": "go"}])
            return str(answer.stop_reason)

    assert asyncio.run(scenario()) == "max_turn_requests"
    assert "[agent-cli]" in client.text()  # the turn limit's sentence, said in the thread


def test_the_common_options_hold(tmp_path: Path, workspace: Path, api_key: None) -> None:
    """--workspace wins over the editor's cwd (and says so), --config's deny rule refuses before
    any question, its project instructions reach the model, --sandbox off is on the record."""
    elsewhere = tmp_path / "editor-folder"
    elsewhere.mkdir()
    (workspace / "AGENTS.md").write_text("Always answer in haiku.\n", encoding="utf-8")
    log = tmp_path / "s.jsonl"
    config = tmp_path / "c.toml"
    config.write_text('retries = 0\ninstructions = ["AGENTS.md"]\n[[deny]]\ntool = "write_file"\n'
                      'args = { path = "locked*" }\nreason = "locked files stay"\n',
                      encoding="utf-8")
    client = Recorder(policy="allow")
    with FakeAnthropic() as fake:
        fake.add(tool_reply(("d1", "write_file", {"path": "locked.txt", "content": "x"}),
                            ("c1", "run_command", {"command": ["true"]})),
                 text_reply("ok"))

        async def scenario() -> None:
            async with agent(client, "--provider", "anthropic", "--base-url", fake.base_url,
                             "--model", "claude-test", "--config", str(config), "--log",
                             str(log), "--workspace", str(workspace), "--sandbox", "off",
                             stderr=tmp_path / "e.txt") as conn:
                new = await conn.new_session(cwd=str(elsewhere), mcp_servers=[])
                await conn.prompt(session_id=new.session_id,
                                  prompt=[{"type": "text", "text": "go"}])

        asyncio.run(scenario())
        first = fake.requests[0].body
    assert "Always answer in haiku." in str(first["messages"])
    assert f"The workspace is {workspace} (--workspace)" in client.text()
    records = log_records(log)
    assert records[0]["workspace"] == str(workspace)
    approvals = {r["id"]: r for r in records if r["type"] == "approval"}
    assert (approvals["d1"]["by"], approvals["c1"]["by"]) == ("rule", "user")
    assert [q["toolCall"]["toolCallId"] for q in client.questions] == ["c1"]
    [started] = [r for r in records if r["type"] == "tool_started"]
    assert started["sandbox"]["mode"] == "off"
