"""Secret redaction for every piece of text CodeSynapse stores.

Summaries (docstring first sentence, leading comments), config-key summaries and memory free
text all pass through :func:`redact` before they reach a store. Each secret is replaced by
``[REDACTED:<kind>]``; the text around it is kept as it was, so a redacted summary still
reads naturally.

How secrets are found (all regexes are compiled once, at import):

1. **Shaped tokens** — credentials whose shape identifies them (``AKIA…``, ``ghp_…``,
   ``xoxb-…``, ``sk_live_…``, ``AIza…``, JWTs, PEM private keys, npm/PyPI/GitLab/… tokens).
   Text without a run of 16 token characters (most prose) skips them all after one regex
   search; otherwise each rule's regex starts with a literal (the regex engine's fast
   prefix scan) or is gated by a literal anchor (``"Q~" in text``).
2. **Contextual secrets** — a value next to a word that says "this is a secret": key/value
   assignments (``password = "…"``, ``API_KEY=…``, ``"client_secret": "…"``,
   ``--db-password x``), ``Bearer``/``Basic`` authorization values, Azure
   ``AccountKey=``/``SharedAccessKey=``/``sig=``, credentials inside URLs
   (``postgres://user:pass@host`` keeps scheme and host) and Go DSNs. Candidates are found
   from keyword occurrences (``str.find`` on the lower-cased text), then one anchored regex
   reads the separator and value, and a small check rejects placeholders
   (``${DB_PASSWORD}``, ``<password>``, ``%(pw)s``), code references
   (``settings.SECRET_KEY``, ``get_token()``), type annotations (``password: SecretStr``)
   and prose (``password: the user's password``), which keeps false positives low on
   ordinary docstrings and comments. The word "password" (passwd, passphrase, passcode)
   in prose also announces a value written right after it (``use password X``,
   ``admin password X (change it)``; random-looking values only) or after a short
   ``for …`` phrase (``password for the admin account: X``). A YAML block scalar
   (``password: |`` or ``>-``) redacts its indented lines.
3. **High-entropy values** in ``key = value`` / ``key: value`` contexts (mixed case and
   digits, random-looking, key not a hash/id/path/name field).
4. **Extra patterns** — the repository policy's ``redact:`` regexes (kind ``custom``); a
   pattern with a named group ``secret`` redacts only that group.

Overlapping findings are merged into one redaction (the most specific kind names it), so a
secret is never left half-visible.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Callable, Sequence
from typing import Annotated, Any, Final, NamedTuple, TypeVar, get_args, get_origin

import msgspec

__all__ = [
    "CUSTOM_KIND",
    "KINDS",
    "RecordGate",
    "compile_patterns",
    "contains_secret",
    "find_secrets",
    "redact",
    "redaction_marker",
]

CUSTOM_KIND: Final = "custom"
_MAX_CUSTOM_PATTERN_CHARS: Final = 2000

Finding = tuple[str, int, int]  # (kind, start, end) character offsets


def redaction_marker(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def _is_word_char(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


# --------------------------------------------------------------------------------------
# 1. Shaped tokens
# --------------------------------------------------------------------------------------


class _TokenRule(NamedTuple):
    kind: str
    # The rule runs only if one of these occurs in the text. Empty for rules whose regex
    # starts with a distinctive literal: the regex engine's own prefix scan is as cheap.
    anchors: tuple[str, ...]
    regex: re.Pattern[str]  # a group named "v" marks the secret part, if not the whole match
    left_boundary: bool  # the match must not continue a word to its left


def _rule(kind: str, anchors: tuple[str, ...], pattern: str, left_boundary: bool = True) -> _TokenRule:
    return _TokenRule(kind, anchors, re.compile(pattern), left_boundary)


_NA = r"(?![A-Za-z0-9_])"  # no word character right after
# One more line of a base64 body (also inside string literals with escaped newlines)
_B64_LINE = (
    r"(?:[ \t]*(?:\\[rn])*[\"'`]?[ \t]*\+?[ \t]*\r?\n?[ \t]*[\"'`]?[A-Za-z0-9+/=]{16,}"
    r"(?:\\[rn])*[\"'`]?)"
)

_TOKEN_RULES: Final[tuple[_TokenRule, ...]] = (
    _rule("aws_access_key", (), r"(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}" + _NA),
    _rule("github_token", (), r"gh[pousr]_[A-Za-z0-9]{36,251}" + _NA),
    _rule("github_token", (), r"github_pat_[A-Za-z0-9_]{50,251}" + _NA),
    _rule("gitlab_token", (), r"gl(?:pat|ptt|dt|rt|cbt|oas|soat)-[A-Za-z0-9_-]{20,}"),
    _rule("slack_token", (), r"(?:xox[abposre](?:\.xox[abposr])?|xapp)-[0-9]+-[A-Za-z0-9-]{10,}"),
    _rule(
        "slack_webhook",
        (),
        r"hooks\.slack\.com/(?P<v>(?:services|workflows|triggers)/[A-Za-z0-9_/+-]{20,})",
        left_boundary=False,
    ),
    _rule(
        "discord_webhook",
        ("/api/webhooks/",),
        r"discord(?:app)?\.com/api/webhooks/(?P<v>[0-9]{5,}/[A-Za-z0-9_-]{40,})",
        left_boundary=False,
    ),
    _rule("stripe_key", ("_live_", "_test_"), r"[sr]k_(?:live|test)_[A-Za-z0-9]{16,247}" + _NA),
    _rule("stripe_key", (), r"whsec_[A-Za-z0-9+/]{24,}"),
    _rule("google_api_key", (), r"AIza[0-9A-Za-z_-]{35}(?![A-Za-z0-9_-])"),
    _rule("gcp_client_secret", (), r"GOCSPX-[A-Za-z0-9_-]{24,}"),
    _rule("gcp_oauth_token", (), r"ya29\.[0-9A-Za-z_-]{20,}"),
    _rule("jwt", (), r"eyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]*"),
    _rule("npm_token", (), r"npm_[A-Za-z0-9]{36}" + _NA),
    _rule("pypi_token", ("pypi-Ag",), r"pypi-Ag[A-Za-z0-9_-]{50,}"),
    _rule(
        "openai_key",
        (),
        r"sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}|[A-Za-z0-9_-]{16,}T3BlbkFJ[A-Za-z0-9_-]{16,})",
    ),
    _rule("anthropic_key", (), r"sk-ant-[a-z]{2,8}[0-9]{2}-[A-Za-z0-9_-]{80,}"),
    _rule("huggingface_token", (), r"hf_[A-Za-z0-9]{30,}" + _NA),
    _rule("sendgrid_key", (), r"SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{30,64}"),
    _rule("digitalocean_token", (), r"do[por]_v1_[a-f0-9]{64}" + _NA),
    _rule("shopify_token", (), r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}" + _NA),
    _rule(
        "azure_client_secret",
        ("Q~",),
        r"(?<![A-Za-z0-9_~.-])[A-Za-z0-9_~.-]{3}[0-9]Q~[A-Za-z0-9_~.-]{31,34}(?![A-Za-z0-9_~.-])",
    ),
    _rule("telegram_bot_token", (":AA",), r"(?<![0-9])[0-9]{8,10}:AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])"),
)


# Every shaped token except a PEM block contains a run of 16+ of these characters; text
# without such a run (most prose summaries) skips the per-rule scans entirely.
_TOKEN_GATE_RE: Final = re.compile(r"[A-Za-z0-9_.~+/:=-]{16}")
# The un-anchored rules as one alternation: one search tells whether any of them can match
# (a short name or qualified name, the common case for stored names, then costs one scan
# instead of one per rule).
_TOKEN_ANY_RE: Final = re.compile("|".join(f"(?:{r.regex.pattern})" for r in _TOKEN_RULES if not r.anchors))
_TOKEN_ANCHOR_RE: Final = re.compile("|".join(re.escape(a) for r in _TOKEN_RULES for a in r.anchors))

# PEM / OpenSSH / PGP private key blocks
_PEM_BEGIN_RE: Final = re.compile(r"-----BEGIN[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----")
_PEM_END_RE: Final = re.compile(r"-----END[ A-Z0-9]{0,40}PRIVATE KEY(?: BLOCK)?-----")
# without an END line: optional headers (Proc-Type: …), then base64 lines
_PEM_BODY_RE: Final = re.compile(r"(?:[^\n]*\n(?:[A-Za-z-]+:[^\n]*\n)*)?" + _B64_LINE + r"*")
_PEM_MAX_BLOCK: Final = 16384


def _scan_private_keys(text: str, out: list[Finding]) -> None:
    pos = 0
    while (m := _PEM_BEGIN_RE.search(text, pos)) is not None:
        end = -1
        i = text.find("-----END", m.end(), m.end() + _PEM_MAX_BLOCK)
        while i >= 0:
            e = _PEM_END_RE.match(text, i)
            if e is not None:
                end = e.end()
                break
            i = text.find("-----END", i + 1, m.end() + _PEM_MAX_BLOCK)
        if end < 0:
            body = _PEM_BODY_RE.match(text, m.end())
            end = body.end() if body is not None else m.end()
        out.append(("private_key", m.start(), end))
        pos = end


def _scan_tokens(text: str, out: list[Finding]) -> None:
    if "-----BEGIN" in text:
        _scan_private_keys(text, out)
    if _TOKEN_GATE_RE.search(text) is None:
        return
    any_plain = _TOKEN_ANY_RE.search(text) is not None
    any_anchor = _TOKEN_ANCHOR_RE.search(text) is not None
    if not (any_plain or any_anchor):
        return
    for rule in _TOKEN_RULES:
        if rule.anchors:
            if not (any_anchor and any(a in text for a in rule.anchors)):
                continue
        elif not any_plain:
            continue
        has_v = "v" in rule.regex.groupindex
        for m in rule.regex.finditer(text):
            s = m.start()
            if rule.left_boundary and s > 0 and _is_word_char(text[s - 1]):
                continue
            if has_v and m.group("v") is not None:
                out.append((rule.kind, m.start("v"), m.end("v")))
            else:
                out.append((rule.kind, s, m.end()))
            if rule.kind == "aws_access_key":
                _scan_aws_secret_near(text, m.end(), out)


# A bare 40-character secret access key written next to its access key id.
_AWS_SECRET_RE: Final = re.compile(r"(?<![A-Za-z0-9/+])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_AWS_SECRET_WINDOW: Final = 200


def _scan_aws_secret_near(text: str, pos: int, out: list[Finding]) -> None:
    for m in _AWS_SECRET_RE.finditer(text, pos, pos + _AWS_SECRET_WINDOW):
        v = m.group()
        if any(c.islower() for c in v) and any(c.isupper() for c in v) and any(c.isdigit() for c in v):
            out.append(("aws_secret", m.start(), m.end()))


# --------------------------------------------------------------------------------------
# 2. Contextual secrets
# --------------------------------------------------------------------------------------

# Lower-case keyword anchors: an identifier containing one may be a secret's key.
_KEY_ANCHORS: Final = ("pass", "pwd", "pswd", "secret", "credential", "key", "token", "auth")

# The end of a (lower-cased) key name that marks a secret: keyword + optional harmless tail
# (`secretKey`, `SECRET_KEY_BASE`, `api_key_value`; not `token_type`, `password_field`,
# `password_hash`).
_KEY_END_RE: Final = re.compile(
    r"(?P<kw>passwords?|passwd|passphrase|passcode|pass|pwd|pswd"
    r"|client[_-]?secret|secret[_-]?access[_-]?key|secret[_-]?key|secret|credentials?"
    r"|private[_-]?key|signing[_-]?key|encryption[_-]?key|master[_-]?key"
    r"|api[_-]?key|apikey|access[_-]?key|app[_-]?key|license[_-]?key|account[_-]?key"
    r"|shared[_-]?access[_-]?key|token|auth)"
    r"(?P<tail>[_.-]?(?:key|key[_.-]?base|value|val|b64|base64|str|string|hex|raw"
    r"|data|text|plain|plaintext))?$"
)
_KEY_ANCHOR_RE: Final = re.compile("|".join(_KEY_ANCHORS))
_SHORT_KEYWORDS: Final = frozenset({"pass", "pwd", "pswd", "auth", "token"})
# Short password keywords are common names in code (`pass: boolean`, `allPass`): their
# values must look like a password, not like a word.
_SHORT_PASSWORD_KEYWORDS: Final = frozenset({"pass", "pwd", "pswd"})
# Keys that are never a secret's key on their own (`PWD` is the working directory)
_NOT_SECRET_KEYS: Final = frozenset({"pwd", "oldpwd"})
_KIND_BY_PREFIX: Final[tuple[tuple[str, str], ...]] = (
    ("pass", "password"),
    ("pwd", "password"),
    ("pswd", "password"),
    ("api", "generic_api_key"),
    ("access", "generic_api_key"),
    ("app", "generic_api_key"),
    ("license", "generic_api_key"),
    ("account", "azure_key"),
    ("shared", "azure_key"),
    ("token", "generic_token"),
    ("auth", "generic_token"),
)
# Keys that are secret-sounding flags or counters when their value is not random
_WEAK_KEYS: Final = frozenset({"auth", "oauth", "token", "tokens", "key"})

# After the key: optional closing quote/bracket, a separator, and the value.
_VALUE = (
    r"(?P<val>\"(?:[^\"\\\n]|\\.){0,400}\"|'(?:[^'\\\n]|\\.){0,400}'"
    r"|`[^`\n]{0,400}`|[^\s\"'`,;&(){}\[\]<>]{1,400})"
)
_ASSIGN_RE: Final = re.compile(
    r"(?P<kq>[\"'\]]{0,2})"
    r"(?P<sep>[ \t]*(?:=>|:=|==|=|:)[ \t]*|[ \t]+(?:is|was|are)[ \t]+|[ \t]+(?=[\"']))" + _VALUE
)

# The word itself in prose: "use password X", "password for the admin account: X"
_PROSE_PASSWORD_WORDS: Final = frozenset({"password", "passwords", "passwd", "passphrase", "passcode"})
# "for the staging admin account" up to the separator that introduces the value
_FOR_PHRASE_RE: Final = re.compile(
    r"[ \t]+(?:for|of|on|to|at|in)(?:[ \t]+[A-Za-z0-9_.@/+-]{1,40}){1,5}?"
    r"(?=[ \t]*(?:=|:(?!//))|[ \t]+(?:is|was)[ \t])",
    re.IGNORECASE,
)
# a value written right after the word, separated by blanks only
_PROSE_VALUE_RE: Final = re.compile(
    r"[ \t]+(?P<val>\"[^\"\n]{1,200}\"|'[^'\n]{1,200}'|`[^`\n]{1,200}`|[^\s\"'`,;(){}\[\]<>]{1,200})"
)
_VERSION_RE: Final = re.compile(r"^[vV]?[0-9]+(?:[.-][0-9A-Za-z]+)+$")
# A YAML block scalar after a key: "password: |", "secret: >-" (a tag such as !vault means
# the content is something else, encrypted or a reference, and is left alone)
_BLOCK_SCALAR_RE: Final = re.compile(r"[\"']?[ \t]*:[ \t]+[|>][1-9+-]{0,2}[ \t]*(?:#[^\n]*)?(?=\r?\n)")
_BLOCK_MAX_LINES: Final = 200
_BLOCK_MAX_CHARS: Final = 16384

_BEARER_RE: Final = re.compile(r"bearer[ \t]+([A-Za-z0-9._~+/-]{16,}=*)", re.IGNORECASE)
_BASIC_RE: Final = re.compile(r"basic[ \t]+([A-Za-z0-9+/]{8,}={0,2})(?![A-Za-z0-9+/=])", re.IGNORECASE)
_SAS_RE: Final = re.compile(r"[?&;]sig=([A-Za-z0-9%+/]{20,}(?:%3[Dd]|=){0,2})", re.IGNORECASE)
_URL_CRED_RE: Final = re.compile(
    # the password may contain an unescaped "@": the credentials end at the last "@"
    # before the host
    r"://([^\s/@:'\"`<>?#]{0,256}:[^\s/'\"`<>?#]{1,256})@"
    # whatever names the host: a name or address, a placeholder ({host}, ${HOST}, %s,
    # %(host)s, <host>, {{ host }}) or the end of a literal an expression continues
    # ("postgres://app:pw@" + host)
    r"(?=[A-Za-z0-9\[._{}$%<(+'\"`-]|$)"
)
_CLI_USER_RE: Final = re.compile(r"(?:-u|--user)[ \t=]+[\"']?([^\s:'\"@]+:[^\s'\"@]+?)[\"']?(?=\s|$)")
_DSN_RE: Final = re.compile(r"([A-Za-z0-9_.-]{1,64}:[^\s@/:'\"`]{1,128})@(?:tcp|unix)\(")

_PLACEHOLDER_RE: Final = re.compile(
    r"""^(?:
        \$\{[^}]*\}? | \$\(.*\)? | \$[A-Za-z_][A-Za-z0-9_]* | %\([^)]*\)[sdr] | %[sdr]
      | \{\{.*\}\}? | \{[A-Za-z0-9_.]*\} | <[^>]*>? | \[[^\]]*\]
      | [*xX#.•-]+ | (?:your|my|the|some|example|dummy|fake|sample|placeholder|redacted)[_-]?[A-Za-z_-]*
      | %[A-Za-z_][A-Za-z0-9_]*% | \{[A-Za-z_][A-Za-z0-9_.]*\}\S*
      | \[REDACTED:[a-z_]+\].* | null | nil | none | undefined | true | false | yes | no | on | off
      | (?:pass(?:word|wd)?|pwd|secret|token|api[_-]?key|changeit|xxx+)
    )$""",
    re.IGNORECASE | re.VERBOSE,
)
_SIGIL_REF_RE: Final = re.compile(r"^(?:[!&*][A-Za-z_][\w.-]*|@[A-Za-z_./-]+|#.*)$")
_TYPE_NAMES: Final = frozenset(
    {"str", "string", "bytes", "int", "bool", "any", "object", "optional", "none", "char",
     "text", "secretstr", "secretbytes", "securestring", "list", "dict", "number", "boolean",
     "float", "double", "long", "unknown", "never", "void", "symbol", "bigint", "buffer",
     "uint8array", "bytearray", "memoryview", "tuple", "sequence", "mapping"}
)
# a.b, a?.b (optional chaining), a!.b, a::b, a->b
_DOTTED_REF_RE: Final = re.compile(r"^[A-Za-z_$][A-Za-z0-9_$]*(?:(?:[?!]?\.|::|->)[A-Za-z_$][A-Za-z0-9_$]*)+$")
_IDENT_RE: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ENV_NAME_RE: Final = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")
_CAPWORDS_RE: Final = re.compile(r"^(?:[A-Z][a-z]+)+[0-9]?$")
_WORDY_RE: Final = re.compile(r"^[A-Za-z][a-z]*[.!?]?$")  # a prose word: "The", "must"
_PROSE_HINT_RE: Final = re.compile(
    r"[.!?,:]$|\b(?:the|a|an|your|to|for|of|is|must|and|or|with|this|that)\b", re.IGNORECASE
)
_LINE_START_CTX_RE: Final = re.compile(
    r"[ \t]*(?:(?:#+|//+|--|;+|\*|-|export|set|setx|ENV|ARG)[ \t]+)?[\"']?"
)
_WORD_RUN_RE: Final = re.compile(r"[A-Z]?[a-z]{4,}")
_WORD_PART_RE: Final = re.compile(r"[A-Z][a-z]{2,}|[a-z]{4,}")
_CONSONANT_CLUSTER_RE: Final = re.compile(r"[^aeiouy]{5,}")
_TEMPLATE_RE: Final = re.compile(r"\$\{|\{\{|#\{|\(\?")  # ${x}, {{x}}, #{x}, regex groups
_NUMBER_RE: Final = re.compile(r"^(?:0[xX][0-9a-fA-F]+|[0-9]{1,5}|[0-9]+\.[0-9]+)$")
_WORDISH_SEGMENT_RE: Final = re.compile(r"[A-Z]?[a-z]*|[A-Z]+|[0-9]+")
_SEGMENT_SPLIT_RE: Final = re.compile(r"[-_./]")
# Keys whose values are identifiers, hashes or addresses rather than secrets
_ENTROPY_SAFE_KEY_RE: Final = re.compile(
    r"(?i)(?:sha\d*|md5|hash|digest|checksum|integrity|commit|rev(?:ision)?|ref|etag|uuid"
    r"|guid|[_-]id|^id|ids|version|path|file|url|uri|href|src|dir|name|type|class|color"
    r"|colour|font|image|icon|module|import|package|pattern|regex|format|mime|example|salt"
    r"|nonce|fingerprint|thumbprint|hint|algorithm|alg|pubkey|public[_-]?key|slug|repo"
    r"|repository|checkpoint|model|dataset|branch|tag|label|title|text|message|description"
    r"|content|license|licence)[0-9]*$"
)
_ENTROPY_RE: Final = re.compile(
    r"(?P<sep>=|:)[ \t]*(?P<q>[\"'`]?)(?P<val>[A-Za-z0-9+/_-]{20,512}={0,3})(?![A-Za-z0-9+/_=.-])"
)


def _shannon(value: str) -> float:
    n = len(value)
    counts: dict[str, int] = {}
    for ch in value:
        counts[ch] = counts.get(ch, 0) + 1
    return -sum(c / n * math.log2(c / n) for c in counts.values())


def _char_classes(value: str) -> int:
    lower = upper = digit = other = 0
    for ch in value:
        if ch.islower():
            lower = 1
        elif ch.isupper():
            upper = 1
        elif ch.isdigit():
            digit = 1
        else:
            other = 1
    return lower + upper + digit + other


def _looks_random(value: str, min_len: int) -> bool:
    """A credential-like token: long enough, several character classes, no prose shape."""
    if len(value) < min_len or " " in value:
        return False
    if _DOTTED_REF_RE.match(value) or _WORDY_RE.match(value) or _CAPWORDS_RE.match(value):
        return False
    if _word_fraction(value) > 0.6:
        return False  # mostly words: ?NonExpressionParenEnd, Get-AzAccessToken
    classes = _char_classes(value)
    digits = sum(ch.isdigit() for ch in value)
    if _IDENT_RE.match(value):
        # a name (snake_case, camelCase, UPPER_CASE) unless it looks random: few words,
        # mixed case or letters with digits (hex keys, base62 tokens, Adm1nStag1ng)
        if "_" in value and _all_wordish(value):
            return False
        letters = sum(ch.isalpha() for ch in value)
        mixed = any(ch.isupper() for ch in value) and any(ch.islower() for ch in value)
        return (
            letters >= 3
            and (mixed or digits >= 2)
            and _word_fraction(value) <= 0.5
            and _shannon(value) >= 3.0
        )
    return classes >= 2 and (digits > 0 or classes >= 3)


def _word_fraction(value: str) -> float:
    """How much of ``value`` is made of pronounceable words (camelCase parts of 3+ letters
    or lowercase runs of 4+, with a vowel per 6 letters and no 5-consonant cluster): high
    for names, low for random tokens. Calibration (5,000 random base62 strings per length;
    11,779 identifiers from real Python and JavaScript): `_looks_random` with the 0.5 cut
    for identifier-shaped values rejects 5.2% / 3.0% / 1.6% / 0.2% of random strings of
    12 / 16 / 24 / 40 characters and accepts 0.5% of the identifiers."""
    total = 0
    for w in _WORD_PART_RE.findall(value):
        low = w.lower()
        vowels = sum(ch in "aeiouy" for ch in low)
        if vowels and vowels * 6 >= len(low) and not _CONSONANT_CLUSTER_RE.search(low):
            total += len(w)
    return total / max(1, len(value))


def _all_wordish(value: str) -> bool:
    return all(_WORDISH_SEGMENT_RE.fullmatch(seg) for seg in _SEGMENT_SPLIT_RE.split(value))


def _looks_like_password(value: str) -> bool:
    """For short, ambiguous keys (`pass`, `db_pwd`): a value with letters and a digit or a
    symbol (`hunter2`, `p@ss`), not a word, path, number or name."""
    if len(value) < 4 or " " in value or _DOTTED_REF_RE.match(value) or _NUMBER_RE.match(value):
        return False
    if _all_wordish(value):
        return False
    has_letter = any(ch.isalpha() for ch in value)
    has_digit = any(ch.isdigit() for ch in value)
    has_symbol = any(ch in "!@#$%^&*+=?~" for ch in value)
    return has_letter and (has_digit or has_symbol)


def _is_placeholder(value: str, quoted: bool = True) -> bool:
    """A reference or placeholder, not a secret: ``${DB_PASSWORD}``, ``<password>``,
    ``%(pw)s``, ``{{ vault_pw }}``, ``****``; unquoted also YAML tags/anchors/aliases
    (``!vault``, ``*pw``), ``@file`` and comments."""
    v = value.strip()
    if _PLACEHOLDER_RE.match(v):
        return True
    return not quoted and _SIGIL_REF_RE.match(v) is not None


_LINE_WINDOW: Final = 256  # look this far around a key for its line (keeps scans linear)


def _line_start_context(text: str, key_start: int) -> bool:
    """The key starts its line (optionally after a comment marker, `export`, `- `): a
    config/env/YAML context rather than a call argument."""
    window_start = max(0, key_start - _LINE_WINDOW)
    lo = text.rfind("\n", window_start, key_start) + 1
    if lo == 0 and window_start > 0:
        return False  # the line started long before the key
    return _LINE_START_CTX_RE.fullmatch(text, lo, key_start) is not None


def _rest_of_line_is_empty(text: str, pos: int) -> bool:
    end = text.find("\n", pos, pos + _LINE_WINDOW)
    if end < 0:
        end = min(len(text), pos + _LINE_WINDOW)
    rest = text[pos:end].strip()
    return not rest or rest.startswith(("#", "//")) or rest in {",", ";"}


def _key_kind(key: str) -> tuple[str, str] | None:
    """(kind of secret, keyword) a key name announces, or None when it is not a secret's
    key."""
    lowered = key.lower()
    if lowered.lstrip("_-.$@") in _NOT_SECRET_KEYS:
        return None
    m = _KEY_END_RE.search(lowered)
    if m is None:
        return None
    kw = m.group("kw")
    start = m.start("kw")
    if start > 0:
        before = key[start - 1]
        word_start = before in "_-.$@" or (before.islower() and key[start].isupper())
        if (kw in _SHORT_KEYWORDS or len(kw) <= 4) and not word_start:
            return None  # bypass, compass, Fingerprint
    if "aws" in lowered and "secret" in lowered:
        return "aws_secret", kw
    for prefix, kind in _KIND_BY_PREFIX:
        if kw.startswith(prefix):
            return kind, kw
    return "generic_secret", kw


def _prose_password_ok(value: str) -> bool:
    """A value written after "password" without a separator: random-looking, with a
    lower-case letter, not a name (no '_'), version or dotted reference. "password
    hashing", "password SHA-256", "password v1.2" and "password NEW_PASSWORD" stay."""
    return (
        "_" not in value
        and "/" not in value  # a path or a protocol: "passwd HTTP/1.1"
        and any(ch.islower() for ch in value)
        and not _VERSION_RE.match(value)
        and _looks_random(value, 6)
    )


def _value_of(m: re.Match[str]) -> tuple[str, bool, int]:
    """(the value without its quotes, whether it was quoted, where it starts) of a match's
    ``val`` group."""
    raw = m.group("val")
    quoted = raw[:1] in "\"'`"
    return (raw[1:-1] if quoted else raw), quoted, m.start("val") + (1 if quoted else 0)


def _prose_password(text: str, key_end: int) -> Finding | None:
    """After the bare word "password" in prose: ``password for <a few words>: X`` (or
    ``= X``, ``is X``), or ``password X`` with X random-looking."""
    fm = _FOR_PHRASE_RE.match(text, key_end)
    if fm is not None:
        m = _ASSIGN_RE.match(text, fm.end())
        if m is None:
            return None
        sep = m.group("sep").strip()
        value, quoted, v_start = _value_of(m)
        if not value or sep not in {":", "=", "is", "was"} or _is_placeholder(value, quoted):
            return None
        if _TEMPLATE_RE.search(value):
            return None
        if quoted:
            ok = len(value) >= 3 and not _DOTTED_REF_RE.match(value) and not (
                " " in value.strip() and _PROSE_HINT_RE.search(value))
            return ("password", v_start, v_start + len(value)) if ok else None
        if text[m.end("val"): m.end("val") + 1] == "(":
            return None  # a call
        value = value.rstrip(".,;!?")
        ok = (_looks_random(value, 6) if sep in {"is", "was"} else _looks_like_password(value)) and not (
            _VERSION_RE.match(value) or value.lower() in _TYPE_NAMES)
        return ("password", v_start, v_start + len(value)) if ok else None
    vm = _PROSE_VALUE_RE.match(text, key_end)
    if vm is None:
        return None
    value, quoted, v_start = _value_of(vm)
    if not quoted:
        value = value.rstrip(".,;:!?")
    if not value or _is_placeholder(value, quoted) or _TEMPLATE_RE.search(value):
        return None
    if not quoted and text[vm.end("val"): vm.end("val") + 1] in ("(", "."):
        return None  # a call or an attribute: password check_password(...)
    ok = _prose_password_ok(value) or (quoted and " " not in value and _looks_like_password(value))
    return ("password", v_start, v_start + len(value)) if ok else None


def _block_scalar(text: str, key_start: int, key_end: int, kind: str, bare_key: str) -> Finding | None:
    """``key: |`` (or ``>-`` …) followed by lines indented deeper than the key: the value
    is those lines. A weak key (``token``, ``auth``) needs one random-looking line;
    placeholders (``${DB_PASSWORD}``) are left alone."""
    bm = _BLOCK_SCALAR_RE.match(text, key_end)
    if bm is None:
        return None
    line_start = text.rfind("\n", 0, key_start) + 1
    key_col = key_start - line_start
    pos = text.find("\n", bm.end()) + 1
    if pos <= 0:
        return None
    start = end = -1
    lines: list[str] = []
    limit = min(len(text), pos + _BLOCK_MAX_CHARS)
    while pos < limit and len(lines) < _BLOCK_MAX_LINES:
        nl = text.find("\n", pos)
        line_end = len(text) if nl < 0 else nl
        line = text[pos:line_end].rstrip("\r")
        stripped = line.strip()
        if stripped:
            indent = len(line) - len(line.lstrip(" \t"))
            if indent <= key_col:
                break
            if start < 0:
                start = pos + indent
            end = pos + len(line.rstrip())
            lines.append(stripped)
        if nl < 0:
            break
        pos = nl + 1
    if start < 0 or all(_is_placeholder(ln, False) or _TEMPLATE_RE.search(ln) for ln in lines):
        return None
    if bare_key in _WEAK_KEYS and not (len(lines) == 1 and _looks_random(lines[0], 12)):
        return None
    return (kind, start, end)


def _check_assignment(text: str, key: str, key_start: int, key_end: int) -> Finding | None:
    found = _key_kind(key)
    if found is None:
        return None
    kind, keyword = found
    if text.startswith(":", key_end) or text.startswith(("\":", "':"), key_end):
        block = _block_scalar(text, key_start, key_end, kind, key.lower().lstrip("_-.$@"))
        if block is not None:
            return block
    m = _ASSIGN_RE.match(text, key_end)
    if key.lower() in _PROSE_PASSWORD_WORDS and (m is None or not m.group("sep").strip()):
        # a word of prose, not part of a path (/etc/passwd) or an expression
        before = text[key_start - 1] if key_start > 0 else " "
        return _prose_password(text, key_end) if before.isspace() or before in "(\"'`*[" else None
    if m is None:
        return None
    sep = m.group("sep").strip()
    value, quoted, v_start = _value_of(m)
    v_end = v_start + len(value)
    if not value or _is_placeholder(value, quoted) or _TEMPLATE_RE.search(value):
        return None
    if sep == "" and not key.startswith("-"):
        return None  # space-separated values only for command-line flags: --password x
    bare_key = key.lower().lstrip("_-.$@")
    if keyword in _SHORT_PASSWORD_KEYWORDS:
        if not quoted and (_DOTTED_REF_RE.match(value) or text[m.end("val") : m.end("val") + 1] == "("):
            return None
        ok = _looks_like_password(value.rstrip(".,;!?") if sep in {"is", "was", "are"} else value)
        return (kind, v_start, v_end) if ok else None
    if sep in {"is", "was", "are"}:  # prose: "the staging password is hunter2"
        ok = _looks_random(value.rstrip(".,;!?"), 6)
        if ok and value[-1:] in ".,;!?":
            v_end -= 1
        return (kind, v_start, v_end) if ok else None
    if quoted:
        if _ENV_NAME_RE.match(value) and _KEY_ANCHOR_RE.search(value.lower()):
            return None  # the name of an environment variable: "CODESYNAPSE_DB_PASSWORD"
        after = text[m.end("val") : m.end("val") + 1]
        if after and not (after.isspace() or after in ",;)]}:#+."):
            return None  # the "closing" quote opens the next literal: input("Password: ")+x
        if kind == "password":
            ok = len(value) >= 3 and not _DOTTED_REF_RE.match(value)
            if " " in value.strip():  # a passphrase is fine; a sentence about passwords is not
                ok = ok and not _PROSE_HINT_RE.search(value)
        elif bare_key in _WEAK_KEYS:
            ok = _looks_random(value, 12)
        else:
            ok = _looks_random(value, 8) or (
                len(value) >= 8
                and " " not in value
                and not _IDENT_RE.match(value)
                and not _DOTTED_REF_RE.match(value)
                and not _all_wordish(value)  # same-origin, client-secret
                and kind != "generic_token"
            ) or (_names_a_secret(key, kind, keyword) and _literal_secret(value, keyword))
        return (kind, v_start, v_end) if ok else None
    # unquoted value
    if m.end("val") < len(text) and text[m.end("val")] == "(":
        return None  # a call: get_password()
    if _DOTTED_REF_RE.match(value) or sep == "==":
        return None
    if sep == ":" and (value.lower() in _TYPE_NAMES or _CAPWORDS_RE.match(value)):
        return None  # a type annotation: password: SecretStr
    flag = key.startswith("-")  # a command-line option: --db-password x, --api-key=x
    config_line = _line_start_context(text, key_start)
    if (
        _names_a_secret(key, kind, keyword)
        and (flag or (config_line and _nothing_after(text, m.end("val"))))
        # in code, ``KEY = name`` (blanks around "=", a bare name) is a variable
        and not (sep == "=" and m.group("sep") != "=" and _IDENT_RE.match(value))
        and not (sep == ":" and _WORDY_RE.match(value) and value[:1].isupper())
        and not _NUMBER_RE.match(value)
        and _literal_secret(value, keyword)
    ):
        # by the key, not by the value's looks: a literal written as the whole value of a
        # config/env line or of an option (SECRET_KEY=devkey, secret: letmein,
        # --api-key devkey); ``key: value,`` is an object member, not a config value
        return (kind, v_start, v_end)
    if _IDENT_RE.match(value) and _KEY_ANCHOR_RE.search(value.lower()):
        return None  # a variable: password=password, self.db_password = db_pass
    if _NUMBER_RE.match(value):
        return None  # a number literal: USERNAME_PASSWORD: 0x02
    single_value = _rest_of_line_is_empty(text, m.end("val"))
    if bare_key in _WEAK_KEYS:
        ok = _looks_random(value, 12)
    elif kind == "password":
        if (config_line and (sep == "=" or single_value)) or flag:
            ok = len(value) >= 3 and not (sep == ":" and _WORDY_RE.match(value) and value[:1].isupper())
        else:
            ok = _looks_random(value, 6)
    else:
        ok = _looks_random(value, 8) or (
            config_line and single_value and len(value) >= 16 and not _IDENT_RE.match(value)
        )
    return (kind, v_start, v_end) if ok else None


# Keywords that name a secret only together with another word (``auth`` and ``token`` alone
# are flags and counters as often as secrets; ``credentials`` is also fetch()'s mode), and
# the short password keywords, which have rules of their own.
_NOT_ON_THEIR_OWN: Final = frozenset({"credential", "credentials", "pass", "pwd", "pswd", "auth"})
_PATH_RE: Final = re.compile(r"^(?:~?/|\.{1,2}/|[A-Za-z]:[\\/])|^[^\s:]*/[^\s:]*/")
_NORM_RE: Final = re.compile(r"[^a-z0-9]")


def _names_a_secret(key: str, kind: str, keyword: str) -> bool:
    """A key whose value is a secret whatever it looks like: ``SECRET_KEY``,
    ``AWS_SECRET_ACCESS_KEY``, ``client_secret``, ``api_key``, ``GITHUB_TOKEN``; not a bare
    ``token`` or ``auth``, nor ``credentials``."""
    bare = key.lower().lstrip("_-.$@")
    if kind == "password" or keyword in _NOT_ON_THEIR_OWN or bare in _WEAK_KEYS:
        return False
    return not (keyword == "token" and _NORM_RE.sub("", bare) == "token")


def _literal_secret(value: str, keyword: str) -> bool:
    """A literal value under a secret's key is the secret unless it is too short to be one,
    a file path or URL (where the secret is kept), prose, the key's own name written as a
    value (``API_KEY_HEADER: "X-Api-Key"``, ``SECRET_KEY = "secret-key"``), or, for a
    ``…token`` key, a value made of words only (a parser's token: ``"?NoLineTerminator"``)."""
    v = value.strip()
    if len(v) < 4 or _DOTTED_REF_RE.match(v) or _PATH_RE.match(v) or "://" in v or v.endswith(("...", "…")):
        return False  # ``"hf_..."``: an example cut short
    if " " in v and _PROSE_HINT_RE.search(v):
        return False
    if _all_wordish(v) and _NORM_RE.sub("", keyword.lower()) in _NORM_RE.sub("", v.lower()):
        return False
    return not (keyword == "token" and not any(ch.isdigit() for ch in v) and _word_fraction(v) > 0.6)


def _nothing_after(text: str, pos: int) -> bool:
    """Only blanks or a comment after ``pos`` on its line: the value is the line's whole
    value (``value,`` is a member of an object literal, not a config value)."""
    end = text.find("\n", pos, pos + _LINE_WINDOW)
    if end < 0:
        end = min(len(text), pos + _LINE_WINDOW)
    rest = text[pos:end].strip()
    return not rest or rest.startswith(("#", "//"))


_KEY_CHARS: Final = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")


def _scan_keys(text: str, lowered: str, out: list[Finding]) -> None:
    seen: set[int] = set()
    n = len(text)
    for anchor in _KEY_ANCHORS:
        i = lowered.find(anchor)
        while i >= 0:
            # the whole key name around the anchor
            s = i
            while s > 0 and text[s - 1] in _KEY_CHARS:
                s -= 1
            e = i + len(anchor)
            while e < n and text[e] in _KEY_CHARS:
                e += 1
            # a trailing '.', '-' ends a sentence or a flag, not the name
            while e > i + len(anchor) and text[e - 1] in ".-":
                e -= 1
            # not URL userinfo (see _URL_CRED_RE), nor the kind in a redaction marker
            if s not in seen and not text.startswith("://", s - 3) and not text.startswith("[REDACTED:", s - 10):
                seen.add(s)
                found = _check_assignment(text, text[s:e], s, e)
                if found is not None:
                    out.append(found)
            i = lowered.find(anchor, e)


def _basic_auth_ok(value: str) -> bool:
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return False
    return ":" in decoded and decoded.isprintable()


def _url_kind(text: str, colon: int) -> str:
    i = colon
    while i > 0 and (text[i - 1].isalnum() or text[i - 1] in "+.-"):
        i -= 1
    scheme = text[i:colon].lower()
    if scheme in {"http", "https", "ftp", "ftps", "ws", "wss", "git", "ssh", "svn", "sftp", "webdav"}:
        return "basic_auth_url"
    return "connection_string"


def _credential_password_ok(cred: str) -> bool:
    password = cred.split(":", 1)[1]
    return not _is_placeholder(password)


def _matches_at(regex: re.Pattern[str], text: str, lowered: str, anchor: str) -> list[re.Match[str]]:
    """Matches of ``regex`` starting where the lower-case ``anchor`` occurs (cheaper than a
    case-insensitive scan of the whole text)."""
    found = []
    i = lowered.find(anchor)
    while i >= 0:
        m = regex.match(text, i)
        if m is not None:
            found.append(m)
        i = lowered.find(anchor, i + 1)
    return found


def _scan_headers_and_urls(text: str, lowered: str, out: list[Finding]) -> None:
    for m in _matches_at(_BEARER_RE, text, lowered, "bearer"):
        v = m.group(1)
        if (any(ch.isdigit() for ch in v) or len(v) >= 32) and not _is_placeholder(v):
            out.append(("bearer_token", m.start(1), m.end(1)))
    for m in _matches_at(_BASIC_RE, text, lowered, "basic"):
        if _basic_auth_ok(m.group(1)):
            out.append(("basic_auth", m.start(1), m.end(1)))
    for anchor in ("?sig=", "&sig=", ";sig="):
        for m in _matches_at(_SAS_RE, text, lowered, anchor):
            out.append(("azure_sas_token", m.start(1), m.end(1)))
    if "://" in text:
        for m in _URL_CRED_RE.finditer(text):
            if _credential_password_ok(m.group(1)):
                out.append((_url_kind(text, m.start()), m.start(1), m.end(1)))
    for anchor in ("-u ", "--user"):
        for m in _matches_at(_CLI_USER_RE, text, lowered, anchor):
            if _credential_password_ok(m.group(1)):
                out.append(("basic_auth", m.start(1), m.end(1)))
    if "@tcp(" in text or "@unix(" in text:
        for m in _DSN_RE.finditer(text):
            if _credential_password_ok(m.group(1)):
                out.append(("connection_string", m.start(1), m.end(1)))


# --------------------------------------------------------------------------------------
# 3. High-entropy values in key/value contexts
# --------------------------------------------------------------------------------------


def _check_entropy(text: str, m: re.Match[str]) -> Finding | None:
    value = m.group("val")
    sep_at = m.start("sep")
    if m.group("sep") == ":" and text.startswith("//", sep_at + 1):
        return None  # a URL
    j = sep_at
    while j > 0 and text[j - 1] in " \t\"'`]":
        j -= 1
    i = j
    while i > 0 and text[i - 1] in _KEY_CHARS:
        i -= 1
    key = text[i:j]
    if not any(ch.isalpha() for ch in key) or _ENTROPY_SAFE_KEY_RE.search(key):
        return None
    if _IDENT_RE.match(value) and sum(ch.isdigit() for ch in value) < 3:
        return None  # long identifiers are names, not secrets
    if value.count("/") >= 2 and not value.endswith("="):
        return None  # a path
    if not (any(ch.islower() for ch in value) and any(ch.isupper() for ch in value)
            and any(ch.isdigit() for ch in value)):
        return None  # hex digests and UUID-like ids are not treated as secrets here
    if sum(len(w) for w in _WORD_RUN_RE.findall(value)) > 0.3 * len(value):
        return None  # made of words: a slug or a model name, not random
    if all(_WORDISH_SEGMENT_RE.fullmatch(seg) for seg in _SEGMENT_SPLIT_RE.split(value)):
        return None  # words, acronyms and numbers: BSD-3-Clause-Open-MPI
    if _shannon(value) < min(4.0, math.log2(len(value)) * 0.85):
        return None
    if _has_alphabet_run(value):
        return None  # "0123456789abcdefABCDEF": an alphabet, not a key
    if value.startswith("eyJ") and _is_base64_json(value):
        return None  # an encoded JSON header or claims object (JWTs are matched as such)
    return ("high_entropy_secret", m.start("val"), m.end("val"))


def _has_alphabet_run(value: str, run: int = 5) -> bool:
    n = 1
    for a, b in zip(value, value[1:]):
        n = n + 1 if ord(b) == ord(a) + 1 else 1
        if n >= run:
            return True
    return False


def _is_base64_json(value: str) -> bool:
    try:
        decoded = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        return False
    return decoded.lstrip().startswith("{")


def _scan_entropy(text: str, out: list[Finding]) -> None:
    for m in _ENTROPY_RE.finditer(text):
        found = _check_entropy(text, m)
        if found is not None:
            out.append(found)


# --------------------------------------------------------------------------------------
# 4. Extra patterns, merging, public API
# --------------------------------------------------------------------------------------


def _scan_extra(text: str, extra: Sequence[re.Pattern[str]], out: list[Finding]) -> None:
    for pattern in extra:
        has_secret_group = "secret" in pattern.groupindex
        for m in pattern.finditer(text):
            if has_secret_group and m.group("secret") is not None:
                s, e = m.span("secret")
            else:
                s, e = m.span()
            if e > s:
                out.append((CUSTOM_KIND, s, e))


# When findings overlap, the most specific kind names the merged redaction.
_CONTEXT_PRIORITY: Final = {
    "high_entropy_secret": 0,
    "generic_token": 1,
    "generic_secret": 1,
    "generic_api_key": 1,
    "password": 2,
    "bearer_token": 2,
    "basic_auth": 2,
    "aws_secret": 3,
    "azure_key": 3,
    "azure_sas_token": 3,
    "connection_string": 3,
    "basic_auth_url": 3,
    CUSTOM_KIND: 4,
}
_SHAPED_PRIORITY: Final = 5

KINDS: Final[frozenset[str]] = frozenset(
    {r.kind for r in _TOKEN_RULES} | set(_CONTEXT_PRIORITY) | {"private_key"}
)


_MARKER_RE: Final = re.compile(r"\[REDACTED:[a-z0-9_]+\]")


def _drop_markers(text: str, findings: list[Finding]) -> list[Finding]:
    """Already-redacted text is not a secret: drop findings that are only (parts of)
    markers and punctuation, so ``://[REDACTED:connection_string]@`` is not redacted
    again and redaction is idempotent."""
    markers = [m.span() for m in _MARKER_RE.finditer(text)]
    kept = []
    for kind, s, e in findings:
        outside = []
        pos = s
        for ms, me in markers:
            if me <= pos or ms >= e:
                continue
            outside.append(text[pos:ms] if ms > pos else "")
            pos = max(pos, me)
        outside.append(text[pos:e] if e > pos else "")
        if len("".join(outside).strip(" :@/=\"'`[]")) >= 3:
            kept.append((kind, s, e))
    return kept


def _merge(findings: list[Finding]) -> list[Finding]:
    if not findings:
        return []
    findings.sort(key=lambda f: (f[1], -f[2]))
    merged: list[Finding] = []
    kind, start, end = findings[0]
    for k, s, e in findings[1:]:
        if s < end:  # overlap: one redaction covering both, named by the more specific kind
            if _CONTEXT_PRIORITY.get(k, _SHAPED_PRIORITY) > _CONTEXT_PRIORITY.get(kind, _SHAPED_PRIORITY):
                kind = k
            end = max(end, e)
        else:
            merged.append((kind, start, end))
            kind, start, end = k, s, e
    merged.append((kind, start, end))
    return merged


def _lower_same_length(text: str) -> str:
    lowered = text.lower()
    if len(lowered) == len(text):
        return lowered
    # a few non-ASCII characters lower-case to two code points: keep offsets aligned
    return "".join(ch.lower() if len(ch.lower()) == 1 else ch for ch in text)


_SEPARATOR_RE: Final = re.compile(r"[\s=:'\"`]")


def find_secrets(text: str, extra: Sequence[re.Pattern[str]] = ()) -> list[Finding]:
    """Every secret in ``text`` as ``(kind, start, end)`` character offsets, sorted by
    start and non-overlapping."""
    if not text:
        return []
    out: list[Finding] = []
    _scan_tokens(text, out)
    if _SEPARATOR_RE.search(text) is not None:
        # every contextual finding needs a blank, "=", ":" or a quote between a key and
        # its value (a name or a qualified name without one holds shaped tokens only)
        lowered = _lower_same_length(text)
        _scan_keys(text, lowered, out)
        _scan_headers_and_urls(text, lowered, out)
        _scan_entropy(text, out)
    if extra:
        _scan_extra(text, extra, out)
    if out and "[REDACTED:" in text:
        out = _drop_markers(text, out)
    return _merge(out)


def redact(text: str, extra: Sequence[re.Pattern[str]] = ()) -> str:
    """``text`` with every secret replaced by ``[REDACTED:<kind>]``."""
    findings = find_secrets(text, extra)
    if not findings:
        return text
    parts: list[str] = []
    pos = 0
    for kind, start, end in findings:
        parts.append(text[pos:start])
        parts.append(redaction_marker(kind))
        pos = end
    parts.append(text[pos:])
    return "".join(parts)


def contains_secret(text: str, extra: Sequence[re.Pattern[str]] = ()) -> bool:
    return bool(find_secrets(text, extra))


def compile_patterns(patterns: Sequence[str]) -> tuple[re.Pattern[str], ...]:
    """Compile extra secret regexes (a policy's ``redact:`` list).

    Raises ``ValueError`` naming the first bad pattern: not a non-empty string, longer than
    2,000 characters, invalid syntax, or able to match the empty string.
    """
    compiled: list[re.Pattern[str]] = []
    for pattern in patterns:
        if not isinstance(pattern, str) or not pattern:
            raise ValueError(f"redact pattern {pattern!r}: must be a non-empty string")
        if len(pattern) > _MAX_CUSTOM_PATTERN_CHARS:
            raise ValueError(
                f"redact pattern {pattern[:40]!r}...: longer than {_MAX_CUSTOM_PATTERN_CHARS} characters"
            )
        try:
            rx = re.compile(pattern)
        except re.error as e:
            raise ValueError(f"redact pattern {pattern!r}: invalid regular expression: {e}") from e
        if rx.search("") is not None:
            raise ValueError(f"redact pattern {pattern!r}: matches the empty string")
        compiled.append(rx)
    return tuple(compiled)


# --------------------------------------------------------------------------------------
# 5. The gate: every string of a record before it is stored
# --------------------------------------------------------------------------------------

# Fields kept as they are: what identifies a file on disk (the index must read it again),
# digests, and the closed vocabularies the code itself writes.
VERBATIM_FIELDS: Final = frozenset({"path", "hash", "base_hash", "language", "kind", "status", "id"})
# Fields that hold a qualified name: redacted as the symbol of that name was (see ``RecordGate``).
QNAME_FIELDS: Final = frozenset({"qname", "parent", "caller", "child", "module"})

R = TypeVar("R")


class RecordGate:
    """The one gate every string passes before a store keeps it: symbol names, qualified
    names, headings, key paths, signatures, summaries, call and import text (extraction),
    entity names, aliases, types, predicates and sources (memory). Each string is redacted
    with :func:`redact` and the repository policy's patterns; ordinary names come out
    byte for byte the same.

    A qualified name is redacted the way its symbol is shown: the parent's redacted
    qualified name, then the rest, in which the symbol's own name reads as it does alone
    (a heading ``password: hunter2`` under ``notes.md`` gives the name
    ``password: [REDACTED:password]`` and the qualified name
    ``notes.md#password: [REDACTED:password]``, where the whole string alone would not
    give the context that finds it). References to a qualified name (``parent``,
    ``caller``, ``child``, ``module``) map to the same redacted name, so links between
    records hold. One gate serves one batch of records (a file's extraction, a request);
    it remembers what it redacted."""

    __slots__ = ("extra", "_qnames", "_redactor", "_texts")

    def __init__(self, extra: Sequence[re.Pattern[str]] = (), redactor: Callable[[str], str] | None = None):
        """``redactor``: what redacts one string, instead of :func:`redact` with ``extra``."""
        self.extra = tuple(extra)
        self._redactor = redactor
        self._texts: dict[str, str] = {}
        self._qnames: dict[str, str] = {}

    def text(self, s: str) -> str:
        if not s:
            return s
        out = self._texts.get(s)
        if out is None:
            out = self._texts[s] = self._redactor(s) if self._redactor is not None else redact(s, self.extra)
        return out

    def ref(self, qname: str) -> str:
        """A qualified name written in another record."""
        out = self._qnames.get(qname)
        return out if out is not None else self.text(qname)

    def qname(self, qname: str, name: str, parent: str) -> str:
        """A symbol's own qualified name (its parent's first, when it has one)."""
        out = self._qnames.get(qname)
        if out is not None:
            return out
        if parent and len(qname) > len(parent) and qname.startswith(parent):
            head, tail = self.ref(parent), qname[len(parent):]
        else:
            head, tail = "", qname
        if name and name in tail:
            shown = self.text(name)
            if shown != name:
                tail = tail.replace(name, shown)
        out = self._qnames[qname] = head + self.text(tail)
        return out

    def value(self, field: str, v: Any) -> Any:
        if isinstance(v, str):
            if field in VERBATIM_FIELDS:
                return v
            return self.ref(v) if field in QNAME_FIELDS else self.text(v)
        if isinstance(v, msgspec.Struct):
            return self.record(v)
        if isinstance(v, list):
            if v and isinstance(v[0], msgspec.Struct):
                return self.records(v)
            return [self.value(field, x) for x in v]
        if isinstance(v, tuple):
            return tuple(self.value(field, x) for x in v)
        return v

    def record(self, rec: R) -> R:
        """``rec`` (a msgspec Struct) with every string field, and the strings of nested
        records and lists, through the gate; the same object when nothing changed."""
        changes: dict[str, Any] | None = None
        for f, how in _plan(rec):
            v = getattr(rec, f)
            if how == _TEXT:
                new = self._texts.get(v) if v else v
                if new is None:
                    new = self.text(v)
            elif how == _REF:
                new = self._qnames.get(v)
                if new is None:
                    new = self.text(v)
            elif how == _OWN_QNAME:
                new = self.qname(v, getattr(rec, "name"), getattr(rec, "parent"))
            else:
                new = self.value(f, v)
            if new is not v and new != v:
                if changes is None:
                    changes = {}
                changes[f] = new
        return msgspec.structs.replace(rec, **changes) if changes else rec  # type: ignore[type-var]

    def records(self, recs: Sequence[R]) -> list[R]:
        """Records in their order, symbols redacted parents first (a parent's qualified name
        is a prefix of its children's)."""
        if not recs or not hasattr(recs[0], "qname"):
            return [self.record(r) for r in recs]
        order = sorted(range(len(recs)), key=lambda i: len(recs[i].qname))  # type: ignore[attr-defined]
        out: list[Any] = [None] * len(recs)
        for i in order:
            out[i] = self.record(recs[i])
        return out


_TEXT, _REF, _OWN_QNAME, _NESTED = range(4)
_PLANS: dict[type, tuple[tuple[str, int], ...]] = {}


def _plan(rec: Any) -> tuple[tuple[str, int], ...]:
    """How ``RecordGate.record`` treats each field of ``rec``'s type, from its annotations:
    nested records and lists first (the symbols a file's ``module`` or a call's ``caller``
    name), then strings; numbers and flags are not looked at."""
    cls = type(rec)
    plan = _PLANS.get(cls)
    if plan is None:
        hints = msgspec.structs.fields(cls)
        names = {f.name for f in hints}
        own = {"qname", "name", "parent"} <= names
        nested: list[tuple[str, int]] = []
        strings: list[tuple[str, int]] = []
        for f in hints:
            t = f.type
            while get_origin(t) is Annotated:
                t = get_args(t)[0]
            if t is str:
                if f.name in VERBATIM_FIELDS:
                    continue
                how = _OWN_QNAME if own and f.name == "qname" else _REF if f.name in QNAME_FIELDS else _TEXT
                strings.append((f.name, how))
            elif t in (int, float, bool):
                continue
            else:
                nested.append((f.name, _NESTED))
        plan = _PLANS[cls] = tuple(nested + strings)
    return plan
