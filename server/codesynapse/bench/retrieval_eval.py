"""``codesynapse bench retrieval``: plain-English tasks on repositories the project never tuned
for, with an ablation of the retrieval legs.

The evaluation set lives in ``fixtures/workloads/plain_english/{tune,heldout,fresh}/<repo>.yaml``
(the workload format of :mod:`codesynapse.bench.workload`, plus three keys the harness reads):

* ``corpus`` — a registry corpus at a pinned version (``pypi:NAME==V``, ``npm:NAME@V``,
  ``go:MODULE@V``, ``maven:G:A:V``, ``crate:NAME@V``; see :mod:`codesynapse.bench.corpora`);
* per task ``split`` (``tune`` | ``heldout`` | ``fresh``) and ``group`` (``plain_english`` | ``identifier``);
* per task ``units``: the qualified names of the units that answer it. For a plain-English task
  unit *i* is evidence item *i* (a ``path:start-end`` location); for an identifier task every
  unit names the definition range among its location evidence.

The ``fresh`` half is a third folder of tasks on repositories of their own, written after the
tune/held-out set had been worn by tuning and never tuned on; it is run on its own
(``--half fresh``, written to ``retrieval_eval_fresh.{md,json}``), never as part of ``both``.

Before anything runs, the whole set (all three folders) is checked and the run stops loudly on
any problem:

* **split** — every task's recorded split is the folder its file sits in; for the tune and
  held-out folders it is also the one :func:`assign_splits` computes (per repository and group,
  tasks ordered by the SHA-256 of their id; the first half, rounded down, is ``tune``); the
  fresh tasks take no part in that computation;
* **leaks** — a plain-English task's text names no unit: no word of the text is the unit's name
  (``parse_header``, ``ParseHeader``, ``parseheader``), and no run of consecutive words spells
  its sub-words (``parse header``, ``Parse-Header``). A plain word that is one sub-word of a
  longer name (``header``) is fine; a one-word name (``increment``) may not appear as a word;
* **lines** — after indexing, every unit is a symbol of the index with exactly that path and
  line range, and the file's text in that range contains the unit's name.

The App's symbol vectors (``app.symbol_vectors``), when the build has them, are started as the
daemon starts them; the configurations without the dense leg run first, then the harness waits
(bounded: ``--dense-wait``) for ``status()["state"] == "ready"``, and the report says when the
dense leg was not ready.

Then every task is sent through :func:`codesynapse.methods.call_method` on an App, as the daemon
serves it, once per retrieval configuration (``app.retrieval_config``, see
:data:`ABLATIONS`; identifier tasks once, with the shipped configuration). Per half the
report gives recall@8 of evidence units (micro: units found in the first 8 cards / units),
MRR (mean over tasks of 1 / rank of the first card holding any evidence unit, 0 when none
does), tasks complete (every evidence item anywhere in the answer, :func:`bench.workload.check`:
an evidence unit named only among the candidates left out in ``omitted`` counts), tasks complete
(cards only: every evidence unit shown as one of the answer's cards, :func:`complete_in_cards`),
tokens returned, the raw-file baseline (a) (:func:`bench.baselines.baseline_a`) and the
reduction over complete tasks beside the "charged" reduction (a failed task charged its
baseline plus its answer; :func:`bench.stats.aggregate`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import re
import shutil
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from codesynapse.bench import stats
from codesynapse.bench.workload import Task, location_matches, locations, parse_workload

log = logging.getLogger(__name__)

REPO = Path(__file__).resolve().parents[3]
SET_DIR = REPO / "fixtures" / "workloads" / "plain_english"
HALVES = ("tune", "heldout")  # the split computed by assign_splits; "both" runs these two
FRESH = "fresh"  # a never-tuned half of its own, outside the computed split
GROUPS = ("plain_english", "identifier")
K = 8
DENSE_WAIT_S = 600.0
COUNTER = "cl100k_base"  # the real tokenizer the tables report; bytes/4 when it is missing

# name, RetrievalConfig flags. The chain adds one leg or stage at a time; "full" is the shipped
# default (all on, exact identifiers included).
ABLATIONS: tuple[tuple[str, dict[str, bool]], ...] = (
    ("exact only", {"exact": True, "lexical": False, "dense": False, "expand": False, "priors": False}),
    ("lexical only", {"exact": False, "lexical": True, "dense": False, "expand": False, "priors": False}),
    ("dense only", {"exact": False, "lexical": False, "dense": True, "expand": False, "priors": False}),
    ("lexical+dense (RRF)", {"exact": False, "lexical": True, "dense": True, "expand": False, "priors": False}),
    ("+ graph expansion", {"exact": False, "lexical": True, "dense": True, "expand": True, "priors": False}),
    ("+ role priors", {"exact": False, "lexical": True, "dense": True, "expand": True, "priors": True}),
    ("full (+ exact)", {"exact": True, "lexical": True, "dense": True, "expand": True, "priors": True}),
)
FULL = "full (+ exact)"
CURRENT = "current"


class EvalSetError(ValueError):
    pass


@dataclass
class EvalTask:
    task: Task
    repo: str
    corpus: str
    split: str
    group: str
    units: list[str]
    file: str

    @property
    def id(self) -> str:
        return self.task.id

    @property
    def text(self) -> str:
        return str(self.task.params.get("task", ""))

    def unit_locations(self) -> list[tuple[str, tuple[str, int, int]]]:
        """(qname, (path, start, end)) of each unit: unit i is the i-th location evidence item."""
        locs = [e.value for e in self.task.evidence if e.kind == "location"]
        return list(zip(self.units, locs))


# ---- split ------------------------------------------------------------------------------------


def split_key(task_id: str) -> str:
    return hashlib.sha256(task_id.encode("utf-8")).hexdigest()


def assign_splits(ids: Iterable[str]) -> dict[str, str]:
    """tune / heldout for the ids of one repository and group: ordered by the SHA-256 of the
    id, the first ``len // 2`` are ``tune`` and the rest ``heldout`` (an odd task goes to the
    held-out half)."""
    ordered = sorted(set(ids), key=lambda i: (split_key(i), i))
    n_tune = len(ordered) // 2
    return {i: ("tune" if k < n_tune else "heldout") for k, i in enumerate(ordered)}


# ---- leaks ------------------------------------------------------------------------------------

_SUB = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")
_WORD = re.compile(r"[A-Za-z0-9_$#]+")


def subwords(name: str) -> list[str]:
    """``parse_header`` / ``ParseHeader`` / ``URLParam`` → ``[parse, header]`` /
    ``[url, param]``; lower case."""
    return [m.group(0).lower() for m in _SUB.finditer(name)]


def unit_name(qname: str) -> str:
    """The unit's own name: the last part of a qualified name (``.``, ``::``, ``/`` or ``#``
    separated), without a leading ``#`` (a private TypeScript member)."""
    last = re.split(r"::|\.|/", qname.strip())[-1]
    return last.lstrip("#$") or qname


def leaks(text: str, qnames: Sequence[str]) -> list[str]:
    """Why ``text`` names one of the units (empty: it names none)."""
    out: list[str] = []
    words = _WORD.findall(text)
    flat: list[str] = [s for w in words for s in subwords(w)]
    for q in qnames:
        name = unit_name(q)
        subs = subwords(name)
        joined = "".join(subs)
        if not joined:
            continue
        for w in words:
            if "".join(subwords(w)) == joined:
                out.append(f"names {name!r} (the word {w!r})")
                break
        else:
            n = len(subs)
            if n >= 2:
                for i in range(len(flat) - n + 1):
                    if flat[i:i + n] == subs:
                        out.append(f"spells {name!r} as the words {' '.join(flat[i:i + n])!r}")
                        break
    return out


# ---- line ranges ------------------------------------------------------------------------------


def check_units(store, root: Path, units: Sequence[tuple[str, tuple[str, int, int]]]) -> list[str]:
    """Problems with the units of one task: each must be a symbol of the index with exactly
    that path and line range, and the file's text there must contain the unit's name."""
    problems: list[str] = []
    for qname, (path, a, b) in units:
        rows = store.symbols_by_qname(qname)
        if not rows:
            problems.append(f"{qname}: no such symbol in the index")
            continue
        if not any(r.path == path and r.start_line == a and r.end_line == b for r in rows):
            have = ", ".join(f"{r.path}:{r.start_line}-{r.end_line}" for r in rows[:5])
            problems.append(f"{qname}: not at {path}:{a}-{b} in the index (it is at {have})")
            continue
        try:
            lines = (Path(root) / path).read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError as e:
            problems.append(f"{qname}: cannot read {path}: {e}")
            continue
        if b > len(lines):
            problems.append(f"{qname}: {path} has {len(lines)} lines, the range ends at {b}")
            continue
        name = unit_name(qname)
        if name not in "\n".join(lines[a - 1:b]):
            problems.append(f"{qname}: {path}:{a}-{b} does not contain {name!r}")
    return problems


# ---- loading ----------------------------------------------------------------------------------


def load_eval_set(root: Path = SET_DIR, halves: Sequence[str] = HALVES) -> list[EvalTask]:
    """Every task of the chosen halves, checked for split and leaks (raises EvalSetError
    listing every problem)."""
    import yaml

    tasks: list[EvalTask] = []
    problems: list[str] = []
    split_checked: list[EvalTask] = []  # the tasks of the tune and held-out folders
    for half in halves:
        for f in sorted((Path(root) / half).glob("*.yaml")):
            data = yaml.safe_load(f.read_text(encoding="utf-8"))
            try:
                wl = parse_workload(data, str(f))
            except ValueError as e:
                problems.append(f"{f}: {e}")
                continue
            raw = {d["id"]: d for d in data["tasks"]}
            repo = str(data.get("repo") or f.stem)
            for t in wl.tasks:
                d = raw[t.id]
                et = EvalTask(task=t, repo=repo, corpus=wl.corpus, split=str(d.get("split", "")),
                              group=str(d.get("group", "")), units=[str(u) for u in d.get("units", []) or []],
                              file=str(f))
                if et.split != half:
                    problems.append(f"{t.id}: split {et.split!r} but the file is in {half}/")
                if et.group not in GROUPS:
                    problems.append(f"{t.id}: group must be one of {', '.join(GROUPS)}")
                if et.group == "plain_english":
                    n_locs = sum(1 for e in t.evidence if e.kind == "location")
                    if t.method != "codesynapse/minimalContext" or not et.text:
                        problems.append(f"{t.id}: a plain-English task is a minimalContext request with a task")
                    if not 1 <= len(et.units) <= 3 or n_locs != len(et.units) or len(t.evidence) != n_locs:
                        problems.append(f"{t.id}: a plain-English task has 1-3 units, each with one location "
                                        "evidence item and nothing else")
                    for why in leaks(et.text, et.units):
                        problems.append(f"{t.id}: the task text {why}")
                elif len(et.units) != sum(1 for e in t.evidence if e.kind == "location"):
                    problems.append(f"{t.id}: each location evidence item needs its unit (qualified name)")
                tasks.append(et)
                if half in HALVES:
                    split_checked.append(et)
    ids = [t.id for t in tasks]
    for dup in sorted({i for i in ids if ids.count(i) > 1}):
        problems.append(f"{dup}: duplicate id")
    if set(HALVES) <= set(halves):  # the split can only be checked on both its halves
        by: dict[tuple[str, str], list[str]] = {}
        for t in split_checked:
            by.setdefault((t.repo, t.group), []).append(t.id)
        want: dict[str, str] = {}
        for group_ids in by.values():
            want.update(assign_splits(group_ids))
        for t in split_checked:
            if want.get(t.id) != t.split:
                problems.append(f"{t.id}: recorded split {t.split!r}, computed {want.get(t.id)!r}")
    if problems:
        raise EvalSetError("the evaluation set has problems:\n  " + "\n  ".join(problems))
    return tasks


# ---- metrics ----------------------------------------------------------------------------------


def card_locations(card: Any) -> list[tuple[str, int, int]]:
    return locations(card)


def first_rank(cards: Sequence[Any], ev: tuple[str, int, int]) -> int | None:
    """1-based rank of the first card pointing at the evidence location, or None."""
    for i, c in enumerate(cards, 1):
        if any(location_matches(loc, ev) for loc in card_locations(c)):
            return i
    return None


def recall_at_k(cards: Sequence[Any], evs: Sequence[tuple[str, int, int]], k: int = K) -> tuple[int, int]:
    """(evidence units found in the first k cards, units)."""
    top = list(cards)[:k]
    return sum(1 for ev in evs if first_rank(top, ev) is not None), len(evs)


def reciprocal_rank(cards: Sequence[Any], evs: Sequence[tuple[str, int, int]]) -> float:
    """1 / rank of the first card holding any evidence unit; 0 when none does."""
    ranks = [r for r in (first_rank(cards, ev) for ev in evs) if r is not None]
    return 1.0 / min(ranks) if ranks else 0.0


def complete_in_cards(answer: Any, evs: Sequence[tuple[str, int, int]]) -> bool:
    """Every evidence location is one of the answer's cards (its path and range, or the line
    it points at): the stricter "complete" that does not count a unit named only among the
    candidates left out (``omitted``), which costs the client a second request to see."""
    cards = answer.get("cards", []) if isinstance(answer, dict) else []
    cards = [c for c in cards if isinstance(c, dict)]
    return bool(evs) and all(first_rank(cards, ev) is not None for ev in evs)


def summarize(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Aggregate task rows (each: ok, unitsFound, units, rr, tokens, baselineA; okCards when
    the answer's cards alone are checked)."""
    n = len(rows)
    found = sum(r["unitsFound"] for r in rows)
    units = sum(r["units"] for r in rows)
    flat = [{"ok": r["ok"], "a": r["baselineA"], "ret": r["tokens"]} for r in rows]
    agg = stats.aggregate(flat, "a", "ret")
    return {
        "tasks": n,
        "complete": sum(1 for r in rows if r["ok"]),
        "completePct": (sum(1 for r in rows if r["ok"]) / n * 100.0) if n else None,
        "completeCards": sum(1 for r in rows if r["ok"] and r.get("okCards")),
        "completeCardsPct": (sum(1 for r in rows if r["ok"] and r.get("okCards")) / n * 100.0) if n else None,
        "unitsFound": found,
        "units": units,
        "recallAt8": (found / units) if units else None,
        "mrr": (sum(r["rr"] for r in rows) / n) if n else None,
        "tokensReturned": sum(r["tokens"] for r in rows),
        "meanTokens": (sum(r["tokens"] for r in rows) / n) if n else None,
        "baselineA": sum(r["baselineA"] for r in rows),
        "reductionCompletePct": agg["successful"]["reductionPct"],
        "reductionChargedPct": agg["charged"]["reductionPct"],
    }


# ---- running ----------------------------------------------------------------------------------


def _config_class():
    try:
        from codesynapse.context.retrieval import RetrievalConfig
    except ImportError:
        return None
    return RetrievalConfig


def wait_dense(app, timeout: float, progress=None) -> dict[str, Any]:
    """Wait (bounded) until the App's symbol vectors are ready; the last status."""
    sv = getattr(app, "symbol_vectors", None)
    if sv is None:
        return {"state": "absent", "reason": "the App has no symbol_vectors"}
    end = time.monotonic() + timeout
    st: dict[str, Any] = {}
    said = 0.0
    while True:
        try:
            st = dict(sv.status())
        except Exception as e:  # noqa: BLE001 (a broken dense leg is a result, not a crash of the harness)
            return {"state": "error", "reason": f"{e.__class__.__name__}: {e}"}
        if st.get("state") in ("ready", "unavailable") or time.monotonic() >= end:
            return st
        if progress and time.monotonic() - said >= 30.0:
            said = time.monotonic()
            progress(f"  dense vectors: {st.get('state')} {st.get('embedded', '?')}/{st.get('total', '?')}")
        time.sleep(1.0)


def _tokens(row: dict[str, Any], counter: str, part: str) -> int:
    if counter == "est":
        return int(row[part]["estTokens"])
    return int(row[part]["tokens"].get(counter, 0))


def run_corpus(spec: str, tasks: Sequence[EvalTask], configs: Sequence[str], dense_wait: float = DENSE_WAIT_S,
               keep: bool = False, progress=None) -> dict[str, Any]:
    """Index one corpus and run its tasks under each configuration."""
    import tempfile

    from codesynapse.bench.apps import open_app
    from codesynapse.bench.corpora import cache_dir, resolve
    from codesynapse.bench.tokenizer import default_tokenizers
    from codesynapse.bench.tokens import Runner

    corpus = resolve(spec)
    # a fresh index per run, in a folder of its own (two runs at once must not share one)
    base = Path(tempfile.mkdtemp(prefix=f"retrieval-{corpus.name}-", dir=cache_dir()))
    data = base / "data"
    tok = default_tokenizers()
    counter = COUNTER if tok is not None and COUNTER in tok.names else "est"
    app = open_app(corpus.path, data, corpus.exclude, corpus.include, watch=False)
    runner = None
    sv = getattr(app, "symbol_vectors", None)
    if sv is not None and callable(getattr(sv, "start", None)):
        sv.start()  # as the daemon does: the vectors are computed in the background after the index
    try:
        t0 = time.perf_counter()
        report = app.index()
        index_s = time.perf_counter() - t0
        problems = [f"{t.id}: {p}" for t in tasks for p in check_units(app.store, corpus.path, t.unit_locations())]
        if problems:
            raise EvalSetError(f"{spec}: evidence does not match the index:\n  " + "\n  ".join(problems))
        dense: dict[str, Any] = {"state": "not needed"}

        captured: dict[str, Any] = {}

        class _Capturing(Runner):
            def _send_deadline(self, method, params, *rest, **kw):
                captured.pop("answer", None)
                ans = super()._send_deadline(method, params, *rest, **kw)
                captured["answer"] = ans
                return ans

        runner = _Capturing(app, corpus.path, tok)
        cls = _config_class()
        had = getattr(app, "retrieval_config", None)
        out_rows: dict[str, list[dict[str, Any]]] = {}
        # the configurations without the dense leg first, while the vectors are computed
        order = sorted(configs, key=lambda c: bool(ABLATION_FLAGS.get(c, {}).get("dense", c == CURRENT)))
        try:
            for cname in order:
                if dense["state"] == "not needed" and ABLATION_FLAGS.get(cname, {}).get("dense", cname == CURRENT):
                    t1 = time.perf_counter()
                    dense = wait_dense(app, dense_wait, progress)
                    dense["waitSeconds"] = round(time.perf_counter() - t1, 1)
                if cname != CURRENT:
                    app.retrieval_config = cls(**ABLATION_FLAGS[cname])
                rows = []
                for t in tasks:
                    if t.group == "identifier" and cname not in (FULL, CURRENT):
                        continue
                    r = runner.run_task(t.task)
                    ans = captured.get("answer")
                    cards = ans.get("cards", []) if isinstance(ans, dict) else []
                    evs = [loc for _q, loc in t.unit_locations()] if t.group == "plain_english" else []
                    got, n = recall_at_k(cards, evs) if evs else (0, 0)
                    rows.append({
                        "id": t.id, "repo": t.repo, "split": t.split, "group": t.group, "ok": bool(r["ok"]),
                        "okCards": bool(r["ok"]) and complete_in_cards(ans, evs) if evs else None,
                        "error": r.get("error"), "missing": r["evidence"]["missing"],
                        "unitsFound": got, "units": n, "rr": reciprocal_rank(cards, evs) if evs else 0.0,
                        "cards": [c.get("qualifiedName") for c in cards if isinstance(c, dict)],
                        "tokens": _tokens(r, counter, "response"), "baselineA": _tokens(r, counter, "a"),
                        "latencyMs": r.get("latencyMs"),
                    })
                out_rows[cname] = rows
                if progress:
                    pe = [x for x in rows if x["group"] == "plain_english"]
                    progress(f"  {corpus.name} [{cname}]: plain English {sum(x['ok'] for x in pe)}/{len(pe)} complete")
        finally:
            if cls is not None:
                app.retrieval_config = had if had is not None else cls()
        out_rows = {c: out_rows[c] for c in configs if c in out_rows}
        status = app.status()
        return {"corpus": {**corpus.describe(), "spec": spec, "files": status.get("files"),
                           "symbols": status.get("symbols")},
                "indexSeconds": round(index_s, 2), "indexedFiles": report.files, "dense": dense,
                "counter": counter, "rows": out_rows}
    finally:
        if runner is not None:
            runner.close()
        app.close()
        if not keep:
            shutil.rmtree(base, ignore_errors=True)


ABLATION_FLAGS = dict(ABLATIONS)


def run_eval(half: str = "both", repos: Sequence[str] | None = None, dense_wait: float = DENSE_WAIT_S,
             keep: bool = False, progress=None, root: Path = SET_DIR) -> dict[str, Any]:
    halves = HALVES if half == "both" else (half,)
    tasks = load_eval_set(root, HALVES + (FRESH,))  # checked as a whole; run the chosen halves
    tasks = [t for t in tasks if t.split in halves and (not repos or t.repo in repos)]
    cls = _config_class()
    configs = [n for n, _f in ABLATIONS] if cls is not None else [CURRENT]
    notes = []
    if cls is None:
        notes.append("codesynapse.context.retrieval.RetrievalConfig is not in this build: only the current "
                     "retrieval ran (no ablation).")
    by_corpus: dict[str, list[EvalTask]] = {}
    for t in tasks:
        by_corpus.setdefault(t.corpus, []).append(t)
    corpora = []
    for spec, ts in by_corpus.items():
        if progress:
            progress(f"retrieval: {spec} ({len(ts)} tasks)")
        corpora.append(run_corpus(spec, ts, configs, dense_wait, keep, progress))
    from codesynapse.bench.machine import machine_info

    return {"halves": list(halves), "configs": configs, "notes": notes, "machine": machine_info(),
            "k": K, "corpora": corpora, "summary": _summary(corpora, configs, halves)}


def _summary(corpora: list[dict[str, Any]], configs: Sequence[str], halves: Sequence[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for half in halves:
        h: dict[str, Any] = {}
        for cname in configs:
            rows = [r for c in corpora for r in c["rows"].get(cname, []) if r["split"] == half]
            h[cname] = {"plain_english": summarize([r for r in rows if r["group"] == "plain_english"]),
                        "perRepo": {repo: summarize([r for r in rows if r["group"] == "plain_english"
                                                     and r["repo"] == repo])
                                    for repo in sorted({r["repo"] for r in rows})}}
            ident = [r for r in rows if r["group"] == "identifier"]
            if ident:
                h[cname]["identifier"] = summarize(ident)
        out[half] = h
    return out


# ---- report -----------------------------------------------------------------------------------


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.1f}%"


def _f(v: float | None, d: int = 3) -> str:
    return "n/a" if v is None else f"{v:.{d}f}"


def markdown(res: dict[str, Any]) -> str:
    from codesynapse.bench.machine import machine_line

    lines = ["## Plain-English retrieval: ablation on repositories never tuned for", "",
             f"* **Machine:** {machine_line(res['machine'])}",
             ("* **Method:** `codesynapse bench retrieval` → `codesynapse.bench.retrieval_eval` (see its docstring): "
             "every task sent through `codesynapse.methods.call_method` (minimalContext, default budget 1,500 tokens) "
             "once per `app.retrieval_config`; recall@8 = evidence units in the first 8 cards / units; MRR = mean "
             "1/rank of the first card holding an evidence unit; complete = every evidence item anywhere in the answer "
             "(a unit named only among the candidates left out in `omitted` counts); complete (cards only) = every "
             "evidence unit shown as one of the answer's cards; "
             "tokens = the JSON-RPC response; baseline (a) = raw files (bench/baselines.py); charged reduction = a "
             "failed task charged its baseline plus its answer."),
             "* **Corpora:** " + "; ".join(
                 f"{c['corpus']['version']} ({c['corpus'].get('files')} files, {c['corpus'].get('symbols')} symbols, "
                 f"dense: {c['dense'].get('state')})" for c in res["corpora"]),
             ]
    lines += [f"* {n}" for n in res.get("notes", [])]
    not_ready = sorted({c["dense"].get("state") for c in res["corpora"]} - {"ready", "not needed"})
    if not_ready and any(ABLATION_FLAGS.get(c, {}).get("dense") for c in res["configs"]):
        lines.append(f"* **The dense leg was not ready** (state: {', '.join(map(str, not_ready))}): the rows that "
                     "ask for it ran without it (\"dense only\" then has no leg at all).")
    counter = res["corpora"][0]["counter"] if res["corpora"] else "est"
    for half in res["halves"]:
        lines += ["", f"### {half} half — plain-English tasks", "",
                  (f"| configuration | tasks complete | complete (cards only) | recall@8 | MRR | "
                   f"tokens returned ({counter}) | baseline (a) tokens | reduction (complete) | reduction (charged) |"),
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for cname in res["configs"]:
            s = res["summary"][half][cname]["plain_english"]
            lines.append(f"| {cname} | {s['complete']}/{s['tasks']} ({_pct(s['completePct'])}) | "
                         f"{s['completeCards']}/{s['tasks']} ({_pct(s['completeCardsPct'])}) | "
                         f"{_f(s['recallAt8'])} | {_f(s['mrr'])} | {s['tokensReturned']:,} | {s['baselineA']:,} | "
                         f"{_pct(s['reductionCompletePct'])} | {_pct(s['reductionChargedPct'])} |")
        final = FULL if FULL in res["configs"] else CURRENT
        lines += ["", f"Per repository ({final}):", "",
                  "| repository | complete | complete (cards only) | recall@8 | MRR | identifier tasks complete |",
                  "|---|---:|---:|---:|---:|---:|"]
        per = res["summary"][half][final]["perRepo"]
        for c in res["corpora"]:
            repo_rows = [r for r in c["rows"].get(final, []) if r["split"] == half]
            repos = sorted({r["repo"] for r in repo_rows})
            for repo in repos:
                s = per.get(repo)
                ident = [r for r in repo_rows if r["repo"] == repo and r["group"] == "identifier"]
                if s:
                    lines.append(f"| {repo} | {s['complete']}/{s['tasks']} | {s['completeCards']}/{s['tasks']} | "
                                 f"{_f(s['recallAt8'])} | {_f(s['mrr'])} | "
                                 f"{sum(r['ok'] for r in ident)}/{len(ident)} |")
        ident = res["summary"][half][final].get("identifier")
        if ident:
            lines += ["", (f"Identifier tasks ({final}): {ident['complete']}/{ident['tasks']} complete "
                          f"({_pct(ident['completePct'])}); reduction {_pct(ident['reductionCompletePct'])} over "
                          f"complete tasks, {_pct(ident['reductionChargedPct'])} charged.")]
    return "\n".join(lines) + "\n"


UNTUNED = ("heldout", FRESH)


def drop_untuned_answers(res: dict[str, Any]) -> None:
    """What was answered for a held-out or fresh task (its cards, the evidence it missed) is not
    written out to tune on; the tune rows keep theirs."""
    for c in res["corpora"]:
        for rows in c["rows"].values():
            for r in rows:
                if r["split"] in UNTUNED:
                    r.pop("cards", None)
                    r.pop("missing", None)


def run_retrieval_cli(args) -> int:
    from codesynapse.bench.report import say

    half = getattr(args, "half", None) or "both"
    out = Path(getattr(args, "out", None) or "docs")
    repos = [r for r in (getattr(args, "repo", None) or [])]
    try:
        res = run_eval(half, repos or None, float(getattr(args, "dense_wait", None) or DENSE_WAIT_S),
                       progress=say)
    except EvalSetError as e:
        say(str(e))
        return 2
    out.mkdir(parents=True, exist_ok=True)
    drop_untuned_answers(res)
    md = markdown(res)
    suffix = "" if half == "both" else f"_{half}"
    (out / f"retrieval_eval{suffix}.md").write_text(md, encoding="utf-8")
    (out / f"retrieval_eval{suffix}.json").write_text(json.dumps(res, indent=1, default=str), encoding="utf-8")
    say(md)
    say(f"wrote {out / f'retrieval_eval{suffix}.md'} and {out / f'retrieval_eval{suffix}.json'}")
    return 0


__all__ = ["ABLATIONS", "EvalTask", "assign_splits", "drop_untuned_answers", "check_units", "complete_in_cards", "first_rank", "leaks", "load_eval_set",
           "markdown", "recall_at_k", "reciprocal_rank", "run_eval", "subwords", "summarize", "unit_name",
           ]
