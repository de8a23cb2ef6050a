"""Undo every approved effect (README "Undo", SECURITY.md).

An approved run_command writes into an overlay layer of its own (agent_cli.sandbox.overlay);
when it ends, `upper.py` applies that layer to the workspace and records exactly that change set.
Where the kernel refuses the overlay, and for every other write call, what it may change is
snapshotted into a content-addressed store under AGENT_CLI_HOME (`store.py`, `snapshot.py`) and
the difference is logged after it runs. Either way an `effects` event holds the change set
(`recorder.py`); `flags.py` names what in it runs code later. `agent-cli undo` and `/undo` read
those events back from a trusted log (`logs.py`), group them by turn (log/changes.py, which
replay and resume read too) and put the files back (`restore.py`), refusing any file someone
changed since. Nothing here imports Rich:
the panels are in ui/undo_view.py and ui/effects_view.py.
"""
