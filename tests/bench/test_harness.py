"""The benchmark harness's arithmetic and evidence rules, with written-out numbers, and a
smoke run of `codesynapse bench tokens` over fixtures/python_repo. No timing is asserted."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from codesynapse.bench import stats
from codesynapse.bench.workload import WorkloadError, check, location_matches, parse_workload

REPO = Path(__file__).resolve().parents[2]


# ---- estimator and reduction ---------------------------------------------------------------------


def test_bytes_over_four_estimator_rounds_up():
    assert stats.est_tokens(0) == 0
    assert stats.est_tokens(1) == 1
    assert stats.est_tokens(4) == 1
    assert stats.est_tokens(5) == 2
    assert stats.est_tokens(4000) == 1000
    assert stats.est_tokens(4001) == 1001
    with pytest.raises(ValueError):
        stats.est_tokens(-1)


def test_reduction_percent():
    assert stats.reduction_pct(20_000, 2_000) == 90.0  # the seed's illustrative arithmetic
    assert stats.reduction_pct(161_527, 3_387) == pytest.approx(97.90313693685884)  # the seed's Go figure
    assert stats.reduction_pct(100, 100) == 0.0
    assert stats.reduction_pct(100, 150) == -50.0  # a bigger answer is a negative saving, shown as such


def test_reduction_is_not_applicable_when_raw_is_zero():
    assert stats.reduction_pct(0, 0) is None
    assert stats.reduction_pct(0, 226) is None
    assert stats.fmt_pct(None) == "not applicable"
    assert stats.fmt_pct(97.90313693685884, 2) == "97.90%"


# ---- aggregates ----------------------------------------------------------------------------------

ROWS = [
    {"id": "t1", "ok": True, "raw": 1000, "ret": 10},
    {"id": "t2", "ok": True, "raw": 3000, "ret": 30},
    {"id": "t3", "ok": False, "raw": 2000, "ret": 5},  # missed evidence: failed, not a saving
    {"id": "t4", "ok": True, "raw": 0, "ret": 40},  # no-match: not applicable, its answer still costs
]


def test_aggregate_from_summed_counts_with_failed_and_not_applicable_tasks():
    agg = stats.aggregate(ROWS, "raw", "ret")
    assert agg["tasks"] == 4
    assert agg["succeeded"] == 3
    assert agg["failed"] == 1
    assert agg["notApplicable"] == 1
    # successful: (1000 + 3000 + 0) raw, (10 + 30 + 40) returned -> (4000 - 80) / 4000
    assert agg["successful"] == {"raw": 4000, "returned": 80, "reductionPct": 98.0}
    # charged: every task; t3 pays its answer and then its raw context: 10 + 30 + 40 + (2000 + 5)
    assert agg["charged"] == {"raw": 6000, "returned": 2085, "reductionPct": 65.25}


def test_a_failed_task_never_improves_the_aggregate():
    good = [{"ok": True, "raw": 1000, "ret": 100}]
    # t2 would be a 99.9% "saving" if it counted; failed, it must not lift the figure
    with_failed = good + [{"ok": False, "raw": 100_000, "ret": 100}]
    assert stats.aggregate(good, "raw", "ret")["successful"]["reductionPct"] == 90.0
    assert stats.aggregate(with_failed, "raw", "ret")["successful"]["reductionPct"] == 90.0
    # charged: raw 101,000; returned 100 + (100,000 + 100) = 100,200 -> 800 / 101,000
    assert stats.aggregate(with_failed, "raw", "ret")["charged"]["reductionPct"] == pytest.approx(0.7920792079)


def test_aggregate_is_not_an_average_of_ratios():
    rows = [{"ok": True, "raw": 100, "ret": 50}, {"ok": True, "raw": 10_000, "ret": 100}]
    # per task 50% and 99%: their average would be 74.5%; summed counts give 9,950 / 10,100
    agg = stats.aggregate(rows, "raw", "ret")
    assert agg["successful"]["raw"] == 10_100
    assert agg["successful"]["returned"] == 150
    assert agg["successful"]["reductionPct"] == pytest.approx(98.51485148514851)
    assert stats.median_reduction(rows, "raw", "ret") == 74.5


def test_aggregate_of_nothing_is_not_applicable():
    agg = stats.aggregate([], "raw", "ret")
    assert agg["successful"]["reductionPct"] is None
    assert agg["charged"]["reductionPct"] is None
    assert stats.median_reduction([{"ok": True, "raw": 0, "ret": 9}], "raw", "ret") is None


def test_coverage():
    assert stats.coverage(3, 4) == 75.0
    assert stats.coverage(16, 16) == 100.0
    assert stats.coverage(0, 0) is None


# ---- percentiles ---------------------------------------------------------------------------------


def test_nearest_rank_percentiles():
    v = [50, 15, 40, 20, 35]  # sorted: 15 20 35 40 50
    assert stats.percentile(v, 20) == 15  # rank ceil(1.0) = 1
    assert stats.percentile(v, 40) == 20  # rank 2
    assert stats.percentile(v, 50) == 35  # rank ceil(2.5) = 3
    assert stats.percentile(v, 95) == 50  # rank ceil(4.75) = 5
    assert stats.percentile(v, 99) == 50
    assert stats.percentile(v, 100) == 50
    hundred = list(range(1, 101))
    assert stats.percentile(hundred, 50) == 50
    assert stats.percentile(hundred, 95) == 95
    assert stats.percentile(hundred, 99) == 99
    assert stats.percentile([7.5], 99) == 7.5
    assert stats.percentile([], 50) is None
    with pytest.raises(ValueError):
        stats.percentile(v, 0)


def test_latency_summary():
    s = stats.latency_summary([4.0, 1.0, 3.0, 2.0])
    assert s == {"n": 4, "p50": 2.0, "p95": 4.0, "p99": 4.0, "max": 4.0, "mean": 2.5}
    assert stats.latency_summary([])["p95"] is None


# ---- workload format and evidence rules ----------------------------------------------------------

TASK = {
    "id": "t",
    "kind": "callers",
    "request": {"method": "codesynapse/callGraph", "params": {"selector": "m.f", "direction": "callers"}},
    "evidence": ["m.g", "m.py:10-12", "n.py:40", {"text": "Expecting value"}],
    "forbidden": [{"fact": ["Cart", "owned_by", "mallory"]}],
    "expect": {"found": True},
}


def _task(**over):
    d = json.loads(json.dumps(TASK))
    d.update(over)
    return parse_workload({"workload": "w", "version": 3, "tasks": [d]}).tasks[0]


def test_evidence_all_found():
    answer = {"found": True,
              "callers": {"nodes": [{"qualifiedName": "m.g", "path": "m.py", "range": [9, 20]}],
                          "edges": [{"from": "m.g", "to": "m.f", "path": "n.py", "line": 40}]},
              "hint": "raise ValueError('Expecting value: line 1')"}
    r = check(_task(), answer)
    assert r == {"required": 4, "found": 4, "missing": [], "leaked": [], "unmet": [], "ok": True}


def test_missing_evidence_leaks_and_unmet_expectations_fail_the_task():
    answer = {"found": False, "callers": [{"qualifiedName": "m.gg", "path": "m.py", "line": 13}],
              "facts": [{"subject": "Cart", "predicate": "owned_by", "object": "mallory"}]}
    r = check(_task(), answer)
    assert r["ok"] is False
    assert r["found"] == 0
    assert r["missing"] == ["m.g", "m.py:10-12", "n.py:40", "text:Expecting value"]
    assert r["leaked"] == ["Cart owned_by mallory"]
    assert r["unmet"] == ["found: expected True, got False"]


def test_location_rule():
    ev = ("m.py", 100, 110)
    assert location_matches(("m.py", 100, 110), ev)
    assert location_matches(("m.py", 105, 105), ev)  # a call site inside
    assert location_matches(("m.py", 90, 389), ev)  # 300 lines, intersecting
    assert not location_matches(("m.py", 90, 390), ev)  # 301 lines starting before: a module range
    assert location_matches(("m.py", 100, 2000), ev)  # a long class that starts at the evidence
    assert not location_matches(("m.py", 111, 120), ev)
    assert not location_matches(("x/m.py", 100, 110), ev)


def test_workload_validation():
    with pytest.raises(WorkloadError, match="kind must be one of"):
        _task(kind="vibes")
    with pytest.raises(WorkloadError, match="duplicate id"):
        parse_workload({"tasks": [TASK, TASK]})
    with pytest.raises(WorkloadError, match="evidence must be"):
        _task(evidence=[{"fact": ["only", "two"]}])
    with pytest.raises(WorkloadError, match="ends before it starts"):
        _task(evidence=["m.py:12-10"])
    w = parse_workload([{"id": "x", "kind": "no_match", "request": {"method": "codesynapse/search"}}])
    assert w.tasks[0].params == {} and w.tasks[0].evidence == []


def test_every_shipped_workload_parses():
    """Every task workload loads, its ids are unique, every request names a method the server
    has, and on a corpus kept in this repository every location of evidence is inside its file
    (memory_recall.yaml is a generator spec, loaded by its own bench and tested there)."""
    from codesynapse.bench.workload import load_workload
    from codesynapse.methods import METHODS

    files = sorted(f for f in (REPO / "fixtures" / "workloads").glob("*.yaml") if f.name != "memory_recall.yaml")
    assert {"python_repo.yaml", "python_stdlib.yaml", "go_stdlib.yaml", "rxjs.yaml"} <= {f.name for f in files}
    for f in files:
        w = load_workload(f)
        assert w.tasks, f
        ids = [t.id for t in w.tasks]
        assert len(ids) == len(set(ids)), f"{f.name}: repeated task ids"
        assert not {t.method for t in w.tasks} - set(METHODS), f"{f.name}: methods the server does not have"
        corpus = REPO / w.corpus
        if not w.corpus.startswith("fixtures/"):
            continue  # a corpus fetched by the bench (stdlib, rxjs), not in this repository
        for t in w.tasks:
            for e in t.evidence:
                if e.kind == "location":
                    path, a, b = e.value
                    lines = (corpus / path).read_text(encoding="utf-8").count("\n")
                    assert 1 <= a <= b <= lines, f"{f.name} {t.id}: {e.raw} outside {path} ({lines} lines)"


# ---- smoke: `bench tokens` on the Python fixture ---------------------------------------------------


def test_tokens_smoke_on_python_fixture(tmp_path, monkeypatch):
    monkeypatch.setenv("CODESYNAPSE_BENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("CODESYNAPSE_EMBEDDER", "none")  # lexical memory recall: fast and offline
    from codesynapse.bench.cli import run_bench
    from codesynapse.bench.workload import load_workload

    wl_path = REPO / "fixtures" / "workloads" / "python_repo.yaml"
    out = tmp_path / "docs"
    args = argparse.Namespace(kind="tokens", corpus=[str(REPO / "fixtures" / "python_repo")],
                              workload=str(wl_path), out=str(out), quick=True, verbose=False)
    assert run_bench(args) == 0
    data = json.loads((out / "retrieval_results.json").read_text())
    md = (out / "RETRIEVAL_RESULTS.md").read_text()
    res = data["results"][0]
    ids = [t.id for t in load_workload(wl_path).tasks]
    assert [r["id"] for r in res["rows"]] == ids
    for r in res["rows"]:
        assert f"| {r['id']} |" in md
        # the response size is what the estimator and the row say it is
        assert r["response"]["estTokens"] == stats.est_tokens(r["response"]["bytes"])
        assert r["a"]["estTokens"] == stats.est_tokens(r["a"]["bytes"])
        if r["kind"] != "recall":
            assert r["ok"], r
    # the aggregate is the summed counts of the rows
    agg = res["aggregates"]["est"]["a"]
    ok = [r for r in res["rows"] if r["ok"]]
    assert agg["successful"]["raw"] == sum(r["a"]["estTokens"] for r in ok)
    assert agg["successful"]["returned"] == sum(r["response"]["estTokens"] for r in ok)
    nomatch = next(r for r in res["rows"] if r["id"] == "fx-no-match")
    assert nomatch["a"]["bytes"] == 0 and nomatch["reduction"]["a"]["est"] is None
    assert "not applicable" in md
    assert res["policyFingerprint"]
    assert "quicktok" in res["tokenizer"]
    assert (out / "PERFORMANCE.md").exists()
    # the result files name each other relative to the output folder (--out), never as docs/…:
    # each link resolves beside the file that holds it
    perf = (out / "PERFORMANCE.md").read_text()
    assert re.findall(r"\]\(([^)]+)\)", md) == ["retrieval_results.json"]
    assert re.findall(r"\]\(([^)]+)\)", perf) == ["RETRIEVAL_RESULTS.md"]
    assert "docs/" not in md and "docs/" not in perf
    # the stale task's edit was undone in the scratch copy, and the original was never touched
    assert "def with_tax(" in (REPO / "fixtures" / "python_repo" / "shop" / "pricing.py").read_text()


# ---- baseline (b): the grep-and-read agent ------------------------------------------------------


def test_word_grep_baseline_counts_grep_output_and_definition_files(tmp_path):
    from codesynapse.bench.baselines import CorpusText

    (tmp_path / "a.py").write_text("def parse(x):\n    return x\n")  # 27 bytes
    (tmp_path / "b.py").write_text("from a import parse\nparse(1)\nparser = 2\n")  # 40 bytes
    (tmp_path / "c.py").write_text("nothing here\n")
    corpus = CorpusText(str(tmp_path), [("a.py", "python"), ("b.py", "python"), ("c.py", "python")])
    g = corpus.grep("parse")
    # word matches only ("parser" is not one), printed as path:line:text
    assert g.text == "a.py:1:def parse(x):\nb.py:1:from a import parse\nb.py:2:parse(1)\n"
    assert g.output_bytes == len(g.text.encode()) == 21 + 27 + 16
    assert g.hits == 3
    assert g.files == ["a.py", "b.py"]
    assert g.def_files == ["a.py"]
    assert corpus.nbytes("a.py") == 27


def test_perf_sections_are_replaced_in_place_and_kept_in_order(tmp_path):
    from codesynapse.bench.report import write_perf_section

    write_perf_section(tmp_path, "requests", "R1")
    write_perf_section(tmp_path, "index", "I1")
    write_perf_section(tmp_path, "requests", "R2")
    text = (tmp_path / "PERFORMANCE.md").read_text()
    assert "R1" not in text and text.count("<!-- bench:requests -->") == 1
    assert text.index("I1") < text.index("R2")


def test_field_evidence_looks_at_keys_not_at_every_string():
    t = parse_workload([{"id": "n", "kind": "no_match", "request": {"method": "codesynapse/search"},
                         "forbidden": [{"field": ["match", "exact"]}]}]).tasks[0]
    # provenance naming the "exact" leg is not an exact match
    assert check(t, {"provenance": {"legs": ["exact", "bm25"]}, "results": [{"match": "bm25"}]})["ok"] is True
    assert check(t, {"results": [{"match": "exact"}]})["leaked"] == ["match=exact"]


def test_retrieval_results_keep_the_held_out_plain_english_table(tmp_path):
    from codesynapse.bench.report import plain_english_section, write_retrieval

    assert plain_english_section(tmp_path) == ""
    (tmp_path / "retrieval_eval.md").write_text(
        "## Plain-English retrieval: ablation\n\n* **Code:** commit abc\n* **Corpora:** x (1 file)\n\n"
        "### tune half — plain-English tasks\n\n| configuration | tasks complete |\n|---|---:|\n| full | 1/2 |\n\n"
        "### heldout half — plain-English tasks\n\n| configuration | tasks complete |\n|---|---:|\n| full | 3/4 |\n")
    from codesynapse.bench.machine import machine_info

    md, _ = write_retrieval(tmp_path, [], machine_info(), [])
    text = md.read_text()
    section = text[text.index("## Plain-English retrieval on repositories never tuned for"):]
    assert "* **Code:** commit abc" in section and "* **Corpora:** x (1 file)" in section
    assert "| full | 3/4 |" in section and "| full | 1/2 |" not in section
    assert "[retrieval_eval.md](retrieval_eval.md)" in section
