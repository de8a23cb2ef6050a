"""Pins for every file a plugin imports from its own folder, not only the plugin file.

A plugin that puts its folder on `sys.path` and does `import _helpers` (or imports a package kept
beside it) runs that code with the user's rights too; pinning only the plugin file let an edit to
the helper run unseen. This module installs one import hook (a meta path finder placed first on
`sys.meta_path`) for the user's plugin folders: any module found inside one of them, whenever it
is imported (at load time or lazily while a tool runs), is checked against its pin in the same
pins file (first use pins it) and the exact bytes that were checked are what runs. A file that
changed since it was trusted is not imported: the import fails with a sentence that names it and
says how to trust it (`agent-cli tools --trust FILE`), so the plugin that needs it is held out.
Compiled forms (`.pyc`, extension modules) in a plugin folder cannot be pinned by their source
and are refused.

Each file is read through the gate (trusted_input.py) under the watched folder, by its name there.
Code that reads and runs a file by other means (`exec(open(...).read())`,
`importlib.util.spec_from_file_location` on a path of its own) is not seen by an import hook: for
that, the loader pins every file of the folder before any plugin of it runs
(tools/plugin_folder.py).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_cli.tools.trust import PluginPins


class PinRefused(ImportError):
    """A file a plugin imports changed since it was trusted (or cannot be pinned)."""


_COMPILED = tuple(importlib.machinery.EXTENSION_SUFFIXES) + tuple(
    importlib.machinery.BYTECODE_SUFFIXES)


def _inside(folder: Path, path: Path) -> bool:
    return path == folder or folder in path.parents


class _PinnedLoader(importlib.abc.Loader):
    def __init__(self, path: Path, pins: PluginPins, folder: Path) -> None:
        self.path = path
        self.pins = pins
        self.folder = folder

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        return None  # the default module object

    def exec_module(self, module: ModuleType) -> None:
        from agent_cli.trusted_input import InputRefused, open_trusted_text

        try:
            item = open_trusted_text(self.folder, str(self.path.relative_to(self.folder)),
                                     max_bytes=64 << 20, what="file imported by a plugin")
        except (InputRefused, ValueError) as e:
            raise PinRefused(f"{self.path}: {e}") from None
        check = self.pins.check_input(item, what="file imported by a plugin",
                                      how="agent-cli tools --trust")
        if not check.ok:
            raise PinRefused(check.message)
        exec(compile(item.data, str(self.path), "exec"), module.__dict__)


class PinnedPluginImports(importlib.abc.MetaPathFinder):
    """The hook: modules that live in a watched folder load only as their pinned bytes."""

    def __init__(self) -> None:
        self._folders: dict[Path, PluginPins] = {}
        self._reals: dict[str, Path] = {}
        self._lock = threading.Lock()

    def watch(self, folder: Path, pins: PluginPins) -> None:
        with self._lock:
            self._folders[Path(os.path.realpath(folder))] = pins

    def _owner(self, entry: Path) -> tuple[Path, PluginPins] | None:
        for folder, pins in self._folders.items():
            if _inside(folder, entry):
                return folder, pins
        return None

    def _real(self, raw: str) -> Path | None:
        key = raw or os.getcwd()
        real = self._reals.get(key)
        if real is None:
            try:
                real = Path(os.path.realpath(key))
            except (OSError, ValueError, TypeError):
                return None
            self._reals[key] = real
        return real

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if not self._folders:
            return None
        entries = [(real, self._owner(real)) for raw in (sys.path if path is None else path)
                   if isinstance(raw, str) and (real := self._real(raw)) is not None]
        owned = [i for i, (_real, owner) in enumerate(entries) if owner is not None]
        if not owned:
            return None  # the usual case (the SDK's imports): no plugin folder on the way
        last = fullname.rpartition(".")[2]
        for entry, owner in entries[:owned[-1] + 1]:
            package = entry / last / "__init__.py"
            module = entry / f"{last}.py"
            compiled = [entry / f"{last}{suffix}" for suffix in _COMPILED]
            if owner is None:
                if package.is_file() or module.is_file() or (entry / last).is_dir() or \
                        any(c.is_file() for c in compiled):
                    return None  # found first outside the plugin folders: the usual finders
                continue
            if package.is_file():
                return importlib.util.spec_from_file_location(
                    fullname, package, loader=_PinnedLoader(package, owner[1], owner[0]),
                    submodule_search_locations=[str(entry / last)])
            if module.is_file():
                return importlib.util.spec_from_file_location(
                    fullname, module, loader=_PinnedLoader(module, owner[1], owner[0]))
            for c in compiled:
                if c.is_file():
                    raise PinRefused(f"{c}: compiled code in a plugin folder cannot be pinned, "
                                     "so it is not imported; keep the .py source there instead.")
        return None


_HOOK: PinnedPluginImports | None = None
_HOOK_LOCK = threading.Lock()


def watch_plugin_folder(folder: Path, pins: PluginPins) -> None:
    """Put `folder` (and everything below it) under the pins; installs the hook once."""
    global _HOOK
    with _HOOK_LOCK:
        if _HOOK is None:
            _HOOK = PinnedPluginImports()
            sys.meta_path.insert(0, _HOOK)
    _HOOK.watch(folder, pins)
