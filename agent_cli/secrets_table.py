"""The one table of what a secret looks like: value shapes and variable/key names.

Two places must agree on it: the log redactor (agent_cli/redact.py), which replaces secrets
before an event reaches disk, and the child-environment scrub (agent_cli/tools/procs.py), which
keeps them from the commands the model runs. When each had its own list they drifted (the scrub
let `redis://:pw@host` and `*_PWD` through; the redactor missed Stripe and GitLab keys), so both
now read this module and one fixture list tests both (tests/adversarial/test_secret_shapes.py).

Shapes follow public rule sets such as gitleaks' (the shapes, not its code). Every pattern starts
at a literal prefix or a word boundary and uses possessive or bounded runs, so hostile text
cannot make it backtrack catastrophically.
"""

from __future__ import annotations

import re

__all__ = [
    "ENV_NAME_PREFIXES",
    "ENV_NAME_WORDS",
    "SHAPES",
    "SHAPE_HINTS",
    "is_secret_env_name",
    "is_secret_name",
    "secret_kind_of_name",
]

# --- value shapes -------------------------------------------------------------------------
# Each entry: (kind, pattern, group to replace or 0 for the whole match). Order matters: more
# specific shapes first (sk-ant- before sk-), private keys before anything that could cut a key
# block in pieces, the AWS secret beside its key id before the key id itself.

_TOKEN_CHARS = "A-Za-z0-9_\\-"
_NOT_AFTER_WORD = f"(?<![{_TOKEN_CHARS}])"
_NOT_BEFORE_WORD = f"(?![{_TOKEN_CHARS}])"

_PRIVATE_KEY_BODY = "[A-Za-z0-9+/=\\s:,.\\\\-]"
_PRIVATE_KEY = re.compile(
    "-----BEGIN[A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----"
    # The armoured body up to the END line; if there is no END line (a cut log, a truncated
    # output), everything that still looks like the body.
    f"(?:{_PRIVATE_KEY_BODY}*?-----END[A-Z0-9 ]{{0,40}}PRIVATE KEY(?: BLOCK)?-----"
    f"|{_PRIVATE_KEY_BODY}*+)"
)
_AWS_KEY_ID = "(?<![A-Z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Z0-9])"


def _prefixed(prefix: str, body: str) -> re.Pattern[str]:
    """A token that starts with a literal vendor prefix and is not part of a longer word."""
    return re.compile(f"{_NOT_AFTER_WORD}{prefix}{body}")


SHAPES: tuple[tuple[str, re.Pattern[str], int], ...] = (
    ("private_key", _PRIVATE_KEY, 0),
    ("anthropic", _prefixed("sk-ant-", f"[{_TOKEN_CHARS}]{{20,}}+"), 0),
    # Stripe before OpenAI's sk-: sk_live_ / rk_live_ / sk_test_ (underscore, not dash).
    ("stripe", _prefixed("(?:sk|rk)_(?:live|test)_", "[A-Za-z0-9]{10,}+"), 0),
    ("openai", _prefixed("sk-(?:proj-)?", f"[{_TOKEN_CHARS}]{{20,}}+"), 0),
    ("github", _prefixed("(?:gh[pousr]_[A-Za-z0-9]{20,}+|github_pat_[A-Za-z0-9_]{20,}+)", ""), 0),
    ("gitlab", _prefixed("gl(?:pat|dt|rt|ptt|cbt|oas)-", f"[{_TOKEN_CHARS}]{{20,}}+"), 0),
    ("slack", _prefixed("xox[abceprs]-", "[A-Za-z0-9\\-]{10,}+"), 0),
    ("slack", _prefixed("xapp-", "[0-9]-[A-Za-z0-9\\-]{10,}+"), 0),
    # The webhook URL is the secret; keep the host so the log still says what it was.
    ("slack", re.compile(r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/"
                         r"([A-Za-z0-9_/\-]++)"), 1),
    ("google", _prefixed("AIza", f"[{_TOKEN_CHARS}]{{35}}{_NOT_BEFORE_WORD}"), 0),
    ("npm", _prefixed("npm_", "[A-Za-z0-9]{36}+"), 0),
    ("huggingface", _prefixed("hf_", "[A-Za-z0-9]{30,}+"), 0),
    ("sendgrid", _prefixed("SG\\.", f"[{_TOKEN_CHARS}]{{16,32}}+\\.[{_TOKEN_CHARS}]{{16,64}}+"), 0),
    # An AWS secret access key beside its key id, as in a credentials CSV line
    # (`alice,,AKIA...,wJalr...`): the 40-character secret goes, then the id below.
    ("aws", re.compile(f"{_AWS_KEY_ID}[ \\t]*+[,;|:\\t][ \\t]*+"
                       "([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"), 1),
    # Not inside a longer upper-case run (a hash, an ID): that is not a key id.
    ("aws", re.compile(_AWS_KEY_ID), 0),
    ("jwt", _prefixed("eyJ", f"[{_TOKEN_CHARS}]++\\.eyJ[{_TOKEN_CHARS}]++\\.[{_TOKEN_CHARS}]*+"),
     0),
    # "Bearer <token>": keep the scheme word. Prose ("a Bearer token") is not a token: require a
    # digit or punctuation in it, or a long all-letter run.
    ("bearer", re.compile(r"(?<![A-Za-z0-9_])(?i:bearer)[ \t]++"
                          r"((?=[A-Za-z]*+[0-9._~+/=\-])[A-Za-z0-9._~+/=\-]{8,}+|[A-Za-z]{32,}+)"),
     1),
    # scheme://user:password@host and scheme://:password@host (redis): keep user and host.
    ("url_password", re.compile(r"://[^\s:/@]{0,256}:([^\s/]{1,256})@"), 1),
    # curl -u user:password / --user=user:password: keep the user. A numeric user is a uid
    # (`docker run -u 1000:1000`), not a login.
    ("basic_auth", re.compile(r"(?<![A-Za-z0-9_\-])(?:-u|--user)(?:[ \t]++|=)['\"]?+"
                              r"(?![0-9]++:)[^\s:'\"]{1,256}:([^\s'\"]{1,256})"), 1),
    # .netrc: `machine h login u password X` (tokens in any of netrc's orders), `login u password
    # X` on a continuation line, or `password X` alone on its line. Possessive token runs only.
    ("netrc", re.compile(r"(?<![A-Za-z0-9_\-])(?:(?:machine[ \t]++\S++|default)"
                         r"(?:[ \t]++(?:login|account|port)[ \t]++\S++)*+|login[ \t]++\S++)"
                         r"[ \t]++password[ \t]++(\S++)"), 1),
    ("netrc", re.compile(r"^[ \t]*+password[ \t]++(\S++)[ \t]*+$", re.MULTILINE), 1),
)

# What each shape's match must contain, lower-cased: a string whose lower-cased form holds none of
# these cannot match any shape above, so the redactor skips the shape rules for it (one `in` test
# per hint instead of one regex pass per shape). A new shape adds its literal here;
# tests/test_redact_fast.py checks every shape's fixtures hold one and fuzzes the two paths.
SHAPE_HINTS: tuple[str, ...] = (
    "-----begin",                                   # private_key
    "sk-", "_live_", "_test_",                      # anthropic, openai, stripe
    "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_",
    "glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "gloas-",
    "xox", "xapp-", "hooks.slack.com/",
    "aiza", "npm_", "hf_", "sg.", "akia", "asia", "eyj",
    "bearer", "://", "-u", "password",             # bearer, url_password, basic_auth, netrc
)

# --- names --------------------------------------------------------------------------------
# Split a name into words: snake_case, kebab-case, dotted, camelCase, ACRONYMCase.
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")

# A word that is exactly one of these marks the name as secret.
_WHOLE_WORDS = frozenset({
    "key", "pwd", "auth", "authorization", "token", "secret", "secrets", "password",
    "passwords", "passwd", "credential", "credentials", "passphrase",
})
# The last word of a longer name only: `DB_PASS` is a password, `pass` alone (a compiler pass,
# Python's keyword) is not.
_LAST_WORDS = frozenset({"pass", "pw"})
# A word ending in one of these too ("PGPASSWORD", "clientsecret", "apikey"). Not for short
# markers: "monkey", "hotkey", "oauth" are not secrets. Not "tokens": "max_tokens" is a setting,
# not a credential.
_SUFFIXES = (
    "secret", "secrets", "token", "password", "passwords", "passwd", "credential", "credentials",
    "passphrase", "apikey", "secretkey", "privatekey", "accesskey", "masterkey", "authkey",
    "signingkey", "encryptionkey",
)
# Names that contain a marker but are well-known non-secrets ($PWD is the cwd).
_NOT_SECRET_NAMES = frozenset({"pwd", "oldpwd"})

ENV_NAME_WORDS = ("KEY", "SECRET", "TOKEN", "PASSWORD", "PASSWD", "CREDENTIAL", "PRIVATE",
                  "COOKIE")
"""For the child environment only: a name holding one of these anywhere is dropped. Over-matching
(KEYBOARD_LAYOUT, MAX_TOKENS) costs a command a harmless variable; in a log it would hide text."""
ENV_NAME_PREFIXES = ("ANTHROPIC_", "OPENAI_", "AWS_", "AZURE_")
"""For the child environment only: every variable of these vendors is dropped."""


def is_secret_name(name: str) -> bool:
    """True if a key or variable name says its value is a secret.

    The marker must be a whole word of the name, so ``api_key``, ``API-KEY``, ``openaiKey``,
    ``key``, ``DB_PWD``, ``x_auth``, ``db_pass`` and ``aws_secret_access_key`` count while
    ``keyboard``, ``monkey`` and ``tokenizer`` do not. Long markers may also end a word
    (``PGPASSWORD``, ``apikey``). Case does not matter.
    """
    if name.lower() in _NOT_SECRET_NAMES:
        return False
    words = [w.lower() for w in _WORDS.findall(name)]
    for word in words:
        if word in _WHOLE_WORDS or word.endswith(_SUFFIXES):
            return True
    return len(words) > 1 and words[-1] in _LAST_WORDS


def is_secret_env_name(name: str) -> bool:
    """True if an environment variable must not reach a command by its name alone: everything
    :func:`is_secret_name` says, plus the broader words and vendor prefixes above."""
    upper = name.upper()
    return (is_secret_name(name) or any(w in upper for w in ENV_NAME_WORDS)
            or upper.startswith(ENV_NAME_PREFIXES))


def secret_kind_of_name(name: str) -> str:
    """The redaction kind for a value found under a secret name."""
    lower = name.lower()
    return "aws" if "aws" in lower and "secret" in lower else "env"
