"""`python -m agent_cli` is the same program as the `agent-cli` script."""

from agent_cli.cli.main import main

if __name__ == "__main__":
    main()
