"""prContext: the symbols a diff changes, their callers and tests, and its dependency news."""

from __future__ import annotations

import re
from typing import Any

from codesynapse.context.budget import Deadline, Packer, normalize_max_tokens
from codesynapse.context.deps import pr_dependencies
from codesynapse.context.models import DIFF_MAX, PrContextParams, check_len
from codesynapse.context.reader import (
    DEFAULT_CONTEXT,
    ContextReader,
    production_first,
    with_resolution,
)
from codesynapse.errors import InvalidParams
from codesynapse.graph.model import SymbolRow


class PrContextAnswers:
    """The prContext answer."""

    def __init__(self, reader: ContextReader):
        self.r = reader

    def pr_context(self, prm: PrContextParams) -> dict[str, Any]:
        if prm.diff is not None:
            check_len("diff", prm.diff, DIFF_MAX)
        dl = Deadline()
        max_tokens = normalize_max_tokens(prm.max_tokens, DEFAULT_CONTEXT)
        diff = prm.diff
        if diff is None:
            if not prm.base:
                raise InvalidParams("diff", "give a unified diff or base (and optionally head) refs")
            diff = self._git_diff(prm.base, prm.head)
        changes = parse_unified_diff(diff)
        if len(changes) > 1000:
            raise InvalidParams("diff", f"touches {len(changes)} files; the limit is 1000")
        store = self.r.store
        changed: list[tuple[SymbolRow, str]] = []
        files_out = []
        in_files = store.symbols_in_files(path for path, _, status in changes if status != "deleted")
        for path, ranges, status in changes:
            dl.check()
            files_out.append({"path": path, "status": status, "hunks": len(ranges)})
            if status == "deleted":
                continue
            for s in in_files.get(path, []):
                if s.kind == "module":
                    continue
                if any(a <= s.end_line and s.start_line <= b for a, b in ranges):
                    changed.append((s, status))
        # keep innermost symbols only when a container also matched? keep both; containers first
        answer: dict[str, Any] = {"files": files_out[:100], "maxTokens": max_tokens,
                                  "provenance": self.r.provenance(["diff", "graph"])}
        p = Packer(answer=answer, max_tokens=max_tokens, echo_budget=prm.max_tokens is not None)
        if len(files_out) > 100:
            p.omit("files", len(files_out) - 100, "the file list is capped at 100")
        answer["changed"] = []
        checked = 0
        omitted_callers = 0
        # every changed symbol's callers, counts and caller units in a few batch reads
        qs = [s.qname for s, _ in changed]
        counts, _, unresolved_of = store.relation_counts(qs, (s.name for s, _ in changed))
        callers_of = {q: production_first(rows)[:25] for q, rows in store.callers_many(qs, limit=100).items()}
        units = store.symbols_by_qnames({c.caller for rows in callers_of.values() for c in rows})
        for s, status in changed:
            dl.check()
            n_callers = counts.get(s.qname, 0)
            callers = callers_of.get(s.qname, [])
            checked += len(callers)
            omitted_callers += max(0, n_callers - len(callers))
            tests = [c.caller for c in callers if any(r.is_test or r.kind == "test"
                                                      for r in units.get(c.caller, []))]
            item = {"qualifiedName": s.qname, "kind": s.kind, "path": s.path, "range": [s.start_line, s.end_line],
                    "signature": s.signature,
                    "callers": [with_resolution({"qualifiedName": c.caller, "path": c.path, "line": c.line},
                                                c.resolution, c.confidence) for c in callers[:10]],
                    "callerCount": n_callers}
            # no tests and no unresolved candidates are left out (absent = none, 0)
            if tests:
                item["tests"] = sorted(set(tests))[:10]
            unresolved = unresolved_of.get(s.name, 0)
            if unresolved:
                item["unresolvedCandidates"] = unresolved
            p.add("changed", item, "changed symbols", "raise maxTokens or split the diff")
        pr_dependencies(self.r, p, changes, diff, prm.base, prm.head)  # findings, modules (context/deps.py)
        answer["publicCallers"] = {"checked": checked}
        if omitted_callers:  # absent: 0
            answer["publicCallers"]["omitted"] = omitted_callers
        return self.r.done(p)
    def _git_diff(self, base: str, head: str | None) -> str:
        import subprocess

        for name, ref in (("base", base), ("head", head)):
            if ref is not None and not re.fullmatch(r"[A-Za-z0-9_./@^~{}-]{1,256}", ref) or (ref or "").startswith("-"):
                raise InvalidParams(name, "is not a valid git ref")
        args = ["git", "-C", str(self.r.app.workspace.root), "diff", "--no-color", "--unified=0", base]
        if head:
            args.append(head)
        try:
            out = subprocess.run(args, capture_output=True, timeout=8, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.SubprocessError) as e:
            raise InvalidParams("base", f"git diff failed ({e.__class__.__name__})") from e
        if out.returncode != 0:
            raise InvalidParams("base", "git diff failed: " + out.stderr.decode("utf-8", "replace")[:200])
        if len(out.stdout) > DIFF_MAX:
            raise InvalidParams("diff", f"the diff between the refs is over {DIFF_MAX} bytes")
        return out.stdout.decode("utf-8", "replace")


_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def parse_unified_diff(diff: str) -> list[tuple[str, list[tuple[int, int]], str]]:
    """[(path, [(start, end) new-side line ranges], status)] for each file in a unified diff."""
    out: list[tuple[str, list[tuple[int, int]], str]] = []
    cur: tuple[str, list[tuple[int, int]], str] | None = None
    old_path = ""
    for line in diff.splitlines():
        if line.startswith("--- "):
            old_path = line[4:].strip().split("\t")[0]
            continue
        if line.startswith("+++ "):
            new = line[4:].strip().split("\t")[0]
            status = "modified"
            if new == "/dev/null":
                new, status = old_path, "deleted"
            elif old_path == "/dev/null":
                status = "added"
            path = re.sub(r"^[ab]/", "", new)
            cur = (path, [], status)
            out.append(cur)
            continue
        m = _HUNK.match(line)
        if m and cur is not None:
            start = int(m.group(3))
            count = int(m.group(4)) if m.group(4) is not None else 1
            if cur[2] == "deleted":
                start = int(m.group(1))
                count = int(m.group(2)) if m.group(2) is not None else 1
            cur[1].append((start, start + max(count, 1) - 1))
    return out
