"""What the sandbox of a session is, what it can enforce on this kernel, and how it is said.

One `Sandbox` per session. It probes the kernel once, owns the session's private temporary folder,
builds the Landlock rulesets (one per network choice, reused by every command), and gives every
place that needs it the same words: the panel line, the start notice, the note for the model and
the record in the log. It never claims a confinement it lacks: each part the kernel cannot enforce
is named wherever the sandbox is described.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

Mode = Literal["workspace", "off"]
PROBE_VAR = "AGENT_CLI_SANDBOX_PROBE"
"""For tests: `unsupported` makes the probe report no Landlock; `abi:N` caps the ABI used at N
(the confinement applied is then really the ABI N one)."""
NO_LANDLOCK = "kernel has no Landlock"
WRITE_DEVICES = ("/dev/null", "/dev/zero", "/dev/full")
"""Device files a command may write: the ones programs write to discard output. Terminals are
not among them (a command must not draw on your screen or type into it)."""
LINE = "sandbox: writes limited to the workspace, no network"
NETWORK_ALLOWED = "network: ALLOWED for this command"


@dataclass(frozen=True)
class Support:
    """What the kernel can enforce."""

    abi: int
    """Landlock ABI in use; 0 means none."""
    reason: str | None = None
    """Why there is no Landlock at all (`kernel has no Landlock`, `Landlock needs Linux`)."""

    def gaps(self, network: bool) -> list[str]:
        """The parts of the promise this ABI cannot keep, each naming the ABI."""
        if self.abi <= 0:
            return []
        out = []
        if self.abi < 3:
            out.append(f"truncating files outside the workspace not blocked: Landlock ABI "
                       f"{self.abi}")
        if self.abi < 4 and not network:
            out.append(f"no network rules: Landlock ABI {self.abi}")
        if self.abi < 6:
            out.append(f"signals to other processes not blocked: Landlock ABI {self.abi}")
        return out


_PROBED: Support | None = None


def probe() -> Support:
    """Ask the kernel once per process (AGENT_CLI_SANDBOX_PROBE overrides it for tests)."""
    global _PROBED
    forced = os.environ.get(PROBE_VAR, "").strip().lower()
    if forced == "unsupported":
        return Support(0, NO_LANDLOCK)
    if _PROBED is None:
        if not sys.platform.startswith("linux"):
            _PROBED = Support(0, "Landlock needs Linux")
        else:
            from agent_cli.sandbox import landlock

            abi = landlock.abi_version()
            _PROBED = Support(abi, None if abi else NO_LANDLOCK)
    if forced.startswith("abi:") and forced[4:].isdigit() and _PROBED.abi:
        return Support(min(int(forced[4:]), _PROBED.abi))
    return _PROBED


class Sandbox:
    """The confinement of one session's processes: write only inside `workspace` and a private
    temporary folder, no TCP unless a call asks for it, no signals or ptrace outside."""

    def __init__(self, mode: Mode, workspace: Path, support: Support | None = None) -> None:
        self.mode: Mode = mode
        self.workspace = workspace.resolve()
        self.support = support if support is not None else (
            probe() if mode == "workspace" else Support(0))
        self._tmp: Path | None = None
        self._rulesets: dict[tuple[bool, tuple[str, ...]], int] = {}
        self._spawners: dict[bool, Any] = {}
        self._lock = threading.Lock()

    @property
    def enforced(self) -> bool:
        """True when commands are really confined (mode on, and the kernel can)."""
        return self.mode == "workspace" and self.support.abi > 0

    # -- words ---------------------------------------------------------------------------

    def panel_lines(self, network: bool) -> list[str]:
        """What a command's panel says about its confinement; the network line comes first."""
        lines = [NETWORK_ALLOWED] if network else []
        if self.mode == "off":
            lines.append("sandbox: OFF for this session: the command runs with all your rights; "
                         "effects outside the workspace cannot be undone")
            return lines
        if not self.enforced:
            lines.append(f"not sandboxed: {self.support.reason or NO_LANDLOCK}; the command "
                         "runs with all your rights")
            return lines
        blocks_network = not network and self.support.abi >= 4
        lines.append(LINE if blocks_network else "sandbox: writes limited to the workspace")
        lines.extend(f"not confined: {gap}" for gap in self.support.gaps(network))
        return lines

    def start_notice(self) -> str | None:
        """Said once when a session starts, when the sandbox is less than the full promise."""
        if self.mode == "off":
            return ("sandbox off: approved commands and MCP servers run with all your rights "
                    "(sandbox = \"off\" or --sandbox off).")
        if not self.enforced:
            return (f"not sandboxed: {self.support.reason or NO_LANDLOCK}. Approved commands "
                    "and MCP servers run with all your rights.")
        gaps = self.support.gaps(network=False)
        if gaps:
            return "sandbox partial: " + "; ".join(gaps) + "."
        return None

    def model_note(self) -> str | None:
        """One paragraph for the system prompt, so the model asks instead of retrying."""
        if not self.enforced:
            return None
        blocked = ["writing outside the workspace and the temporary folder in TMPDIR"]
        if self.support.abi >= 4:
            blocked.append("network connections (unless a run_command call sets "
                           "network: true, which the user must approve)")
        return ("Commands you run are confined by the operating system: "
                + " and ".join(blocked) + " are blocked and fail with errors such as "
                "\"Permission denied\". Do not try to work around this; if a task needs it, "
                "say so and ask the user.")

    def record(self, network: bool) -> dict[str, Any]:
        """The `sandbox` field of a tool_started event."""
        if self.mode == "off":
            return {"mode": "off"}
        if not self.enforced:
            return {"mode": "none", "reason": self.support.reason or NO_LANDLOCK}
        return {"mode": "workspace", "landlock_abi": self.support.abi, "network": network,
                "writes": [str(self.workspace), str(self.tmpdir())],
                "gaps": self.support.gaps(network)}

    def record_for(self, args: Any) -> dict[str, Any]:
        """The record for a tool call: its arguments say whether it asked for network."""
        return self.record(wants_network(args))

    # -- enforcement ---------------------------------------------------------------------

    def tmpdir(self) -> Path:
        """The session's private temporary folder (0700), made on first use."""
        with self._lock:
            if self._tmp is None:
                self._tmp = Path(tempfile.mkdtemp(prefix="agent-cli-tmp-"))
                # Removed at close(), or when the session is dropped, or at exit.
                weakref.finalize(self, shutil.rmtree, str(self._tmp), ignore_errors=True)
            return self._tmp

    def env(self, env: dict[str, str], tmp: Path | None = None) -> dict[str, str]:
        """`env` with TMPDIR, TMP and TEMP pointing at the writable temporary folder."""
        if not self.enforced:
            return env
        folder = str(tmp or self.tmpdir())
        return {**env, "TMPDIR": folder, "TMP": folder, "TEMP": folder}

    def _ruleset(self, network: bool, write: tuple[str, ...]) -> int:
        from agent_cli.sandbox import landlock

        key = (network, write)
        with self._lock:
            fd = self._rulesets.get(key)
            if fd is None:
                fd = landlock.build_ruleset(self.support.abi, write=write,
                                            write_files=WRITE_DEVICES, network=network)
                self._rulesets[key] = fd
            return fd

    def popen(self, network: bool) -> Callable[..., Any]:
        """What starts a child with this session's confinement: a Popen-like callable (the
        session's spawner thread for this network choice; plain Popen when nothing is enforced).
        Raises OSError when the kernel refuses the ruleset."""
        if not self.enforced:
            return subprocess.Popen
        from agent_cli.sandbox.spawner import Spawner

        write = (str(self.workspace), str(self.tmpdir()))
        fd = self._ruleset(network, write)
        with self._lock:
            spawner = self._spawners.get(network)
            if spawner is None:
                spawner = Spawner(fd, name=f"agent-cli-sandbox-{'net' if network else 'nonet'}")
                self._spawners[network] = spawner
        return spawner.popen

    def wrap(self, argv: list[str], *, writable: str, network: bool,
             name: str = "server") -> tuple[list[str], Path | None]:
        """`argv` run through the exec wrapper, confined to `writable` and a temporary folder of
        its own (returned); `argv` unchanged when nothing is enforced. For processes someone
        else spawns (the MCP SDK starts servers itself)."""
        if not self.enforced:
            return list(argv), None
        from agent_cli.sandbox.exec import wrapper_argv

        tmp = self.tmpdir() / f"{_safe_name(name)}-{os.urandom(3).hex()}"
        tmp.mkdir(mode=0o700)
        policy = {"abi": self.support.abi, "write": [str(Path(writable).resolve()), str(tmp)],
                  "files": list(WRITE_DEVICES), "network": network, "tmp": str(tmp)}
        return wrapper_argv(policy, argv), tmp

    def close(self) -> None:
        """Stop the spawners, close the rulesets and remove the temporary folder."""
        with self._lock:
            for spawner in self._spawners.values():
                spawner.close()
            self._spawners.clear()
            for fd in self._rulesets.values():
                with contextlib.suppress(OSError):
                    os.close(fd)
            self._rulesets.clear()
            tmp, self._tmp = self._tmp, None
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        if current() is self:
            install(None)


def wants_network(args: Any) -> bool:
    """A call asks for network by an argument `network` that is exactly true."""
    value = args.get("network") if isinstance(args, dict) else getattr(args, "network", False)
    return value is True


def _safe_name(name: str) -> str:
    cleaned = "".join(c if c.isalnum() or c in "-_" else "_" for c in name)[:32]
    return cleaned or "server"


_CURRENT: weakref.ref[Sandbox] | None = None


def install(sandbox: Sandbox | None) -> None:
    """Make `sandbox` the one processes started through the process helper get by default (the
    running session's); plugins that start processes are then confined without asking."""
    global _CURRENT
    _CURRENT = weakref.ref(sandbox) if sandbox is not None else None


def current() -> Sandbox | None:
    """The running session's sandbox, if any."""
    return _CURRENT() if _CURRENT is not None else None
