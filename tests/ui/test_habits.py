"""The habits people bring from Claude Code, Codex and Gemini CLI, in-process through run_repl:
`@path` attaches a file through the path guard, `!cmd` runs the user's own command (no panel,
logged, its output goes with the next message), `/init` asks for an AGENTS.md through the write
panel, and an AGENTS.md found in the workspace is offered once (instructions.offer_found).
The real terminal wiring of each is in tests/ui/test_habits_pty.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agent_cli.approval import DenyRule
from agent_cli.instructions import FOUND, Instruction, offer_found
from agent_cli.tools.trust import PluginPins
from agent_cli.ui.outgoing import INIT_PROMPT
from tests.scripts import done, tool_use
from tests.ui.test_repl_commands import Rig

KEY = "sk-ant-api03-" + "A1b2C3d4E5f6G7h8I9j0" * 4 + "-AbCdEf"


def sent(rig: Rig, request: int = 0) -> str:
    """The text of the last user message of request `request`, as the model got it."""
    message = rig.provider.requests[request].messages[-1]
    content: Any = message["content"]
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content if b.get("type") == "text")


def flat(text: str) -> str:
    return " ".join(text.split())


# --------------------------------------------------------------------------- @path


def test_a_mentioned_file_is_attached_and_said(tmp_path: Path, workspace: Path) -> None:
    (workspace / "src").mkdir()
    (workspace / "src" / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    rig = Rig(tmp_path, workspace, [done("Found it.")])
    shown = rig.run(["why does @src/calc.py fail?"])
    assert "Attached src/calc.py (32 B)" in shown
    body = sent(rig)
    assert body.startswith("why does @src/calc.py fail?\n\n")
    assert '<resource uri="src/calc.py">\ndef add(a, b):\n    return a - b\n</resource>' in body
    [user] = [e for e in rig.events() if e["type"] == "user_message"]
    assert "return a - b" in user["text"]  # the log holds what was sent


def test_refused_mentions_are_sentences_and_the_message_still_goes(tmp_path: Path,
                                                                   workspace: Path) -> None:
    (tmp_path / "outside.txt").write_text("not yours\n")
    (workspace / "secrets").mkdir()
    (workspace / "secrets" / "x.txt").write_text("hidden by a rule\n")
    (workspace / "blob.bin").write_bytes(b"\x00\x01\x02")
    (workspace / "link.txt").symlink_to(tmp_path / "outside.txt")
    rig = Rig(tmp_path, workspace, [done("ok")])
    rig.session.settings = rig.session.settings.model_copy(update={"deny": [DenyRule(
        tool="read_file", args={"path": "secrets/*"}, reason="private notes")]})
    shown = flat(rig.run(["see @../outside.txt @missing.txt @secrets/x.txt @blob.bin "
                          "@link.txt and @src, mail me at me@example.com"]))
    assert "@../outside.txt was not attached:" in shown and "outside the workspace" in shown
    assert "@missing.txt was not attached: there is no such file in the workspace." in shown
    assert ("@secrets/x.txt was not attached: a deny rule refuses reading it (private notes)."
            in shown)
    assert "@blob.bin was not attached: it looks like a binary file" in shown
    assert "@link.txt was not attached:" in shown and "symbolic link" in shown
    assert "@src was not attached" in shown  # (`src,` minus its comma; no such file here)
    assert "example.com" not in shown.split("Attached")[0].split("was not attached")[0]
    body = sent(rig)
    assert "<resource" not in body and "not yours" not in body and "hidden by a rule" not in body
    assert "Traceback" not in shown


def test_secrets_in_an_attached_file_are_hidden_from_the_model(tmp_path: Path,
                                                               workspace: Path) -> None:
    (workspace / "settings.py").write_text(f'DEBUG = True\nANTHROPIC_KEY = "{KEY}"\n')
    rig = Rig(tmp_path, workspace, [done("ok")])
    shown = flat(rig.run(["check @settings.py"]))
    body = sent(rig)
    assert KEY not in body and "[REDACTED:" in body and "DEBUG = True" in body
    assert "agent-cli hid 1 secret from this attached file" in body
    assert "agent-cli hid 1 secret from the model" in shown


# --------------------------------------------------------------------------- !cmd


def test_a_shell_command_runs_without_a_panel_and_goes_with_the_next_message(
        tmp_path: Path, workspace: Path) -> None:
    (workspace / "marker.txt").write_text("x")
    rig = Rig(tmp_path, workspace, [done("It printed hello.")])
    shown = rig.run(["!echo hello-from-shell && ls && pwd", "what did it print?"])
    assert "hello-from-shell" in shown and "marker.txt" in shown  # shown, run in the workspace
    assert str(workspace.resolve()) in shown
    assert "You ran a shell command: echo hello-from-shell && ls && pwd (exit 0," in flat(shown)
    assert "not sandboxed: your own command, with all your rights" in flat(shown)
    assert len(rig.provider.requests) == 1, "the ! line itself is not sent"
    body = sent(rig)
    assert body.startswith("what did it print?\n\n")
    assert '<resource uri="user-shell">' in body
    assert "$ echo hello-from-shell && ls && pwd\nhello-from-shell\nmarker.txt" in body
    [record] = [e for e in rig.events() if e.get("kind") == "user_shell"]
    assert record["command"] == "echo hello-from-shell && ls && pwd"
    assert record["exit_code"] == 0 and "hello-from-shell" in record["output"]
    assert record["sandbox"] == {"mode": "off"}  # its capability record, in the log
    assert not [e for e in rig.events() if e["type"] == "approval"]


def test_a_failing_command_records_its_exit_and_secrets_are_hidden(tmp_path: Path,
                                                                   workspace: Path) -> None:
    rig = Rig(tmp_path, workspace, [done("ok")])
    shown = rig.run([f"!echo token={KEY}; exit 3", "!", "next"])
    assert "(exit 3," in flat(shown)
    assert "Type a shell command after !" in flat(shown)
    body = sent(rig)
    assert KEY not in body and "(exit 3)" in body
    assert "agent-cli hid 2 secrets from this shell output" in body  # command and output
    assert "agent-cli hid 2 secrets from the model" in flat(shown)
    assert KEY not in rig.log_path.read_text()


# --------------------------------------------------------------------------- /init


def test_init_asks_for_an_agents_md_through_the_write_panel(tmp_path: Path,
                                                            workspace: Path) -> None:
    rig = Rig(tmp_path, workspace, [
        tool_use("toolu_w", "write_file", {"path": "AGENTS.md", "content": "# Agents\n"}),
        done("Drafted.")], answers=["y"])
    rig.run(["/init"])
    assert sent(rig) == INIT_PROMPT
    [approval] = [e for e in rig.events() if e["type"] == "approval"]
    assert approval["by"] == "user" and approval["decision"] == "approved"
    assert (workspace / "AGENTS.md").read_text() == "# Agents\n"
    assert "/init" in flat(rig.run(["/help"]))


# --------------------------------------------------------------------------- AGENTS.md offer


def offer_with(answers: list[bool], asked: list[Instruction]) -> Any:
    def offer(item: Instruction) -> bool:
        asked.append(item)
        return answers.pop(0)
    return offer


def test_a_found_agents_md_is_offered_and_a_yes_pins_it(tmp_path: Path,
                                                        workspace: Path) -> None:
    (workspace / FOUND).write_text("Run make check.\n")
    asked: list[Instruction] = []
    files, notices = offer_found(workspace, [], offer_with([True], asked))
    assert [name for _, name, _ in files] == [FOUND] and notices == []
    assert asked[0].text == "Run make check.\n"
    assert PluginPins().pinned(workspace / FOUND)["content"] == "Run make check.\n"
    # the next start does not ask again: it is used like a configured file
    files, notices = offer_found(workspace, [], offer_with([], asked))
    assert [name for _, name, _ in files] == [FOUND] and len(asked) == 1


def test_a_no_is_remembered_for_that_content_only(tmp_path: Path, workspace: Path) -> None:
    (workspace / FOUND).write_text("Run make check.\n")
    asked: list[Instruction] = []
    files, notices = offer_found(workspace, [], offer_with([False], asked))
    assert files == [] and "you said no" in notices[0][1]
    assert PluginPins().pinned(workspace / FOUND) is None
    files, notices = offer_found(workspace, [], offer_with([], asked))
    assert files == [] and notices == [] and len(asked) == 1  # not asked at every start
    (workspace / FOUND).write_text("Run make verify.\n")
    files, _ = offer_found(workspace, [], offer_with([True], asked))
    assert len(asked) == 2 and asked[1].text == "Run make verify.\n"  # changed: offered again
    assert [name for _, name, _ in files] == [FOUND]


def test_with_nobody_to_ask_a_notice_says_it_is_there(workspace: Path) -> None:
    (workspace / FOUND).write_text("x" * 2100)
    files, notices = offer_found(workspace, [], None)
    assert files == []
    assert "AGENTS.md (2,100 bytes) is in the workspace and not used" in notices[0][1]


def test_a_configured_agents_md_is_not_offered_twice(workspace: Path) -> None:
    (workspace / FOUND).write_text("x")
    named = [(workspace.absolute(), FOUND, False)]
    files, notices = offer_found(workspace, named, offer_with([], []))
    assert files == named and notices == []


def test_the_offer_shows_the_file_and_asks_with_its_size(workspace: Path) -> None:
    import io

    from rich.console import Console

    from agent_cli.ui.instructions_prompt import terminal_offer

    asked: list[str] = []
    out = io.StringIO()

    def read(prompt: str) -> str:
        asked.append(prompt)
        return "" if prompt.startswith("-- more") else "y"

    offer = terminal_offer(Console(file=out, width=100, height=40), read)
    item = Instruction(workspace / FOUND, FOUND, "Use make check.\n" * 131, "ab" * 32,
                       data=b"Use make check.\n" * 131)
    assert offer(item) is True
    assert asked[-1] == "Use AGENTS.md (2.1 kB) as project instructions? [y/N] "
    assert all(p.startswith("-- more") for p in asked[:-1]) and len(asked) > 2  # paged
    assert out.getvalue().count("Use make check.") == 131  # the whole file, before the question


def test_the_offer_remembers_no_across_processes_in_the_offers_file(workspace: Path) -> None:
    (workspace / FOUND).write_text("x")
    offer_found(workspace, [], offer_with([False], []))
    [offers] = list(PluginPins().path.parent.glob("instruction-offers.json"))
    data = json.loads(offers.read_text())
    assert list(data["declined"].values()) == [
        __import__("hashlib").sha256(b"x").hexdigest()]
