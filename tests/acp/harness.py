"""A real ACP client (the `agent-client-protocol` package's client side) driving `agent-cli acp`
as a subprocess, and the waits the tests need (for a condition, never for a fixed time)."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import acp
import acp.schema

WAIT_S = 120.0
"""Generous: a loaded 2-core machine starts Python slowly; a wait ends as soon as it holds."""


def dump(model: Any) -> Any:
    if hasattr(model, "model_dump"):
        return model.model_dump(by_alias=True, exclude_none=True, mode="json")
    return model


def script(path: Path, replies: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(replies), encoding="utf-8")
    return path


def write_call(call_id: str, path: str, content: str) -> dict[str, Any]:
    return {"content": [{"type": "tool_use", "id": call_id, "name": "write_file",
                         "input": {"path": path, "content": content}}],
            "stop_reason": "tool_use"}


def command_call(call_id: str, command: list[str]) -> dict[str, Any]:
    return {"content": [{"type": "tool_use", "id": call_id, "name": "run_command",
                         "input": {"command": command}}], "stop_reason": "tool_use"}


def text(answer: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": answer}], "stop_reason": "end_turn"}


@dataclass
class Recorder:
    """The client's side: every update, every permission question; answers come from `policy`
    ("allow", "reject", "hold": wait until the test answers through `held`)."""

    policy: str = "allow"
    updates: list[dict[str, Any]] = field(default_factory=list)
    questions: list[dict[str, Any]] = field(default_factory=list)
    held: asyncio.Future[dict[str, Any]] | None = None
    proc: Any = None
    """The agent's process (asyncio's)."""

    async def request_permission(self, options: Any, session_id: str, tool_call: Any,
                                 **kwargs: Any) -> Any:
        from acp.schema import AllowedOutcome, DeniedOutcome, RequestPermissionResponse

        self.questions.append({"sessionId": session_id, "toolCall": dump(tool_call),
                               "options": [dump(o) for o in options]})
        if self.policy == "hold":
            self.held = asyncio.get_running_loop().create_future()
            raw = await self.held
            if raw.get("outcome") == "cancelled":
                return RequestPermissionResponse(outcome=DeniedOutcome(outcome="cancelled"))
            return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected",
                                                                    option_id=raw["optionId"]))
        option = "allow" if self.policy == "allow" else "reject"
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected",
                                                                option_id=option))

    async def session_update(self, session_id: str, update: Any, **kwargs: Any) -> None:
        self.updates.append(dump(update))

    def kinds(self) -> list[str]:
        return [u["sessionUpdate"] for u in self.updates]

    def text(self, kind: str = "agent_message_chunk") -> str:
        return "".join(u["content"].get("text", "") for u in self.updates
                       if u["sessionUpdate"] == kind)


async def until(condition: Callable[[], Any], what: str, timeout: float = WAIT_S) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)


@asynccontextmanager
async def agent(client: Recorder, *args: str, stderr: Path, cwd: Path | None = None
                ) -> AsyncIterator[Any]:
    """`agent-cli acp ARGS` with `client` connected; yields the connection."""
    err = open(stderr, "ab")  # noqa: SIM115 (closed below, after the process is gone)
    try:
        async with acp.spawn_agent_process(
                client, sys.executable, "-m", "agent_cli", "acp", *args,
                env=dict(os.environ), cwd=str(cwd) if cwd else None,
                transport_kwargs={"stderr": err, "limit": 16 * 1024 * 1024}) as (conn, proc):
            client.proc = proc
            await conn.initialize(protocol_version=1,
                                  client_info=acp.schema.Implementation(name="test-editor",
                                                                        version="1.0"))
            yield conn
    finally:
        err.close()


@asynccontextmanager
async def session_in(workspace: Path, client: Recorder, *args: str, stderr: Path
                     ) -> AsyncIterator[tuple[Any, Any]]:
    """`agent` with one `session/new` in `workspace` (no MCP servers of the client's): yields
    the connection and the new session's answer."""
    async with agent(client, *args, stderr=stderr) as conn:
        yield conn, await conn.new_session(cwd=str(workspace), mcp_servers=[])


def prompting(conn: Any, session_id: str, words: str) -> asyncio.Task[Any]:
    """`session/prompt` with one text block, running while the test does something else."""
    return asyncio.create_task(conn.prompt(session_id=session_id,
                                           prompt=[{"type": "text", "text": words}]))


def log_records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]
