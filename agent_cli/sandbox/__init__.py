"""The kernel sandbox of approved commands and MCP servers (design.md section 8).

- `policy`: the session's `Sandbox` (what is confined, what the kernel can enforce, the words
  for the panel, the log and the model);
- `landlock`: the three Landlock system calls through ctypes;
- `exec`: the wrapper that confines a process someone else spawns (MCP servers), then execs it;
- `selfguard`: agent-cli hides its own secrets from /proc and goes non-dumpable at start.

Importing this package costs only the standard library; ctypes is loaded when a session first
confines something.
"""

from agent_cli.sandbox.policy import Sandbox, Support, current, install, probe, wants_network

__all__ = ["Sandbox", "Support", "current", "install", "probe", "wants_network"]
