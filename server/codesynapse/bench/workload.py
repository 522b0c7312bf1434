"""Versioned workload files (YAML) and the required-evidence check.

Format (``fixtures/workloads/*.yaml``)::

    workload: python-stdlib          # a name
    version: 1                       # the workload's own version: bump when a task changes
    corpus: python-stdlib            # optional: the corpus it was written for (a name or path)
    tasks:
      - id: py-card-json-raw-decode
        kind: symbol                 # symbol | callers | callees | impact | lookup | recall | no_match | stale
        tags: [rare]                 # optional labels (rare, mixed_language, tenant_collision, ...)
        request:                     # exactly what is sent over LSP
          method: codesynapse/symbolCard
          params: {selector: json.decoder.JSONDecoder.raw_decode}
        evidence:                    # what a complete answer must contain
          - json.decoder.JSONDecoder.raw_decode      # a qualified name (or any exact string value)
          - json/decoder.py:343-355                  # path:line or path:start-end
          - {text: "Expecting value"}                # a substring of some string value
          - {fact: [Alice, owns, billing]}           # a memory fact (subject, predicate, object)
          - {field: [match, exact]}                  # some object has this key with this value
        forbidden: []                # optional: items that must NOT appear (same forms)
        expect: {found: true}        # optional: top-level answer fields and their values
        setup:                       # optional: sent first, in order
          - method: codesynapse/memory/remember
            params: {...}
            actor: {tenant: intruder}     # optional: send it as another tenant / session
          - edit: {path: json/decoder.py, find: "def raw_decode(", replace: "def raw_decode2("}
        baseline: {identifiers: [raw_decode]}   # optional: what the grep-and-read agent greps

Only ``id``, ``kind``, ``request`` and ``evidence`` are required. Edits are applied to the
harness's copy of the corpus after indexing (stale entities) and undone after the task.

Evidence matching (documented in docs/RETRIEVAL_RESULTS.md):

* a name is found when some string value of the answer equals it;
* ``path:A-B`` is found when the answer has a location on that path (a ``line``, a
  ``range``, ``startLine``/``endLine``, or a ``"path:line"`` string) that intersects
  lines A–B and either spans at most 300 lines or starts inside A–B — a whole-module range
  does not count as pointing at a function in it;
* ``{text: s}`` is found when s is a substring of some string value;
* ``{fact: [s, p, o]}`` is found when some object has subject s, predicate p and object o;
* ``{field: [k, v]}`` is found when some object has key k with value v (for ``forbidden``:
  e.g. no search result marked ``match: exact``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

KINDS = ("symbol", "callers", "callees", "impact", "lookup", "recall", "no_match", "stale")
LOCATION_SPAN_MAX = 300
_LOC = re.compile(r"^(?P<path>[^\s:][^\s]*\.[A-Za-z0-9_]+):(?P<a>\d+)(?:-(?P<b>\d+))?$")


class WorkloadError(ValueError):
    pass


@dataclass(frozen=True)
class Evidence:
    kind: str  # name | location | text | fact
    value: Any
    raw: Any

    def label(self) -> str:
        if self.kind == "location":
            p, a, b = self.value
            return f"{p}:{a}" if a == b else f"{p}:{a}-{b}"
        if self.kind == "fact":
            return " ".join(self.value)
        if self.kind == "text":
            return f"text:{self.value}"
        if self.kind == "field":
            return f"{self.value[0]}={self.value[1]}"
        return str(self.value)


@dataclass
class Task:
    id: str
    kind: str
    method: str
    params: dict[str, Any]
    evidence: list[Evidence]
    forbidden: list[Evidence] = field(default_factory=list)
    expect: dict[str, Any] = field(default_factory=dict)
    setup: list[dict[str, Any]] = field(default_factory=list)
    baseline: dict[str, Any] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)
    note: str = ""

    @property
    def edits(self) -> list[dict[str, Any]]:
        return [s["edit"] for s in self.setup if "edit" in s]

    @property
    def requests(self) -> list[dict[str, Any]]:
        return [s for s in self.setup if "method" in s]


@dataclass
class Workload:
    name: str
    version: str
    corpus: str
    tasks: list[Task]
    path: str = ""


def parse_evidence(item: Any, where: str) -> Evidence:
    if isinstance(item, str):
        m = _LOC.match(item.strip())
        if m:
            a = int(m.group("a"))
            b = int(m.group("b")) if m.group("b") else a
            if b < a:
                raise WorkloadError(f"{where}: range {item!r} ends before it starts")
            return Evidence("location", (m.group("path"), a, b), item)
        if not item.strip():
            raise WorkloadError(f"{where}: empty evidence")
        return Evidence("name", item.strip(), item)
    if isinstance(item, dict) and len(item) == 1:
        (k, v), = item.items()
        if k == "text" and isinstance(v, str) and v:
            return Evidence("text", v, item)
        if k == "fact" and isinstance(v, list) and len(v) == 3 and all(isinstance(x, str) for x in v):
            return Evidence("fact", tuple(v), item)
        if k == "field" and isinstance(v, list) and len(v) == 2 and isinstance(v[0], str):
            return Evidence("field", (v[0], v[1]), item)
        if k in ("name", "qname") and isinstance(v, str) and v:
            return Evidence("name", v, item)
    raise WorkloadError(f"{where}: evidence must be a name, path:line[-line], {{text: ...}}, "
                        f"{{fact: [subject, predicate, object]}} or {{field: [key, value]}}; got {item!r}")


def _task(d: Any, i: int, seen: set[str]) -> Task:
    where = f"tasks[{i}]"
    if not isinstance(d, dict):
        raise WorkloadError(f"{where}: a task is a mapping")
    tid = d.get("id")
    if not isinstance(tid, str) or not tid:
        raise WorkloadError(f"{where}: id is required")
    where = f"task {tid}"
    if tid in seen:
        raise WorkloadError(f"{where}: duplicate id")
    seen.add(tid)
    kind = d.get("kind")
    if kind not in KINDS:
        raise WorkloadError(f"{where}: kind must be one of {', '.join(KINDS)}; got {kind!r}")
    req = d.get("request")
    if not isinstance(req, dict) or not isinstance(req.get("method"), str):
        raise WorkloadError(f"{where}: request needs a method")
    params = req.get("params", {})
    if not isinstance(params, dict):
        raise WorkloadError(f"{where}: request.params must be a mapping")
    ev = d.get("evidence", [])
    if not isinstance(ev, list):
        raise WorkloadError(f"{where}: evidence must be a list")
    fb = d.get("forbidden", []) or []
    setup = d.get("setup", []) or []
    if not isinstance(setup, list):
        raise WorkloadError(f"{where}: setup must be a list")
    for j, s in enumerate(setup):
        if not isinstance(s, dict) or not (("method" in s and isinstance(s.get("params", {}), dict))
                                           or ("edit" in s and isinstance(s["edit"], dict))):
            raise WorkloadError(f"{where}: setup[{j}] must be a request {{method, params}} or an edit")
        if "edit" in s:
            e = s["edit"]
            if not all(isinstance(e.get(k), str) for k in ("path", "find", "replace")):
                raise WorkloadError(f"{where}: setup[{j}].edit needs path, find and replace strings")
    expect = d.get("expect", {}) or {}
    if not isinstance(expect, dict):
        raise WorkloadError(f"{where}: expect must be a mapping")
    baseline = d.get("baseline", {}) or {}
    if not isinstance(baseline, dict):
        raise WorkloadError(f"{where}: baseline must be a mapping")
    return Task(id=tid, kind=kind, method=req["method"], params=params,
                evidence=[parse_evidence(x, f"{where}: evidence[{k}]") for k, x in enumerate(ev)],
                forbidden=[parse_evidence(x, f"{where}: forbidden[{k}]") for k, x in enumerate(fb)],
                expect=expect, setup=setup, baseline=baseline, tags=list(d.get("tags", []) or []),
                note=str(d.get("note", "") or ""))


def parse_workload(data: Any, path: str = "") -> Workload:
    if isinstance(data, list):
        data = {"tasks": data}
    if not isinstance(data, dict) or not isinstance(data.get("tasks"), list):
        raise WorkloadError("a workload is a mapping with a tasks list (or a bare list of tasks)")
    seen: set[str] = set()
    tasks = [_task(t, i, seen) for i, t in enumerate(data["tasks"])]
    name = str(data.get("workload") or data.get("name") or (Path(path).stem if path else "workload"))
    return Workload(name=name, version=str(data.get("version", "")), corpus=str(data.get("corpus", "") or ""),
                    tasks=tasks, path=path)


def load_workload(path: str | Path) -> Workload:
    import yaml

    with open(path, encoding="utf-8") as f:
        data = yaml.safe_load(f)
    return parse_workload(data, str(path))


# ---- evidence matching ------------------------------------------------------------------------


def _strings(obj: Any) -> Iterator[str]:
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _strings(v)


def _dicts(obj: Any) -> Iterator[dict]:
    if isinstance(obj, dict):
        yield obj
        for v in obj.values():
            yield from _dicts(v)
    elif isinstance(obj, (list, tuple)):
        for v in obj:
            yield from _dicts(v)


_PATH_LINE = re.compile(r"^(?P<path>[^\s:]+):(?P<line>\d+)$")


def locations(answer: Any) -> list[tuple[str, int, int]]:
    """Every (path, start, end) the answer points at."""
    out: list[tuple[str, int, int]] = []
    for d in _dicts(answer):
        p = d.get("path")
        if isinstance(p, str):
            rng = d.get("range")
            if isinstance(rng, list) and len(rng) == 2 and all(isinstance(x, int) for x in rng):
                out.append((p, rng[0], rng[1]))
            elif isinstance(rng, dict) and isinstance(rng.get("startLine"), int):
                out.append((p, rng["startLine"], int(rng.get("endLine", rng["startLine"]))))
            if isinstance(d.get("startLine"), int):
                out.append((p, d["startLine"], int(d.get("endLine", d["startLine"]))))
            if isinstance(d.get("line"), int):
                out.append((p, d["line"], d["line"]))
    for s in _strings(answer):
        m = _PATH_LINE.match(s)
        if m:
            n = int(m.group("line"))
            out.append((m.group("path"), n, n))
    return out


def location_matches(loc: tuple[str, int, int], ev: tuple[str, int, int]) -> bool:
    path, s, e = loc
    epath, a, b = ev
    if path.strip("/") != epath.strip("/"):
        return False
    if s > b or e < a:
        return False
    return (e - s + 1) <= LOCATION_SPAN_MAX or a <= s <= b


def found(ev: Evidence, answer: Any, strings: set[str] | None = None,
          locs: list[tuple[str, int, int]] | None = None) -> bool:
    if ev.kind == "name":
        strings = strings if strings is not None else set(_strings(answer))
        return ev.value in strings
    if ev.kind == "text":
        strings = strings if strings is not None else set(_strings(answer))
        return any(ev.value in s for s in strings)
    if ev.kind == "location":
        locs = locs if locs is not None else locations(answer)
        return any(location_matches(loc, ev.value) for loc in locs)
    if ev.kind == "fact":
        s, p, o = ev.value
        return any(d.get("subject") == s and d.get("predicate") == p and d.get("object") == o
                   for d in _dicts(answer))
    if ev.kind == "field":
        k, v = ev.value
        return any(k in d and d[k] == v for d in _dicts(answer))
    raise ValueError(ev.kind)


def check(task: Task, answer: Any) -> dict[str, Any]:
    """Which required evidence the answer holds, which forbidden items leak, whether the
    expectations hold."""
    strings = set(_strings(answer))
    locs = locations(answer)
    have = [e.label() for e in task.evidence if found(e, answer, strings, locs)]
    missing = [e.label() for e in task.evidence if not found(e, answer, strings, locs)]
    leaked = [e.label() for e in task.forbidden if found(e, answer, strings, locs)]
    unmet = []
    for k, v in task.expect.items():
        got = answer.get(k) if isinstance(answer, dict) else None
        if got != v:
            unmet.append(f"{k}: expected {v!r}, got {got!r}")
    return {"required": len(task.evidence), "found": len(have), "missing": missing, "leaked": leaked,
            "unmet": unmet, "ok": not missing and not leaked and not unmet}
