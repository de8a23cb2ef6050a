"""The exec wrapper: confine this process with Landlock, then exec the real program.

    python -I -S -c BOOT --policy FILE SHA256 -- PROGRAM ARGS...

For processes agent-cli does not spawn itself: the MCP SDK starts a server with its own
subprocess code, so the server's command is replaced by this wrapper around it. The policy is a
JSON file (in the server's private temporary folder, 0600), named on the command line with the
SHA-256 of its bytes: a read allow-list can hold thousands of rules, more than one argument may
carry (the kernel refuses an argument over 128 KiB, E2BIG), and the hash makes a file changed
before the wrapper read it a refusal, never a weaker confinement. The wrapper removes it once read.
The policy: {"abi": N, "rules": [[path, grant], ...] (agent_cli.sandbox.readplan), "files": [device
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
    from pathlib import Path
    from typing import Any

EXIT_NOT_CONFINED = 126


POLICY_FILE = ".agent-cli-policy.json"


def wrapper_argv(policy: dict[str, Any], argv: list[str], folder: Path) -> list[str]:
    """The command line that runs `argv` confined by `policy`, which is written to `folder`
    (the process's own private temporary folder)."""
    import hashlib

    data = json.dumps(policy).encode("utf-8")
    path = folder / POLICY_FILE
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    boot = (f"import sys; sys.path.insert(0, {root!r}); "
            "from agent_cli.sandbox.exec import main; main()")
    return [sys.executable, "-I", "-S", "-c", boot, "--policy", str(path),
            hashlib.sha256(data).hexdigest(), "--", *argv]


def _read_policy(path: str, digest: str) -> bytes:
    """The policy file's bytes, checked against `digest`, and the file removed."""
    import hashlib

    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if hashlib.sha256(data).hexdigest() != digest:
        raise ValueError("the policy file changed after agent-cli wrote it")
    os.unlink(path)
    return data


def _fail(message: str) -> None:
    sys.stderr.write(f"agent-cli sandbox: {message}; the program was not started.\n")
    sys.stderr.flush()
    os._exit(EXIT_NOT_CONFINED)


def main(args: list[str] | None = None) -> None:
    args = list(sys.argv[1:] if args is None else args)
    if len(args) < 5 or args[0] != "--policy" or args[3] != "--":
        _fail("usage: --policy FILE SHA256 -- PROGRAM ARGS...")
    try:
        policy = json.loads(_read_policy(args[1], args[2]))
        abi = int(policy["abi"])
        rules = [(str(p), str(g)) for p, g in policy["rules"]]
        sockets = policy.get("sockets", True) is True
        files = [str(p) for p in policy.get("files", [])]
        network = policy["network"] is True
        tmp = policy.get("tmp")
    except (OSError, ValueError, KeyError, TypeError) as e:
        _fail(f"bad policy ({e})")
    argv = args[4:]
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
