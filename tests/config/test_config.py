"""Settings layering: defaults < user file < --config FILE < environment < flags.

A flag the user did not give never hides a file's value; a bad value names the setting and where
it came from; nothing is read from the workspace unless the user names it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_cli.cli.app import app
from agent_cli.cli.common import Common
from agent_cli.config import Settings, home, load_settings
from agent_cli.errors import ConfigError
from agent_cli.session import load_registry


def user_file(text: str) -> Path:
    path = home() / "config.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_agent_cli_home_moves_the_user_folder(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_CLI_HOME", str(tmp_path / "elsewhere"))
    assert home() == tmp_path / "elsewhere"


def test_defaults_with_no_files() -> None:
    s = load_settings()
    assert s == Settings()
    assert (s.provider, s.model, s.max_turns) == ("anthropic", "claude-sonnet-5-5", 25)
    assert s.deny == []


def test_each_layer_overrides_the_one_below(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    user_file('model = "user-model"\nmax_turns = 10\nmax_tokens = 1000\nretries = 1\n'
              'tool_timeout_s = 7.5\n')
    extra = tmp_path / "extra.toml"
    extra.write_text('model = "config-model"\nmax_turns = 11\nmax_tokens = 2000\n')

    s = load_settings()
    assert (s.model, s.max_turns, s.max_tokens, s.retries) == ("user-model", 10, 1000, 1)

    s = load_settings(extra)
    assert (s.model, s.max_turns, s.max_tokens, s.retries) == ("config-model", 11, 2000, 1)
    assert s.tool_timeout_s == 7.5

    monkeypatch.setenv("AGENT_CLI_MODEL", "env-model")
    monkeypatch.setenv("AGENT_CLI_MAX_TURNS", "12")
    s = load_settings(extra)
    assert (s.model, s.max_turns, s.max_tokens) == ("env-model", 12, 2000)

    s = load_settings(extra, {"model": "flag-model", "max_turns": None})
    assert (s.model, s.max_turns, s.max_tokens) == ("flag-model", 12, 2000)

    s = load_settings(extra, {"model": None, "max_turns": 13})
    assert (s.model, s.max_turns) == ("env-model", 13)


def test_an_unset_flag_never_overrides_the_file(tmp_path: Path) -> None:
    cfg = tmp_path / "c.toml"
    cfg.write_text('model = "from-file"\nmax_turns = 4\nprovider = "scripted"\n'
                   'script = "s.json"\nbase_url = "http://127.0.0.1:9"\n')
    s = Common(config=cfg).settings()
    assert (s.model, s.max_turns, s.provider, s.script, s.base_url) == (
        "from-file", 4, "scripted", str((tmp_path / "s.json").resolve()), "http://127.0.0.1:9")
    s = Common(config=cfg, max_turns=9, model="flag").settings()
    assert (s.model, s.max_turns, s.provider) == ("flag", 9, "scripted")


def test_script_flag_implies_the_scripted_provider_unless_one_is_named(tmp_path: Path) -> None:
    assert Common(script=tmp_path / "s.json").settings().provider == "scripted"
    s = Common(script=tmp_path / "s.json", provider="anthropic").settings()
    assert s.provider == "anthropic"


def test_tables_merge_and_deny_rules_add_up(tmp_path: Path) -> None:
    user_file('[[deny]]\ntool = "run_command"\nargs = { command = "*rm -rf*" }\n'
              '[prices.claude-a]\ninput = 1.0\noutput = 2.0\n')
    extra = tmp_path / "extra.toml"
    extra.write_text('[[deny]]\ntool = "write_file"\nargs = { path = "*.env" }\n'
                     '[prices.claude-b]\ninput = 3.0\noutput = 4.0\n')
    s = load_settings(extra)
    assert [r.tool for r in s.deny] == ["run_command", "write_file"]
    assert set(s.prices) == {"claude-a", "claude-b"}


@pytest.mark.parametrize(
    ("text", "setting"),
    [
        ("max_turns = 0\n", "max_turns"),
        ('max_turns = "many"\n', "max_turns"),
        ('provider = "gpt"\n', "provider"),
        ("output_cap = 10\n", "output_cap"),
        ("tool_timeout_s = -1\n", "tool_timeout_s"),
        ('max_turn = 5\n', "max_turn"),
        ('[[deny]]\ntool = "x"\nbogus = 1\n', "deny.0.bogus"),
    ],
)
def test_bad_values_name_the_setting_and_the_file(text: str, setting: str) -> None:
    path = user_file(text)
    with pytest.raises(ConfigError) as info:
        load_settings()
    message = str(info.value)
    assert f"Bad setting {setting} (from {path})" in message
    assert "config.example.toml" in message
    assert info.value.exit_code == 2


def test_bad_environment_value_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENT_CLI_MAX_TURNS", "lots")
    with pytest.raises(ConfigError, match=r"max_turns \(from environment variable "
                                          r"AGENT_CLI_MAX_TURNS\)"):
        load_settings()


def test_bad_flag_value_names_the_command_line() -> None:
    with pytest.raises(ConfigError, match=r"provider \(from command line\)"):
        load_settings(flags={"provider": "nobody"})


def test_broken_or_missing_config_file_is_one_sentence(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("model = \n")
    with pytest.raises(ConfigError, match="is not valid TOML"):
        load_settings(bad)
    with pytest.raises(ConfigError, match="not found"):
        load_settings(tmp_path / "missing.toml")


def test_bad_user_file_through_the_cli_exits_2_without_a_traceback(workspace: Path) -> None:
    user_file("max_turns = 0\n")
    result = CliRunner().invoke(app, ["tools", "--workspace", str(workspace)])
    assert result.exit_code == 2
    out = " ".join(result.output.split())
    assert "max_turns" in out and "Traceback" not in out


PLANTED_PLUGIN = """
from pathlib import Path
from pydantic import BaseModel
from agent_cli.tools import Tool
Path(__file__).with_name("IMPORTED").write_text("the workspace plugin ran")


class Args(BaseModel):
    pass


TOOL = Tool(name="planted", description="x", args=Args, run=lambda a, c: "x", effect="read")
"""


def plant(workspace: Path) -> None:
    """Everything a hostile repository could leave lying around for a careless loader."""
    for name in ("config.toml", "agent-cli.toml", ".agent-cli.toml", ".agent-cli/config.toml",
                 "agent_cli/config.toml"):
        path = workspace / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text('model = "planted"\nmax_turns = 1\n[[deny]]\ntool = "nothing"\n')
    for folder in ("tools.d", ".agent-cli/tools", "tools", ".agent-cli/tools.d"):
        path = workspace / folder / "planted.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(PLANTED_PLUGIN)


def test_nothing_is_read_from_the_workspace(workspace: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    plant(workspace)
    monkeypatch.chdir(workspace)
    settings = load_settings()
    assert settings == Settings()
    common = Common(workspace=workspace)
    assert common.settings() == Settings()
    registry, _ = load_registry(common.settings(), common.tools_dir)
    assert "planted" not in registry.names()
    assert not list(workspace.rglob("IMPORTED"))
    result = CliRunner().invoke(app, ["tools", "--workspace", str(workspace)])
    assert result.exit_code == 0, result.output
    assert "planted" not in result.output
    assert not list(workspace.rglob("IMPORTED"))
    assert os.getcwd() == str(workspace)


def test_a_named_config_and_tools_dir_inside_the_workspace_are_used(workspace: Path) -> None:
    plant(workspace)
    common = Common(workspace=workspace, config=workspace / "config.toml",
                    tools_dir=[workspace / "tools.d"])
    settings = common.settings()
    assert (settings.model, settings.max_turns) == ("planted", 1)
    registry, _ = load_registry(settings, common.tools_dir)
    assert "planted" in registry.names()


def test_user_tools_dirs_setting_is_loaded(tmp_path: Path) -> None:
    folder = tmp_path / "mytools"
    folder.mkdir()
    (folder / "planted.py").write_text(PLANTED_PLUGIN)
    user_file(f'tools_dirs = ["{folder}"]\n')
    registry, report = load_registry(load_settings())
    assert "planted" in registry.names()
    assert report.errors == []


def test_relative_paths_in_a_config_file_are_anchored_to_that_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A relative tools_dirs must not mean the current folder (usually the workspace)."""
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    cfg = conf_dir / "agent.toml"
    cfg.write_text('tools_dirs = ["plugins"]\nlog_dir = "logs"\n')
    elsewhere = tmp_path / "ws"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    s = load_settings(cfg)
    assert s.tools_dirs == [str((conf_dir / "plugins").resolve())]
    assert s.log_dir == str((conf_dir / "logs").resolve())


def test_relative_mcp_cwd_is_anchored_to_the_config_file(tmp_path: Path) -> None:
    cfg = tmp_path / "agent.toml"
    cfg.write_text('[mcp.servers.time]\ncommand = "mcp-server-time"\ncwd = "srv"\n')
    s = load_settings(cfg)
    assert s.mcp["servers"]["time"].cwd == str((tmp_path / "srv").resolve())
    assert s.mcp["servers"]["time"].command == "mcp-server-time"


def test_openai_provider_without_a_model_says_to_name_one() -> None:
    from agent_cli.errors import UsageError
    from agent_cli.session import make_provider

    with pytest.raises(UsageError, match="--model NAME"):
        make_provider(Settings(provider="openai"))
