"""What the effective policy does to this repository, rule by rule (``codesynapse/policyEffects``,
``codesynapse policy effects``).

Three separate measurements, never summed with each other nor with the per-question
reductions of the ledger:

* **exclusions** — per exclusion rule (the policy's ``exclude`` globs, the default globs, the
  ``maxFileBytes`` cap): the files it keeps out of the index, their lines, bytes and
  estimated tokens (bytes/4). A directory a rule prunes counts every file below it. Each
  file is charged to the one rule that excludes it (the rule the index itself names).
* **annotations** — per annotation: the symbols whose cards carry its note (a path
  annotation, every symbol of the matching files; a symbol annotation, every symbol whose
  qualified name it matches).
* **redactions** — per ``redact:`` rule: the values it removed from what the index stores
  (symbol names, qualified names, signatures, summaries, call, import and base texts): the
  files whose text the rule matches are extracted again in memory (nothing is stored) and
  their values passed through the redaction gate (``extract/redact.py``, RecordGate) with a
  counting redactor. A value is counted once per file for each rule that changes it beyond
  the built-in secret patterns.

The measurement of the previous policy (another fingerprint) is kept in the data folder, and
the answer reports the difference rule by rule.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections import defaultdict
from typing import Any

import msgspec

log = logging.getLogger(__name__)

WALK_MAX_FILES = 500_000  # files looked at under excluded trees; beyond, the figures are lower bounds
LINES_READ_MAX = 64 << 20  # bytes read to count lines; beyond, lines are a lower bound
REEXTRACT_MAX = 2_000  # files extracted again to count redactions; beyond, a lower bound
EFFECTS_FILE = "policy-effects.json"


class PolicyEffectsParams(msgspec.Struct, kw_only=True, rename="camel", frozen=True, forbid_unknown_fields=True):
    pass


def _est(n: int) -> int:
    from codesynapse.context.budget import tokens_for

    return tokens_for(n)


class _Tally:
    __slots__ = ("bytes", "files", "lines", "lines_complete")

    def __init__(self) -> None:
        self.files = 0
        self.lines = 0
        self.bytes = 0
        self.lines_complete = True


def _rule_of(reason: str) -> tuple[str, str]:
    """(source, rule) of an exclusion reason as ``Policy.excluded`` words it."""
    for prefix, source in (("excluded by policy: ", "policy"), ("excluded by default: ", "default")):
        if reason.startswith(prefix):
            return source, reason[len(prefix):]
    return "other", reason


def exclusions(root: str, policy) -> tuple[list[dict[str, Any]], bool]:
    """Per exclusion rule, what it keeps out; and whether the walk was complete."""
    tallies: dict[tuple[str, str], _Tally] = defaultdict(_Tally)
    state = {"seen": 0, "read": 0}
    complete = True

    def charge(t: _Tally, path: str, size: int) -> None:
        t.files += 1
        t.bytes += size
        if state["read"] + size > LINES_READ_MAX:
            t.lines_complete = False
            return
        try:
            with open(path, "rb") as f:
                data = f.read()
        except OSError:
            t.lines_complete = False
            return
        state["read"] += len(data)
        t.lines += data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)

    def tree(abs_dir: str, t: _Tally) -> bool:
        stack = [abs_dir]
        while stack:
            d = stack.pop()
            try:
                entries = list(os.scandir(d))
            except OSError:
                continue
            for e in entries:
                if state["seen"] >= WALK_MAX_FILES:
                    return False
                try:
                    if e.is_dir(follow_symlinks=False):
                        stack.append(e.path)
                    elif e.is_file(follow_symlinks=False):
                        state["seen"] += 1
                        charge(t, e.path, e.stat(follow_symlinks=False).st_size)
                except OSError:
                    continue
        return True

    stack = [""]
    while stack and complete:
        rel_dir = stack.pop()
        abs_dir = os.path.join(root, rel_dir) if rel_dir else root
        try:
            entries = sorted(os.scandir(abs_dir), key=lambda e: e.name)
        except OSError:
            continue
        for e in entries:
            rel = f"{rel_dir}/{e.name}" if rel_dir else e.name
            try:
                if e.is_dir(follow_symlinks=False):
                    why = policy.excluded(rel, is_dir=True)
                    if why:
                        if not tree(e.path, tallies[_rule_of(why)]):
                            complete = False
                            break
                    else:
                        stack.append(rel)
                    continue
                if not e.is_file(follow_symlinks=False):
                    continue
                state["seen"] += 1
                if state["seen"] >= WALK_MAX_FILES:
                    complete = False
                    break
                why = policy.excluded(rel)
                size = e.stat(follow_symlinks=False).st_size
                if why:
                    charge(tallies[_rule_of(why)], e.path, size)
                elif policy.size_exceeded(size):
                    charge(tallies[("policy" if policy.max_file_bytes != _default_max() else "default",
                                    f"maxFileBytes {policy.max_file_bytes}")], e.path, size)
            except OSError:
                continue
    out = []
    for (source, rule), t in sorted(tallies.items(), key=lambda kv: (-kv[1].bytes, kv[0])):
        out.append({"rule": rule, "source": source, "files": t.files, "lines": t.lines, "bytes": t.bytes,
                    "estTokens": _est(t.bytes), **({} if t.lines_complete else {"linesComplete": False})})
    return out, complete


def _default_max() -> int:
    from codesynapse.policy.model import DEFAULT_MAX_FILE_BYTES

    return DEFAULT_MAX_FILE_BYTES


def annotations(store, policy) -> list[dict[str, Any]]:
    """Per annotation, the cards (symbols) whose note it sets."""
    from codesynapse.policy.model import Policy

    if not policy.annotations:
        return []
    singles = [Policy(annotations=(a,)) for a in policy.annotations]
    counts = [0] * len(singles)
    files: list[set[str]] = [set() for _ in singles]
    for s in store.all_symbols():
        for i, p in enumerate(singles):
            if p.annotations_for(s.path, s.qname):
                counts[i] += 1
                files[i].add(s.path)
    out = []
    for a, n, fs in zip(policy.annotations, counts, files):
        out.append({"annotation": {"path": a.path} if a.path is not None else {"symbol": a.symbol},
                    "cards": n, "files": len(fs)})
    return out


def redactions(app, policy) -> tuple[list[dict[str, Any]], bool]:
    """Per ``redact:`` rule, the stored values it removed (see the module docstring)."""
    from codesynapse.extract import extract_source
    from codesynapse.extract.redact import RecordGate, redact

    rules = list(policy.redact_patterns)
    if not rules:
        return [], True
    counts = [0] * len(rules)
    files_hit = [0] * len(rules)
    root = str(app.workspace.root)
    done = 0
    complete = True
    for f in app.store.files():
        if f.status == "skipped":
            continue
        try:
            with open(os.path.join(root, f.path), "rb") as fh:
                data = fh.read()
        except OSError:
            continue
        text = data.decode("utf-8", "replace")
        if not any(r.search(text) for r in rules):
            continue
        if done >= REEXTRACT_MAX:
            complete = False
            break
        done += 1
        here = [0] * len(rules)

        def counting(s: str, _here=here) -> str:
            out = redact(s, rules)
            if out != s:
                for i, r in enumerate(rules):
                    if redact(s, (r,)) != s:
                        _here[i] += 1
            return out

        try:
            fx = extract_source(root, f.path, data, f.language)  # built-in redaction only; kept in memory
        except Exception:  # a file that no longer extracts is left out of the count
            log.debug("policy effects: %s did not extract", f.path, exc_info=True)
            continue
        gate = RecordGate(rules, redactor=counting)
        gate.records(fx.symbols)
        gate.records(fx.calls)
        gate.records(fx.imports)
        gate.records(fx.inherits)
        gate.ref(fx.module)
        for i, n in enumerate(here):
            counts[i] += n
            files_hit[i] += 1 if n else 0
    return [{"rule": r.pattern, "values": n, "files": nf} for r, n, nf in zip(rules, counts, files_hit)], complete


def _key(kind: str, item: dict[str, Any]) -> str:
    if kind == "exclusions":
        return f"{item['source']}:{item['rule']}"
    if kind == "annotations":
        return json.dumps(item["annotation"], sort_keys=True)
    return item["rule"]


_FIELDS = {"exclusions": ("files", "lines", "bytes", "estTokens"), "annotations": ("cards", "files"),
           "redactions": ("values", "files")}


def delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """Rule by rule, after − before (a rule only one side has is added or removed)."""
    out: dict[str, Any] = {}
    for kind, fields in _FIELDS.items():
        b = {_key(kind, x): x for x in before.get(kind, [])}
        a = {_key(kind, x): x for x in after.get(kind, [])}
        rows = []
        for k in sorted(set(a) | set(b)):
            x, y = b.get(k), a.get(k)
            row: dict[str, Any] = {"rule": k, "change": "added" if x is None else "removed" if y is None else "changed"}
            for fld in fields:
                row[fld] = (y or {}).get(fld, 0) - (x or {}).get(fld, 0)
            if row["change"] != "changed" or any(row[fld] for fld in fields):
                rows.append(row)
        out[kind] = rows
    return out


def measure(app) -> dict[str, Any]:
    policy = app.policy
    t0 = time.perf_counter()
    excl, walk_complete = exclusions(str(app.workspace.root), policy)
    ann = annotations(app.store, policy)
    red, red_complete = redactions(app, policy)
    return {"fingerprint": policy.fingerprint, "measuredAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "exclusions": excl, "annotations": ann, "redactions": red,
            "complete": {"exclusions": walk_complete, "redactions": red_complete},
            "seconds": round(time.perf_counter() - t0, 3)}


def effects_answer(app) -> dict[str, Any]:
    """The policy's effects now, and the difference from the previous policy's."""
    from codesynapse.context.budget import finalize

    cur = measure(app)
    path = app.workspace.data_dir / EFFECTS_FILE
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(saved, dict):
            saved = {}
    except (OSError, ValueError):
        saved = {}
    last = saved.get("current") if isinstance(saved.get("current"), dict) else None
    prev = saved.get("previous") if isinstance(saved.get("previous"), dict) else None
    if last is not None and last.get("fingerprint") != cur["fingerprint"]:
        prev = last  # the policy changed since the last measurement: that one is now the previous
    keep = {"current": cur, "previous": prev}
    try:
        tmp = path.with_name(f"{EFFECTS_FILE}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(keep), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as e:
        log.warning("policy effects: could not keep the measurement (%s)", e)
    out = dict(cur)
    out["note"] = ("each list is its own measurement: exclusions (files kept out of the index), annotations "
                   "(cards that carry a note), redactions (stored values removed); they are not summed with "
                   "each other or with per-question reductions")
    if prev is not None and prev.get("fingerprint") != cur["fingerprint"]:
        out["previous"] = {"fingerprint": prev.get("fingerprint"), "measuredAt": prev.get("measuredAt")}
        out["delta"] = delta(prev, cur)
    return finalize(out)
