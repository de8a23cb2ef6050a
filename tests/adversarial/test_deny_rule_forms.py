"""Family: deny rules cannot be stepped around by spelling the same thing differently.

A rule `path = "secrets/*"` used to be bypassed by `./secrets/key.txt` or the absolute path, and
`command = "rm -rf*"` by `rm  -rf` (two spaces) or a tab. Rules now match path arguments on their
workspace-relative canonical form and every other argument on a whitespace-normalised form, for
any tool whose schema names or marks an argument as a path (MCP and plugins included).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_cli import events as ev
from agent_cli.approval import DenyRule, path_arg_names
from tests.scripts import calls, done

from .conftest import Harness, use, write_plugin

SECRETS = {"tool": "*", "args": {"path": "secrets/*"}, "reason": "keys live there"}
RM = {"tool": "run_command", "args": {"command": "rm -rf *"}}


def path_spellings(ws: Path) -> dict[str, str]:
    return {
        "plain": "secrets/key.txt",
        "dot-slash": "./secrets/key.txt",
        "absolute": str(ws / "secrets" / "key.txt"),
        "double-slash": "secrets//key.txt",
        "dot-dot": "docs/../secrets/key.txt",
        "dot-in-middle": "secrets/./key.txt",
        "trailing-dots": "./././secrets/key.txt",
    }


@pytest.mark.parametrize("spelling", list(path_spellings(Path("/x"))))
@pytest.mark.parametrize("tool", ["read_file", "write_file"])
def test_every_spelling_of_a_denied_path_is_refused(harness: Harness, spelling: str,
                                                    tool: str) -> None:
    ws = harness.workspace
    (ws / "secrets").mkdir()
    (ws / "docs").mkdir()
    (ws / "secrets" / "key.txt").write_text("the key\n")
    path = path_spellings(ws)[spelling]
    args: dict[str, Any] = {"path": path}
    if tool == "write_file":
        args["content"] = "overwritten"
    o = harness.run([calls(use(tool, args)), done()], ["y"], settings={"deny": [SECRETS]})
    assert o.input.prompts == [], "refused before any panel"
    [result] = o.sent_back(1)
    assert result["is_error"] is True and "keys live there" in result["content"]
    assert "the key" not in result["content"]
    assert [a.by for a in o.logged(ev.Approval)] == ["rule"]
    assert (ws / "secrets" / "key.txt").read_text() == "the key\n"


def test_a_link_to_the_denied_folder_is_refused_too(harness: Harness) -> None:
    ws = harness.workspace
    (ws / "secrets").mkdir()
    (ws / "secrets" / "key.txt").write_text("the key\n")
    (ws / "innocent").symlink_to(ws / "secrets")
    o = harness.run([calls(use("read_file", {"path": "innocent/key.txt"})), done()], [],
                    settings={"deny": [SECRETS]})
    [result] = o.sent_back(1)
    assert result["is_error"] is True and "deny rule" in result["content"]
    assert "the key" not in result["content"]


@pytest.mark.parametrize("command", ["rm  -rf /tmp/x", "rm\t-rf /tmp/x", "  rm -rf   /tmp/x ",
                                     "rm\n-rf /tmp/x", ["rm", "-rf", "/tmp/x"]])
def test_whitespace_in_a_command_does_not_step_around_a_rule(harness: Harness,
                                                             command: Any) -> None:
    o = harness.run([calls(use("run_command", {"command": command})), done()], ["y"],
                    settings={"deny": [RM]})
    assert o.input.prompts == []
    [result] = o.sent_back(1)
    assert result["is_error"] is True and "deny rule" in result["content"]
    assert o.of(ev.ToolStarted) == []


def test_a_plugin_path_argument_is_canonicalised_too(harness: Harness, tmp_path: Path) -> None:
    """Path-ness comes from the tool's schema, so a user's plugin is covered like the built-ins:
    by name (`*_path`) or by `format: path`."""
    folder = tmp_path / "plugins"
    folder.mkdir()
    write_plugin(folder, "shred.py", '''
from pydantic import BaseModel, ConfigDict, Field
from agent_cli.tools import Tool

class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")
    target_path: str
    where: str = Field("", json_schema_extra={"format": "path"})

TOOL = Tool(name="shred", description="Shred a file.", args=Args, effect="write",
            run=lambda a, c: "shredded")
''')
    assert path_arg_names({"properties": {"target_path": {}, "where": {"format": "path"},
                                          "count": {}}}) == ("target_path", "where")
    rules = [{"tool": "shred", "args": {"target_path": "secrets/*"}},
             {"tool": "shred", "args": {"where": "secrets/*"}}]
    o = harness.run([calls(use("shred", {"target_path": "./secrets//a"}, "toolu_1"),
                           use("shred", {"target_path": "x", "where": "x/../secrets/b"},
                               "toolu_2")), done()],
                    ["y", "y"], settings={"deny": rules}, tools_dirs=[folder])
    assert o.input.prompts == []
    results = o.sent_back(1)
    assert [r["is_error"] for r in results] == [True, True]
    assert all("deny rule [tool=shred" in r["content"] for r in results), results
    assert [a.by for a in o.logged(ev.Approval)] == ["rule", "rule"]


def test_outside_paths_match_on_their_absolute_form(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    rule = DenyRule(tool="*", args={"path": "/etc/*"})
    # Enough `../` to climb from the workspace to the root, however deep TMPDIR is (and one more:
    # `..` at the root stays at the root).
    up = "../" * (len(ws.resolve().parts) + 1)
    assert rule.matches("read_file", {"path": f"{up}etc/passwd"}, path_args=["path"],
                        workspace=str(ws))
    exactly_to_root = "../" * (len(ws.resolve().parts) - 1)
    assert rule.matches("read_file", {"path": f"{exactly_to_root}etc/passwd"},
                        path_args=["path"], workspace=str(ws))
    assert not rule.matches("read_file", {"path": "etc/passwd"}, path_args=["path"],
                            workspace=str(ws))
    # Not a path argument: no canonical form, only the raw and normalised ones.
    assert not DenyRule(tool="*", args={"note": "secrets/*"}).matches(
        "t", {"note": "./secrets/x"}, path_args=["path"], workspace=str(ws))
