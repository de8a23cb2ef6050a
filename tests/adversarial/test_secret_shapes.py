"""One fixture list of secrets, checked against BOTH users of the shared table: the log redactor
and the child-environment scrub. If either drifts from agent_cli/secrets_table.py, a case fails.

The attacker's angle: a credential that reaches a command's environment can be printed by the
model's next `env`, and one that reaches the log is kept, shared and pasted into bug reports.
Tokens are assembled at run time so this file itself holds nothing a secret scanner would flag.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from agent_cli.redact import default_redactor
from agent_cli.tools.procs import is_secret_var, run_process, scrubbed_env

R = default_redactor()


def tok(prefix: str, n: int, alphabet: str = "aB3dE5gH7jK9mN1pQ2") -> str:
    return prefix + (alphabet * (n // len(alphabet) + 1))[:n]


AWS_ID = "AKIA" + "Q3EXAMPLE7ABCDEF"
AWS_SECRET = tok("", 40, "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY")
JWT = "eyJ" + tok("", 20) + ".eyJ" + tok("", 30) + "." + tok("", 25)
PEM = ("-----BEGIN " + "RSA PRIVATE KEY-----\nMIIEow" + tok("", 60) + "\n-----END "
       + "RSA PRIVATE KEY-----")

# (case id, text holding a secret, the secret part that must not survive)
VALUES: list[tuple[str, str, str]] = [
    ("redis_empty_user", "redis://:" + "hunter2pw" + "@cache.internal:6379/0", "hunter2pw"),
    ("url_user_password", "postgres://app:" + "s3cr3tpw" + "@db/prod", "s3cr3tpw"),
    ("amqp_password", "amqp://guest:" + "rabbitpw9" + "@mq:5672/", "rabbitpw9"),
    ("slack_bot", tok("xoxb-", 40, "1234567890-abcdef"), tok("xoxb-", 40, "1234567890-abcdef")),
    ("slack_user", tok("xoxp-", 40, "1234567890-abcdef"), tok("xoxp-", 40, "1234567890-abcdef")),
    ("slack_app_level", tok("xoxa-", 30), tok("xoxa-", 30)),
    ("slack_client", tok("xoxc-", 30), tok("xoxc-", 30)),
    ("slack_xapp", "xapp-1-" + tok("A0", 40), "xapp-1-" + tok("A0", 40)),
    ("stripe_live", tok("sk_" + "live_", 24), tok("sk_" + "live_", 24)),
    ("stripe_restricted", tok("rk_" + "live_", 24), tok("rk_" + "live_", 24)),
    ("stripe_test", tok("sk_" + "test_", 24), tok("sk_" + "test_", 24)),
    ("gitlab", tok("glpat-", 20), tok("glpat-", 20)),
    ("google", tok("AIza", 35), tok("AIza", 35)),
    ("npm", tok("npm_", 36), tok("npm_", 36)),
    ("huggingface", tok("hf_", 34), tok("hf_", 34)),
    ("sendgrid", "SG." + tok("", 22) + "." + tok("", 43), "SG." + tok("", 22)),
    ("github_ghp", tok("ghp_", 36), tok("ghp_", 36)),
    ("github_gho", tok("gho_", 36), tok("gho_", 36)),
    ("github_ghs", tok("ghs_", 36), tok("ghs_", 36)),
    ("github_pat", tok("github_pat_", 60), tok("github_pat_", 60)),
    ("anthropic", tok("sk-ant-api03-", 40), tok("sk-ant-api03-", 40)),
    ("openai", tok("sk-proj-", 40), tok("sk-proj-", 40)),
    ("aws_key_id", AWS_ID, AWS_ID),
    ("aws_credentials_csv", f"alice,,{AWS_ID},{AWS_SECRET},https://console", AWS_SECRET),
    ("aws_access_keys_csv", f"{AWS_ID},{AWS_SECRET}", AWS_SECRET),
    ("netrc_one_line", "machine api.example.com login alice password " + "n3trcpw!",
     "n3trcpw!"),
    ("netrc_own_line", "machine api.example.com\n  login alice\n  password " + "n3trcpw2",
     "n3trcpw2"),
    ("curl_u", "curl -u alice:" + "curlpw77" + " https://api.example.com", "curlpw77"),
    ("curl_user_eq", "curl --user=alice:" + "curlpw88" + " https://x", "curlpw88"),
    ("private_key", PEM, "MIIEow"),
    ("jwt", JWT, JWT),
    ("bearer", "Authorization: Bearer " + tok("", 30, "Zx81.abc"), tok("", 30, "Zx81.abc")),
]

# Names whose value is secret whatever it looks like (case-insensitive).
NAMES = [
    "DB_PWD", "db_pwd", "PROXY_AUTH", "x_auth", "SMTP_PASS", "redis_pass", "MYSQL_PASSWORD",
    "app_password", "CLIENT_SECRET", "client_secret", "GITHUB_TOKEN", "hf_token", "API_KEY",
    "Api_Key", "GCP_CREDENTIALS", "gcp_credentials", "aws_secret_access_key", "PGPASSWORD",
]

# Text neither may treat as secret (the redactor must leave it; the scrub must keep it).
PLAIN_VALUES = [
    "https://example.com:8443/path?q=1", "/usr/local/bin:/usr/bin", "en_US.UTF-8",
    "user@example.com", "skip_test_of_this", "hf_small", "password reset is broken today",
    "docker run -u 1000:1000 image",
]


@pytest.mark.parametrize(("case", "text", "secret"), VALUES, ids=[v[0] for v in VALUES])
def test_the_log_redactor_removes_it(case: str, text: str, secret: str) -> None:
    out = R.text(text)
    assert secret not in out, out
    assert "[REDACTED:" in out
    assert R.text(out) == out, "redacting twice changes nothing"


@pytest.mark.parametrize(("case", "text", "secret"), VALUES, ids=[v[0] for v in VALUES])
def test_the_child_environment_scrub_drops_it(case: str, text: str, secret: str) -> None:
    env = scrubbed_env({"PATH": "/bin", "HARMLESS_LOOKING_VAR": text})
    assert "HARMLESS_LOOKING_VAR" not in env
    assert secret not in json.dumps(env)


@pytest.mark.parametrize("name", NAMES)
def test_both_treat_the_name_as_secret(name: str) -> None:
    value = "correct-horse-battery"
    out = R.text(f"{name}={value}")
    assert value not in out and out.startswith(f"{name}=")
    assert R.value({name: value}) == {name: "[REDACTED:" + out.split("[REDACTED:")[1]}
    assert is_secret_var(name, value)
    assert name not in scrubbed_env({name: value})


@pytest.mark.parametrize("value", PLAIN_VALUES)
def test_plain_values_pass_both(value: str) -> None:
    assert R.text(value) == value
    assert scrubbed_env({"SOME_SETTING": value})["SOME_SETTING"] == value


def test_a_real_child_sees_none_of_them(workspace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the real run_process path: `env` in a child prints no planted secret."""
    for i, (_case, text, _secret) in enumerate(VALUES):
        monkeypatch.setenv(f"PLANTED_{i}", text)
    for name in NAMES:
        if name.upper() == name:  # the environment is case-sensitive; one spelling is enough
            monkeypatch.setenv(name, "correct-horse-battery")
    res = run_process(["env"], cwd=str(workspace), env=scrubbed_env(), timeout_s=60)
    assert res.returncode == 0
    printed = (res.head + res.tail).decode()
    for _case, _text, secret in VALUES:
        assert secret not in printed
    assert "correct-horse-battery" not in printed
    assert "PATH=" in printed and os.environ["PATH"] in printed
