"""The exec wrapper: confine this process with Landlock, then exec the real program.

    python -I -S -c BOOT --policy JSON -- PROGRAM ARGS...

For processes agent-cli does not spawn itself: the MCP SDK starts a server with its own
subprocess code, so the server's command is replaced by this wrapper around it. The policy is
JSON: {"abi": N, "rules": [[path, grant], ...] (agent_cli.sandbox.readplan), "files": [device
files], "network": bool, "sockets": bool (false: the socket filter of agent_cli.sandbox.seccomp
is installed too), "tmp": folder}.
TMPDIR, TMP and TEMP are pointed at "tmp". If confinement fails, the program is not started: one
line on stderr and exit status 126.

It costs a Python start (about 20 to 40 ms), once per server. run_command does not use it: its
children are started by a confined thread (agent_cli.sandbox.spawner), which costs next to
nothing.

`-I` (isolated mode) keeps the current folder, PYTHON* variables and user site-packages out of
the wrapper, so a folder it starts in cannot put its own code in its place; `-S` skips
site-packages (the wrapper needs only the standard library and this package, whose folder BOOT
puts on sys.path explicitly), which halves its start.
"""

from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import Any

EXIT_NOT_CONFINED = 126


def wrapper_argv(policy: dict[str, Any], argv: list[str]) -> list[str]:
    """The command line that runs `argv` confined by `policy`."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    boot = (f"import sys; sys.path.insert(0, {root!r}); "
            "from agent_cli.sandbox.exec import main; main()")
    return [sys.executable, "-I", "-S", "-c", boot, "--policy", json.dumps(policy), "--", *argv]


def _fail(message: str) -> None:
    sys.stderr.write(f"agent-cli sandbox: {message}; the program was not started.\n")
    sys.stderr.flush()
    os._exit(EXIT_NOT_CONFINED)


def main(args: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if args is None else args)
    if len(args) < 4 or args[0] != "--policy" or args[2] != "--":
        _fail("usage: --policy JSON -- PROGRAM ARGS...")
    try:
        policy = json.loads(args[1])
        abi = int(policy["abi"])
        rules = [(str(p), str(g)) for p, g in policy["rules"]]
        sockets = policy.get("sockets", True) is True
        files = [str(p) for p in policy.get("files", [])]
        network = policy["network"] is True
        tmp = policy.get("tmp")
    except (ValueError, KeyError, TypeError) as e:
        _fail(f"bad policy ({e})")
    argv = args[3:]
    from agent_cli.sandbox import landlock

    try:
        fd = landlock.build_ruleset(abi, rules=rules, write_files=files, network=network)
        landlock.restrict_self(fd)
        os.close(fd)
        if not sockets:
            from agent_cli.sandbox import seccomp

            seccomp.install()
    except OSError as e:
        _fail(f"could not confine {argv[0]!r} ({e})")
    if tmp:
        os.environ.update(TMPDIR=tmp, TMP=tmp, TEMP=tmp)
    try:
        os.execvp(argv[0], argv)
    except OSError as e:
        _fail(f"could not start {argv[0]!r}: {e.strerror or e}")


if __name__ == "__main__":
    main()
