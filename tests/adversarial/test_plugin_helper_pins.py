"""Family: pins cover every file a plugin imports from its own folder.

The attacker edits not the trusted plugin but the `_helpers.py` beside it (or a module of a
package kept in the folder): the plugin's pin still matched, so the edit ran unseen with the
user's rights. Now an import hook pins each such file like the plugin itself.
Each `agent-cli tools` here is a fresh process, as a new session would be.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from agent_cli.tools.trust import PINS_NAME
from tests.conftest import REPO
from tests.scripts import calls, done

from .conftest import Harness, use

PLUGIN = '''
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import _helpers_{uid}
from toolkit_{uid} import words

from pydantic import BaseModel
from agent_cli.tools import Tool


class Args(BaseModel):
    text: str


def run(args, ctx):
    return _helpers_{uid}.shout(words.split(args.text))


TOOL = Tool(name="shout_{uid}", description="Shouts.", args=Args, effect="read", run=run)
'''

HELPER = '''
def shout(parts):
    return " ".join(p.upper() for p in parts)
'''

WORDS = '''
def split(text):
    return text.split()
'''


def make_folder(root: Path, uid: str) -> Path:
    folder = root / f"plugins_{uid}"
    (folder / f"toolkit_{uid}").mkdir(parents=True)
    (folder / f"shout_{uid}.py").write_text(PLUGIN.format(uid=uid))
    (folder / f"_helpers_{uid}.py").write_text(HELPER)
    (folder / f"toolkit_{uid}" / "__init__.py").write_text("")
    (folder / f"toolkit_{uid}" / "words.py").write_text(WORDS)
    return folder


def tools(*args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "agent_cli", "tools", *args], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=120)


def pins() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (Path(os.environ["AGENT_CLI_HOME"]) / PINS_NAME).read_text())["files"]
    return data


def test_the_helper_and_package_files_are_pinned_on_first_use(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, "a1")
    proc = tools("--tools-dir", str(folder))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "shout_a1" in proc.stdout
    pinned = set(pins())
    for rel in ("shout_a1.py", "_helpers_a1.py", "toolkit_a1/__init__.py", "toolkit_a1/words.py"):
        assert str((folder / rel).resolve()) in pinned, rel


def test_an_edited_helper_holds_the_plugin_out_until_trusted(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, "b2")
    marker = tmp_path / "pwned"
    assert tools("--tools-dir", str(folder)).returncode == 0
    helper = folder / "_helpers_b2.py"
    helper.write_text(f"open({str(marker)!r}, 'w').write('ran')\n" + HELPER)
    proc = tools("--tools-dir", str(folder))
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == 1, out
    assert not marker.exists(), "the edited helper never ran"
    assert not any(line.startswith("shout_b2") for line in proc.stdout.splitlines())
    assert "_helpers_b2.py" in out and "changed since you trusted it" in out
    assert "--trust" in out and "Traceback" not in out
    # trusting the helper (after reading the diff) lets the plugin load again
    trusted = tools("--trust", str(helper))
    assert trusted.returncode == 0, trusted.stdout + trusted.stderr
    proc = tools("--tools-dir", str(folder))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert marker.exists()


def test_an_edited_module_of_a_package_beside_it_is_caught_too(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, "c3")
    assert tools("--tools-dir", str(folder)).returncode == 0
    (folder / "toolkit_c3" / "words.py").write_text(WORDS + "\nimport os\n")
    proc = tools("--tools-dir", str(folder))
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == 1
    assert "words.py" in out and "changed since you trusted it" in out


def test_compiled_code_in_a_plugin_folder_is_refused(tmp_path: Path) -> None:
    folder = make_folder(tmp_path, "d4")
    helper = folder / "_helpers_d4.py"
    import py_compile

    py_compile.compile(str(helper), cfile=str(folder / "_helpers_d4.pyc"))
    helper.unlink()
    proc = tools("--tools-dir", str(folder))
    out = " ".join((proc.stdout + proc.stderr).split())
    assert proc.returncode == 1
    assert "cannot be pinned" in out


LAZY_PLUGIN = '''
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from pydantic import BaseModel
from agent_cli.tools import Tool


class Args(BaseModel):
    text: str


def run(args, ctx):
    import _lazy_{uid}  # imported only when the tool runs
    return _lazy_{uid}.go(args.text)


TOOL = Tool(name="lazy_{uid}", description="Lazy.", args=Args, effect="read", run=run)
'''


def test_a_helper_imported_while_the_tool_runs_is_checked_then(harness: Harness,
                                                               tmp_path: Path) -> None:
    """Edited after it was trusted, before its first use: since every file of a plugin folder is
    pinned when the folder loads (tools/plugin_folder.py), the plugin is held out at load; if it
    got past that, the hook would fail the import. Either way nothing of the edit runs."""
    folder = tmp_path / "lazy_plugins"
    folder.mkdir()
    (folder / "lazy_e5.py").write_text(LAZY_PLUGIN.format(uid="e5"))
    lazy = folder / "_lazy_e5.py"
    lazy.write_text("def go(t):\n    return t[::-1]\n")
    # Pin the helper as trusted (a first session that used it), then change it.
    from agent_cli.tools.trust import PluginPins

    PluginPins().trust(lazy)
    marker = tmp_path / "lazy-pwned"
    lazy.write_text(f"open({str(marker)!r}, 'w').write('ran')\ndef go(t):\n    return t\n")
    o = harness.run([calls(use("lazy_e5", {"text": "abc"})), done()], tools_dirs=[folder])
    [result] = o.sent_back(1)
    assert result["is_error"] is True
    assert "Unknown tool" in result["content"] or "changed since you trusted it" in \
        result["content"]
    assert not marker.exists()
