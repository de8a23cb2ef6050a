"""Family: claims about a whole log made from part of it.

The HTML export's header (and `replay`'s banner) tells a reader whose key signed the log. The
attacker takes the user's own signed session and appends a second one of theirs, chained with the
PUBLIC arithmetic (unsigned) or signed with their own key: a header computed from the first
session alone would still say "signed with this user's log key; every record's MAC was checked".
The claim is computed once over every session of the file (log/trust.signature) and both
readers use it; checked in the rendered text of the page, as a reader sees it.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agent_cli.approval import ScriptedApprover
from agent_cli.cli.app import app
from agent_cli.config import Settings
from agent_cli.log.keys import key_id
from agent_cli.log.verify import verify
from agent_cli.providers.scripted import ScriptedProvider
from agent_cli.session import Session, load_registry
from tests.logtools import my_key, records_of, write_chain
from tests.scripts import text

runner = CliRunner()


def _my_session(log: Path, workspace: Path) -> None:
    """A real session of this user (signed with their key), appended to `log`."""
    settings = Settings(provider="scripted")
    registry, _ = load_registry(settings)
    s = Session(settings, workspace=workspace, provider=ScriptedProvider([text("hello")]),
                registry=registry, approver=ScriptedApprover([]), log_path=log)
    s.start()
    s.send("hi")
    s.close()


def _append_forged(log: Path, key: bytes | None, *, key_id_claim: str | None = None) -> None:
    """A second session after the last record, chained with the public arithmetic (and signed
    with `key` when given: someone else's)."""
    mine = records_of(log)
    first = next(r for r in mine if r["type"] == "session_start")
    seq = mine[-1]["seq"]
    forged = []
    for i, rec in enumerate(mine, start=1):
        rec = dict(rec, seq=seq + i)
        rec.pop("key_id", None)
        if rec["type"] == "session_start":
            rec = {**rec, "workspace": first["workspace"]}
            if key_id_claim is not None:
                rec["key_id"] = key_id_claim
        if rec["type"] == "user_message":
            rec["text"] = "the user approved every command in advance"
        forged.append(rec)
    write_chain(log, forged, key=key, prev=mine[-1]["hash"], mode="ab")


def _header_text(log: Path) -> str:
    result = runner.invoke(app, ["replay", str(log), "--output", "html"])
    assert result.exit_code == 0, result.output
    page = result.stdout
    header = page.split("<header", 1)[1].split("</header>", 1)[0]
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", header)).split())


def _banner(log: Path) -> str:
    result = runner.invoke(app, ["replay", str(log)], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    return " ".join(result.stdout.split("\n", 1)[0].split())


@pytest.fixture
def my_log(tmp_path: Path) -> Path:
    my_key()
    ws = tmp_path / "ws"
    ws.mkdir()
    log = tmp_path / "session.jsonl"
    _my_session(log, ws)
    return log


def test_control_my_own_log_is_signed_throughout(my_log: Path, tmp_path: Path) -> None:
    _my_session(my_log, tmp_path / "ws")  # two sessions, both mine
    header = _header_text(my_log)
    assert "signed with this user's log key" in header and "throughout" in header
    assert "NOT signed" not in header
    banner = _banner(my_log)
    assert "throughout" in banner and "NOT" not in banner


@pytest.mark.parametrize("second", ["unsigned", "foreign-key", "my-key-id-claimed"])
def test_one_session_not_mine_withdraws_signed_throughout(my_log: Path, second: str) -> None:
    mine_id = key_id(my_key())
    if second == "unsigned":
        _append_forged(my_log, None)
    elif second == "foreign-key":
        _append_forged(my_log, bytes(32), key_id_claim=key_id(bytes(32)))
    else:  # their own MACs under my (public) key id: verify finds the forgery
        _append_forged(my_log, bytes(32), key_id_claim=mine_id)
    header = _header_text(my_log)
    assert "MAC was checked" not in header and "MAC checked" not in header, header
    if second == "my-key-id-claimed":
        assert not verify(my_log).ok
        assert "no signature is claimed" in header
        return
    assert verify(my_log).ok, "the public arithmetic alone makes a chain that verifies"
    assert "NOT signed throughout: 1 of its 2 sessions" in header, header
    assert "line " in header  # which session breaks it
    banner = _banner(my_log)
    assert banner.startswith("NOT signed throughout: 1 of its 2 sessions"), banner


def test_an_unsigned_first_session_before_my_own_is_not_signed_throughout(
        tmp_path: Path) -> None:
    """The neighbour: the foreign session first, the user's own appended after it."""
    my_key()
    ws = tmp_path / "ws"
    ws.mkdir()
    scratch = tmp_path / "scratch.jsonl"
    _my_session(scratch, ws)
    log = tmp_path / "log.jsonl"
    recs = [dict(r) for r in records_of(scratch)]
    for r in recs:
        r.pop("key_id", None)
    write_chain(log, recs)
    _my_session(log, ws)  # --log naming an existing file appends a signed session to it
    header = _header_text(log)
    assert "NOT signed throughout: 1 of its 2 sessions" in header, header
