"""The plugin loader. Built-in tools load through here exactly like a user's plugins.

A plugin is a `.py` file that defines `TOOL` (a Tool) or `TOOLS` (a list of them). A file that
fails to import, exits, hangs at import or defines no tool is reported by name; the rest load.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

from agent_cli.tools.base import NAME_RE, Tool
from agent_cli.tools.registry import Registry

IMPORT_TIMEOUT_S = 5.0


@dataclass
class LoadReport:
    errors: list[str] = field(default_factory=list)
    loaded: list[str] = field(default_factory=list)


def bundled_tools_dir() -> Path:
    """tools.d/ ships inside the wheel as agent_cli/bundled_tools; in a source tree it sits beside
    the package."""
    pkg = Path(__file__).resolve().parent.parent
    installed = pkg / "bundled_tools"
    if installed.is_dir() and any(installed.glob("*.py")):
        return installed
    return pkg.parent / "tools.d"


def _import_file(path: Path) -> ModuleType:
    name = f"agent_cli_plugin_{abs(hash(str(path)))}_{path.stem}"
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError("not a loadable Python file")
    module = importlib.util.module_from_spec(spec)
    result: dict[str, BaseException] = {}

    def target() -> None:
        try:
            spec.loader.exec_module(module)  # type: ignore[union-attr]
        except BaseException as e:  # SystemExit and KeyboardInterrupt from a plugin included
            result["error"] = e

    t = threading.Thread(target=target, name=f"load-{path.name}", daemon=True)
    t.start()
    t.join(IMPORT_TIMEOUT_S)
    if t.is_alive():
        raise TimeoutError(f"import took longer than {IMPORT_TIMEOUT_S:.0f} s")
    if "error" in result:
        raise result["error"]
    sys.modules[name] = module
    return module


def _tools_of(module: ModuleType) -> list[Tool]:
    found = getattr(module, "TOOLS", None)
    if found is None:
        single = getattr(module, "TOOL", None)
        found = [single] if single is not None else []
    if not isinstance(found, list | tuple):
        raise TypeError("TOOLS must be a list of Tool objects")
    for t in found:
        if not isinstance(t, Tool):
            raise TypeError(f"{t!r} is not an agent_cli.tools.Tool")
    return list(found)


def load_folder(folder: Path, registry: Registry, report: LoadReport) -> None:
    if not folder.is_dir():
        report.errors.append(f"{folder}: tools folder not found.")
        return
    for path in sorted(folder.glob("*.py")):
        if path.name.startswith("_"):
            continue
        try:
            module = _import_file(path)
            tools = _tools_of(module)
        except SystemExit as e:
            report.errors.append(f"{path}: the plugin called sys.exit({e.code}) at import; skipped.")
            continue
        except BaseException as e:
            report.errors.append(
                f"{path}: could not load ({type(e).__name__}: {e}); fix the file or remove it."
            )
            continue
        if not tools:
            report.errors.append(f"{path}: defines no TOOL or TOOLS; skipped.")
            continue
        for tool in tools:
            tool.source = str(path)
            if not NAME_RE.match(tool.name):
                report.errors.append(
                    f"{path}: tool name {tool.name!r} must match ^[a-zA-Z0-9_-]{{1,64}}$; skipped."
                )
                continue
            try:
                registry.add(tool)
            except ValueError as e:
                report.errors.append(str(e))
                continue
            report.loaded.append(tool.name)


def load_tools(folders: list[Path], *, include_bundled: bool = True) -> tuple[Registry, LoadReport]:
    registry = Registry()
    report = LoadReport()
    dirs = ([bundled_tools_dir()] if include_bundled else []) + list(folders)
    for d in dirs:
        load_folder(d, registry, report)
    return registry, report
