"""Real published MCP servers nobody here wrote, at pinned versions: the reference servers from
npm (everything, filesystem, memory, sequential-thinking; tests/npm/package.json, installed by
.ci/run) and mcp-server-fetch from PyPI (the `test` extra), driven through the real Session.

Outside CI a missing npm install is a skip that says so; in CI (CI=true) it is a failure."""

from __future__ import annotations

import http.server
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agent_cli import events as ev
from agent_cli.config import MCPServer
from tests.mcp.e2e.conftest import PY, answer, loopback_http, need_npm_server
from tests.mcp.test_mcp import Run, calls, done, use, wait_gone

pytestmark = pytest.mark.mcp

PNG_1PX = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c4890000000d49444154789c63f8"
    "cfc0f00f0004850180848a98c60000000049454e44ae426082")


def npm(name: str, marker: str, *args: str, **kw: Any) -> MCPServer:
    return MCPServer(command=str(need_npm_server(name)), args=list(args),
                     env={marker: "1", **kw.pop("env", {})}, mode="legacy", **kw)


def test_filesystem_text_once_true_cut_and_images_as_blocks(workspace: Path, marker: str,
                                                            tmp_path: Path) -> None:
    root = tmp_path / "files"
    root.mkdir()
    big = "".join(f"{i:06d} a line with \"quotes\" and \\ backslashes\n" for i in range(5000))
    assert len(big) > 219_000
    (root / "big.txt").write_text(big)
    (root / "dot.png").write_bytes(PNG_1PX)
    run = Run(workspace, {"fs": npm("mcp-server-filesystem", marker, str(root), trusted=True)},
              [calls(use("t1", "fs__read_text_file", {"path": str(root / "big.txt")}),
                     use("i1", "fs__read_media_file", {"path": str(root / "dot.png")})),
               done()])
    try:
        run.send()
        res = run.results()
        text = res["t1"].content
        assert res["t1"].truncated
        head, rest = text.split("\n\n[... ", 1)
        count, tail = rest.split(" characters cut from the middle", 1)
        tail = tail.split("...]\n\n", 1)[1]
        assert len(head) + int(count) + len(tail) == len(big)  # cut by the true size
        assert big.endswith(tail) and big.startswith(head)  # the kept tail is the file's end
        assert '\\"quotes\\"' not in text  # no JSON-escaped second copy
        image = res["i1"].content
        assert "sent to the model as an image" in image and "iVBOR" not in image
        sent = run.provider.requests[1].messages[-1]["content"]
        block = next(b for b in sent if b["tool_use_id"] == "i1")
        assert [b["type"] for b in block["content"]] == ["text", "image"]
        assert block["content"][1]["source"]["media_type"] == "image/png"
    finally:
        run.close()
    assert wait_gone(marker) == []


def test_memory_results_are_not_doubled(workspace: Path, marker: str, tmp_path: Path) -> None:
    entities = [{"name": "agent-cli", "entityType": "project", "observations": ["has MCP"]}]
    run = Run(workspace, {"mem": npm("mcp-server-memory", marker,
                                     env={"MEMORY_FILE_PATH": str(tmp_path / "mem.jsonl")},
                                     cwd=str(tmp_path))},  # the confined server writes in its cwd
              [calls(use("c1", "mem__create_entities", {"entities": entities})), done()],
              answers=["y"])
    try:
        run.send()
        content = run.results()["c1"].content
        assert content.count('"agent-cli"') == 1, content
        assert "structured content" not in content
        assert json.loads(content)[0]["name"] == "agent-cli"
    finally:
        run.close()


def test_everything_server_tasks_images_instructions(workspace: Path, marker: str) -> None:
    run = Run(workspace, {"all": npm("mcp-server-everything", marker, trusted=True)},
              [calls(use("g1", "all__get-tiny-image", {}), use("e1", "all__echo",
                                                               {"message": "hi"})), done()])
    try:
        run.send()
        offered = run.offered(0)
        assert "all__simulate-research-query" not in offered  # needs MCP tasks
        tasks = [n for n in run.notices("mcp_error") if "simulate-research-query" in n]
        assert len(tasks) == 1 and "MCP tasks" in tasks[0]
        res = run.results()
        assert "sent to the model as an image" in res["g1"].content
        assert len(res["g1"].content) < 2000  # never ~30,000 characters of base64
        assert "hi" in res["e1"].content
        system = run.provider.requests[0].system or ""
        assert '<mcp_server_instructions server="all">' in system
    finally:
        run.close()
    assert wait_gone(marker) == []


def test_sequential_thinking_one_call(workspace: Path, marker: str) -> None:
    run = Run(workspace, {"think": npm("mcp-server-sequential-thinking", marker, trusted=True)},
              [calls(use("s1", "think__sequentialthinking", {
                  "thought": "First, read the issue.", "nextThoughtNeeded": False,
                  "thoughtNumber": 1, "totalThoughts": 1})), done()])
    try:
        run.send()
        result = run.results()["s1"]
        assert not result.is_error, result.content
        assert json.loads(result.content)["thoughtNumber"] == 1
    finally:
        run.close()


class _Page(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = (b"<html><head><title>t</title></head><body><h1>Loopback page</h1>"
                b"<p>Served to mcp-server-fetch by the test.</p></body></html>")
        if self.path == "/robots.txt":
            body = b"User-agent: *\nAllow: /\n"
        answer(self, body, "text/plain" if self.path == "/robots.txt" else "text/html")

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def page() -> Iterator[str]:
    with loopback_http(_Page) as base:
        yield f"{base}/page.html"


def test_fetch_server_against_a_loopback_page(workspace: Path, marker: str, page: str,
                                             tmp_path: Path) -> None:
    # A confined server needs `network = true` to reach the page. `raw` skips the server's
    # readability step, which would `npm install` into site-packages on first use: a write the
    # sandbox refuses (outside the server's cwd) and a download no test may make.
    server = MCPServer(command=PY, args=["-m", "mcp_server_fetch", "--allow-private-ips"],
                       env={marker: "1"}, cwd=str(tmp_path), mode="legacy", trusted=True,
                       network=True)  # confined servers have no TCP unless the config says so
    run = Run(workspace, {"fetch": server},
              [calls(use("f1", "fetch__fetch", {"url": page, "raw": True})), done()])
    try:
        run.send()
        result = run.results()["f1"]
        assert not result.is_error, result.content
        assert "Loopback page" in result.content
        approval = next(a for a in run.of(ev.Approval) if a.id == "f1")
        assert approval.by == "policy"  # trusted + readOnlyHint: no panel
    finally:
        run.close()
    assert wait_gone(marker) == []
