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
from typing import NamedTuple

__all__ = [
    "CASED_SHAPE_HINTS",
    "ENV_NAME_PREFIXES",
    "ENV_NAME_WORDS",
    "SHAPES",
    "SHAPE_HINTS",
    "SHAPE_RULE_HINTS",
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
_AWS_KEY_ID = "(?<![A-Z0-9])(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Z0-9])"
_AWS_HINTS = ("A3T", "akia", "asia", "abia", "acca")



class _Rule(NamedTuple):
    kind: str
    pattern: re.Pattern[str]
    group: int
    hints: tuple[str, ...]
    """Literals every match holds: lower-case ones are looked for in the lower-cased text, others
    (a case-sensitive prefix such as `SK`) as written."""


def _prefixed(prefix: str, body: str) -> re.Pattern[str]:
    """A token that starts with a literal vendor prefix and is not part of a longer word."""
    return re.compile(f"{_NOT_AFTER_WORD}{prefix}{body}")


def _p(kind: str, prefix: str, body: str, *hints: str, end: bool = True) -> _Rule:
    """A vendor token: a literal prefix (regex-escaped here), then its body; the whole token
    goes. `end`: the body must not run on into a longer word."""
    pattern = _prefixed(re.escape(prefix), body + (_NOT_BEFORE_WORD if end else ""))
    hint = prefix if any(c.isupper() for c in prefix) else prefix.lower()
    return _Rule(kind, pattern, 0, hints or (hint,))


def _k(kind: str, keywords: str, value: str) -> _Rule:
    """A value of a known shape assigned under a vendor's name (`twilio_auth = 0123...`): gitleaks
    calls these keyword rules. Only the value goes; ASCII case folding for the keyword."""
    pattern = re.compile(
        f"(?<![A-Za-z0-9])(?i:{keywords})[A-Za-z0-9_.\\-]{{0,30}}+['\"]?+[ \\t]*+"
        f"(?:=>|:=|=|:)[ \\t]*+['\"]?+({value})(?![A-Za-z0-9])", re.ASCII)
    return _Rule(kind, pattern, 1, tuple(k.lower() for k in keywords.split("|")))


_HEX = "[0-9a-f]"
_UUID = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_AN = "A-Za-z0-9"
_TOK = _TOKEN_CHARS

_RULES: tuple[_Rule, ...] = (
    _Rule("private_key", _PRIVATE_KEY, 0, ("-----begin",)),
    # A PEM block base64-encoded once more (kubeconfig's client-key-data): "-----BEGIN" encoded.
    _p("private_key", "LS0tLS1CRUdJTi", "[A-Za-z0-9+/=]{20,}+", end=False),
    _Rule("private_key", re.compile("PuTTY-User-Key-File-[0-9]: [^\\n]{1,80}\\n(?:[^\\n]{0,200}"
                                    "\\n){0,8}?Private-Lines: [0-9]{1,4}\\n[A-Za-z0-9+/=\\n]+"),
          0, ("PuTTY-User-Key-File-",)),
    _p("age", "AGE-SECRET-KEY-1", "[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    _p("anthropic", "sk-ant-", f"[{_TOK}]{{20,}}+", end=False),
    # Stripe before OpenAI's sk-: sk_live_ / rk_live_ / sk_test_ (underscore, not dash).
    _Rule("stripe", _prefixed("(?:sk|rk)_(?:live|test)_", "[A-Za-z0-9]{10,}+"), 0,
          ("_live_", "_test_")),
    _p("stripe", "whsec_", f"[{_AN}]{{24,}}+"),
    _p("elevenlabs", "sk_", "[0-9a-f]{48}"),
    _Rule("openai", _prefixed("sk-(?:proj-)?", f"[{_TOK}]{{20,}}+"), 0, ("sk-",)),
    _Rule("github", _prefixed("(?:gh[pousr]_[A-Za-z0-9]{20,}+|github_pat_[A-Za-z0-9_]{20,}+)",
                              ""), 0, ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    _Rule("gitlab", _prefixed("gl(?:pat|dt|rt|ptt|cbt|oas|ft|imt|soat|agent|ffct|wt)-",
                              f"[{_TOK}]{{20,}}+"), 0,
          ("glpat-", "gldt-", "glrt-", "glptt-", "glcbt-", "gloas-", "glft-", "glimt-",
           "glsoat-", "glagent-", "glffct-", "glwt-")),
    _p("gitlab", "GR1348941", f"[{_TOK}]{{20}}"),
    _Rule("slack", _prefixed("xox[abceprs]-", "[A-Za-z0-9\\-]{10,}+"), 0, ("xox",)),
    _Rule("slack", _prefixed("xoxe\\.xox[bp]-", "[0-9]-[A-Za-z0-9]{100,}+"), 0, ("xoxe.",)),
    _p("slack", "xapp-", "[0-9]-[A-Za-z0-9\\-]{10,}+", end=False),
    # The webhook URL is the secret; keep the host so the log still says what it was.
    _Rule("slack", re.compile(r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/"
                              r"([A-Za-z0-9_/\-]++)"), 1, ("hooks.slack.com/",)),
    _Rule("teams", re.compile(r"webhook\.office\.com/webhookb2/([A-Za-z0-9@/\-]{20,}+)"), 1,
          ("webhook.office.com/",)),
    _Rule("discord", re.compile(r"discord(?:app)?\.com/api/webhooks/([0-9]{6,20}/[A-Za-z0-9_\-]"
                                r"{20,}+)"), 1, ("/api/webhooks/",)),
    _p("google", "AIza", f"[{_TOK}]{{35}}"),
    _p("google", "GOCSPX-", f"[{_TOK}]{{28}}"),
    _p("google", "ya29.", f"[{_TOK}]{{20,}}+"),
    _p("npm", "npm_", "[A-Za-z0-9]{36}+", end=False),
    _p("huggingface", "hf_", "[A-Za-z0-9]{30,}+", end=False),
    _p("huggingface", "api_org_", "[A-Za-z0-9]{30,}+"),
    _Rule("sendgrid", _prefixed("SG\\.", f"[{_TOK}]{{16,32}}+\\.[{_TOK}]{{16,64}}+"), 0, ("sg.",)),
    _p("sendinblue", "xkeysib-", "[a-f0-9]{64}-[A-Za-z0-9]{16}"),
    _p("groq", "gsk_", "[A-Za-z0-9]{48,56}"),
    _p("pypi", "pypi-AgEIcHlwaS5vcmc", f"[{_TOK}]{{40,}}+"),
    _p("pypi", "pypi-AgENdGVzdC5weXBpLm9yZw", f"[{_TOK}]{{40,}}+"),
    _p("rubygems", "rubygems_", "[a-f0-9]{48}"),
    _p("nuget", "oy2", "[a-z0-9]{43}"),
    _p("clojars", "CLOJARS_", "[a-z0-9]{60}"),
    _p("twilio", "SK", f"{_HEX}{{32}}"),
    _k("twilio", "twilio", f"{_HEX}{{32}}"),
    _p("mailgun", "key-", f"{_HEX}{{32}}"),
    _Rule("mailchimp", re.compile(f"(?<![0-9a-z]){_HEX}{{32}}-us[0-9]{{1,2}}(?![0-9A-Za-z])"), 0,
          ("-us",)),
    _Rule("shopify", _prefixed("shp(?:at|ca|pa|ss)_", "[a-fA-F0-9]{32}" + _NOT_BEFORE_WORD), 0,
          ("shpat_", "shpca_", "shppa_", "shpss_")),
    _Rule("digitalocean", _prefixed("do[opr]_v1_", f"{_HEX}{{64}}{_NOT_BEFORE_WORD}"), 0,
          ("doo_v1_", "dop_v1_", "dor_v1_")),
    _p("doppler", "dp.pt.", "[A-Za-z0-9]{43}"),
    _p("dynatrace", "dt0c01.", "[A-Z0-9]{24}\\.[A-Z0-9]{64}"),
    _p("databricks", "dapi", f"{_HEX}{{32}}(?:-[0-9])?"),
    _p("pulumi", "pul-", f"{_HEX}{{40}}"),
    _p("postman", "PMAK-", f"{_HEX}{{24}}-{_HEX}{{34}}"),
    _p("linear", "lin_api_", "[A-Za-z0-9]{40}"),
    _Rule("planetscale", _prefixed("pscale_(?:tkn|pw|oauth)_", f"[{_TOK}.=]{{32,64}}+"), 0,
          ("pscale_",)),
    _p("atlassian", "ATATT3", f"[{_TOK}=]{{50,}}+", end=False),
    _p("bitbucket", "ATBB", f"[{_AN}]{{32,}}+"),
    _p("alibaba", "LTAI", f"[{_AN}]{{20}}"),
    _p("cloudflare", "v1.0-", f"{_HEX}{{24}}-{_HEX}{{146}}"),
    _k("cloudflare", "cloudflare|cf_api", f"[{_TOK}]{{40}}"),
    _p("contentful", "CFPAT-", f"[{_TOK}]{{43}}"),
    _Rule("duffel", _prefixed("duffel_(?:test|live)_", f"[{_TOK}=]{{43}}"), 0, ("duffel_",)),
    _Rule("easypost", _prefixed("EZ[AT]K", f"[{_AN}]{{54}}{_NOT_BEFORE_WORD}"), 0,
          ("EZAK", "EZTK")),
    _Rule("flutterwave", _prefixed("FLW(?:PUBK|SECK)(?:_TEST)?-", f"{_HEX}{{32}}-X"), 0,
          ("FLWPUBK", "FLWSECK")),
    _p("frameio", "fio-u-", f"[{_TOK}=]{{64}}"),
    _p("grafana", "glc_", "[A-Za-z0-9+/]{32,400}+={0,2}", end=False),
    _p("grafana", "glsa_", f"[{_AN}]{{32}}_[A-Fa-f0-9]{{8}}"),
    _p("harness", "pat.", f"[{_TOK}]{{22}}\\.[{_AN}]{{24}}\\.[{_AN}]{{20}}"),
    _Rule("vault", _prefixed("hv[sb]\\.", f"[{_TOK}]{{90,}}+"), 0, ("hvs.", "hvb.")),
    _k("vault", "vault", f"s\\.[{_AN}]{{24}}"),
    _Rule("terraform", re.compile(f"(?<![{_AN}])[{_AN}]{{14}}\\.atlasv1\\.[{_TOK}=]{{60,70}}"), 0,
          (".atlasv1.",)),
    _p("infracost", "ico-", f"[{_AN}]{{32}}"),
    _Rule("newrelic", _prefixed("NR(?:AK|JS|II|AA)-", f"[{_AN}]{{19,32}}{_NOT_BEFORE_WORD}"), 0,
          ("NRAK-", "NRJS-", "NRII-", "NRAA-")),
    _p("octopus", "API-", "[A-Z0-9]{26}"),
    _p("openshift", "sha256~", f"[{_TOK}]{{43}}"),
    _p("prefect", "pnu_", f"[{_AN}]{{36}}"),
    _p("readme", "rdme_", "[a-z0-9]{70}"),
    _p("scalingo", "tk-us-", f"[{_TOK}]{{48}}"),
    _Rule("sentry", _prefixed("sntry[su]_", f"[{_AN}+/=_\\-]{{60,}}+"), 0,
          ("sntrys_", "sntryu_")),
    _Rule("settlemint", _prefixed("sm_(?:pat|aat|sat)_", f"[{_AN}]{{16}}{_NOT_BEFORE_WORD}"), 0,
          ("sm_",)),
    _Rule("shippo", _prefixed("shippo_(?:live|test)_", f"[a-fA-F0-9]{{40}}{_NOT_BEFORE_WORD}"), 0,
          ("shippo_",)),
    _p("square", "EAAA", f"[{_AN}+=\\-]{{60}}"),
    _Rule("square", _prefixed("sq0(?:atp|csp)-", f"[{_TOK}]{{22,43}}+"), 0,
          ("sq0atp-", "sq0csp-")),
    _Rule("telegram", re.compile(f"(?<![0-9])[0-9]{{8,10}}:AA[{_TOK}]{{33}}(?![{_TOK}])"), 0,
          (":AA",)),
    _p("typeform", "tfp_", f"[{_TOK}.=]{{59}}"),
    _p("yandex", "AQVN", f"[{_TOK}]{{35,38}}"),
    _p("yandex", "YC", f"[{_TOK}]{{38}}"),
    _Rule("onepassword", _prefixed("ops_eyJ", "[A-Za-z0-9+/]{250,}+={0,3}"), 0, ("ops_eyj",)),
    _Rule("onepassword", re.compile("(?<![A-Z0-9])A3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-"
                                    "[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}"), 0,
          ("A3-",)),
    _k("airtable", "airtable", f"pat[{_AN}]{{14}}\\.{_HEX}{{64}}|[{_AN}]{{17}}"),
    _Rule("azure", re.compile(f"(?<![{_AN}_~.])[{_AN}_~.]{{3}}[0-9]Q~[{_AN}_~.\\-]{{31,34}}"
                              f"(?![{_AN}_~.\\-])"), 0, ("Q~",)),
    _Rule("azure", re.compile(r"(?i:AccountKey|SharedAccessKey)=([A-Za-z0-9+/]{40,}+={0,2})",
                              re.ASCII), 1, ("accountkey=", "sharedaccesskey=")),
    _Rule("azure", re.compile(r"[?&]sig=([A-Za-z0-9%+/]{30,}+={0,2})"), 1, ("sig=",)),
    _k("azure_devops", "devops|azure_pat|ado_pat", "[a-z0-9]{52}"),
    _p("dropbox", "sl.", f"[{_TOK}=]{{130,}}+"),
    _Rule("facebook", _prefixed("EAA[MC]", f"[{_AN}]{{100,}}+"), 0, ("EAAM", "EAAC")),
    _k("facebook", "facebook|fb_app_secret", f"{_HEX}{{32}}"),
    _k("gocardless", "gocardless", f"live_[{_TOK}=]{{40}}"),
    _k("heroku", "heroku", _UUID),
    _p("heroku", "HRKU-AA", f"[{_TOK}]{{58}}"),
    _k("hubspot", "hubspot", _UUID),
    _Rule("hubspot", _prefixed("pat-(?:na|eu)1-", _UUID), 0, ("pat-na1-", "pat-eu1-")),
    _p("jfrog", "AKCp", f"[{_AN}]{{69}}"),
    _p("jfrog", "cmVmdGtu", f"[{_AN}]{{56}}"),
    _Rule("mapbox", _prefixed("[ps]k\\.eyJ", f"[{_AN}]{{50,}}+\\.[{_TOK}]{{22}}"), 0, ("k.eyj",)),
    _k("okta", "okta", f"00[{_TOK}=]{{40}}"),
    _Rule("plaid", _prefixed("access-(?:sandbox|development|production)-", _UUID), 0,
          ("access-sandbox-", "access-development-", "access-production-")),
    # 21 or so A's, then the token (a run of A's alone, as in a test file, is not one).
    _Rule("twitter", _prefixed("A{20,24}+", f"[B-Za-z0-9%][{_AN}%]{{30,}}+"), 0,
          ("AAAAAAAAAAAAAAAAAAAA",)),
    _k("twitter", "twitter", f"[{_AN}]{{35,50}}"),
    _Rule("deno", _prefixed("dd[pw]_", f"[{_AN}]{{36}}{_NOT_BEFORE_WORD}"), 0, ("ddp_", "ddw_")),
    _p("flyio", "fo1_", f"[{_TOK}]{{43}}"),
    _Rule("flyio", _prefixed("fm[12][ar]?_", "[A-Za-z0-9+/]{100,}+={0,3}"), 0, ("fm1", "fm2")),
    _p("perplexity", "pplx-", f"[{_AN}]{{48}}"),
    _p("xai", "xai-", f"[{_AN}]{{80}}"),
    _p("replicate", "r8_", f"[{_AN}]{{37}}"),
    _Rule("langsmith", _prefixed("lsv2_(?:pt|sk)_", f"{_HEX}{{32}}_{_HEX}{{10}}"), 0,
          ("lsv2_",)),
    _p("notion", "ntn_", f"[0-9]{{11}}[{_AN}]{{35}}"),
    _p("notion", "secret_", f"[{_AN}]{{43}}"),
    _p("supabase", "sbp_", f"{_HEX}{{40}}"),
    _p("supabase", "sb_secret_", f"[{_TOK}]{{31,}}+"),
    _p("render", "rnd_", f"[{_AN}]{{32}}"),
    _Rule("sonarqube", _prefixed("sq[upa]_", f"{_HEX}{{40}}{_NOT_BEFORE_WORD}"), 0,
          ("squ_", "sqp_", "sqa_")),
    _p("circleci", "CCIPAT_", f"[{_AN}]{{22}}_{_HEX}{{40}}"),
    _p("buildkite", "bkua_", f"{_HEX}{{40}}"),
    _Rule("docker", _prefixed("dckr_(?:pat|oat)_", f"[{_TOK}]{{27,}}+"), 0, ("dckr_",)),
    _Rule("tailscale", _prefixed("tskey-(?:api|auth|client|webhook|scim)-",
                                 f"[{_AN}]{{8,}}+-[{_AN}]{{20,}}+"), 0, ("tskey-",)),
    _p("figma", "figd_", f"[{_TOK}]{{40}}"),
    _Rule("sourcegraph", _prefixed("sgp_", f"(?:[a-fA-F0-9]{{16}}_)?[{_AN}]{{40,64}}"
                                   f"{_NOT_BEFORE_WORD}"), 0, ("sgp_",)),
    _p("pinecone", "pcsk_", f"[{_AN}_]{{50,}}+"),
    _k("wandb", "wandb", f"{_HEX}{{40}}"),
    _p("resend", "re_", f"[{_AN}]{{8}}_[{_AN}]{{24}}"),
    _k("postmark", "postmark", _UUID),
    _k("datadog", "datadog|dd_api|dd_app", f"{_HEX}{{32}}|{_HEX}{{40}}"),
    _k("snyk", "snyk", _UUID),
    _k("algolia", "algolia", "[a-z0-9]{32}"),
    _k("mistral", "mistral", f"[{_AN}]{{32}}"),
    _k("cohere", "cohere|co_api", f"[{_AN}]{{40}}"),
    _k("discord", "discord", f"{_HEX}{{64}}|[{_TOK}]{{24,28}}\\.[{_TOK}]{{6}}\\.[{_TOK}]{{27,38}}"),
    _k("sumologic", "sumo", f"[{_AN}]{{64}}|su[{_AN}]{{12}}"),
    _k("travis", "travis", f"[{_AN}]{{22}}"),
    _k("zendesk", "zendesk", f"[{_AN}]{{40}}"),
    _k("netlify", "netlify", f"[{_TOK}=]{{40,46}}"),
    _k("intercom", "intercom", f"[{_TOK}=]{{60}}"),
    _k("asana", "asana", f"[0-9]/[0-9]{{16}}:{_HEX}{{32}}|[0-9]{{16}}"),
    _k("confluent", "confluent", f"[{_AN}]{{16}}|[{_AN}+/]{{64}}"),
    _k("sidekiq", "sidekiq|bundle_enterprise__contribsys__com", f"{_HEX}{{8}}:{_HEX}{{8}}"),
    _k("twitch", "twitch", "[a-z0-9]{30}"),
    _k("lob", "lob", f"(?:live|test)_[a-f0-9]{{35}}|(?:test|live)_pub_{_HEX}{{31}}"),
    _Rule("braintree", _prefixed("access_token\\$production\\$", f"[0-9a-z]{{16}}\\$"
                                 f"{_HEX}{{32}}"), 0, ("access_token$production$",)),
    _p("defined_networking", "dnkey-", f"[{_TOK}=]{{26}}-[{_TOK}=]{{52}}"),
    _k("adafruit", "adafruit", f"[{_TOK}]{{32}}"),
    _k("mattermost", "mattermost", f"[{_AN}]{{26}}"),
    _k("launchdarkly", "launchdarkly", f"(?:api|sdk|mob)-{_UUID}"),
    _k("aws_secret", "aws", "[A-Za-z0-9/+]{40}"),
    # An AWS secret access key beside its key id, as in a credentials CSV line
    # (`alice,,AKIA...,wJalr...`): the 40-character secret goes, then the id below.
    _Rule("aws_secret", re.compile(f"{_AWS_KEY_ID}[ \\t]*+[,;|:\\t][ \\t]*+"
                                   "([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])"), 1, _AWS_HINTS),
    # Not inside a longer upper-case run (a hash, an ID): that is not a key id.
    _Rule("aws", re.compile(_AWS_KEY_ID), 0, _AWS_HINTS),
    _Rule("jwt", _prefixed("eyJ", f"[{_TOK}]++\\.eyJ[{_TOK}]++\\.[{_TOK}]*+"), 0, ("eyj",)),
    # "Bearer <token>": keep the scheme word. Prose ("a Bearer token") is not a token: require a
    # digit or punctuation in it, or a long all-letter run.
    _Rule("bearer", re.compile(r"(?<![A-Za-z0-9_])(?i:bearer)[ \t]++"
                               r"((?=[A-Za-z]*+[0-9._~+/=\-])[A-Za-z0-9._~+/=\-]{8,}+"
                               r"|[A-Za-z]{32,}+)", re.ASCII), 1, ("bearer",)),
    # "Authorization: Basic <base64>": the credentials are only encoded.
    _Rule("basic_auth", re.compile(r"(?<![A-Za-z0-9_])(?i:authorization)['\"]?+[ \t]*+[:=][ \t]*+"
                                   r"['\"]?+(?i:basic)[ \t]++([A-Za-z0-9+/]{8,}+={0,2})"
                                   r"(?![A-Za-z0-9+/=])", re.ASCII), 1, ("authorization",)),
    # scheme://user:password@host and scheme://:password@host (redis): keep user and host.
    _Rule("url_password", re.compile(r"://[^\s:/@]{0,256}:([^\s/]{1,256})@"), 1, ("://",)),
    # curl -u user:password / --user=user:password: keep the user. A numeric user is a uid
    # (`docker run -u 1000:1000`), not a login.
    _Rule("basic_auth", re.compile(r"(?<![A-Za-z0-9_\-])(?:-u|--user)(?:[ \t]++|=)['\"]?+"
                                   r"(?![0-9]++:)[^\s:'\"]{1,256}:([^\s'\"]{1,256})"), 1, ("-u",)),
    # .netrc: `machine h login u password X` (tokens in any of netrc's orders), `login u password
    # X` on a continuation line, or `password X` alone on its line. Possessive token runs only.
    _Rule("netrc", re.compile(r"(?<![A-Za-z0-9_\-])(?:(?:machine[ \t]++\S++|default)"
                              r"(?:[ \t]++(?:login|account|port)[ \t]++\S++)*+|login[ \t]++\S++)"
                              r"[ \t]++password[ \t]++(\S++)"), 1, ("password",)),
    _Rule("netrc", re.compile(r"^[ \t]*+password[ \t]++(\S++)[ \t]*+$", re.MULTILINE), 1,
          ("password",)),
)

SHAPES: tuple[tuple[str, re.Pattern[str], int], ...] = tuple(
    (r.kind, r.pattern, r.group) for r in _RULES)
"""(kind, pattern, group to replace or 0 for the whole match), in the order they apply."""
SHAPE_RULE_HINTS: tuple[tuple[str, ...], ...] = tuple(r.hints for r in _RULES)
"""Beside SHAPES, one tuple per shape: the literals each of its matches holds. A text that holds
none of a shape's hints (lower-case hints in its lower-cased form, the others as written) cannot
match it, so the redactor skips that shape (one `in` test instead of a regex pass)."""

# The union, for the first test: a string holding none of these needs no shape at all.
SHAPE_HINTS: tuple[str, ...] = tuple(sorted({h for r in _RULES for h in r.hints if h.islower()
                                             or not any(c.isalpha() for c in h)}))
CASED_SHAPE_HINTS: tuple[str, ...] = tuple(sorted({h for r in _RULES for h in r.hints
                                                   if h not in SHAPE_HINTS}))
"""Hints compared with the text as written (a case-sensitive prefix such as `SK` or `EAAA`)."""

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
    return "aws_secret" if "aws" in lower and "secret" in lower else "env"
