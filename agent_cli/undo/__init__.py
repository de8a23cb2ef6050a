"""Undo every approved effect (design.md section 7).

Before an approved call with effects runs, what it may change is snapshotted into a
content-addressed store under AGENT_CLI_HOME (`store.py`, `snapshot.py`); after it runs, the
difference is logged as an `effects` event (`recorder.py`, `changes.py`). `agent-cli undo` and
`/undo` read those events back from a trusted log and put the files back (`restore.py`), refusing
any file someone changed since. Nothing here imports Rich: the panel is in ui/undo_view.py.
"""
