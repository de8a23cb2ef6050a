"""`agent-cli chat --demo`: the offline demo from an installed tool, no repository needed.

The demo's files (examples/demo_script.json, examples/demo-workspace/, examples/demo.py) ship in
the wheel as agent_cli/demo_files; in a source tree they are read from examples/ beside the
package. The chat runs with the scripted provider on that script, in a fresh copy of the demo
workspace (unless --workspace names one), so nothing of the user's is touched by its writes.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

REQUEST = "Summarise README.txt into notes.txt, then check 24 x 17."
"""What to type at the prompt: the demo script answers this request."""


def demo_dir() -> Path:
    """Where the demo files are: inside the installed package, else the repository's examples/."""
    pkg = Path(__file__).resolve().parent
    installed = pkg / "demo_files"
    if (installed / "demo_script.json").is_file():
        return installed
    return pkg.parent / "examples"


def demo_script() -> Path:
    return demo_dir() / "demo_script.json"


def fresh_workspace() -> Path:
    """A new temporary copy of the demo workspace (kept afterwards, so its files can be read)."""
    source = demo_dir() / "demo-workspace"
    if not source.is_dir():
        from agent_cli.errors import ConfigError

        raise ConfigError(f"The demo files are missing ({source}); reinstall agent-cli.")
    root = Path(tempfile.mkdtemp(prefix="agent-cli-demo-"))
    target = root / "workspace"
    shutil.copytree(source, target)
    return target
