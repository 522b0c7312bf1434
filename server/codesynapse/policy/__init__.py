"""The repository policy, ``.codesynapse.yaml``: which files are indexed, in which language,
what extra context is attached to paths and symbols, and which extra secrets to redact.

A policy can only narrow or annotate what is indexed; it has no say over the request scope
(tenant, graph, namespace, session). See ``docs/POLICY.md`` for the file format.

Public API::

    policy, diagnostics = load_policy(root, previous)      # or parse_policy(text, previous)
    policy.excluded("src/gen/a_pb2.py")                    # → "excluded by default: *_pb2.py"
    policy.excluded("node_modules", is_dir=True)           # → prune the whole tree
    policy.language_override("scripts/deploy")             # → "python" | None
    policy.annotations_for("src/payments/api.py", "payments.api.charge")
    policy.redact_patterns                                 # compiled extra secret regexes
    policy.max_file_bytes, policy.fingerprint
"""

from codesynapse.policy.globs import GlobError
from codesynapse.policy.model import (
    DEFAULT_EXCLUDES,
    DEFAULT_MAX_FILE_BYTES,
    FINGERPRINT_SCHEMA,
    POLICY_VERSION,
    Annotation,
    LanguageOverride,
    Policy,
    PolicyDiagnostic,
    default_policy,
)
from codesynapse.policy.parse import POLICY_FILENAME, load_policy, parse_policy

__all__ = [
    "DEFAULT_EXCLUDES",
    "DEFAULT_MAX_FILE_BYTES",
    "FINGERPRINT_SCHEMA",
    "POLICY_FILENAME",
    "POLICY_VERSION",
    "Annotation",
    "GlobError",
    "LanguageOverride",
    "Policy",
    "PolicyDiagnostic",
    "default_policy",
    "load_policy",
    "parse_policy",
]
