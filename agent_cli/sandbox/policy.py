"""What the sandbox of a session is, what it can enforce on this kernel, and how it is said.

One `Sandbox` per session. It probes the kernel once, owns the session's private temporary folder,
builds the Landlock rulesets (one per network choice, reused by every command), and gives every
place that needs it the same words: the panel line, the start notice, the note for the model and
the record in the log. It never claims a confinement it lacks: each part the kernel cannot enforce
is named wherever the sandbox is described.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import weakref
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from agent_cli.sandbox.capabilities import Capabilities

Mode = Literal["workspace", "off"]
PROBE_VAR = "AGENT_CLI_SANDBOX_PROBE"
"""For tests: `unsupported` makes the probe report no Landlock; `abi:N` caps the ABI used at N
(the confinement applied is then really the ABI N one); `noseccomp` leaves the socket filter
out (as on a machine without one)."""
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

    seccomp: bool = True
    """A socket filter can be installed (agent_cli.sandbox.seccomp)."""

    def gaps(self, network: bool) -> list[str]:
        """The parts of the promise this kernel cannot keep, each naming why."""
        if self.abi <= 0:
            return []
        out = []
        if self.abi < 3:
            out.append(f"truncating files outside the workspace not blocked: Landlock ABI "
                       f"{self.abi}")
        if not network and not self.seccomp:
            out.append("UDP, unix and other sockets not blocked: no seccomp filter here"
                       if self.abi >= 4 else f"no network rules: Landlock ABI {self.abi}")
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
            _PROBED = Support(abi, None if abi else NO_LANDLOCK, _seccomp_works())
    seccomp = _PROBED.seccomp and "noseccomp" not in forced
    if forced.startswith("abi:") and forced[4:].split(",")[0].isdigit() and _PROBED.abi:
        return Support(min(int(forced[4:].split(",")[0]), _PROBED.abi), None, seccomp)
    if not seccomp:
        return Support(_PROBED.abi, _PROBED.reason, False)
    return _PROBED


def _seccomp_works() -> bool:
    """The architecture has a filter here and the kernel has seccomp filters."""
    from agent_cli.sandbox import seccomp

    if not seccomp.supported():
        return False
    try:
        with open("/proc/self/status", "rb") as f:
            return b"\nSeccomp:" in f.read()
    except OSError:
        return False


class Sandbox:
    """The confinement of one session's processes. Each process gets one `Capabilities` record
    (computed here only): reads everywhere but agent-cli's own state and the credential stores,
    writes only inside the workspace (a server: its grants) and a private temporary folder, no
    sockets unless the call (or the server's config) asks for network, no signals or ptrace
    outside, and (run_command) a PID namespace of its own."""

    @classmethod
    def for_settings(cls, settings: Any, workspace: Path,
                     extra_state: Sequence[str | Path] = ()) -> Sandbox:
        """The sandbox the settings ask for (`sandbox`, `sandbox_read_deny`/`_allow`, and
        agent-cli's own state as the path guard knows it, plus `extra_state` such as this
        session's log): the one way a session and the `agent-cli mcp` commands build it, so
        their servers are confined alike."""
        from agent_cli.config import own_state

        return cls(settings.sandbox, workspace, read_deny=settings.sandbox_read_deny,
                   read_allow=settings.sandbox_read_allow,
                   state=[*own_state(settings), *extra_state])

    def __init__(self, mode: Mode, workspace: Path, support: Support | None = None, *,
                 read_deny: Sequence[str] = (), read_allow: Sequence[str] = (),
                 state: Sequence[str | Path] = ()) -> None:
        self.mode: Mode = mode
        self.workspace = workspace.resolve()
        self.support = support if support is not None else (
            probe() if mode == "workspace" else Support(0))
        self.read_deny_extra = tuple(read_deny)
        """Config `sandbox_read_deny`: more paths no confined process may read."""
        self.read_allow = tuple(read_allow)
        """Config `sandbox_read_allow`: paths taken out of the read-deny list (and re-allowed
        when they lie inside a denied folder)."""
        self.state = tuple(state)
        """More of agent-cli's own state (a `log_dir`, config files read)."""
        self._tmp: Path | None = None
        self._denied: tuple[str, ...] | None = None
        self._state: tuple[str, ...] | None = None
        self._plans: dict[Capabilities, list[tuple[str, Any]]] = {}
        self._rulesets: dict[Capabilities, int] = {}
        self._overlay_rules: dict[Capabilities, Any] = {}
        self._spawners: dict[bool, Any] = {}
        self._servers: dict[str, Capabilities] = {}
        self._pidns: bool | None = None
        self._lock = threading.Lock()
        self.layer: Any = None
        """The overlay layer (sandbox.overlay.Layer) the next processes write into, set by the
        undo recorder around one approved call; None: they write the workspace itself."""

    @property
    def enforced(self) -> bool:
        """True when commands are really confined (mode on, and the kernel can)."""
        return self.mode == "workspace" and self.support.abi > 0

    # -- the record ----------------------------------------------------------------------

    def read_denied(self) -> tuple[str, ...]:
        """The read-deny list (defaults, plus `sandbox_read_deny`, minus `sandbox_read_allow`),
        resolved; computed once per session. agent-cli's own state is never taken out."""
        from agent_cli.sandbox.capabilities import default_read_deny, expand_path

        state = self.state_denied()
        with self._lock:
            if self._denied is None:
                allow = {expand_path(p) for p in self.read_allow}
                paths = default_read_deny(self.state)
                paths += [expand_path(p) for p in self.read_deny_extra]
                out: list[str] = []
                for path in paths:
                    if (path in state or path not in allow) and path not in out and path != "/":
                        out.append(path)
                self._denied = tuple(out)
            return self._denied

    def state_denied(self) -> tuple[str, ...]:
        """agent-cli's own state, resolved: out of reach of every confined process whatever is
        granted (a server's `cwd` or `writable`, `sandbox_read_allow`), so the log key stays
        secret and a signed log means what it says."""
        from agent_cli.sandbox.capabilities import expand_path, own_state_paths

        with self._lock:
            if self._state is None:
                self._state = tuple(dict.fromkeys(expand_path(str(p))
                                                  for p in own_state_paths(self.state)))
            return self._state

    def pid_namespace(self) -> bool:
        """Whether run_command's children can get a PID namespace here (probed once)."""
        if self._pidns is None:
            from agent_cli.sandbox.pidns import available

            self._pidns = self.enforced and available()
        return self._pidns

    def capabilities(self, network: bool, *, writable: Sequence[str] | None = None,
                     name: str | None = None, off: bool = False) -> Capabilities:
        """The record of one process: run_command's (writable None: the workspace and the
        session's temporary folder) or a server's (`writable` as granted, `name`)."""
        from agent_cli.sandbox.capabilities import Capabilities, expand_path

        if self.mode == "off" or off:
            return Capabilities("off", network=True, name=name)
        if not self.enforced:
            return Capabilities("none", network=True, reason=self.support.reason or NO_LANDLOCK,
                                name=name)
        write: tuple[str, ...]
        if writable is None:
            write = (str(self.workspace), str(self.tmpdir()))
        else:
            write = tuple(dict.fromkeys(expand_path(p) for p in writable))
        gaps = self._gaps(network, command=writable is None)
        allow = tuple(expand_path(p) for p in self.read_allow)
        return Capabilities("workspace", read=("/", *allow), read_denied=self.read_denied(),
                            state=self.state_denied(),
                            write=write, network=network, gaps=tuple(gaps),
                            landlock_abi=self.support.abi, name=name)

    def _gaps(self, network: bool, *, command: bool) -> list[str]:
        """What the kernel here cannot enforce of a record (a command's, or a server's)."""
        gaps = list(self.support.gaps(network))
        if command and not self.pid_namespace():
            gaps.append("processes it starts in a new session are ended by a marker in their "
                        "environment only: no PID namespace without CAP_SYS_ADMIN")
        return gaps

    def server(self, name: str) -> Capabilities | None:
        """The record of a server started through `wrap` (None: never started here)."""
        return self._servers.get(name)

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
        caps = self.capabilities(network)
        blocks_network = not network and (self.support.seccomp or self.support.abi >= 4)
        lines.append(LINE if blocks_network else "sandbox: writes limited to the workspace")
        lines.append("sandbox: " + caps.reads_line())
        lines.extend(f"not confined: {gap}" for gap in caps.gaps)
        return lines

    def start_notice(self) -> str | None:
        """Said once when a session starts, when the sandbox is less than the full promise."""
        if self.mode == "off":
            return ("sandbox off: approved commands and MCP servers run with all your rights "
                    "(sandbox = \"off\" or --sandbox off).")
        if not self.enforced:
            return (f"not sandboxed: {self.support.reason or NO_LANDLOCK}. Approved commands "
                    "and MCP servers run with all your rights.")
        gaps = self._gaps(False, command=True)
        if gaps:
            return "sandbox partial: " + "; ".join(gaps) + "."
        return None

    def model_note(self) -> str | None:
        """One paragraph for the system prompt, so the model asks instead of retrying."""
        if not self.enforced:
            return None
        blocked = ["writing outside the workspace and the temporary folder in TMPDIR",
                   "reading agent-cli's own files and the user's credential stores (~/.ssh, "
                   "~/.aws and the like)"]
        if self.support.seccomp or self.support.abi >= 4:
            blocked.append("network and local sockets (unless a run_command call sets "
                           "network: true, which the user must approve)")
        return ("Commands you run are confined by the operating system: "
                + ", ".join(blocked[:-1]) + " and " + blocked[-1] + " are blocked and fail "
                "with errors such as \"Permission denied\". Do not try to work around this; "
                "if a task needs it, say so and ask the user.")

    def record(self, network: bool) -> dict[str, Any]:
        """The `sandbox` field of a tool_started event for run_command."""
        return self.capabilities(network).record()

    def record_for(self, args: Any, source: str = "") -> dict[str, Any]:
        """The record for a tool call: an MCP server's tool gets its server's record (what that
        process really may do); any other call the record of a command with the network its
        arguments ask for. A server this session started no process for (an http or sse
        server) is recorded as `remote`."""
        if source.startswith("mcp:"):
            caps = self._servers.get(source[4:])
            if caps is not None:
                return caps.record()
            return {"mode": "remote", "server": source[4:]}
        return self.record(wants_network(args))

    def panel_extra(self, source: str) -> dict[str, str]:
        """A panel row for a call of an MCP server's tool: what that server may do (the bold
        warning when it runs unconfined); nothing for other calls (run_command says it in its
        preview)."""
        caps = self._servers.get(source[4:]) if source.startswith("mcp:") else None
        if caps is None:
            return {}
        return {"sandbox": "; ".join(caps.server_lines())}

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

    def plan(self, caps: Capabilities) -> list[tuple[str, Any]]:
        """The Landlock rules of a record (readplan), built once per session and record."""
        from agent_cli.sandbox.readplan import plan

        with self._lock:
            rules = self._plans.get(caps)
            if rules is None:
                allow = caps.read[1:]
                rules = plan(caps.read[:1], caps.write, caps.read_denied, allow,
                             never=caps.state)
                self._plans[caps] = rules
            return rules

    def _ruleset(self, caps: Capabilities) -> int:
        from agent_cli.sandbox import landlock

        rules = self.plan(caps)
        with self._lock:
            fd = self._rulesets.get(caps)
            if fd is None:
                fd = landlock.build_ruleset(self.support.abi, rules=rules,
                                            write_files=WRITE_DEVICES, network=caps.network)
                self._rulesets[caps] = fd
            return fd

    def _prepared(self, caps: Capabilities) -> Any:
        """The record's rules for commands in an overlay layer (landlock.Prepared): the ones
        outside the workspace added once to a ruleset kept for the session, the ones inside
        (which name the merged view) at each command."""
        from agent_cli.sandbox import landlock

        rules = self.plan(caps)
        with self._lock:
            prepared = self._overlay_rules.get(caps)
            if prepared is None:
                prepared = landlock.Prepared(self.support.abi, rules=rules,
                                             write_files=WRITE_DEVICES, network=caps.network,
                                             inside=str(self.workspace))
                self._overlay_rules[caps] = prepared
            return prepared

    def popen(self, network: bool) -> Callable[..., Any]:
        """What starts a child with this session's confinement: a Popen-like callable (the
        session's spawner thread for this network choice; plain Popen when nothing is enforced).
        Raises OSError when the kernel refuses the ruleset."""
        if self.layer is not None:
            return self._popen_in_layer(network)
        if not self.enforced:
            return subprocess.Popen
        from agent_cli.sandbox.spawner import Spawner

        caps = self.capabilities(network)
        fd = self._ruleset(caps)
        with self._lock:
            spawner = self._spawners.get(network)
            if spawner is None:
                spawner = Spawner(fd, name=f"agent-cli-sandbox-{'net' if network else 'nonet'}",
                                  sockets=network or not self.support.seccomp,
                                  pid_namespace=self._pidns is True)
                self._spawners[network] = spawner
        return spawner.popen

    def _popen_in_layer(self, network: bool) -> Callable[..., Any]:
        """Popen into the current overlay layer: mounted first, then confined with the same
        record's rules (the workspace's added after the mount, so they name the merged view)."""
        from agent_cli.sandbox.overlay import confinement, popen_in_layer

        layer = self.layer
        confine: Callable[[], None] | None = None
        if self.enforced:
            confine = confinement(self._prepared(self.capabilities(network)),
                                  sockets=network or not self.support.seccomp,
                                  pid_namespace=self.pid_namespace())

        def start(argv: Any, **kwargs: Any) -> Any:
            return popen_in_layer(layer, self.workspace, list(argv), confine=confine, **kwargs)

        return start

    def wrap(self, argv: list[str], *, writable: str | Sequence[str], network: bool,
             name: str = "server", off: bool = False) -> tuple[list[str], Path | None]:
        """`argv` run through the exec wrapper, confined to `writable` (one path or several)
        and a temporary folder of its own (returned); `argv` unchanged when nothing is enforced
        or `off` (this one server runs unconfined, as its config says). The server's record is
        kept for its calls' `tool_started` (see `server`). For processes someone else spawns
        (the MCP SDK starts servers itself)."""
        grants = [writable] if isinstance(writable, (str, os.PathLike)) else list(writable)
        if off or not self.enforced:
            self._servers[name] = self.capabilities(network, name=name, off=off)
            return list(argv), None
        from agent_cli.sandbox.exec import wrapper_argv

        tmp = self.tmpdir() / f"{_safe_name(name)}-{os.urandom(3).hex()}"
        tmp.mkdir(mode=0o700)
        caps = self.capabilities(network, writable=[*map(str, grants), str(tmp)], name=name)
        self._servers[name] = caps
        policy = {"abi": self.support.abi, "rules": self.plan(caps),
                  "files": list(WRITE_DEVICES), "network": network,
                  "sockets": network or not self.support.seccomp, "tmp": str(tmp)}
        return wrapper_argv(policy, argv, tmp), tmp

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
            for prepared in self._overlay_rules.values():
                prepared.close()
            self._overlay_rules.clear()
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


_CURRENT: contextvars.ContextVar[weakref.ref[Sandbox] | None] = contextvars.ContextVar(
    "agent_cli_sandbox", default=None)
"""The sandbox of the session whose work runs in this context. A context variable, not a
process global: two sessions in one process (eval, tests) each confine their own processes. The
engine sets it around a turn (`scope`), a tool's worker thread inherits it, and an MCP hub's
threads set their session's at their start."""


def install(sandbox: Sandbox | None) -> None:
    """Make `sandbox` the one processes started through the process helper get by default, in
    this context (a command that runs no turn: `agent-cli mcp list`)."""
    _CURRENT.set(weakref.ref(sandbox) if sandbox is not None else None)


@contextlib.contextmanager
def scope(sandbox: Sandbox | None) -> Iterator[None]:
    """Within the block (and the threads it starts with its context), `sandbox` is current."""
    token = _CURRENT.set(weakref.ref(sandbox) if sandbox is not None else None)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def current() -> Sandbox | None:
    """The running session's sandbox, if any."""
    ref = _CURRENT.get()
    return ref() if ref is not None else None
