"""The plugin loader. Built-in tools load through here exactly like a user's plugins.

A plugin is a `.py` file that defines `TOOL` (a Tool) or `TOOLS` (a list of them). A file that
raises at import, calls sys.exit, takes longer than IMPORT_TIMEOUT_S to import, or defines no
valid tool is reported by name and skipped; the rest load. Two tools with one name are an error
naming both files (the first one loaded stays), never "last one wins".

Folders come only from the caller: the bundled tools.d, the user's config and --tools-dir. Nothing
here looks at the workspace.
"""

from __future__ import annotations

import importlib.util
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from pydantic import BaseModel

from agent_cli.tools.base import NAME_RE, Tool
from agent_cli.tools.registry import Registry
from agent_cli.tools.trust import PluginPins

MAX_PLUGIN_BYTES = 64 << 20
"""Largest plugin file read."""
IMPORT_TIMEOUT_S = 5.0
"""A plugin import that takes longer is abandoned (its thread is left to finish on its own)."""


@dataclass
class LoadReport:
    """What loading the plugin folders went wrong on (the tools that loaded are in the
    registry)."""

    errors: list[str] = field(default_factory=list)
    """One sentence per file that was skipped or tool that was refused, naming the file."""


class PluginSkipped(Exception):
    """A plugin file that will not be used; the message says why and what to fix."""


def bundled_tools_dir() -> Path:
    """tools.d/ ships inside the wheel as agent_cli/bundled_tools; in a source tree it sits beside
    the package."""
    pkg = Path(__file__).resolve().parent.parent
    installed = pkg / "bundled_tools"
    if installed.is_dir() and any(installed.glob("*.py")):
        return installed
    return pkg.parent / "tools.d"


def _module_name(path: Path) -> str:
    import hashlib

    digest = hashlib.sha256(str(path).encode("utf-8", "surrogateescape")).hexdigest()[:12]
    stem = "".join(c if c.isalnum() else "_" for c in path.stem)
    return f"agent_cli_plugin_{digest}_{stem}"


def _import_file(path: Path, timeout_s: float | None = None,
                 source: bytes | None = None) -> ModuleType:
    """Import one plugin file in a helper thread, bounded in time.

    With `source`, those bytes are what runs (the ones whose hash was checked against the pin),
    not whatever the file holds by the time the import reads it again.

    The module is in sys.modules while its body runs (dataclasses and pydantic look it up there)
    and is removed again if the import fails. A Ctrl-C while waiting propagates to the caller.
    """
    limit = IMPORT_TIMEOUT_S if timeout_s is None else timeout_s
    name = _module_name(path)
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise PluginSkipped(f"{path}: not a loadable Python file; skipped.")
    module = importlib.util.module_from_spec(spec)
    loader = spec.loader
    result: dict[str, BaseException] = {}
    done = threading.Event()

    def target() -> None:
        try:
            if source is None:
                loader.exec_module(module)
            else:
                exec(compile(source, str(path), "exec"), module.__dict__)
        except BaseException as e:  # SystemExit and KeyboardInterrupt from a plugin included
            result["error"] = e
        finally:
            done.set()

    sys.modules[name] = module
    t = threading.Thread(target=target, name=f"load-{path.name}", daemon=True)
    t.start()
    try:
        finished = done.wait(limit)
    except KeyboardInterrupt:
        sys.modules.pop(name, None)
        raise
    if not finished:
        sys.modules.pop(name, None)
        raise PluginSkipped(f"{path}: importing it took longer than {limit:g} s (does it do "
                            "work or wait at import time?); skipped.")
    err = result.get("error")
    if err is not None:
        sys.modules.pop(name, None)
        from agent_cli.tools.pinned_imports import PinRefused

        if isinstance(err, PinRefused):
            raise PluginSkipped(f"{path}: not loaded, because {err}")
        if isinstance(err, SystemExit):
            raise PluginSkipped(f"{path}: the plugin called sys.exit({err.code!r}) at import; "
                                "skipped.")
        where = _plugin_line(err, path)
        raise PluginSkipped(f"{path}{where}: could not load ({type(err).__name__}: {err}); fix "
                            "the file or remove it.")
    return module


def _plugin_line(err: BaseException, path: Path) -> str:
    """':LINE' of the deepest frame inside the plugin file, to point at the fault."""
    tb = err.__traceback__
    line = ""
    while tb is not None:
        if Path(tb.tb_frame.f_code.co_filename) == path:
            line = f":{tb.tb_lineno}"
        tb = tb.tb_next
    return line


def _tools_of(module: ModuleType, path: Path) -> list[Tool]:
    found: Any = getattr(module, "TOOLS", None)
    if found is None:
        single = getattr(module, "TOOL", None)
        found = [single] if single is not None else []
    if not isinstance(found, list | tuple):
        raise PluginSkipped(f"{path}: TOOLS must be a list of Tool objects; skipped.")
    if not found:
        raise PluginSkipped(f"{path}: defines no TOOL or TOOLS; skipped.")
    for t in found:
        if not isinstance(t, Tool):
            raise PluginSkipped(f"{path}: {type(t).__name__} object in TOOLS is not an "
                                "agent_cli.tools.Tool; skipped.")
    return list(found)


def check_tool(tool: Tool) -> str | None:
    """What is wrong with a tool definition, in one sentence, or None if it can be offered."""
    if not isinstance(tool.name, str) or not NAME_RE.match(tool.name):
        return f"tool name {tool.name!r} must match ^[a-zA-Z0-9_-]{{1,64}}$"
    if tool.effect not in ("read", "write"):
        return f"tool {tool.name!r}: effect must be 'read' or 'write', not {tool.effect!r}"
    if not isinstance(tool.description, str) or not tool.description.strip():
        return f"tool {tool.name!r}: the description is empty; say what it does for the model"
    if tool.input_schema is None and not (isinstance(tool.args, type)
                                          and issubclass(tool.args, BaseModel)):
        return f"tool {tool.name!r}: args must be a pydantic BaseModel class"
    for fn_name in ("run", "preview", "verify", "snapshot"):
        fn = getattr(tool, fn_name)
        if (fn_name == "run" or fn is not None) and not callable(fn):
            return f"tool {tool.name!r}: {fn_name} must be a function"
    try:
        tool.schema_hash()
    except Exception as e:
        return f"tool {tool.name!r}: its arguments give no JSON schema ({type(e).__name__}: {e})"
    return None


def load_file(path: Path, registry: Registry, report: LoadReport,
              pins: PluginPins | None = None, source: bytes | None = None) -> None:
    """Load one plugin file into the registry; problems go to the report, never raise. With
    `source`, those bytes run (the ones checked against the pins by `load_folder`); with `pins`
    alone, the file is read once through the gate and checked, and a file that changed since it
    was trusted is reported and not imported."""
    if source is None and pins is not None:
        from agent_cli.trusted_input import InputRefused, open_trusted_text

        try:
            item = open_trusted_text(path.parent, path.name, max_bytes=MAX_PLUGIN_BYTES,
                                     what="plugin")
        except InputRefused as e:
            report.errors.append(f"{path}: {e} Skipped.")
            return
        check = pins.check_input(item, what="plugin", how="agent-cli tools --trust")
        if not check.ok:
            report.errors.append(check.message)
            return
        source = item.data
    try:
        module = _import_file(path, source=source)
        tools = _tools_of(module, path)
    except PluginSkipped as e:
        report.errors.append(str(e))
        return
    for tool in tools:
        tool.source = str(path)
        problem = check_tool(tool)
        if problem is not None:
            report.errors.append(f"{path}: {problem}; skipped.")
            continue
        try:
            registry.add(tool)
        except ValueError as e:
            report.errors.append(str(e))


def load_folder(folder: Path, registry: Registry, report: LoadReport,
                pins: PluginPins | None = None) -> None:
    """Load the plugins of one folder. With `pins` (a user's folder), every file of the folder
    is checked first (tools/plugin_folder.py): one that changed holds out all of the folder's
    plugins, since any of them may load it by path; the plugins run from the bytes checked."""
    if not folder.is_dir():
        report.errors.append(f"{folder}: tools folder not found.")
        return
    plugins = [p for p in sorted(folder.glob("*.py")) if not p.name.startswith("_")
               and (p.is_file() or p.is_symlink())]
    if pins is None:
        for path in plugins:
            load_file(path, registry, report)
        return
    from agent_cli.tools.pinned_imports import watch_plugin_folder
    from agent_cli.tools.plugin_folder import check_folder, held_out

    sys.dont_write_bytecode = True  # no bytecode of ours lands in a pinned folder
    # Whatever the plugins import from this folder, now or later, is pinned too.
    watch_plugin_folder(folder, pins)
    checked = check_folder(folder, pins)
    if checked.problems:
        report.errors.extend(checked.problems)
        report.errors.append(held_out(folder, [p.name for p in plugins]))
        return
    for path in plugins:
        source = checked.sources.get(path.name)
        if source is None:
            continue  # refused by the folder check (reported there)
        load_file(path, registry, report, source=source)


def load_tools(folders: list[Path], *, include_bundled: bool = True,
               pins: PluginPins | None = None) -> tuple[Registry, LoadReport]:
    """The bundled tools, then each folder named by the user, in order. With `pins`, the user's
    plugin files (not the bundled ones) are checked against their pins (tools/trust.py)."""
    registry = Registry()
    report = LoadReport()
    if pins is not None and pins.problem:
        report.errors.append(pins.problem)
    bundled = bundled_tools_dir()
    dirs = ([bundled] if include_bundled else []) + list(folders)
    seen: set[Path] = set()
    for d in dirs:
        key = d.resolve() if d.exists() else d
        if key in seen:
            continue  # the same folder named twice would report every tool as a duplicate
        seen.add(key)
        load_folder(d, registry, report, None if d == bundled else pins)
    return registry, report
