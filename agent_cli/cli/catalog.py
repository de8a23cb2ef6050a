"""What the top-level help says: the program's help text and each subcommand's name, module and
summary. Plain data, no typer: app.py builds the typer group from it, and main.py prints
`agent-cli --help` from it without importing typer."""

APP_HELP = (
    "A terminal agent: the model proposes tool calls, you approve each one that has "
    "effects.\n\nTry it offline, no key needed:\n\n"
    "  agent-cli chat --demo\n\n"
    "  agent-cli chat --provider scripted --script examples/demo_script.json\n\n"
    "With Claude: export ANTHROPIC_API_KEY=... then agent-cli chat"
)
"""The top-level help text (app.py gives it to typer; the quick path prints it)."""

VERSION_HELP = "Print the version (agent-cli X.Y.Z) and exit."
HELP_HELP = "Show this message and exit."
INSTALL_COMPLETION_HELP = "Install completion for the current shell."
SHOW_COMPLETION_HELP = ("Show completion for the current shell, to copy it or customize the "
                        "installation.")
"""typer's own texts for its two completion options (the quick help prints them too)."""

SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "chat": ("agent_cli.cli.chat",
             "Chat with the model in a REPL; write calls ask for your yes, one by one."),
    "run": ("agent_cli.cli.run", "Do one task headless and exit."),
    "tools": ("agent_cli.cli.tools", "List the tools: name, effect class, source file, schema "
              "hash, arguments and full description (what the model is told)."),
    "replay": ("agent_cli.cli.replay", "Show a saved session again: user turns, model text, "
               "each approval panel with the decision taken, and the results."),
    "undo": ("agent_cli.cli.undo", "Restore what approved calls changed, one turn at a time: "
             "shows the diff it would apply and asks [y/N]."),
    "eval": ("agent_cli.cli.eval", "Run the tasks of a task file, each in a fresh copy of its "
             "workspace, through the same loop as a chat, with the answers you allow for "
             "approvals (--approve-task-answers, --answers FILE; otherwise write calls are "
             "denied)."),
    "trust": ("agent_cli.cli.trust", "Trust plugin, skill or project instruction files as they "
              "are now (after you changed them): shows the whole change since each was last "
              "trusted and asks."),
    "log": ("agent_cli.cli.log", "Check and list session logs."),
    "mcp": ("agent_cli.cli.mcp", "MCP servers: their state, tools, and changed tool "
            "definitions."),
    "acp": ("agent_cli.cli.acp", "Serve the Agent Client Protocol on stdin/stdout, for editors "
            "(Zed, JetBrains IDEs, Neovim, Emacs): each write call asks in the editor, one by "
            "one."),
    "config": ("agent_cli.cli.config_cmd", "Print the example config file, or where your "
               "config file is read from."),
}
"""name -> (module with a `register(app)` function, the summary `agent-cli --help` shows), in
the order --help lists them. The summary is the command's own first sentence (a test checks)."""
