"""agent-cli as an Agent Client Protocol agent (`agent-cli acp`): editors run it over stdio.

wire (JSON-RPC 2.0, one object a line), agent (the methods), turns (a prompt's turn, permission
questions, cancel), updates (events as session/update payloads, stop reasons), permission,
content (prompt blocks in, a resumed conversation out), diffs (edit diffs from the undo store),
servers (the client's MCP servers, as data), opening and resume (sessions from the options and
from logs). A front end: no Rich, no prompt-toolkit, no typer; docs/acp.md is the contract.
"""
