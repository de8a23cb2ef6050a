"""The kernel sandbox of approved commands and MCP servers (SECURITY.md section 8).

- `policy`: the session's `Sandbox` (what is confined, what the kernel can enforce, the words
  for the panel, the log and the model); it computes every process's record;
- `capabilities`: that record (reads, writes, network, what is not enforced), the default
  read-deny list and the warning for a server run unconfined;
- `readplan`: the record as Landlock rules ("all but these" as an allow-list);
- `landlock`: the three Landlock system calls through ctypes;
- `seccomp`: the socket filter of a process without network;
- `pidns`: a PID namespace per command, so what it starts ends with it;
- `diagnose`: the one line that names the sandbox after a refusal;
- `spawner`: a confined thread that starts run_command's children, so they are born confined;
- `overlay`: a copy-on-write layer per approved command (overlayfs in a private mount namespace,
  mounted first and confined second), whose writes agent_cli.undo.upper applies and records;
- `exec`: the wrapper that confines a process someone else spawns (MCP servers), then execs it;
- `mcp`: wraps an MCP server's command with it;
- `selfguard`: agent-cli hides its own secrets from /proc and goes non-dumpable at start.

This file imports nothing: the exec wrapper imports `landlock` through it on every server start.
"""
