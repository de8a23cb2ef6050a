"""The redactor's prefilter (`redact._may_hold_secret`) skips the rule passes only for text no
rule can change: the fast path must redact exactly what running every rule on every string did."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agent_cli import redact
from agent_cli.secrets_table import CASED_SHAPE_HINTS, SHAPE_HINTS, SHAPE_RULE_HINTS, SHAPES
from tests.adversarial.test_secret_shapes import NAMES, PLAIN_VALUES, VALUES
from tests.adversarial.test_secret_table import CASES

R = redact.Redactor()
EXTRA = ["https://hooks.slack.com/services/T000/B000/XXXXXXXX"]
"""Shapes the shared fixtures do not exercise."""
CORPUS = [t for _c, t, _s in VALUES] + EXTRA + [c[1] for c in CASES]
NEAR_MISSES = [c[3] for c in CASES]


def every_rule(s: str) -> str:
    """The old path: every shape's substitution, then NAME=value, on every string."""
    for pattern, replace in redact._SHAPE_SUBS:
        s = pattern.sub(replace, s)
    return redact._ENV.sub(redact._env_replace, s)


def test_every_shape_fixture_holds_a_hint() -> None:
    """A shape whose matches hold no hint would be skipped: every fixture match must hold one."""
    matched = 0
    for text in CORPUS + NEAR_MISSES:
        for (_kind, pattern, _group), hints in zip(SHAPES, SHAPE_RULE_HINTS, strict=True):
            assert hints
            for m in pattern.finditer(text):
                matched += 1
                found = m.group(0)
                assert any(h in found.lower() if h in SHAPE_HINTS else h in found
                           for h in hints), (pattern, found)
    assert matched >= len(SHAPES)


def test_every_hint_is_in_one_of_the_two_lists() -> None:
    for hints in SHAPE_RULE_HINTS:
        for hint in hints:
            assert (hint in SHAPE_HINTS) != (hint in CASED_SHAPE_HINTS), hint


def test_every_shape_has_a_fixture_match() -> None:
    """...and every shape is exercised by some fixture, so the check above covers it."""
    for _kind, pattern, _group in SHAPES:
        assert any(pattern.search(text) for text in CORPUS), pattern.pattern


def test_fixtures_redact_the_same() -> None:
    texts = CORPUS + PLAIN_VALUES + NEAR_MISSES
    texts += [f"{n}=hunter2x" for n in NAMES] + [f'"{n}": "s3cr3tvalue"' for n in NAMES]
    for text in texts:
        assert R.text(text) == every_rule(text), text


def test_text_without_a_hint_skips_the_rules() -> None:
    assert not redact._may_hold_secret("tool_result multiply 42 src/main.py")
    assert redact._may_hold_secret("api_key=abc")
    assert redact._may_hold_secret("x AKIA" + "Q3EXAMPLE7ABCDEF")


# Pieces random strings are built from: secrets of every kind, near misses (prefixes cut short,
# case changed, neighbouring words), separators, and characters case-insensitive regexes treat
# specially (Kelvin sign, dotless i, long s, dotted capital I).
_SECRETS = CORPUS
_PIECES = _SECRETS + PLAIN_VALUES + NAMES + NEAR_MISSES + [
    "gsk_", "SK", "key-", "-us1", "shpat_", "dapi", "API-", "YC", ":AA", "Q~", "sig=", "sl.",
    "AccountKey=", "Authorization: Basic ", "basic ", "twilio=", "aws_secret=", "LS0tLS1CRUdJTi",
    "0123456789abcdef0123456789abcdef", "pypi-AgEIcHlwaS5vcmc", "sntrys_", "EAAA", "A3T",
    "sk-", "sk-ant-", "sk_live_", "ghp_", "AKIA", "eyJ", "Bearer ", "BEARER ", "bearer x",
    "://", "://u:", "@", "-u ", "--user=", "password ", "machine h", "login ", "\n", " ", "\t",
    "=", ":", "==", "::", "=>", '"', "'", '\\"', ",", "KEY", "Key", "tOkEn", "pAsS", "pw",
    "auth", "secret", "credential", "\u212a", "\u0131", "\u017f", "\u0130", "\u00df", "ẞ",
    "hooks.slack.com/services/", "xoxb-", "xapp-1-", "SG.", "hf_", "npm_", "AIza", "ASIA",
    "-----BEGIN ", "PRIVATE KEY-----", "-----END ", "${X}", "***", "<x>", "true",
    "aB3dE5gH7jK9mN1pQ2aB3dE5gH7jK9mN1pQ2aB3dE5",
]


@st.composite
def _texts(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.one_of(st.sampled_from(_PIECES), st.text(max_size=12)),
                          max_size=12))
    return "".join(parts)


@settings(max_examples=3000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_texts())
def test_fast_path_equals_every_rule_on_random_text(text: str) -> None:
    assert R.text(text) == every_rule(text)
    long = "." * redact._SHORT + text  # the prefilter's other branch (long strings)
    assert R.text(long) == every_rule(long)


@settings(max_examples=1000, deadline=None)
@given(st.text(max_size=200))
def test_fast_path_equals_every_rule_on_any_text(text: str) -> None:
    assert R.text(text) == every_rule(text)


def test_hints_are_lower_case() -> None:
    """They are compared with the lower-cased text."""
    assert all(h == h.lower() and h for h in SHAPE_HINTS)
