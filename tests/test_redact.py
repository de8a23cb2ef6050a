"""Secret redaction before anything reaches the session log.

Every fake secret is assembled at run time so no secret-shaped literal sits in
the repository (and no scanner flags it).
"""

from __future__ import annotations

import copy
import re

import pytest

from agent_cli.redact import Redactor, default_redactor, is_secret_name

R = default_redactor()


def fake(prefix: str, body: str, n: int) -> str:
    return prefix + (body * n)[:n]


ANTHROPIC = fake("sk-ant-", "api03-Xy9_", 90)
OPENAI = fake("sk-", "Ab12Cd34", 48)
OPENAI_PROJ = fake("sk-" + "proj-", "Q7_w-E8r", 120)
AWS_ID = "AKIA" + "IOSFODNN7EXAMPL3"[:16]
AWS_STS_ID = "ASIA" + "Z" * 16
AWS_SECRET = fake("", "wJalrXUtnFEMI/K7MDENG+bPxRfiCY", 40)
GITHUB = {p: fake(p, "a1B2c3", 36 + len(p)) for p in ("ghp_", "gho_", "ghu_", "ghs_", "ghr_")}
GITHUB_PAT = fake("github_" + "pat_", "11AB_cd", 82)
SLACK = {p: fake(p, "1234-abcd", 50) for p in ("xoxb-", "xoxp-", "xoxa-", "xoxr-", "xoxs-")}
SLACK_HOOK_PATH = "T" + "0" * 8 + "/B" + "1" * 8 + "/" + "x" * 24
JWT = "eyJ" + "hbGciOiJIUzI1NiJ9" + ".eyJ" + "zdWIiOiIxMjM0NSJ9" + "." + "s1gN4ture_-" * 3
KEY_BODY = "\n".join(["MIIEow" + "A" * 58] + ["Qk" * 32] * 5 + ["xyz="])


def private_key(label: str = "RSA ") -> str:
    return f"-----BEGIN {label}PRIVATE KEY-----\n{KEY_BODY}\n-----END {label}PRIVATE KEY-----"


def redacted(kind: str) -> str:
    return f"[REDACTED:{kind}]"


# ---------------------------------------------------------------- shapes


@pytest.mark.parametrize(
    ("secret", "kind"),
    [
        pytest.param(ANTHROPIC, "anthropic", id="anthropic"),
        pytest.param(OPENAI, "openai", id="openai"),
        pytest.param(OPENAI_PROJ, "openai", id="openai-project"),
        pytest.param(AWS_ID, "aws", id="aws-access-key-id"),
        pytest.param(AWS_STS_ID, "aws", id="aws-sts-key-id"),
        *[pytest.param(v, "github", id=f"github-{k}") for k, v in GITHUB.items()],
        pytest.param(GITHUB_PAT, "github", id="github-fine-grained"),
        *[pytest.param(v, "slack", id=f"slack-{k}") for k, v in SLACK.items()],
        pytest.param(JWT, "jwt", id="jwt"),
    ],
)
def test_token_shapes_are_replaced_by_their_kind(secret: str, kind: str) -> None:
    text = f"the value ({secret}) was printed"
    assert R.text(text) == f"the value ({redacted(kind)}) was printed"


def test_anthropic_key_is_not_mistaken_for_openai() -> None:
    assert R.text(ANTHROPIC) == redacted("anthropic")


def test_short_sk_words_are_left() -> None:
    for text in ("sk-learn", "task-manager-runs-in-the-background", "disk-usage-report-2024"):
        assert R.text(text) == text


def test_private_key_blocks_are_replaced_whole() -> None:
    for label in ("RSA ", "EC ", "OPENSSH ", "ENCRYPTED ", "DSA ", ""):
        text = f"id_key:\n{private_key(label)}\nend of file"
        assert R.text(text) == f"id_key:\n{redacted('private_key')}\nend of file"


def test_pgp_private_key_block_is_replaced() -> None:
    block = (
        f"-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n{KEY_BODY}\n-----END PGP PRIVATE KEY BLOCK-----"
    )
    assert R.text(f"{block}\nbye") == f"{redacted('private_key')}\nbye"


def test_private_key_inside_json_text_is_replaced() -> None:
    escaped = private_key().replace("\n", "\\n")
    assert R.text(f'{{"pem": "{escaped}"}}') == f'{{"pem": "{redacted("private_key")}"}}'


def test_unterminated_private_key_is_redacted_to_the_end_of_its_body() -> None:
    cut = private_key()[:200]
    out = R.text(f"output was cut: {cut}")
    assert out == f"output was cut: {redacted('private_key')}"
    assert "MIIE" not in out


def test_public_keys_and_certificates_are_left() -> None:
    text = "-----BEGIN PUBLIC KEY-----\nMFkw\n-----END PUBLIC KEY-----"
    assert R.text(text) == text


def test_bearer_keeps_the_scheme_word() -> None:
    token = fake("", "Zx81.-_~+/", 40)
    assert R.text(f"Authorization: Bearer {token}") == "Authorization: Bearer [REDACTED:bearer]"
    assert R.text(f"curl -H 'authorization: bearer {token}' x") == (
        "curl -H 'authorization: bearer [REDACTED:bearer]' x"
    )


def test_bearer_in_prose_is_left() -> None:
    text = "Send a Bearer token in the Authorization header; bearer authentication is simple."
    assert R.text(text) == text


def test_bearer_jwt_says_jwt() -> None:
    assert R.text(f"Bearer {JWT}") == "Bearer [REDACTED:jwt]"


def test_slack_webhook_keeps_the_host() -> None:
    url = f"https://hooks.slack.com/services/{SLACK_HOOK_PATH}"
    assert R.text(f"POST {url} done") == (
        "POST https://hooks.slack.com/services/[REDACTED:slack] done"
    )


def test_password_in_a_url_keeps_user_and_host() -> None:
    text = "DATABASE_URL is postgres://app:" + "p4ss@w0rd" + "@db.internal:5432/app"
    assert R.text(text) == (
        "DATABASE_URL is postgres://app:[REDACTED:url_password]@db.internal:5432/app"
    )
    plain = "see https://example.com:8080/path and http://host/a@b"
    assert R.text(plain) == plain


# ---------------------------------------------------------------- NAME=value lines

VALUE = fake("", "not-real-", 18)


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        (f"API_KEY={VALUE}", "API_KEY=[REDACTED:env]"),
        (f"export GH_TOKEN={VALUE}", "export GH_TOKEN=[REDACTED:env]"),
        (f"DB_PASSWORD: {VALUE}", "DB_PASSWORD: [REDACTED:env]"),
        (f"  password: {VALUE}  ", "  password: [REDACTED:env]  "),
        (f'"client_secret": "{VALUE}",', '"client_secret": "[REDACTED:env]",'),
        (f"'Api-Key': '{VALUE}'", "'Api-Key': '[REDACTED:env]'"),
        (f"secret_key = {VALUE}", "secret_key = [REDACTED:env]"),
        (f'api_key = "{VALUE}"', 'api_key = "[REDACTED:env]"'),
        (f"aws_secret_access_key = {AWS_SECRET}", "aws_secret_access_key = [REDACTED:aws_secret]"),
        (f"AWS_SECRET_ACCESS_KEY={AWS_SECRET}", "AWS_SECRET_ACCESS_KEY=[REDACTED:aws_secret]"),
        (f"openaiKey='{VALUE}'", "openaiKey='[REDACTED:env]'"),
        (f"OpenAIKey: {VALUE}", "OpenAIKey: [REDACTED:env]"),
        (f"key: {VALUE}", "key: [REDACTED:env]"),
        (f"PGPASSWORD={VALUE}", "PGPASSWORD=[REDACTED:env]"),
        (f"MYSQL_PWD={VALUE}", "MYSQL_PWD=[REDACTED:env]"),
        (f"apikey={VALUE}", "apikey=[REDACTED:env]"),
        (f"x-auth-token: {VALUE}", "x-auth-token: [REDACTED:env]"),
        (f"Authorization: Basic {VALUE}", "Authorization: [REDACTED:env]"),
        (f"auth = {VALUE}", "auth = [REDACTED:env]"),
        (f"SERVICE_CREDENTIALS={VALUE}", "SERVICE_CREDENTIALS=[REDACTED:env]"),
        (f"db.passwd = {VALUE}", "db.passwd = [REDACTED:env]"),
        (f"run --api-key={VALUE}", "run --api-key=[REDACTED:env]"),
        (f":token => '{VALUE}'", ":token => '[REDACTED:env]'"),
        ('"pin_password": 123456,', '"pin_password": [REDACTED:env],'),
        (
            f'{{"password": "{VALUE}", "user": "bob"}}',
            '{"password": "[REDACTED:env]", "user": "bob"}',
        ),
        (
            f'"{{\\"token\\": \\"{VALUE}\\", \\"n\\": 1}}"',
            '"{\\"token\\": \\"[REDACTED:env]\\", \\"n\\": 1}"',
        ),
        (f'password="{VALUE}\\"quoted"', 'password="[REDACTED:env]"'),
    ],
)
def test_env_style_lines_keep_name_and_separator(line: str, expected: str) -> None:
    assert R.text(line) == expected


def test_env_value_runs_to_the_end_of_its_line_only() -> None:
    text = f"SECRET={VALUE} trailing words\nNEXT=visible"
    assert R.text(text) == "SECRET=[REDACTED:env]\nNEXT=visible"
    crlf = f"TOKEN={VALUE}\r\nNEXT=visible\r\n"
    assert R.text(crlf) == "TOKEN=[REDACTED:env]\r\nNEXT=visible\r\n"


@pytest.mark.parametrize(
    "text",
    [
        "keyboard = 3",
        "monkey = 1",
        'tokenizer = "bpe"',
        "max_tokens = 4096",
        "input_tokens: 12",
        "author = Jane",
        "PWD=/home/me/project",
        "OLDPWD=/tmp",
        "hotkey: ctrl+k",
        "if key == other:\n    pass",
        "API_KEY=${OPENAI_API_KEY}",
        "token: $GITHUB_TOKEN",
        "password: {{ vault.password }}",
        "PASSWORD=",
        'secret = ""',
        "auth: true",
        "api_key: null",
        "credentials: {",
        "password: <your password here>",
        "TOKEN=***",
        "The keys are in the drawer; the tokenizer splits text into tokens.",
        "def tokenize(text: str) -> list[str]:\n    return text.split()",
        "Use a Bearer token; see the Authorization header docs.",
    ],
)
def test_no_false_positives_on_ordinary_text(text: str) -> None:
    assert R.text(text) == text


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("api_key", True),
        ("API-KEY", True),
        ("key", True),
        ("openaiKey", True),
        ("OPENAI_API_KEY", True),
        ("aws_secret_access_key", True),
        ("GITHUB_TOKEN", True),
        ("clientSecret", True),
        ("PGPASSWORD", True),
        ("db_passwd", True),
        ("DB_PWD", True),
        ("x-auth", True),
        ("Authorization", True),
        ("passphrase", True),
        ("credentials", True),
        ("keyboard", False),
        ("monkey", False),
        ("tokenizer", False),
        ("max_tokens", False),
        ("author", False),
        ("oauth", False),
        ("PWD", False),
        ("OLDPWD", False),
        ("hotkey", False),
        ("name", False),
    ],
)
def test_secret_names_need_the_marker_as_a_word(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


# ---------------------------------------------------------------- idempotence


CORPUS = "\n".join(
    [
        f"OPENAI_API_KEY={OPENAI}",
        f"ANTHROPIC_API_KEY: {ANTHROPIC}",
        f"Authorization: Bearer {fake('', 'Zx81.', 30)}",
        f"Authorization: Bearer {JWT}",
        f'"password": "{VALUE}",',
        f"aws_access_key_id = {AWS_ID}",
        f"aws_secret_access_key = {AWS_SECRET}",
        private_key(),
        f"https://hooks.slack.com/services/{SLACK_HOOK_PATH}",
        f"postgres://u:{VALUE}@h/db",
        *GITHUB.values(),
        *SLACK.values(),
        "plain words and keyboard = 3",
    ]
)


def test_redaction_is_idempotent() -> None:
    once = R.text(CORPUS)
    assert R.text(once) == once
    assert "not-real" not in once
    assert "OPENAI_API_KEY=[REDACTED:openai]" in once
    assert "ANTHROPIC_API_KEY: [REDACTED:anthropic]" in once
    assert "Authorization: Bearer [REDACTED:bearer]" in once
    assert "aws_access_key_id = [REDACTED:aws]" in once
    assert "plain words and keyboard = 3" in once


def test_already_redacted_values_stay() -> None:
    for text in ("API_KEY=[REDACTED:openai]", '"token": "[REDACTED:custom]"'):
        assert R.text(text) == text


# ---------------------------------------------------------------- structured values


def test_value_redacts_nested_json_like_data() -> None:
    event = {
        "type": "tool_proposed",
        "input": {
            "command": f"curl -H 'Authorization: Bearer {JWT}' https://api.example",
            "env": [{"name": "DB", "password": "hunter2-not-real"}, ("x", OPENAI)],
            "api_key": "short",
            "max_tokens": 1024,
            "token_count": 12,
            "tokenizer": "bpe",
            "auth": None,
            "flags": [True, 1.5],
        },
        "usage": {"input_tokens": 10, "output_tokens": 20},
    }
    original = copy.deepcopy(event)
    out = R.value(event)
    assert event == original, "the input must not be modified"
    assert out == {
        "type": "tool_proposed",
        "input": {
            "command": "curl -H 'Authorization: Bearer [REDACTED:jwt]' https://api.example",
            "env": [{"name": "DB", "password": "[REDACTED:env]"}, ("x", "[REDACTED:openai]")],
            "api_key": "[REDACTED:env]",
            "max_tokens": 1024,
            "token_count": 12,
            "tokenizer": "bpe",
            "auth": None,
            "flags": [True, 1.5],
        },
        "usage": {"input_tokens": 10, "output_tokens": 20},
    }
    assert R.value(out) == out


def test_value_secret_keys_are_case_insensitive_and_kind_aware() -> None:
    out = R.value({"AWS_SECRET_ACCESS_KEY": AWS_SECRET, "Password": "x", "SECRET": "${S}"})
    assert out == {
        "AWS_SECRET_ACCESS_KEY": "[REDACTED:aws_secret]",
        "Password": "[REDACTED:env]",
        "SECRET": "${S}",
    }


def test_value_keeps_the_precise_kind_under_secret_keys() -> None:
    out = R.value({"api_key": OPENAI, "Authorization": f"Bearer {JWT}", "token": "plain"})
    assert out == {
        "api_key": "[REDACTED:openai]",
        "Authorization": "Bearer [REDACTED:jwt]",
        "token": "[REDACTED:env]",
    }


def test_value_redacts_secrets_used_as_keys() -> None:
    assert R.value({OPENAI: 1}) == {"[REDACTED:openai]": 1}


def test_value_leaves_other_types_alone() -> None:
    marker = object()
    assert R.value(marker) is marker
    assert R.value(None) is None
    assert R.value(42) == 42
    assert R.value(("a", ["b"])) == ("a", ["b"])


# ---------------------------------------------------------------- config patterns


def test_custom_patterns_replace_the_whole_match() -> None:
    r = Redactor.from_config([r"corp-[0-9]{6}", r"(?i)swordfish-\w+"])
    text = "id corp-123456 and SwordFish-42; api_key=zz-not-real"
    assert r.text(text) == "id [REDACTED:custom] and [REDACTED:custom]; api_key=[REDACTED:env]"
    assert r.text(r.text(text)) == r.text(text)
    assert R.text("corp-123456") == "corp-123456"


def test_builtin_rules_run_before_custom_ones() -> None:
    """A custom pattern cannot cut a key in two and leave half of it readable."""
    r = Redactor.from_config([r"sk-\w{4}"])
    assert r.text(OPENAI) == "[REDACTED:openai]"
    assert r.text(f"API_KEY={VALUE}") == "API_KEY=[REDACTED:env]"


def test_custom_patterns_apply_in_value() -> None:
    r = Redactor.from_config([r"corp-[0-9]{6}"])
    assert r.value({"note": ["corp-654321"]}) == {"note": ["[REDACTED:custom]"]}


def test_invalid_custom_pattern_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match=r"Redaction pattern '\(unclosed' is not a valid"):
        Redactor.from_config(["ok-[0-9]+", "(unclosed"])


def test_custom_pattern_matching_nothing_is_refused() -> None:
    with pytest.raises(ValueError, match="matches the empty string"):
        Redactor.from_config(["a*"])


def test_redactor_is_immutable_and_shared() -> None:
    assert default_redactor() is default_redactor()
    assert default_redactor().extra_patterns == ()
    r = Redactor.from_config([])
    assert r == Redactor()
    assert all(isinstance(p, re.Pattern) for p in Redactor.from_config(["x+"]).extra_patterns)


# ---------------------------------------------------------------- no catastrophic backtracking


@pytest.mark.parametrize(
    "text",
    [
        "a" * 1_000_000,
        "=" * 1_000_000,
        "a=" * 500_000,
        "key" * 330_000,
        "api_key=" * 125_000,
        '"' * 1_000_000,
        "\\" * 1_000_000,
        "sk-" * 330_000,
        "eyJa." * 200_000,
        "://a:" * 200_000,
        "Bearer " * 140_000,
        "-----BEGIN PRIVATE KEY-----" * 37_000,
        'password: "' + "\\" * 1_000_000,
    ],
    ids=lambda t: repr(t[:12]),
)
def test_large_hostile_inputs_return(text: str) -> None:
    """Each built-in pattern is linear; a quadratic one would hang here for minutes."""
    out = R.text(text)
    assert isinstance(out, str)
