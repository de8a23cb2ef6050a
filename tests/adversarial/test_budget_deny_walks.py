"""Family: limits enforced where the effect happens, part one: deny rules reach every walk.

The user's config says `path = "secrets/*"`. read_file on secrets/ is refused, so the model asks
the tools that walk instead: `search_text(".", ".")` prints every line of every file, list_dir
names them, and a link to the folder tries a second name. Each file a walking tool opens or lists
goes through the one walk helper (agent_cli/tools/walk.py), which applies the rule to it as it
would to read_file: the secret's lines and name reach neither the model nor the log.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.scripts import calls, done

from .conftest import Harness, use

SECRET = "TOKEN-7f3a9c-never-leaves"
RULES: dict[str, dict[str, Any]] = {
    "read_file-rule": {"tool": "read_file", "args": {"path": "secrets/*"}},
    "every-tool-rule": {"tool": "*", "args": {"path": "secrets/*"}},
    "file-tools-rule": {"tool": "*_file", "args": {"path": "secrets/*"}, "reason": "keys"},
}
WALKS: dict[str, tuple[str, dict[str, Any]]] = {
    "search-everything": ("search_text", {"pattern": ".", "path": "."}),
    "search-for-it": ("search_text", {"pattern": "TOKEN", "path": "."}),
    "search-the-folder": ("search_text", {"pattern": ".", "path": "secrets"}),
    "search-the-file": ("search_text", {"pattern": ".", "path": "secrets/api.key"}),
    "search-through-a-link": ("search_text", {"pattern": ".", "path": "alias"}),
    "search-dot-slash": ("search_text", {"pattern": ".", "path": "./secrets/"}),
    "list-the-folder": ("list_dir", {"path": "secrets"}),
    "list-through-a-link": ("list_dir", {"path": "alias"}),
}


def _plant(harness: Harness) -> None:
    secrets = harness.workspace / "secrets"
    secrets.mkdir()
    (secrets / "api.key").write_text(f"{SECRET}\n", encoding="utf-8")
    (secrets / "nested").mkdir()
    (secrets / "nested" / "deep.txt").write_text(f"deep {SECRET}\n", encoding="utf-8")
    os.symlink(secrets, harness.workspace / "alias")


@pytest.mark.parametrize("rule", list(RULES))
@pytest.mark.parametrize("walk", list(WALKS))
def test_a_deny_rule_on_paths_reaches_every_file_a_walk_opens(harness: Harness, rule: str,
                                                              walk: str) -> None:
    _plant(harness)
    name, args = WALKS[walk]
    o = harness.run([calls(use(name, args)), done()], settings={"deny": [RULES[rule]]})
    [result] = o.sent_back(1)
    content = str(result["content"])
    assert SECRET not in content and "api.key" not in content and "deep.txt" not in content
    assert SECRET.encode() not in o.log_path.read_bytes()
    assert o.input.prompts == [], "a read call asks no one"


def test_the_walk_says_that_entries_were_left_out(harness: Harness) -> None:
    _plant(harness)
    o = harness.run([calls(use("search_text", {"pattern": "deep", "path": "."})), done()],
                    settings={"deny": [RULES["read_file-rule"]]})
    [result] = o.sent_back(1)
    assert "left out by a deny rule" in str(result["content"])


def test_control_without_the_rule_the_walk_finds_it(harness: Harness) -> None:
    _plant(harness)
    o = harness.run([calls(use("search_text", {"pattern": "TOKEN", "path": "."}),
                           use("list_dir", {"path": "secrets"}, "toolu_2")), done()])
    searched, listed = o.sent_back(1)
    assert SECRET in str(searched["content"]) and "api.key" in str(listed["content"])


def test_the_rest_of_the_workspace_is_still_searched(harness: Harness) -> None:
    _plant(harness)
    o = harness.run([calls(use("search_text", {"pattern": "milk", "path": "."})), done()],
                    settings={"deny": [RULES["every-tool-rule"]]})
    [result] = o.sent_back(1)
    assert "notes.txt:1: remember the milk" in str(result["content"])


def test_a_plugin_that_walks_with_the_helper_is_held_to_the_rule(harness: Harness,
                                                                  tmp_path: Path) -> None:
    """A plugin that searches by itself uses the same walk helper and gets the same rule."""
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    (plugins / "grep_all.py").write_text('''
from pydantic import BaseModel, ConfigDict
from agent_cli.tools import Tool
from agent_cli.tools.paths import read_fd, real_root
from agent_cli.tools.walk import WalkCount, walk_files
import os

class Args(BaseModel):
    model_config = ConfigDict(extra="forbid")

def run(args, ctx):
    out = []
    for dir_fd, name, path in walk_files(ctx, real_root(ctx.workspace), WalkCount()):
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW, dir_fd=dir_fd)
        try:
            out.append(read_fd(fd, 10000).decode())
        finally:
            os.close(fd)
    return "".join(out)

TOOL = Tool(name="grep_all", description="All text.", args=Args, effect="read", run=run)
''', encoding="utf-8")
    _plant(harness)
    o = harness.run([calls(use("grep_all", {})), done()], tools_dirs=[plugins],
                    settings={"deny": [RULES["read_file-rule"]]})
    [result] = o.sent_back(1)
    assert "remember the milk" in str(result["content"]) and SECRET not in str(result["content"])
