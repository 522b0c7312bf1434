"""The secret redactor: every planted secret in fixtures/secrets is removed, the context
around it survives, and ordinary prose, code and config pass through unchanged."""

from __future__ import annotations

import importlib
import inspect
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codesynapse.extract.redact import (
    KINDS,
    compile_patterns,
    contains_secret,
    find_secrets,
    redact,
    redaction_marker,
)

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "secrets"

# Every secret planted in each fixture file, written out. None may survive redaction.
PLANTED: dict[str, list[str]] = {
    "settings.py": [
        "rk_test_GDE717swcpsOAOtEjYtxp6HN",
        "Wq8nL2vRz7",
        "AKIAHRCTVVURXGF7PJW5",
        "FfOYDpS/H5R/SiyqjgqvcO2AI9Pz9Jc+4Id+TFta",
        "s3cr3t-Billing!2024",
        "django-insecure-7x!q9@k#m2$w^b8&zt1r+e6u0y)p4(vj3n5",
        "sk_live_lqbHgNLhBrTrK2GhMPhBfJBB",
        "whsec_UelgZxq0JhmGYckjhyUyV7reFloetHq5",
        "ghp_TBnfLVlf3KRdvHzlUR2B8sdZrBiRTumpeOdz",
        "xoxb-882219367660-0189129900746-gDTXu6Q0R5okGGGSieCiqbLQ",
        "Kp9vX2mQ7rT4",
        "Rd1sP4ss-x9Q",
        "AIzaPMhrERp-oPANob26oYN5JtePPjok1E51-N8",
        "9f8e7d6c5b4a39281706f5e4d3c2b1a0ffeeddcc",
        "hunter2-legacy",
        "Tr0ub4dor&3",
    ],
    "config.yaml": [
        "Zr9#vQ2!mLp7",
        "CacheP4ss-77x",
        "Rabb1tMQ-s3cret",
        "mailP@ss-2024",
        "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",
        "LRoc81DSgwcvCUusyrf8igKU",
        "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",
        "c3N8Q~YdUNw53RiXnvA4o..HCBIAYePXuo2l15..",
        "fvLrWT1sm0nu0CV77+rPOvaVTg8X1QT/v0mpk0yIoNy31nvNeH3XRzJSpvrUhnebq9QGQsK5KVVvsl3F0nt9Dg==",
        "pm2ZcRyT2o7w8lSyO%2F9NDRtEljFE0kjWf5uZyXQmZMc%3D",
        "kQ8r2ZfW9xLm4TbV7nYp3CsH6uJe1GdA",
    ],
    "sample.env": [
        "pG-Loc4l-Pa55",
        "My5qlR00t!",
        "M0ng0Atl4s-pw",
        "changeme123",
        "pgpass-dev-9",
        "sk-proj-c8LgdPz8YtwXQIsUacTGWdg2HzitcQbHZ0OmSzr937TZzHfgCSJV0rd7AGiIdtccbw8EwlBVDMT3"
        "BlbkFJu59inMDLJZsSDRu_6KKF3cFVrg-nDVyp__D6Y0XpFsqT8DZT0ynVpIKQmdN2ugcoZ64EUDHn6u",
        "sk-ant-api03-d2gjbsIrqvpNsBqlslJ3JwhdtjFxT9YSafXR4GVzZFScXMwWS7oiFPNtAW7-iNdFHpbpXda9I9a"
        "9m0s4aAt4Pvjct5GIoAA",
        "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",
        "npm_3N6zuwJFYHtal1jREaG4hwdxy0x2th9QdzxT",
        "glpat-QJX4aFhHr7LN-V28Ye9x",
        "dop_v1_5a267e603b39495dfa47cb4c800e5888bc816d8be490e39fe284c7ff6c88a3a4",
        "6995229880:AA5mI9fklk661uYOW7qdEnXq2LtXEjk4q-4",
        "f3a9c1e7b2d84f6a0c5e9b1d7a3f8e2c",
        "Y2hhbmdlLW1lLXRvLWEtcmVhbC1rZXktMzItYnl0ZXM=",
        "AIzaSyB-3kq7ZfXw2Lr9TtYp8MnV0cJdHs4uQeA",
    ],
    "client.js": [
        "gho_5QJTblkUoNiSYpFFENW21I2qeTWNXTtwC26n",
        "AIzaPMhrERp-oPANob26oYN5JtePPjok1E51-N8",
        "Vq3xR8nT2kLw9ZpB5mYc7HdJ",
        "pa$$w0rd-Storefront",
        "Tmpl8-Passw0rd",
        "7d9f2a1c4b8e6f3a0d5c9b2e7f1a4c8d6b3e9f0a",
        "sk_live_lqbHgNLhBrTrK2GhMPhBfJBB",
        "Sh0pM0ng0!pw",
        "eyJhbGciOiAiSFMyNTYiLCAidHlwIjogIkpXVCJ9.eyJzdWIiOiAiMTAyOTM4NDc1NiIsICJuYW1lIjogIlRlc3Qg"
        "VXNlciIsICJpYXQiOiAxNzE2MjM5MDIyfQ.TBeiUBawtOOrv-adUxntpvRWEPT2cpmo50HIt4kCWOA",
        "gyn-8-aM_DgJi2RVqfScuWY3D_1oAxinmf_8ZhWzZRulG3u2TyWTewD5FLEvXxiAo8V3",
        "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",
    ],
    "deploy_key.pem": [
        "MIIEowIBAAKCAQEAsE89+E+QyCb1sWC/lgF1gDoXHkMDSxYautsOr9R4VlvrRdZU",
        "6B3FmI61qQdXsZ1QKUm4BJRw547nS6w3unCjHB73vmKwHKTC4S3auc7KehEO7E4g",
        "SqCVScMxzbmu7Kcp",
    ],
    "service_account.json": [
        "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj",
        "NMoSfm76oqFvAp8Gy0iz5sxjZmSnXyCdPEovGhLa0VzMaQ8s+CLOyS56YyCFGeJZ",
        "ya29.2pfapOcYpr_WbZktcdXeMKNchlGVn6-u6xuRUGPfl6rGBQyX5RqAktvfmJrV",
    ],
    "connections.txt": [
        "R3p0rt-R34d0nly",
        "M1gr4te%21Now",
        "ShopAdm1n-pw",
        "EtlUs3r.pw",
        "L3dg3rPw-22",
        "Mong0-Adm1n-pw",
        "Atl4sR3ad3r-x",
        "R3d1s-0nly-Pa55",
        "Rediss-TLS-pw9",
        "R4bb1t-Pw-x7",
        "Ev3nts-AMQPS-2",
        "Inv3nt0ry!Pass",
        "Btr3CrunJvhHft6w1X/E3RtuaE2R4ZtE3ZO7qqLO=",
        "Go-DSN-pw-55",
        "Wq8nL2vRz-deploy",
        "ghs_9kQw2ErTy7UiOp3AsDfGh5JkLz1XcVbNm8Qw",
        "Backup-FTP-pw1",
        "ZGVwbG95LWJvdDpXcTgjbkwydiFSeg==",
    ],
    "notes.md": [
        "Adm1nStag1ng-77",
        "sk_live_Zt8mK3pQ9wR2vX7yB4nC6dF1",
        "eyJhbGciOiAiUlMyNTYiLCAia2lkIjogImsxIiwgInR5cCI6ICJKV1QifQ",
        "qqSqJRp0LrlIV9jg5xWgjEuSCYzhLtsvEI_UM6bE_q9QrQOwQfuNgcEK6uvhB2CvpOp",
        "ASIA7LYD0UZ0516K8A1W",
        "Btr3CrunJvhHft6w1X/E3RtuaE2R4ZtE3ZO7qqLO",
        "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",
        "xoxp-747053669342-173999359591-6353692245107-c52032896d8ff5fbaa7f721259dd3c8e",
        "pypi-AgEIcHlwaS5vcmcvcNZRZ37vQyuRgG9lnqr0nRsSrVeQVvklYlikZCuDxZjtMHCjOuwNAjs7521zZ95M0FL0s",
        "4f1e9c2d7a8b3e6f5d0c1b2a9e8f7d6c5b4a3e2f",
        "Curl-U-Pw-33",
        "Mysql-Cli-Pw-4",
        "Psql-Conn-Pw-5",
    ],
    "npmrc": [
        "npm_3N6zuwJFYHtal1jREaG4hwdxy0x2th9QdzxT",
        "ghp_TBnfLVlf3KRdvHzlUR2B8sdZrBiRTumpeOdz",
        "ZGVwbG95LWJvdDpXcTgjbkwydiFSeg==",
    ],
    "pypirc": [
        "pypi-AgEIcHlwaS5vcmcvcNZRZ37vQyuRgG9lnqr0nRsSrVeQVvklYlikZCuDxZjtMHCjOuwNAjs7521zZ95M0FL0s",
        "Int3rnal-PyPI-pw",
    ],
    "docker_config.json": [
        "ZGVwbG95LWJvdDpXcTgjbkwydiFSeg==",
        "ghp_TBnfLVlf3KRdvHzlUR2B8sdZrBiRTumpeOdz",
    ],
    # issue 17: Markdown headings that hold a credential (stored as names and signatures)
    "headings.md": [
        "ghp_Xlo88nhcIoMjHsJCC3PPxl5wEXBbTFYXDYS6",
        "Qz8vN3kLp5Wx",
        "Vb7nM2xKq9Tr",
        "AKIA4C8H55OP9UV7RQCP",
        "xoxb-3337187190-3234830231294-oOu85scUlUkQ0SRRaeopiwLD",
    ],
    # config keys that are credentials (stored in qualified names)
    "credential_keys.yaml": ["AKIAI461SI2WEV8OBT9W", "ghp_a3a9kIfIpZ7PImyeZom81Az1FG4WzkUdxXE2"],
    "credential_keys.json": [
        "glpat-f3n1sPDLQFvf4kvjb474",
        "xoxp-957175233570-862145503862-6038233988947-d3f0ab6bca7f9404c76eaae7267b37c7",
    ],
    "credential_keys.toml": ["npm_67afFCVvxK5x98fIwq0o8IKSzJkxSPVwCOsH", "AKIA1OD9P4H72RJFPEJE"],
    # values under secret keys that do not look random
    "weak_values.yaml": ["devkey-local", "opensesame", "bananabread", "swordfish"],
    "weak_keys.py": ["devkeydevkey", "devtoken123", "sandbox-key-local", "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY"],
    # URL passwords whose host is a placeholder or an expression
    "url_placeholders.py": ["Rp0rt-Plc-71", "Bus-Plc-Pw-42", "R3d-Plc-pw9", "Sh0p-Tmpl-8", "Etl-Env-Pw-3"],
}

# The kinds each file's redactions are named by (one entry per redaction).
EXPECTED_KINDS: dict[str, dict[str, int]] = {
    "settings.py": {
        "stripe_key": 3, "password": 4, "aws_access_key": 2, "aws_secret": 1,
        "generic_secret": 1, "github_token": 1, "slack_token": 1, "basic_auth_url": 1,
        "connection_string": 1, "google_api_key": 1, "bearer_token": 1,
    },
    "config.yaml": {
        "password": 2, "connection_string": 2, "sendgrid_key": 1, "slack_webhook": 1,
        "gcp_client_secret": 1, "azure_client_secret": 1, "azure_key": 1,
        "azure_sas_token": 1, "generic_secret": 1,
    },
    "sample.env": {
        "connection_string": 3, "password": 2, "openai_key": 1, "anthropic_key": 1,
        "huggingface_token": 1, "npm_token": 1, "gitlab_token": 1, "digitalocean_token": 1,
        "telegram_bot_token": 1, "generic_secret": 2, "google_api_key": 1,
    },
    "client.js": {
        "github_token": 1, "google_api_key": 1, "generic_secret": 1, "password": 2,
        "generic_token": 1, "stripe_key": 1, "connection_string": 1, "jwt": 1,
        "discord_webhook": 1, "shopify_token": 1,
    },
    "deploy_key.pem": {"private_key": 1},
    "service_account.json": {"private_key": 1, "gcp_oauth_token": 1},
    "connections.txt": {
        "connection_string": 11, "password": 2, "azure_key": 1, "basic_auth_url": 2,
        "github_token": 1, "basic_auth": 1,
    },
    "notes.md": {
        "password": 3, "stripe_key": 1, "jwt": 1, "aws_access_key": 1, "aws_secret": 2,
        "github_token": 1, "slack_token": 1, "pypi_token": 1, "bearer_token": 1,
        "basic_auth": 1,
    },
    "npmrc": {"npm_token": 1, "github_token": 1, "generic_token": 1},
    "pypirc": {"pypi_token": 1, "password": 1},
    "docker_config.json": {"generic_token": 1, "github_token": 1},
}

# Text next to the secrets that must still be there after redaction.
KEPT_CONTEXT: dict[str, list[str]] = {
    "connections.txt": [
        "postgres://[REDACTED:connection_string]@analytics-db.example.com:5432/warehouse",
        "mongodb+srv://[REDACTED:connection_string]@cluster7.zz9yy.mongodb.net/reports",
        "redis://[REDACTED:connection_string]@redis.example.com:6379/2",
        "amqp://[REDACTED:connection_string]@rabbitmq.example.com:5672/vhost",
        "jdbc:postgresql://pg.example.com:5432/ledger?user=ledger&password=[REDACTED:password]",
        "Server=sql.example.com;Database=Inventory;User Id=inv_app;Password=[REDACTED:password];Encrypt=true;",
        "[REDACTED:connection_string]@tcp(mysql.example.com:3306)/inventory?parseTime=true",
        "https://[REDACTED:github_token]@github.com/org/repo.git",
        "postgres://localhost:5432/warehouse",
        "postgresql://${DB_USER}:${DB_PASSWORD}@${DB_HOST}/app",
        "mongodb://<username>:<password>@cluster0.example.net/test",
        "ssh://git@github.com/org/repo.git",
    ],
    "config.yaml": [
        "  host: pg.prod.example.com\n",
        "  password: [REDACTED:password]\n  sslmode: require\n",
        "    webhook: https://hooks.slack.com/[REDACTED:slack_webhook]\n",
        "AccountName=ordersstore;AccountKey=[REDACTED:azure_key];EndpointSuffix=core.windows.net",
        "  password_min_length: 12\n  token_ttl_seconds: 900\n  secret_rotation_days: 30\n",
        "  password: ${ORDERS_DB_PASSWORD}\n",
    ],
    "settings.py": [
        'MAILER_PASSWORD = os.environ["MAILER_PASSWORD"]\n',
        "API_TOKEN = settings.API_TOKEN\n",
        'JWT_SECRET = get_secret("jwt")\n',
        "def __init__(self, api_key: str, password: str | None = None) -> None:",
        "self.password = password  # never log this",
        '"HOST": "db.internal.example.com",',
    ],
    "sample.env": [
        "SECRET_NAME=orders/db-credentials\n",
        "TOKEN_ISSUER=https://auth.example.com/\n",
        "POSTGRES_PASSWORD=[REDACTED:password]\n",
    ],
    "service_account.json": [
        '"private_key": "[REDACTED:private_key]",',  # the whole value: a key under its key
        '"client_email": "orders-uploader@orders-prod-412233.iam.gserviceaccount.com",',
        '"token_uri": "https://oauth2.googleapis.com/token",',
    ],
    "npmrc": ["always-auth=true\n", "registry=https://registry.npmjs.org/\n"],
    "weak_keys.py": ['API_KEY_HEADER = "X-Api-Key"  # a header\'s name, not a secret'],
    "weak_values.yaml": ["  region: eu-west-1\n"],
    "url_placeholders.py": [
        'f"postgres://[REDACTED:connection_string]@{host}/reports"',
        '"amqp://[REDACTED:connection_string]@" + host + "/vhost"',
        '"postgresql://USER:PASSWORD@HOST:5432/DB"',
    ],
    "headings.md": ["### Rotation steps\n", "## Admin password [REDACTED:password]\n"],
    "pypirc": ["username = __token__\n", "username = uploader\n"],
}

CLEAN_FILES = ["auth_helpers.py", "service.yaml", "README.md"]

# Ordinary docstrings, comments and prose full of secret-adjacent words: unchanged.
ORDINARY_TEXT = [
    "Return the password hash for ``user``; the password itself is never stored.",
    "Args:\n    password: The user's password.\n    token: The refresh token to exchange.",
    "password : str\n    The password to check against the stored hash.",
    "Raises KeyError if the API key is missing from the request headers.",
    "The token bucket refills at ``rate`` tokens per second.",
    "Split the source into tokens; each token records its type and span.",
    "# the secret key comes from settings.SECRET_KEY, never from the repository",
    "api_key = request.headers.get('X-Api-Key')",
    "self.password = password",
    "password = getpass.getpass('Password: ')",
    "token = self._next_token()",
    "def login(self, user: str, password: str) -> Session:",
    "secret: SecretStr = Field(..., description='Signing secret')",
    "Use Authorization: Bearer <token> with a token from /oauth/token.",
    "Bearer authentication is preferred over basic authentication.",
    "Connect with postgresql://USER:PASSWORD@HOST:5432/DB (see the ops guide).",
    "Clone ssh://git@github.com/org/repo.git or https://github.com/org/repo.git.",
    "max_tokens = 4096  # the model's context window",
    "password_min_length: 12",
    "token_type: bearer",
    "auth: true",
    "SECRET_NAME=orders/db-credentials",
    "The bypass flag skips the compass calibration.",
    "sha256: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "commit = '4b825dc642cb6eb9a060e54bf8d69288fbee4904'",
    "request_id: 3f2504e0-4f89-11d3-9a0c-0305e82c3301",
    "model = 'sentence-transformers/all-MiniLM-L6-v2'",
    "License: BSD-3-Clause-Open-MPI",
    "An AWS access key id looks like AKIA followed by 16 characters.",
    "Keys are rotated every 90 days; tokens expire after 15 minutes.",
    "Pass the password via the PGPASSWORD environment variable.",
    "password: ${DB_PASSWORD}",
    "password = '{password}'",
    "passwd=%(passwd)s",
    "The default password policy requires 12 characters.",
    "getTokenFromCache(tokenCacheKeyPrefix + userId)",
    "x = {'key': value, 'token_count': 3}",
    "see https://docs.example.com/auth/tokens#refresh for details",
    '"neo4j_password": "CODESYNAPSE_NEO4J_PASSWORD",  # the environment variable to read',
    # code seen in real JavaScript bundles
    "pass: matchResult?.pass ?? false,",
    "'allPass': 'overEvery', 'anyPass': 'overSome',",
    "interface MatchResult {\n\tpass: boolean;\n\tmessage: () => string;\n}",
    "t.credentials=`same-origin`",
    'lastSignificantToken = "?NoLineTerminatorHere";',
    "PWD: '/Users/maciej',",
    "$token = Get-AzAccessToken @params",
    "USERNAME_PASSWORD: 0x02,",
    "passwordHash: 'hide',",
    'const hexChars = "0123456789abcdefABCDEF";',
    'const jweCryptoB64Encoded = "eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2R0NNIn0";',
    "re.src_auth = `(?:(?:(?!${re.src_ZCc}|[@/\\[\\]()]).){1,50}@)?`;",
    'idToken: cacheRecord?.idToken?.secret || "",',
    "const USE_CREDENTIALS = 'use-credentials'",
    "maxTokenLength = getMaxLength(tokenizerOptions)",
]

# Random-looking values next to a secret-ish key (letters and digits as a generator would
# make them): all redacted.
CONTEXT_SECRETS = [
    ('api_key = "Qm8ZtR2vLx9NcB4wKp7YhD3s"', 'api_key = "[REDACTED:generic_api_key]"'),
    ("apiKey: 'hTq0RmZc81LxVnB6'", "apiKey: '[REDACTED:generic_api_key]'"),
    ("ACCESS_TOKEN=f81d4fae7dec11d0a76500a0c91e6bf6", "ACCESS_TOKEN=[REDACTED:generic_token]"),
    ('"refresh_token": "WzN4pQ7rTb2Ld9Kx"', '"refresh_token": "[REDACTED:generic_token]"'),
    ("client_secret: kR7pW2nX9qL4vB8m", "client_secret: [REDACTED:generic_secret]"),
    ("SIGNING_KEY='tYv93LsQp0ZrXe7N'", "SIGNING_KEY='[REDACTED:generic_secret]'"),
    ("db_pass=hunter2", "db_pass=[REDACTED:password]"),
    ("SMTP_PASS='p@ssw0rd!'", "SMTP_PASS='[REDACTED:password]'"),
    ("credentials = 'svc-ci:Xy7!pQ2#'", "credentials = '[REDACTED:generic_secret]'"),
    ("const secret = `mQ4zT8wY1rN6bV3c`;", "const secret = `[REDACTED:generic_secret]`;"),
]

# Exact before/after pairs.
EXACT = [
    ('password = "hunter2"', 'password = "[REDACTED:password]"'),
    ("DB_PASSWORD=Sup3r-s3cret", "DB_PASSWORD=[REDACTED:password]"),
    ("  password: hunter2\n", "  password: [REDACTED:password]\n"),
    (
        "Connect to postgres://app:Pg-S3cret!@db.example.com:5432/app first.",
        "Connect to postgres://[REDACTED:connection_string]@db.example.com:5432/app first.",
    ),
    (
        "The staging password is Adm1n-77.",
        "The staging password is [REDACTED:password].",
    ),
    (
        "Authorization: Bearer 4f1e9c2d7a8b3e6f5d0c1b2a9e8f7d6c",
        "Authorization: Bearer [REDACTED:bearer_token]",
    ),
    (
        'AWS key AKIAHRCTVVURXGF7PJW5 and secret "FfOYDpS/H5R/SiyqjgqvcO2AI9Pz9Jc+4Id+TFta".',
        'AWS key [REDACTED:aws_access_key] and secret "[REDACTED:aws_secret]".',
    ),
    (
        # overlapping findings (password assignment holding a shaped token): one redaction
        'password = "ghp_TBnfLVlf3KRdvHzlUR2B8sdZrBiRTumpeOdz"',
        'password = "[REDACTED:github_token]"',
    ),
    (
        "config: {upload_key: Xq7Lm2Pz9Rt4Vw8Nb3Kc6Hj1}",
        "config: {upload_key: [REDACTED:high_entropy_secret]}",
    ),
    ("--db-password 'Tr0ub4dor&3'", "--db-password '[REDACTED:password]'"),
    (
        # an unescaped "@" in the password: everything up to the last "@" goes
        "postgres://app:p@ss:w0rd@db.example.com/app",
        "postgres://[REDACTED:connection_string]@db.example.com/app",
    ),
    ("see http://example.com:80?email=a@b.com", "see http://example.com:80?email=a@b.com"),
    # passwords may start with a symbol; references and YAML tags/aliases are not secrets
    ('password: "!Qaz2wsx"', 'password: "[REDACTED:password]"'),
    ("PASSWORD=@dm1n-2024", "PASSWORD=[REDACTED:password]"),
    ('password = "$ecretP@ss"', 'password = "[REDACTED:password]"'),
    ("password: !vault |", "password: !vault |"),
    ("password: *db_password", "password: *db_password"),
    ("password=%DB_PASSWORD%", "password=%DB_PASSWORD%"),
    ('password: "{password}"', 'password: "{password}"'),
    # URL credentials whatever names the host: a placeholder or an expression (issue 17 #4)
    ('f"postgres://app:Tr0ub4dor@{host}/db"', 'f"postgres://[REDACTED:connection_string]@{host}/db"'),
    ("postgres://app:Pg-S3cret@${DB_HOST}/app", "postgres://[REDACTED:connection_string]@${DB_HOST}/app"),
    ('"mysql://root:R00tPw-9@%s/shop" % host', '"mysql://[REDACTED:connection_string]@%s/shop" % host'),
    ("amqp://bus:Bus-Pw-42@<broker-host>/vhost", "amqp://[REDACTED:connection_string]@<broker-host>/vhost"),
    ("redis://:r3disPw!@{{ redis_host }}:6379/0", "redis://[REDACTED:connection_string]@{{ redis_host }}:6379/0"),
    ('"postgres://app:Ledger-Pw-7@" + host + "/ledger"', '"postgres://[REDACTED:connection_string]@" + host + "/ledger"'),
    ("https://bot:Hook-Pw-3@%(host)s/hook", "https://[REDACTED:basic_auth_url]@%(host)s/hook"),
    ("postgres://${DB_USER}:${DB_PASSWORD}@${DB_HOST}/app", "postgres://${DB_USER}:${DB_PASSWORD}@${DB_HOST}/app"),
    ("postgres://user:pass@{host}/db", "postgres://user:pass@{host}/db"),  # the documentation's placeholder
    # a value under a secret's key is a secret whatever it looks like (issue 17 #5)
    ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY", "AWS_SECRET_ACCESS_KEY=[REDACTED:aws_secret]"),
    ("SECRET_KEY=devkeydevkey", "SECRET_KEY=[REDACTED:generic_secret]"),
    ('SECRET_KEY = "devkeydevkey"', 'SECRET_KEY = "[REDACTED:generic_secret]"'),
    ("secret: letmein", "secret: [REDACTED:generic_secret]"),
    ("  api_key: devkey  # local only", "  api_key: [REDACTED:generic_api_key]  # local only"),
    ("GITHUB_TOKEN=devtoken123", "GITHUB_TOKEN=[REDACTED:generic_token]"),
    ('"client_secret": "opensesame",', '"client_secret": "[REDACTED:generic_secret]",'),
    ('const apiKey = "devkey1234";', 'const apiKey = "[REDACTED:generic_api_key]";'),
    ("mysql --password=letmein", "mysql --password=[REDACTED:password]"),
    ("deploy --api-key=devkey1", "deploy --api-key=[REDACTED:generic_api_key]"),
    # ... and code, names, types, paths and the key's own name stay
    ("SECRET_KEY = fallback", "SECRET_KEY = fallback"),
    ("  privateKey: pem,", "  privateKey: pem,"),
    ("apiKey: string", "apiKey: string"),
    ("secret: Optional", "secret: Optional"),
    ('API_KEY_HEADER = "X-Api-Key"', 'API_KEY_HEADER = "X-Api-Key"'),
    ('api_key = "x-api-key"', 'api_key = "x-api-key"'),
    ('unk_token = "unk"', 'unk_token = "unk"'),
    ('api_key="hf_...",  # your token', 'api_key="hf_...",  # your token'),
    ("secret: Keep it out of the repository", "secret: Keep it out of the repository"),
    ("token: abc", "token: abc"),
    ("credentials: include", "credentials: include"),
]


def _read(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def test_every_fixture_file_is_covered() -> None:
    files = sorted(p.name for p in FIXTURES.iterdir() if p.is_file())
    assert files == sorted(PLANTED)


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_planted_secrets_are_present_then_removed(name: str) -> None:
    text = _read(name)
    for secret in PLANTED[name]:
        assert secret in text, f"fixture {name} lost its planted secret {secret!r}"
    redacted = redact(text)
    survivors = [s for s in PLANTED[name] if s in redacted]
    assert survivors == []


@pytest.mark.parametrize("name", sorted(EXPECTED_KINDS))
def test_redactions_are_named_by_kind(name: str) -> None:
    kinds = Counter(kind for kind, _, _ in find_secrets(_read(name)))
    assert dict(kinds) == EXPECTED_KINDS[name]


@pytest.mark.parametrize("name", sorted(KEPT_CONTEXT))
def test_context_around_secrets_survives(name: str) -> None:
    redacted = redact(_read(name))
    for fragment in KEPT_CONTEXT[name]:
        assert fragment in redacted


def test_private_key_block_is_one_redaction() -> None:
    assert redact(_read("deploy_key.pem")) == "[REDACTED:private_key]\n"


def test_private_key_without_end_line_is_redacted_through_its_body() -> None:
    text = (
        "key:\n-----BEGIN OPENSSH PRIVATE KEY-----\n"
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n"
        "QyNTUxOQAAACBhY2FiYWNhYmFjYWJhY2FiYWNhYmFjYWJhY2FiYWNhYgAAAJgAAAAAAAAA\n"
        "(truncated)"
    )
    assert redact(text) == "key:\n[REDACTED:private_key]\n(truncated)"


@pytest.mark.parametrize("name", CLEAN_FILES)
def test_clean_files_survive_unchanged(name: str) -> None:
    text = _read(f"clean/{name}")
    assert find_secrets(text) == []
    assert redact(text) == text


@pytest.mark.parametrize("text", ORDINARY_TEXT)
def test_ordinary_text_survives_unchanged(text: str) -> None:
    assert redact(text) == text
    assert contains_secret(text) is False


@pytest.mark.parametrize(("before", "after"), CONTEXT_SECRETS)
def test_random_values_next_to_secret_keys(before: str, after: str) -> None:
    assert redact(before) == after


@pytest.mark.parametrize(("before", "after"), EXACT)
def test_exact_redactions(before: str, after: str) -> None:
    assert redact(before) == after


STDLIB_MODULES = [
    "smtplib", "getpass", "urllib.parse", "http.client", "http.cookiejar", "hashlib", "hmac",
    "secrets", "ssl", "imaplib", "ftplib", "poplib", "netrc", "base64", "tokenize", "shlex",
    "argparse", "logging.handlers", "xmlrpc.client", "email.utils", "json", "configparser",
    "sqlite3", "subprocess",
]


def _docstrings(module_name: str) -> list[str]:
    module = importlib.import_module(module_name)
    objects: list[object] = [module]
    for value in vars(module).values():
        if (inspect.isfunction(value) or inspect.isclass(value)) and value.__module__ == module.__name__:
            objects.append(value)
            if inspect.isclass(value):
                objects.extend(v for v in vars(value).values() if inspect.isfunction(v))
    return [doc for obj in objects if (doc := getattr(obj, "__doc__", None))]


@pytest.mark.parametrize("module_name", STDLIB_MODULES)
def test_standard_library_docstrings_survive(module_name: str) -> None:
    """Real docstrings about logins, passwords, tokens and keys: no redaction."""
    docs = _docstrings(module_name)
    assert docs, f"{module_name} has no docstrings to check"
    assert [(d[:60], find_secrets(d)) for d in docs if find_secrets(d)] == []


def test_literal_password_in_a_docstring_example_is_redacted() -> None:
    # from urllib.request's module docstring
    text = "authinfo.add_password(realm='PDQ Application',\n                      uri='https://mahler:8092/site-updates.py',\n                      user='klem',\n                      passwd='geheim$parole')"
    assert redact(text).endswith("passwd='[REDACTED:password]')")
    assert "user='klem'" in redact(text)


def test_find_secrets_reports_kind_and_span() -> None:
    text = "token: ghp_TBnfLVlf3KRdvHzlUR2B8sdZrBiRTumpeOdz, user: bob"
    assert find_secrets(text) == [("github_token", 7, 47)]
    assert text[7:47] == "ghp_TBnfLVlf3KRdvHzlUR2B8sdZrBiRTumpeOdz"


def test_contains_secret() -> None:
    assert contains_secret("export STRIPE=sk_live_lqbHgNLhBrTrK2GhMPhBfJBB") is True
    assert contains_secret("Stripe keys start with sk_live_ in production.") is False


def test_extra_patterns_redact_as_custom() -> None:
    extra = compile_patterns(["ACME-[0-9]{8}", r"ticket=(?P<secret>[a-z]{6})\b"])
    text = "License ACME-12345678 issued; ticket=abcdef; ACME-123 is too short."
    assert redact(text, extra) == (
        "License [REDACTED:custom] issued; ticket=[REDACTED:custom]; ACME-123 is too short."
    )
    assert find_secrets(text, extra) == [("custom", 8, 21), ("custom", 37, 43)]
    assert redact(text) == text  # without the extra patterns nothing here is a secret


def test_compile_patterns_names_the_bad_pattern() -> None:
    with pytest.raises(ValueError, match=r"redact pattern 'ACME-\[0-9': invalid regular expression"):
        compile_patterns(["ok-[0-9]+", "ACME-[0-9"])
    with pytest.raises(ValueError, match=r"redact pattern 'x\*': matches the empty string"):
        compile_patterns(["x*"])
    with pytest.raises(ValueError, match=r"redact pattern '': must be a non-empty string"):
        compile_patterns([""])
    assert compile_patterns([]) == ()
    (rx,) = compile_patterns(["ACME-[0-9]{8}"])
    assert rx.pattern == "ACME-[0-9]{8}"


def test_marker_format_and_kinds() -> None:
    assert redaction_marker("jwt") == "[REDACTED:jwt]"
    for kind in ("aws_access_key", "aws_secret", "github_token", "slack_token", "stripe_key",
                 "google_api_key", "jwt", "private_key", "password", "bearer_token",
                 "connection_string", "generic_api_key", "generic_secret", "generic_token",
                 "high_entropy_secret", "azure_key", "azure_sas_token", "azure_client_secret",
                 "gcp_client_secret", "npm_token", "pypi_token", "basic_auth", "basic_auth_url",
                 "custom"):
        assert kind in KINDS


@pytest.mark.parametrize("name", sorted(PLANTED))
def test_redaction_is_idempotent(name: str) -> None:
    once = redact(_read(name))
    assert find_secrets(once) == []
    assert redact(once) == once


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=300))
def test_findings_are_sorted_disjoint_and_in_bounds(text: str) -> None:
    findings = find_secrets(text)
    end = 0
    for kind, s, e in findings:
        assert kind in KINDS
        assert end <= s < e <= len(text)
        end = e
    out = redact(text)
    if not findings:
        assert out == text
    else:
        assert out.count("[REDACTED:") >= len(findings)


_WORDS = ["the", "password", "token", "key", "secret", "is", "was", "api_key", "user", "hash",
          "value", "returns", "auth", "None", "self", "str", "PASSWORD", "pass", "bypass", "(",
          ")", "Bearer", "Basic", "credentials", "the_token", "getPassword()", "os.environ"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_WORDS), max_size=30))
def test_sentences_of_secret_vocabulary_are_never_redacted(words: list[str]) -> None:
    """Secret-ish vocabulary alone (no value that looks like a credential) stays."""
    text = " ".join(words)
    assert redact(text) == text


# ---- the gate: every string of a stored record ----------------------------------------------


def _section(qname: str, name: str, parent: str):
    from codesynapse.extract.model import Symbol

    return Symbol(qname=qname, name=name, kind="section", signature=f"## {name}", start_line=1, end_line=1,
                  start_col=0, end_col=0, hash="h", summary="", parent=parent)


def test_gate_redacts_names_qualified_names_and_the_links_between_records() -> None:
    from codesynapse.extract.model import CallSite, FileExtraction
    from codesynapse.extract.redact import RecordGate

    fx = FileExtraction(path="notes.md", language="markdown", hash="x", size=1, lines=1, module="notes.md", symbols=[
        # a child before its parent: the parent's qualified name is redacted first all the same
        _section("notes.md#Setup > password: hunter2 > Details", "Details", "notes.md#Setup > password: hunter2"),
        _section("notes.md#Setup", "Setup", "notes.md"),
        _section("notes.md#Setup > password: hunter2", "password: hunter2", "notes.md#Setup"),
        _section("notes.md#Token ghp_TBnfLVlf3KRdvHzlUR2B8sdZrBiRTumpeOdz",
                 "Token ghp_TBnfLVlf3KRdvHzlUR2B8sdZrBiRTumpeOdz", "notes.md"),
    ], calls=[CallSite(caller="notes.md#Setup > password: hunter2", callee="AKIAHRCTVVURXGF7PJW5.get", name="get",
                       line=1, col=0)])
    out = RecordGate().record(fx)
    assert [(s.qname, s.name, s.parent, s.signature) for s in out.symbols] == [
        ("notes.md#Setup > password: [REDACTED:password] > Details", "Details",
         "notes.md#Setup > password: [REDACTED:password]", "## Details"),
        ("notes.md#Setup", "Setup", "notes.md", "## Setup"),
        ("notes.md#Setup > password: [REDACTED:password]", "password: [REDACTED:password]", "notes.md#Setup",
         "## password: [REDACTED:password]"),
        ("notes.md#Token [REDACTED:github_token]", "Token [REDACTED:github_token]", "notes.md",
         "## Token [REDACTED:github_token]"),
    ]
    assert [(c.caller, c.callee, c.name) for c in out.calls] == [
        ("notes.md#Setup > password: [REDACTED:password]", "[REDACTED:aws_access_key].get", "get")]
    assert (out.path, out.module, out.hash) == ("notes.md", "notes.md", "x")
    assert RecordGate().record(out) == out  # idempotent


def test_gate_keeps_ordinary_records_as_they_are() -> None:
    from codesynapse.extract.model import CallSite, ImportRef, Symbol
    from codesynapse.extract.redact import RecordGate

    sym = Symbol(qname="shop.auth.TokenStore.get_password_hash", name="get_password_hash", kind="method",
                 signature="def get_password_hash(self, user: str, secret_key: bytes) -> str",
                 start_line=3, end_line=9, start_col=4, end_col=0, hash="h",
                 summary="Return the password hash; the token is never stored.", parent="shop.auth.TokenStore")
    call = CallSite(caller=sym.qname, callee="self.api_key_for", name="api_key_for", line=4, col=8)
    imp = ImportRef(module="shop.secrets", name="SECRET_KEY_NAME", alias="key_name")
    gate = RecordGate()
    assert gate.record(sym) is sym and gate.record(call) is call and gate.record(imp) is imp


def test_gate_applies_the_policy_patterns_and_redacts_memory_types_and_predicates() -> None:
    from codesynapse.extract.redact import RecordGate
    from codesynapse.memory.models import EntityIn, FactIn, RememberParams

    p = RememberParams(
        entities=[EntityIn(name="upload job", aliases=["uploader AKIAZJTA2SKNTDRODMAT"], type="AKIA6PE03KS8O79GMRBE"),
                  EntityIn(name="licence ACME-LIC-73019264", type="ACME7305918264")],
        facts=[FactIn(subject="upload job", predicate="ghp_5D99UbnilshbdE1beeo87TGYVJ7pjblRRZ5Y", object="x",
                      source_client="agent ACME-LIC-60418273"),
               FactIn(subject="upload job", predicate="runs_on", object="ci")])
    out = RecordGate(compile_patterns(["ACME-LIC-[0-9]{8}", "ACME[0-9]{10}"])).record(p)
    assert [(e.name, e.aliases, e.type) for e in out.entities] == [
        ("upload job", ["uploader [REDACTED:aws_access_key]"], "[REDACTED:aws_access_key]"),
        ("licence [REDACTED:custom]", [], "[REDACTED:custom]")]
    assert [(f.subject, f.predicate, f.object, f.source_client) for f in out.facts] == [
        ("upload job", "[REDACTED:github_token]", "x", "agent [REDACTED:custom]"),
        ("upload job", "runs_on", "ci", "")]
    assert out.facts[1] is p.facts[1]
