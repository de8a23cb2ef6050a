"""agent-cli: the model proposes tool calls, the host decides what runs."""

__version__ = "0.1.0"
