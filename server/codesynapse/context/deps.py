"""Answers about modules and findings: ``codesynapse/modules``, the findings of a card, what
a diff does to modules and to flagged code (``prContext``), and modules found by ``search``.

Each answer is budgeted like the others (context/budget.py): lists are filled in order under
``maxTokens`` and what does not fit is counted in ``omitted``.
"""

from __future__ import annotations

import os
import re
import subprocess
from typing import Annotated, Any, Literal

import msgspec

from codesynapse.context import paging
from codesynapse.context.budget import Packer, normalize_max_tokens
from codesynapse.context.models import QUERY_MAX
from codesynapse.errors import InvalidParams
from codesynapse.extract.manifests import (
    is_dependency_file,
    lockfiles_for,
    manifest_for_lockfile,
    manifest_kind,
    read_manifest,
)
from codesynapse.graph import deps
from codesynapse.graph.depmodel import FindingRow

DEFAULT_MODULES = 8_000
TOP_FINDINGS = 5
ECOSYSTEMS = ("pypi", "npm", "go", "cargo", "maven")


class ModulesParams(msgspec.Struct, kw_only=True, rename="camel", frozen=True, forbid_unknown_fields=True):
    query: Annotated[str, msgspec.Meta(max_length=QUERY_MAX)] = ""
    ecosystem: Literal["pypi", "npm", "go", "cargo", "maven"] | None = None
    limit: Annotated[int, msgspec.Meta(ge=1, le=500)] = 50
    offset: Annotated[int, msgspec.Meta(ge=0, le=1_000_000)] = 0
    cursor: str | None = None  # continues the page that gave it (context/paging.py), instead of offset
    files: Annotated[int, msgspec.Meta(ge=0, le=100)] = 5  # importing files named per module
    max_tokens: Annotated[int, msgspec.Meta(ge=-(2**53), le=2**53)] | None = None


# -- findings ---------------------------------------------------------------------------------
def finding_stale(store, f: FindingRow, hashes: dict[str, str | None]) -> bool:
    if not f.path:
        return False
    if f.path not in hashes:
        row = store.file(f.path)
        hashes[f.path] = row.hash if row is not None and row.status != "skipped" else None
    return not f.file_hash or f.file_hash != hashes[f.path]


def finding_item(store, f: FindingRow, hashes: dict[str, str | None], with_path: bool = True) -> dict[str, Any]:
    d: dict[str, Any] = {"tool": f.tool, "ruleId": f.rule_id, "level": f.level, "severity": f.severity}
    if with_path:
        d["path"] = f.path
    if f.start_line:
        d["line"] = f.start_line
    if with_path and f.symbol:
        d["symbol"] = f.symbol
    d["message"] = f.message
    if finding_stale(store, f, hashes):
        d["stale"] = True  # the file changed since the scan (absent: false)
    return d


def finding_span(s) -> tuple[str, int, int]:
    """(path, start, end) of the findings a card of ``s`` counts (a module: its whole file)."""
    return (s.path, 0, 0) if s.kind == "module" else (s.path, s.start_line, s.end_line)


def count_card_findings(store, subjects: list) -> dict[str, int] | None:
    """The findings count of each subject's card by qualified name, in one store call
    (None when the store keeps no findings)."""
    if not deps.supported(store) or not subjects:
        return None
    counts = store.count_findings_many([finding_span(s) for s in subjects])
    return {s.qname: n for s, n in zip(subjects, counts)}


def card_findings(store, card: dict[str, Any], s, top: int, count: int | None = None) -> None:
    """Add the findings inside symbol ``s`` to its card: ``counts.findings`` and, when the
    card lists relations (``top``), the most severe ``TOP_FINDINGS`` of them. ``count``: the
    count read already (``count_card_findings``)."""
    if not deps.supported(store):
        return
    _, start, end = finding_span(s)
    n = store.count_findings(s.path, start, end) if count is None else count
    if not n:
        return
    card.setdefault("counts", {})["findings"] = n
    if top:
        hashes: dict[str, str | None] = {}
        card["findings"] = [finding_item(store, f, hashes, with_path=False)
                            for f in store.findings(s.path, start, end, limit=min(top, TOP_FINDINGS))]


# -- codesynapse/modules ----------------------------------------------------------------------------
def modules_answer(svc, prm: ModulesParams) -> dict[str, Any]:
    store = svc.store
    max_tokens = normalize_max_tokens(prm.max_tokens, DEFAULT_MODULES)
    answer: dict[str, Any] = {"total": 0, "provenance": svc.provenance(["manifests", "imports"])}
    if not deps.supported(store):
        answer["hint"] = "this graph backend does not store modules yet"
        p = Packer(answer=answer, max_tokens=max_tokens, echo_budget=prm.max_tokens is not None)
        return svc.done(p)
    q = prm.query.strip()
    page_key = paging.key_of("modules", q, prm.ecosystem or "")
    if prm.cursor is not None and prm.offset:
        raise InvalidParams("cursor", "continues a page by itself: pass cursor or offset, not both")
    offset = paging.decode(svc.app, prm.cursor, page_key) if prm.cursor is not None else prm.offset
    total = store.count_modules(q, prm.ecosystem or "")
    keys = store.module_keys(q, prm.ecosystem or "", offset, prm.limit)
    answer["total"] = total
    answer["hasMore"] = offset + len(keys) < total
    reqs: dict[tuple[str, str], list] = {}
    for r in store.requirements(keys):
        reqs.setdefault((r.ecosystem, r.key), []).append(r)
    p = Packer(answer=answer, max_tokens=max_tokens, echo_budget=prm.max_tokens is not None)
    answer["modules"] = []
    # room for the cursor and the hint of a cut page, placed after the modules
    p.take({"hasMore": True, "cursor": paging.encode(svc.app, page_key, offset + len(keys)),
            "paginationHint": f"more modules: ask again with this cursor (or offset {offset + len(keys)})"})
    shown = 0
    for eco, key in keys:
        rows = reqs.get((eco, key), [])
        names, how = deps.import_names(eco, key)
        imports = store.imports_under(names) if names else []
        files = sorted({i.path for i in imports})
        item: dict[str, Any] = {"name": rows[0].name if rows else key, "ecosystem": eco,
                                "requiredBy": [_required(r) for r in rows[:20]]}
        if len(rows) > 20:
            item["requiredByOmitted"] = len(rows) - 20
        imp: dict[str, Any] = {"files": len(files), "importNames": names, "via": how}
        if files and prm.files:
            first: dict[str, Any] = {}
            for i in imports:
                first.setdefault(i.path, {"path": i.path, "line": i.line, "module": i.module})
            imp["top"] = [first[f] for f in files[:prm.files]]
        item["importedBy"] = imp
        if p.add("modules", item, "modules", "raise maxTokens or use a smaller limit"):
            shown += 1
    if answer["hasMore"] or shown < len(keys):
        answer["hasMore"] = True
        answer["cursor"] = paging.encode(svc.app, page_key, offset + shown)
        answer["paginationHint"] = f"more modules: ask again with this cursor (or offset {offset + shown})"
    notes = [{"path": m.path, "notes": m.notes} for m in store.manifests()
             if m.notes and (prm.ecosystem is None or m.ecosystem == prm.ecosystem)]
    for n in notes:
        p.add("manifestNotes", n, "manifest notes", "raise maxTokens")
    if offset == 0 and not q:
        count, top = deps.unmapped_imports(store, store.module_keys(limit=100_000), limit=10)
        if count:
            p.set("unmappedImports", {"count": count, "top": top,
                                      "hint": "imports of modules no manifest requires (or whose distribution "
                                              "is not known): left unresolved"},
                  "unmapped imports", "raise maxTokens")
    return svc.done(p)


def _required(r) -> dict[str, Any]:
    d: dict[str, Any] = {"manifest": r.manifest, "constraint": r.constraint}
    if r.resolved:
        d["resolved"] = r.resolved
    if r.scope:
        d["scope"] = r.scope
    d["range"] = [r.start_line, r.end_line]
    return d


def search_modules(store, text: str, limit: int = 5) -> list[dict[str, Any]]:
    """Modules whose name holds ``text`` (case-insensitive), for ``codesynapse/search``."""
    text = text.strip()
    if not text or not deps.supported(store) or len(text) > 200:
        return []
    keys = store.module_keys(text, "", 0, limit)
    out = []
    reqs: dict[tuple[str, str], list] = {}
    for r in store.requirements(keys):
        reqs.setdefault((r.ecosystem, r.key), []).append(r)
    for eco, key in keys:
        rows = reqs.get((eco, key), [])
        out.append({"name": rows[0].name if rows else key, "ecosystem": eco,
                    "requiredBy": sorted({r.manifest for r in rows})[:5]})
    return out


def add_search_modules(svc, p: Packer, text: str) -> None:
    for item in search_modules(svc.store, text):
        p.add("modules", item, "modules", "ask codesynapse/modules with this query")


# -- prContext --------------------------------------------------------------------------------------
def pr_dependencies(svc, p: Packer, changes: list[tuple[str, list[tuple[int, int]], str]], diff: str,
                    base: str | None, head: str | None) -> None:
    """Findings in the changed lines, and modules the diff adds, removes or changes."""
    store = svc.store
    if not deps.supported(store):
        return
    hashes: dict[str, str | None] = {}
    found = store.findings_in_ranges([(path, a, b) for path, ranges, status in changes if status != "deleted"
                                      for a, b in ranges], limit=200)
    if found:
        seen: set[int] = set()
        uniq = [f for f in found if not (f.id in seen or seen.add(f.id))]  # type: ignore[func-returns-value]
        uniq.sort(key=lambda f: (_rank(f.level), f.path, f.start_line, f.tool, f.rule_id))
        p.answer["findingCount"] = len(uniq)
        for f in uniq:
            p.add("findings", finding_item(store, f, hashes), "findings in changed code",
                  "raise maxTokens or ask the symbol's card")
    manifests = sorted({m for path, _r, _s in changes if is_dependency_file(path)
                        for m in ([path] if manifest_kind(path.rsplit("/", 1)[-1]) else
                                  [manifest_for_lockfile(path) or path])})
    if not manifests:
        return
    hunks = file_hunks(diff)
    out: dict[str, list] = {"added": [], "removed": [], "changed": []}
    notes: list[str] = []
    root = str(svc.app.workspace.root)
    for man in manifests:
        try:
            old, new = _sides(root, man, hunks, base, head)
        except _NoSide as e:
            notes.append(f"{man}: {e}")
            continue
        for kind, items in _compare(man, old, new, svc.app.policy).items():
            out[kind].extend(items)
    mods: dict[str, Any] = {}
    for kind in ("added", "removed", "changed"):
        if out[kind]:
            mods[kind] = out[kind]
    if mods or notes:
        if notes:
            mods["notes"] = notes
        p.set("modules", mods, "module changes", "raise maxTokens")


def _rank(level: str) -> int:
    return {"error": 0, "warning": 1, "note": 2}.get(level, 3)


class _NoSide(Exception):
    pass


def file_hunks(diff: str) -> dict[str, list[tuple[int, int, list[str], list[str]]]]:
    """Per new path (old path for a deletion): hunks as (old_start, new_start, old lines,
    new lines) — context lines are on both sides. A hunk ends when its header's line counts
    are used up, so a removed line that reads like a file header stays a removed line."""
    out: dict[str, list] = {}
    old_path = new_path = None
    cur = None
    left_old = left_new = 0
    for line in diff.split("\n"):
        if cur is not None and (left_old > 0 or left_new > 0):
            if line.startswith("\\"):
                continue
            tag, text = line[:1], line[1:]
            if tag in ("-", " ") and left_old > 0:
                cur[2].append(text)
                left_old -= 1
            if tag in ("+", " ") and left_new > 0:
                cur[3].append(text)
                left_new -= 1
            if tag not in ("-", "+", " "):
                cur = None  # a truncated hunk
            continue
        cur = None
        if line.startswith("diff --git "):
            old_path = new_path = None
        elif line.startswith("--- "):
            old_path = _strip_ab(line[4:])
        elif line.startswith("+++ "):
            new_path = _strip_ab(line[4:])
        else:
            m = re.match(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", line)
            if m:
                path = new_path if new_path not in (None, "/dev/null") else old_path
                if path is None:
                    continue
                cur = (int(m.group(1)), int(m.group(3)), [], [])
                left_old = int(m.group(2)) if m.group(2) is not None else 1
                left_new = int(m.group(4)) if m.group(4) is not None else 1
                out.setdefault(path, []).append(cur)
    return out


def _strip_ab(p: str) -> str:
    p = p.split("\t", 1)[0].strip()
    if p.startswith(("a/", "b/")):
        return p[2:]
    return p


def _git_show(root: str, ref: str, path: str) -> str | None:
    try:
        out = subprocess.run(["git", "-C", root, "show", f"{ref}:{path}"], capture_output=True, timeout=8,
                             stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError):
        raise _NoSide(f"git show {ref} failed") from None
    if out.returncode != 0:
        return None  # absent at that ref
    return out.stdout.decode("utf-8", "replace")


def _disk(root: str, path: str) -> str | None:
    try:
        with open(os.path.join(root, path), "rb") as f:
            return f.read().decode("utf-8", "replace")
    except OSError:
        return None


def _reverse(text: str | None, hunks: list[tuple[int, int, list[str], list[str]]], path: str) -> str | None:
    """The file before the diff, from the file after it (on disk) and the diff's hunks."""
    if text is None:
        if all(not n for _a, _b, _o, n in hunks):  # a deletion: the old lines are all in the diff
            return "\n".join(line for _a, _b, o, _n in hunks for line in o) + "\n"
        raise _NoSide("not on disk: the diff cannot be compared")
    lines = text.split("\n")
    for _a, b, old, new in sorted(hunks, key=lambda h: -h[1]):
        start = b - 1 if new else b
        if lines[start:start + len(new)] != new:
            raise _NoSide("the diff does not apply to the file as it is on disk: modules not compared")
        lines[start:start + len(new)] = old
    out = "\n".join(lines)
    return None if not out.strip() and all(not o for _a, _b, o, _n in hunks) else out


def _sides(root: str, man: str, hunks: dict, base: str | None, head: str | None):
    """(old, new) text of the manifest and of each of its lockfiles: {path: text or None}."""
    paths = [man, *lockfiles_for(man)]
    old: dict[str, str | None] = {}
    new: dict[str, str | None] = {}
    for path in paths:
        if base:
            old[path] = _git_show(root, base, path)
            new[path] = _git_show(root, head, path) if head else _disk(root, path)
        else:
            new[path] = _disk(root, path)
            old[path] = _reverse(new[path], hunks[path], path) if path in hunks else new[path]
    return old, new


def _parse(man: str, texts: dict[str, str | None]) -> dict[tuple[str, str], Any]:
    text = texts.get(man)
    if text is None:
        return {}
    mx = read_manifest(man, text, lambda p: texts.get(p))
    out = {}
    for r in mx.requirements:
        out.setdefault((r.ecosystem, r.key), r)
    return out


def _compare(man: str, old_t: dict, new_t: dict, policy=None) -> dict[str, list]:
    from codesynapse.extract.redact import redact as _redact

    extra = tuple(getattr(policy, "redact_patterns", ())) if policy is not None else ()

    def redact(s: str) -> str:
        return _redact(s, extra) if s else s

    old, new = _parse(man, old_t), _parse(man, new_t)

    def desc(r) -> dict[str, Any]:
        d: dict[str, Any] = {"name": redact(r.name), "ecosystem": r.ecosystem, "manifest": man,
                             "constraint": redact(r.constraint)}
        if r.resolved:
            d["resolved"] = redact(r.resolved)
        if r.scope:
            d["scope"] = r.scope
        return d

    out: dict[str, list] = {"added": [], "removed": [], "changed": []}
    for k in sorted(new.keys() - old.keys()):
        out["added"].append({**desc(new[k]), "line": new[k].start_line})
    for k in sorted(old.keys() - new.keys()):
        out["removed"].append(desc(old[k]))
    for k in sorted(old.keys() & new.keys()):
        a, b = old[k], new[k]
        if (a.constraint, a.resolved, a.scope) != (b.constraint, b.resolved, b.scope):
            item = {"name": redact(b.name), "ecosystem": b.ecosystem, "manifest": man, "line": b.start_line,
                    "from": {k2: redact(v) for k2, v in (("constraint", a.constraint), ("resolved", a.resolved),
                                                          ("scope", a.scope)) if v},
                    "to": {k2: redact(v) for k2, v in (("constraint", b.constraint), ("resolved", b.resolved),
                                                        ("scope", b.scope)) if v}}
            out["changed"].append(item)
    return out
