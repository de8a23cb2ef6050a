"""`agent-cli run` with piped stdin, as `git diff | agent-cli run "review this diff"` uses it:
the prompt, then stdin attached (marked `stdin`); stdin alone is the prompt; past the cap a
sentence says what was cut. Piped stdin is data, never an answer: a `y` in it approves nothing.

The runs go through real pipes into a real process, against the fake Messages API, and the
assertions read what the fake recorded."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from agent_cli.cli import run as run_cmd
from agent_cli.ui.confirm import Asker
from tests.conftest import REPO
from tests.fakes.anthropic_server import FakeAnthropic, text_reply, tool_reply

DIFF = ("diff --git a/calc.py b/calc.py\n--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n"
        "-def add(a, b): return a - b\n+def add(a, b): return a + b\n")


def piped_run(fake: FakeAnthropic, workspace: Path, args: list[str], data: bytes
              ) -> subprocess.CompletedProcess[bytes]:
    env = {**os.environ, "ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": fake.base_url,
           "COLUMNS": "200"}
    return subprocess.run([sys.executable, "-m", "agent_cli", "run", *args, "--workspace",
                           str(workspace)], input=data, env=env, cwd=REPO,
                          capture_output=True, timeout=120)


def first_user_text(fake: FakeAnthropic) -> str:
    content: Any = fake.requests[0].body["messages"][0]["content"]
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content if b.get("type") == "text")


def test_piped_stdin_is_attached_after_the_prompt(workspace: Path) -> None:
    with FakeAnthropic() as fake:
        fake.add(text_reply("The fix is right."))
        proc = piped_run(fake, workspace, ["review this diff"], DIFF.encode())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode() == "The fix is right.\n"
    sent = first_user_text(fake)
    assert sent.startswith("review this diff\n\n")  # the prompt first, then the piped text
    assert f'<resource uri="stdin">\n{DIFF}</resource>' in sent


def test_stdin_alone_is_the_prompt(workspace: Path) -> None:
    with FakeAnthropic() as fake:
        fake.add(text_reply("Done."))
        proc = piped_run(fake, workspace, [], b"say hello\n")
    assert proc.returncode == 0, proc.stderr
    sent = first_user_text(fake)
    assert sent.startswith("say hello") and "<resource" not in sent


def test_empty_stdin_with_a_prompt_attaches_nothing(workspace: Path) -> None:
    with FakeAnthropic() as fake:
        fake.add(text_reply("Done."))
        proc = piped_run(fake, workspace, ["just this"], b"")
    assert proc.returncode == 0, proc.stderr
    assert first_user_text(fake).startswith("just this") and "<resource" not in \
        first_user_text(fake)


def test_stdin_past_the_cap_is_cut_with_a_sentence(workspace: Path) -> None:
    cap = run_cmd.STDIN_CAP_BYTES
    data = b"x" * (cap - 10) + b"TAIL-PAST-THE-CAP" * 100
    with FakeAnthropic() as fake:
        fake.add(text_reply("Long."))
        proc = piped_run(fake, workspace, ["summarise"], data)
    assert proc.returncode == 0, proc.stderr
    sent = first_user_text(fake)
    assert "x" * (cap - 10) + "TAIL-PAST-\n" in sent  # exactly the first `cap` bytes
    assert "THE-CAP" not in sent
    assert f"agent-cli cut stdin here: it was longer than {cap:,} bytes" in sent
    err = " ".join(proc.stderr.decode().split())
    assert f"stdin is longer than {cap:,} bytes: only the first {cap:,} are sent" in err


def test_a_y_in_piped_stdin_approves_nothing(workspace: Path) -> None:
    """The model asks to write; stdin is full of `y` lines. Nobody could be asked (stdin is the
    task's data), so the write is denied, the file is not written, and the y's reached the model
    as data only."""
    with FakeAnthropic() as fake:
        fake.add(tool_reply(("toolu_w", "write_file", {"path": "a.txt", "content": "x"})),
                 text_reply("Tried."))
        proc = piped_run(fake, workspace, ["write a.txt", "-o", "json"], b"y\n" * 50)
    assert proc.returncode == 7, proc.stderr
    assert json.loads(proc.stdout)["denied"] == ["toolu_w"]
    assert not (workspace / "a.txt").exists()
    err = " ".join(proc.stderr.decode().split())
    assert "stdin was piped in as part of the task, so nobody could be asked" in err
    assert '<resource uri="stdin">\ny\ny\n' in first_user_text(fake)


def test_used_up_stdin_reads_as_eof_at_any_question(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hole this closes: with no terminal, a confirm reads answers with plain `input`, that
    is from stdin. Once `run` took stdin as data, stdin is an empty stream: any question asked
    after it reads EOF (no), never the piped `y`."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"y\ny\n"), encoding="utf-8"))
    assert run_cmd.take_stdin() == "y\ny\n"
    asker = Asker(Console(file=io.StringIO()))
    assert asker.answer("Run this? [y/N] ") is None  # EOF: no answer, so no yes
    assert not asker.confirm(None, "Use it? [y/N] ")
