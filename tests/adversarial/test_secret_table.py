"""The table of secret shapes (agent_cli/secrets_table.py) against a corpus of more than a hundred
shapes, each with a text that holds one and a near miss that must be left alone.

The shapes are those a public rule set such as gitleaks' default rules covers (vendor prefixes,
keyword rules, webhooks, connection strings). Every token is synthesised here at run time from a
prefix and a filler alphabet, so this file holds nothing a secret scanner would flag and no real
key. A near miss is what a careless rule would take: the prefix inside a longer word, a body one
character short or of the wrong alphabet, the keyword with a value of another shape.
"""

from __future__ import annotations

import pytest

from agent_cli.redact import default_redactor
from agent_cli.secrets_table import SHAPES

R = default_redactor()

HEX = "0123456789abcdef"
ALNUM = "aB3dE5gH7jK9mN1pQ2xY"
LOWER = "a1b2c3d4e5f6g7h8k9m0"
UPPER = "Q3X7Z9ABCDEFGH2K4M5N"
B64 = "aB3d+E5g/H7jK9mN1p"
BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def t(prefix: str, n: int, alphabet: str = ALNUM) -> str:
    """`prefix` and `n` characters of `alphabet`, repeated."""
    return prefix + (alphabet * (n // len(alphabet) + 1))[:n]


UUID = "3f2a9c1e-7b4d-4e8a-9c2f-1a2b3c4d5e6f"

# (kind, text with the secret, the secret part that must go, a near miss left as it is)
CASES: list[tuple[str, str, str, str]] = [
    ("private_key", "-----BEGIN " + "OPENSSH PRIVATE KEY-----\n" + t("", 70, B64) + "\n-----END "
     + "OPENSSH PRIVATE KEY-----", t("", 70, B64), "-----BEGIN CERTIFICATE-----\nMIIB\n"),
    ("private_key", "client-key-data: " + t("LS0tLS1CRUdJTi", 60, B64),
     t("LS0tLS1CRUdJTi", 60, B64), "client-certificate-data: LS0tLS1CRUdJ"),
    ("private_key", "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPrivate-Lines: 1\n"
     + t("", 44, B64) + "\n", t("", 44, B64), "PuTTY is an SSH client"),
    ("age", t("AGE-SECRET-KEY-1", 58, BECH32), t("AGE-SECRET-KEY-1", 58, BECH32),
     "AGE-SECRET-KEY-1 is the prefix"),
    ("anthropic", t("sk-ant-api03-", 40), t("sk-ant-api03-", 40), "sk-ant-short"),
    ("anthropic", t("sk-ant-admin01-", 40), t("sk-ant-admin01-", 40), "task-ant-" + "x" * 5),
    ("stripe", t("sk_" + "live_", 24), t("sk_" + "live_", 24), "ask_live_stream"),
    ("stripe", t("rk_" + "test_", 24), t("rk_" + "test_", 24), "rk_test_x"),
    ("stripe", t("whsec_", 32), t("whsec_", 32), "whsec_short"),
    ("elevenlabs", t("sk_", 48, HEX), t("sk_", 48, HEX), t("sk_", 20, HEX)),
    ("openai", t("sk-proj-", 40), t("sk-proj-", 40), "sk-proj-abc"),
    ("openai", t("sk-", 48), t("sk-", 48), "risk-assessment-of-the-project"),
    ("openai", t("sk-svcacct-", 40), t("sk-svcacct-", 40), "sk-svcacct"),
    ("openai", t("sk-or-v1-", 64, HEX), t("sk-or-v1-", 64, HEX), "disk-or-v1-x"),
    ("github", t("ghp_", 36), t("ghp_", 36), "ghp_short"),
    ("github", t("gho_", 36), t("gho_", 36), "gho_"),
    ("github", t("ghu_", 36), t("ghu_", 36), "ghu_x"),
    ("github", t("ghs_", 36), t("ghs_", 36), "ghs_1"),
    ("github", t("ghr_", 36), t("ghr_", 36), "ghr_q"),
    ("github", t("github_pat_", 82), t("github_pat_", 82), "github_pat_x"),
    ("gitlab", t("glpat-", 20), t("glpat-", 20), "glpat-short"),
    ("gitlab", t("gldt-", 20), t("gldt-", 20), "gldt-x"),
    ("gitlab", t("glrt-", 20), t("glrt-", 20), "glrt-x"),
    ("gitlab", t("glptt-", 40, HEX), t("glptt-", 40, HEX), "glptt-"),
    ("gitlab", t("glft-", 20), t("glft-", 20), "glft-x"),
    ("gitlab", t("glimt-", 25), t("glimt-", 25), "glimt-x"),
    ("gitlab", t("glsoat-", 20), t("glsoat-", 20), "glsoat-"),
    ("gitlab", t("glagent-", 50), t("glagent-", 50), "glagent-x"),
    ("gitlab", t("GR1348941", 20), t("GR1348941", 20), "GR1348941x"),
    ("slack", t("xoxb-", 40, "1234567890-abcdef"), t("xoxb-", 40, "1234567890-abcdef"), "xoxb-1"),
    ("slack", t("xoxp-", 40, "1234567890-abcdef"), t("xoxp-", 40, "1234567890-abcdef"), "xoxp"),
    ("slack", t("xoxe.xoxp-1-", 150), t("xoxe.xoxp-1-", 150), "xoxe.xoxp-1-short"),
    ("slack", "xapp-1-" + t("A0", 40), "xapp-1-" + t("A0", 40), "xapp-1-x"),
    ("slack", "https://hooks.slack.com/services/T0" + t("", 8, UPPER) + "/B0" + t("", 8, UPPER)
     + "/" + t("", 24), t("", 24), "https://hooks.slack.com/ is the host"),
    ("teams", "https://acme.webhook.office.com/webhookb2/" + UUID + "@" + UUID + "/Incoming/"
     + t("", 32, HEX), UUID, "webhook.office.com/webhookb2/short"),
    ("discord", "https://discord.com/api/webhooks/1234567890123/" + t("", 68),
     t("", 68), "https://discord.com/api/webhooks/"),
    ("google", t("AIza", 35), t("AIza", 35), t("AIza", 20)),
    ("google", t("GOCSPX-", 28), t("GOCSPX-", 28), "GOCSPX-short"),
    ("google", t("ya29.", 60), t("ya29.", 60), "ya29.x"),
    ("npm", t("npm_", 36), t("npm_", 36), "npm_install"),
    ("huggingface", t("hf_", 34), t("hf_", 34), "hf_small"),
    ("huggingface", t("api_org_", 34), t("api_org_", 34), "api_org_name"),
    ("sendgrid", "SG." + t("", 22) + "." + t("", 43), "SG." + t("", 22), "SG.short.x"),
    ("sendinblue", t("xkeysib-", 64, HEX) + "-" + t("", 16), t("xkeysib-", 64, HEX), "xkeysib-1"),
    ("groq", t("gsk_", 52), t("gsk_", 52), "gsk_short"),
    ("pypi", t("pypi-AgEIcHlwaS5vcmc", 70), t("pypi-AgEIcHlwaS5vcmc", 70), "pypi-AgEIcHlwaS5vcmc"),
    ("pypi", t("pypi-AgENdGVzdC5weXBpLm9yZw", 70), t("pypi-AgENdGVzdC5weXBpLm9yZw", 70), "pypi-Ag"),
    ("rubygems", t("rubygems_", 48, HEX), t("rubygems_", 48, HEX), "rubygems_org"),
    ("nuget", t("oy2", 43, LOWER), t("oy2", 43, LOWER), "oy2short"),
    ("clojars", t("CLOJARS_", 60, LOWER), t("CLOJARS_", 60, LOWER), "CLOJARS_x"),
    ("twilio", t("SK", 32, HEX), t("SK", 32, HEX), t("ASK", 32, HEX)),
    ("twilio", "TWILIO_AUTH=" + t("", 32, HEX), t("", 32, HEX), "TWILIO_ACCOUNT=enabled"),
    ("mailgun", t("key-", 32, HEX), t("key-", 32, HEX), t("monkey-", 32, HEX)),
    ("mailchimp", t("", 32, HEX) + "-us14", t("", 32, HEX), "made-us14"),
    ("shopify", t("shpat_", 32, HEX), t("shpat_", 32, HEX), "shpat_x"),
    ("shopify", t("shpss_", 32, HEX), t("shpss_", 32, HEX), t("shpss_", 31, HEX)),
    ("digitalocean", t("dop_v1_", 64, HEX), t("dop_v1_", 64, HEX), "dop_v1_"),
    ("digitalocean", t("doo_v1_", 64, HEX), t("doo_v1_", 64, HEX), t("doo_v1_", 63, HEX)),
    ("doppler", t("dp.pt.", 43), t("dp.pt.", 43), "dp.pt.short"),
    ("dynatrace", "dt0c01." + t("", 24, UPPER) + "." + t("", 64, UPPER), t("", 64, UPPER),
     "dt0c01.short"),
    ("databricks", t("dapi", 32, HEX), t("dapi", 32, HEX), "dapi_version"),
    ("pulumi", t("pul-", 40, HEX), t("pul-", 40, HEX), "pul-request"),
    ("postman", "PMAK-" + t("", 24, HEX) + "-" + t("", 34, HEX), t("", 34, HEX), "PMAK-x"),
    ("linear", t("lin_api_", 40), t("lin_api_", 40), "lin_api_docs"),
    ("planetscale", t("pscale_tkn_", 43), t("pscale_tkn_", 43), "pscale_tkn_x"),
    ("planetscale", t("pscale_pw_", 43), t("pscale_pw_", 43), "pscale_pw_"),
    ("atlassian", t("ATATT3", 186), t("ATATT3", 186), "ATATT3x"),
    ("bitbucket", t("ATBB", 32), t("ATBB", 32), "ATBBshort"),
    ("alibaba", t("LTAI", 20), t("LTAI", 20), "LTAIshort"),
    ("cloudflare", "v1.0-" + t("", 24, HEX) + "-" + t("", 146, HEX), t("", 146, HEX), "v1.0-beta"),
    ("cloudflare", "CLOUDFLARE_API_TOKEN=" + t("", 40), t("", 40), "cloudflare: enabled"),
    ("contentful", t("CFPAT-", 43), t("CFPAT-", 43), "CFPAT-x"),
    ("duffel", t("duffel_test_", 43), t("duffel_test_", 43), "duffel_test_x"),
    ("easypost", t("EZAK", 54), t("EZAK", 54), "EZAKshort"),
    ("easypost", t("EZTK", 54), t("EZTK", 54), t("EZTK", 53)),
    ("flutterwave", t("FLWSECK_TEST-", 32, HEX) + "-X", t("FLWSECK_TEST-", 32, HEX), "FLWSECK-"),
    ("frameio", t("fio-u-", 64), t("fio-u-", 64), "fio-u-x"),
    ("grafana", t("glc_", 60, B64), t("glc_", 60, B64), "glc_x"),
    ("grafana", t("glsa_", 32) + "_" + t("", 8, HEX), t("glsa_", 32), "glsa_x"),
    ("harness", "pat." + t("", 22) + "." + t("", 24) + "." + t("", 20), t("", 24),
     "compat.layer.test"),
    ("vault", t("hvs.", 95), t("hvs.", 95), "hvs.short"),
    ("vault", t("hvb.", 140), t("hvb.", 140), "hvb.x"),
    ("vault", "VAULT_TOKEN: " + t("s.", 24), t("s.", 24), "vault: s.short"),
    ("terraform", t("", 14, LOWER) + ".atlasv1." + t("", 67), t("", 67), "x.atlasv1.short"),
    ("infracost", t("ico-", 32), t("ico-", 32), "ico-short"),
    ("newrelic", t("NRAK-", 27, UPPER), t("NRAK-", 27, UPPER), "NRAK-x"),
    ("newrelic", t("NRJS-", 19, HEX), t("NRJS-", 19, HEX), "NRJS-1"),
    ("octopus", t("API-", 26, UPPER), t("API-", 26, UPPER), "API-VERSION"),
    ("openshift", t("sha256~", 43), t("sha256~", 43), "sha256~x"),
    ("prefect", t("pnu_", 36), t("pnu_", 36), "pnu_x"),
    ("readme", t("rdme_", 70, LOWER), t("rdme_", 70, LOWER), "rdme_x"),
    ("scalingo", t("tk-us-", 48), t("tk-us-", 48), "tk-us-x"),
    ("sentry", t("sntrys_", 80), t("sntrys_", 80), "sntrys_x"),
    ("sentry", t("sntryu_", 64, HEX), t("sntryu_", 64, HEX), "sntryu_x"),
    ("settlemint", t("sm_pat_", 16), t("sm_pat_", 16), "sm_pat_x"),
    ("shippo", t("shippo_live_", 40, HEX), t("shippo_live_", 40, HEX), "shippo_live_x"),
    ("square", t("EAAA", 60), t("EAAA", 60), "EAAAshort"),
    ("square", t("sq0atp-", 22), t("sq0atp-", 22), "sq0atp-x"),
    ("square", t("sq0csp-", 43), t("sq0csp-", 43), "sq0csp-"),
    ("telegram", "123456789:AA" + t("", 33), "123456789:AA" + t("", 33), "12:30:AA meeting"),
    ("typeform", t("tfp_", 59), t("tfp_", 59), "tfp_x"),
    ("yandex", t("AQVN", 36), t("AQVN", 36), "AQVNx"),
    ("yandex", t("YC", 38), t("YC", 38), "YCBCR"),
    ("onepassword", t("ops_eyJ", 260, B64), t("ops_eyJ", 260, B64), "ops_eyJshort"),
    ("onepassword", "A3-" + t("", 6, UPPER) + "-" + t("", 11, UPPER) + "-" + t("", 5, UPPER) + "-"
     + t("", 5, UPPER) + "-" + t("", 5, UPPER), t("", 11, UPPER), "A3-PAPER-SIZE"),
    ("airtable", "AIRTABLE_PAT=" + t("pat", 14) + "." + t("", 64, HEX), t("", 64, HEX),
     "airtable: pat-x"),
    ("azure", t("", 3) + "8Q~" + t("", 34), "8Q~" + t("", 34), "a Q~ b"),
    ("azure", "DefaultEndpointsProtocol=https;AccountName=x;AccountKey=" + t("", 86, B64) + "==",
     t("", 86, B64), "AccountName=short;EndpointSuffix=core"),
    ("azure", "https://x.blob.core.windows.net/c?sv=2022&sig=" + t("", 44, B64) + "%3D",
     t("", 44, B64), "https://x/?sig=abc"),
    ("azure_devops", "AZURE_DEVOPS_PAT=" + t("", 52, LOWER), t("", 52, LOWER), "devops: enabled"),
    ("dropbox", t("sl.", 140), t("sl.", 140), "tls.handshake"),
    ("facebook", t("EAAC", 120), t("EAAC", 120), "EAACshort"),
    ("facebook", "facebook_app_secret = " + t("", 32, HEX), t("", 32, HEX), "facebook: yes"),
    ("gocardless", "GOCARDLESS_TOKEN=" + t("live_", 40), t("live_", 40),
     "live_" + "stream_configuration_for_the_main_server_x"),
    ("heroku", "HEROKU_API_KEY=" + UUID, UUID, "heroku_app=my-app"),
    ("heroku", t("HRKU-AA", 58), t("HRKU-AA", 58), "HRKU-AAx"),
    ("hubspot", "hubspot_key: " + UUID, UUID, "hubspot: on"),
    ("hubspot", "pat-na1-" + UUID, "pat-na1-" + UUID, "pat-na1-short"),
    ("jfrog", t("AKCp", 69), t("AKCp", 69), "AKCpx"),
    ("jfrog", t("cmVmdGtu", 56), t("cmVmdGtu", 56), "cmVmdGtux"),
    ("mapbox", "pk.eyJ" + t("", 60) + "." + t("", 22), t("", 60), "pk.eyJx"),
    ("okta", "OKTA_API_TOKEN=" + t("00", 40), t("00", 40), "okta: 00x"),
    ("plaid", "access-sandbox-" + UUID, UUID, "access-sandbox-x"),
    ("twitter", t("AAAAAAAAAAAAAAAAAAAAA", 60), t("AAAAAAAAAAAAAAAAAAAAA", 60), "A" * 300),
    ("twitter", "twitter_consumer = " + t("", 45), t("", 45), "twitter: @handle"),
    ("deno", t("ddp_", 36), t("ddp_", 36), "ddp_x"),
    ("flyio", t("fo1_", 43), t("fo1_", 43), "fo1_x"),
    ("flyio", t("fm2_", 120, B64), t("fm2_", 120, B64), "fm2_x"),
    ("perplexity", t("pplx-", 48), t("pplx-", 48), "pplx-x"),
    ("xai", t("xai-", 80), t("xai-", 80), "xai-grok"),
    ("replicate", t("r8_", 37), t("r8_", 37), "r8_x"),
    ("langsmith", "lsv2_pt_" + t("", 32, HEX) + "_" + t("", 10, HEX), t("", 32, HEX), "lsv2_pt_x"),
    ("notion", "ntn_" + t("", 11, "0123456789") + t("", 35), t("", 35), "ntn_x"),
    ("notion", t("secret_", 43), t("secret_", 43), "top secret_plans"),
    ("supabase", t("sbp_", 40, HEX), t("sbp_", 40, HEX), "sbp_x"),
    ("supabase", t("sb_secret_", 32), t("sb_secret_", 32), "sb_secret_x"),
    ("render", t("rnd_", 32), t("rnd_", 32), "rnd_seed"),
    ("sonarqube", t("squ_", 40, HEX), t("squ_", 40, HEX), "squ_x"),
    ("circleci", "CCIPAT_" + t("", 22) + "_" + t("", 40, HEX), t("", 40, HEX), "CCIPAT_x"),
    ("buildkite", t("bkua_", 40, HEX), t("bkua_", 40, HEX), "bkua_x"),
    ("docker", t("dckr_pat_", 27), t("dckr_pat_", 27), "dckr_pat_x"),
    ("tailscale", "tskey-auth-" + t("", 12) + "-" + t("", 30), t("", 30), "tskey-auth-x"),
    ("figma", t("figd_", 40), t("figd_", 40), "figd_x"),
    ("sourcegraph", t("sgp_", 40, HEX), t("sgp_", 40, HEX), "sgp_x"),
    ("pinecone", t("pcsk_", 60), t("pcsk_", 60), "pcsk_x"),
    ("wandb", "WANDB_API_KEY=" + t("", 40, HEX), t("", 40, HEX), "wandb: offline"),
    ("resend", "re_" + t("", 8) + "_" + t("", 24), t("", 24), "re_use_this"),
    ("postmark", "POSTMARK_SERVER_TOKEN=" + UUID, UUID, "postmark: yes"),
    ("datadog", "DD_API_KEY=" + t("", 32, HEX), t("", 32, HEX), "datadog: on"),
    ("snyk", "SNYK_TOKEN=" + UUID, UUID, "snyk: test"),
    ("algolia", "algolia_admin = " + t("", 32, LOWER), t("", 32, LOWER), "algolia: index"),
    ("mistral", "MISTRAL_API_KEY=" + t("", 32), t("", 32), "mistral: 7b"),
    ("cohere", "COHERE_API_KEY=" + t("", 40), t("", 40), "cohere: cmd"),
    ("discord", "DISCORD_BOT=" + t("", 24) + "." + t("", 6) + "." + t("", 27), t("", 27),
     "discord: server"),
    ("sumologic", "SUMO_ACCESS_ID=su" + t("", 12), "su" + t("", 12), "sumo: x"),
    ("travis", "TRAVIS_API=" + t("", 22), t("", 22), "travis: ci"),
    ("zendesk", "ZENDESK_API=" + t("", 40), t("", 40), "zendesk: help"),
    ("netlify", "NETLIFY_AUTH=" + t("", 43), t("", 43), "netlify: deploy"),
    ("intercom", "INTERCOM_ACCESS=" + t("", 60), t("", 60), "intercom: chat"),
    ("asana", "ASANA_PAT=1/" + t("", 16, "0123456789") + ":" + t("", 32, HEX), t("", 32, HEX),
     "asana: tasks"),
    ("confluent", "CONFLUENT_SECRET_VALUE=" + t("", 64), t("", 64), "confluent: kafka"),
    ("sidekiq", "BUNDLE_ENTERPRISE__CONTRIBSYS__COM=" + t("", 8, HEX) + ":" + t("", 8, HEX),
     t("", 8, HEX) + ":", "sidekiq: jobs"),
    ("twitch", "TWITCH_OAUTH=" + t("", 30, LOWER), t("", 30, LOWER), "twitch: stream"),
    ("lob", "LOB_API_KEY=" + t("live_", 35, HEX), t("live_", 35, HEX), "lob: letters"),
    ("braintree", "access_token$production$" + t("", 16, LOWER) + "$" + t("", 32, HEX),
     t("", 32, HEX), "access_token$production$short"),
    ("defined_networking", "dnkey-" + t("", 26) + "-" + t("", 52), t("", 52), "dnkey-x"),
    ("adafruit", "ADAFRUIT_IO_KEY=" + t("", 32), t("", 32), "adafruit: feather"),
    ("mattermost", "MATTERMOST_TOKEN=" + t("", 26), t("", 26), "mattermost: chat"),
    ("launchdarkly", "LAUNCHDARKLY_SDK=sdk-" + UUID, UUID, "launchdarkly: flags"),
    ("aws_secret", "aws_secret_access_key = " + t("", 40, "wJalrXUtnFEMI/K7MDENG/bPxRfiCY"),
     t("", 40, "wJalrXUtnFEMI/K7MDENG/bPxRfiCY"), "aws_region = eu-west-1"),
    ("aws_secret", "AKIA" + "Q3EXAMPLE7ABCDEF," + t("", 40, "wJalrXUtnFEMI/K7MDENG/bPxRfiCY"),
     t("", 40, "wJalrXUtnFEMI/K7MDENG/bPxRfiCY"), "AKIA is a prefix"),
    ("aws", "AKIA" + "Q3EXAMPLE7ABCDEF", "AKIA" + "Q3EXAMPLE7ABCDEF", "XAKIAQ3EXAMPLE7ABCDEFG"),
    ("aws", "ASIA" + "Q3EXAMPLE7ABCDEF", "ASIA" + "Q3EXAMPLE7ABCDEF", "ASIAN cuisine"),
    ("aws", "A3T" + "XQ3EXAMPLE7ABCDEF", "A3T" + "XQ3EXAMPLE7ABCDEF", "A3TX"),
    ("jwt", "eyJ" + t("", 20) + ".eyJ" + t("", 30) + "." + t("", 25), "eyJ" + t("", 20),
     "eyJhbGciOi only"),
    ("bearer", "Authorization: Bearer " + t("", 30, "Zx81.abc"), t("", 30, "Zx81.abc"),
     "Send a Bearer token; bearer authentication is simple."),
    ("basic_auth", "Authorization: Basic dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA==",
     "Basic authentication is simple."),
    ("url_password", "postgres://app:" + "hunter2pass" + "@db/prod", "hunter2pass",
     "https://example.com:8443/path"),
    ("basic_auth", "curl -u alice:" + "curlpw77" + " https://x", "curlpw77",
     "docker run -u 1000:1000 image"),
    ("netrc", "machine api.example.com login alice password " + "n3trcpw!", "n3trcpw!",
     "password reset is broken today"),
]


def test_the_corpus_is_broad() -> None:
    """More than a hundred shapes, each kind of the table exercised."""
    assert len(CASES) >= 100
    assert len({kind for kind, *_ in CASES}) >= 90
    table_kinds = {kind for kind, _p, _g in SHAPES}
    assert table_kinds <= {kind for kind, *_ in CASES}, table_kinds - {k for k, *_ in CASES}


@pytest.mark.parametrize(("kind", "text", "secret", "near"), CASES,
                         ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_each_shape_is_hidden_and_its_near_miss_is_not(kind: str, text: str, secret: str,
                                                        near: str) -> None:
    out = R.text(text)
    assert secret not in out, out
    assert f"[REDACTED:{kind}]" in out, out
    assert R.text(out) == out, "redacting twice changes nothing"
    assert R.text(near) == near
    # In the middle of other text, and in JSON-escaped text, just the same.
    assert secret not in R.text(f"output: {text} (done)")
