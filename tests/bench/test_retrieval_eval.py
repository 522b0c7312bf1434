"""The retrieval evaluation's arithmetic and checks, with written-out numbers: recall@8, MRR,
the charged reduction, the split, the task-text leak check and the line-range check (on a real
index of a two-file tree). No corpus is downloaded and no timing is asserted."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from codesynapse.bench import retrieval_eval as ev


def card(path: str, start: int, end: int, qname: str = "x") -> dict:
    return {"qualifiedName": qname, "kind": "function", "path": path, "range": [start, end]}


# ---- recall@8 and MRR -----------------------------------------------------------------------------


def test_recall_at_8_counts_evidence_units_in_the_first_eight_cards():
    cards = [card("a.py", 1, 5), card("b.py", 10, 20), card("c.py", 30, 40)]
    evidence = [("b.py", 10, 20), ("d.py", 1, 2)]
    assert ev.recall_at_k(cards, evidence) == (1, 2)
    assert ev.recall_at_k(cards, [("a.py", 3, 3), ("c.py", 35, 50)]) == (2, 2)  # overlapping ranges count


def test_recall_at_8_ignores_a_ninth_card():
    cards = [card(f"f{i}.py", 1, 2) for i in range(8)] + [card("answer.py", 5, 9)]
    assert ev.recall_at_k(cards, [("answer.py", 5, 9)]) == (0, 1)
    assert ev.recall_at_k(cards, [("answer.py", 5, 9)], k=9) == (1, 1)


def test_a_whole_module_card_does_not_point_at_a_function_in_it():
    # a 900-line module range starting before the function is not evidence of the function
    assert ev.recall_at_k([card("m.py", 1, 900)], [("m.py", 400, 420)]) == (0, 1)


def test_reciprocal_rank_is_one_over_the_first_card_holding_any_unit():
    cards = [card("a.py", 1, 5), card("b.py", 1, 5), card("c.py", 1, 5), card("d.py", 1, 5)]
    assert ev.reciprocal_rank(cards, [("c.py", 2, 2), ("d.py", 1, 5)]) == pytest.approx(1 / 3)
    assert ev.reciprocal_rank(cards, [("a.py", 1, 1)]) == 1.0
    assert ev.reciprocal_rank(cards, [("z.py", 1, 1)]) == 0.0
    assert ev.reciprocal_rank([], [("a.py", 1, 1)]) == 0.0


# ---- aggregate: recall, MRR, complete, reductions -------------------------------------------------


def test_summary_reports_complete_and_charged_reductions():
    rows = [
        {"ok": True, "unitsFound": 1, "units": 1, "rr": 1.0, "tokens": 100, "baselineA": 1000},
        {"ok": False, "unitsFound": 0, "units": 2, "rr": 0.0, "tokens": 200, "baselineA": 500},
        {"ok": True, "unitsFound": 2, "units": 2, "rr": 0.5, "tokens": 300, "baselineA": 2000},
    ]
    s = ev.summarize(rows)
    assert s["tasks"] == 3
    assert s["complete"] == 2
    assert s["completePct"] == pytest.approx(200 / 3)
    assert s["recallAt8"] == pytest.approx(0.6)  # (1 + 0 + 2) / (1 + 2 + 2)
    assert s["mrr"] == pytest.approx(0.5)  # (1 + 0 + 0.5) / 3
    assert s["tokensReturned"] == 600
    assert s["baselineA"] == 3500
    # complete tasks only: raw 3000, returned 400
    assert s["reductionCompletePct"] == pytest.approx(86.66666666666667)
    # charged: raw 3500; returned 100 + 300 + (500 + 200) for the failed task = 1100
    assert s["reductionChargedPct"] == pytest.approx(68.57142857142857)


# ---- complete (cards only): a unit named only among the omitted candidates does not count --------


def _answer_with_the_unit_omitted() -> dict:
    # the shape minimalContext answers: two cards, and the answering unit named only among the
    # candidates left out (its omitted note), where a client must ask a second time to see it
    return {
        "cards": [card("tests/test_a.py", 1, 9, "tests.test_a.test_x"), card("a.py", 20, 30, "a.helper")],
        "omitted": [{"what": "candidate symbols", "count": 1, "hint": "raise maxTokens or name the symbol",
                     "candidates": [{"qualifiedName": "a.work", "kind": "function", "path": "a.py", "line": 40,
                                     "legs": ["lexical"]}]}],
    }


def test_complete_in_cards_does_not_count_a_unit_named_only_among_omitted_candidates():
    from codesynapse.bench.workload import check, parse_workload

    answer = _answer_with_the_unit_omitted()
    evs = [("a.py", 40, 55)]
    wl = parse_workload({"tasks": [{"id": "t", "kind": "lookup", "evidence": ["a.py:40-55"], "request": {
        "method": "codesynapse/minimalContext", "params": {"task": "How is the work done?"}}}]})
    assert check(wl.tasks[0], answer)["ok"] is True  # the old "complete": the omitted note's line counts
    assert ev.complete_in_cards(answer, evs) is False
    # the same unit shown as a card is complete both ways
    answer["cards"].append(card("a.py", 40, 55, "a.work"))
    assert ev.complete_in_cards(answer, evs) is True
    assert ev.complete_in_cards(answer, evs + [("b.py", 1, 2)]) is False  # every unit, not any
    assert ev.complete_in_cards({"error": {"kind": "InvalidParams"}}, evs) is False


def test_summary_and_table_report_complete_and_complete_cards_only():
    rows = [
        {"ok": True, "okCards": True, "unitsFound": 1, "units": 1, "rr": 1.0, "tokens": 100, "baselineA": 1000},
        {"ok": True, "okCards": False, "unitsFound": 0, "units": 1, "rr": 0.0, "tokens": 100, "baselineA": 1000},
        {"ok": False, "okCards": False, "unitsFound": 0, "units": 1, "rr": 0.0, "tokens": 100, "baselineA": 1000},
        {"ok": True, "okCards": True, "unitsFound": 1, "units": 1, "rr": 0.5, "tokens": 100, "baselineA": 1000},
    ]
    s = ev.summarize(rows)
    assert (s["complete"], s["completeCards"]) == (3, 2)
    assert s["completeCardsPct"] == pytest.approx(50.0)
    from codesynapse.bench.machine import machine_info

    res = {"machine": machine_info(), "notes": [], "halves": ["tune"], "configs": [ev.FULL], "corpora": [
        {"corpus": {"version": "r 1"}, "dense": {"state": "ready"}, "counter": "est",
         "rows": {ev.FULL: [{**r, "repo": "r", "split": "tune", "group": "plain_english"} for r in rows]}}],
        "summary": {"tune": {ev.FULL: {"plain_english": s, "perRepo": {"r": s}}}}}
    md = ev.markdown(res)
    assert "| configuration | tasks complete | complete (cards only) | recall@8 |" in md
    assert f"| {ev.FULL} | 3/4 (75.0%) | 2/4 (50.0%) | 0.500 |" in md
    assert "| r | 3/4 | 2/4 | 0.500 |" in md
    assert "complete (cards only) = every evidence unit shown as one of the answer's cards" in md


def test_summary_of_no_tasks_is_not_applicable():
    s = ev.summarize([])
    assert s["tasks"] == 0 and s["recallAt8"] is None and s["mrr"] is None and s["reductionChargedPct"] is None


# ---- split ----------------------------------------------------------------------------------------


def test_split_is_by_sha256_of_the_id_and_even():
    # sha256 prefixes: t1 628b49…, t2 c44474…, t3 cece8a…, t4 a2f1a6…, t5 f413e4…, t6 8a37b8…
    # order t1 t6 t4 t2 t3 t5: the first three are tune
    assert ev.assign_splits(["t1", "t2", "t3", "t4", "t5", "t6"]) == {
        "t1": "tune", "t6": "tune", "t4": "tune", "t2": "heldout", "t3": "heldout", "t5": "heldout"}
    # an odd count: the extra task is held out (order t1 t4 t2 t3 t5)
    assert ev.assign_splits(["t5", "t3", "t1", "t2", "t4"]) == {
        "t4": "tune", "t1": "tune", "t2": "heldout", "t3": "heldout", "t5": "heldout"}


def test_split_does_not_depend_on_the_order_of_the_ids():
    ids = [f"task-{i}" for i in range(11)]
    assert ev.assign_splits(ids) == ev.assign_splits(list(reversed(ids)))


# ---- the task-text leak check ---------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    "Why is parse_header called twice?",
    "Why is ParseHeader called twice?",
    "Why is parseHeader called twice?",
    "why do we parse header lines twice?",
    "Parse-Header runs twice",
])
def test_a_task_naming_the_unit_is_rejected(text):
    assert ev.leaks(text, ["pkg.http.parse_header"])


@pytest.mark.parametrize("text", [
    "Why is every header parsed twice?",
    "We parse the header twice",
    "A header line is read twice",
])
def test_plain_words_that_are_one_sub_word_are_fine(text):
    assert ev.leaks(text, ["pkg.http.parse_header"]) == []


def test_a_one_word_name_may_not_appear_as_a_word_but_an_inflection_may():
    assert ev.leaks("Why does increment give up early?", ["urllib3.util.retry.Retry.increment"])
    assert ev.leaks("Why is the counter incremented twice?", ["urllib3.util.retry.Retry.increment"]) == []


def test_unit_names_across_languages():
    assert ev.unit_name("ureq::unit::connect") == "connect"
    assert ev.unit_name("src/mutation.Mutation.#dispatch") == "dispatch"
    assert ev.unit_name("github.com/go-chi/chi/v5.Mux.routeHTTP") == "routeHTTP"
    assert ev.subwords("routeHTTP") == ["route", "http"]
    assert ev.subwords("URLParam") == ["url", "param"]
    assert ev.leaks("Where does route HTTP find the handler?", ["github.com/go-chi/chi/v5.Mux.routeHTTP"])
    assert ev.leaks("Where is the route for an http request found?", ["github.com/go-chi/chi/v5.Mux.routeHTTP"]) == []
    assert ev.leaks("A DELETE is retried by the dispatcher", ["src/mutation.Mutation.#dispatch"]) == []


# ---- loading: split and leaks are checked before anything runs -----------------------------------


def _write(root: Path, half: str, body: str) -> None:
    (root / half).mkdir(parents=True, exist_ok=True)
    (root / half / "r.yaml").write_text(textwrap.dedent(body), encoding="utf-8")


def _task(tid: str, split: str, text: str) -> str:
    return f"""
      - id: {tid}
        split: {split}
        group: plain_english
        kind: lookup
        request: {{method: codesynapse/minimalContext, params: {{task: "{text}"}}}}
        units: [pkg.mod.parse_header]
        evidence: ["pkg/mod.py:3-9"]
    """


def test_the_set_rejects_a_wrong_split_and_a_leaking_task(tmp_path):
    # t1 (628b…) sorts before t4 (a2f1…): with two tasks, t1 is tune and t4 held out
    _write(tmp_path, "tune", "corpus: x\ntasks:" + _task("t4", "tune", "Why is every header read twice?"))
    _write(tmp_path, "heldout", "corpus: x\ntasks:" + _task("t1", "heldout", "Why is parse_header slow?"))
    with pytest.raises(ev.EvalSetError) as e:
        ev.load_eval_set(tmp_path)
    msg = str(e.value)
    assert "t4: recorded split 'tune', computed 'heldout'" in msg
    assert "t1: recorded split 'heldout', computed 'tune'" in msg
    assert "t1: the task text names 'parse_header'" in msg


def test_the_set_accepts_a_correct_split(tmp_path):
    _write(tmp_path, "tune", "corpus: x\ntasks:" + _task("t1", "tune", "Why is every header read twice?"))
    _write(tmp_path, "heldout", "corpus: x\ntasks:" + _task("t4", "heldout", "Which code reads a header line?"))
    tasks = ev.load_eval_set(tmp_path)
    assert {(t.id, t.split) for t in tasks} == {("t1", "tune"), ("t4", "heldout")}
    assert tasks[0].unit_locations() == [("pkg.mod.parse_header", ("pkg/mod.py", 3, 9))]


def test_the_shipped_set_passes_its_own_checks():
    tasks = ev.load_eval_set()
    pe = [t for t in tasks if t.group == "plain_english"]
    assert len(pe) >= 60
    assert len({t.repo for t in tasks}) >= 6
    assert all(not ev.leaks(t.text, t.units) for t in pe)


# ---- the line-range check, on a real index ---------------------------------------------------------


def test_units_must_sit_at_their_lines_in_the_index(tmp_path):
    from codesynapse.bench.apps import open_app

    root = tmp_path / "tree"
    (root / "pkg").mkdir(parents=True)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "mod.py").write_text(textwrap.dedent('''\
        import re


        def parse_header(line):
            name, _, value = line.partition(":")
            return name.strip().lower(), value.strip()


        def other():
            return 1
        '''))
    app = open_app(root, tmp_path / "data", watch=False)
    try:
        app.index()
        good = [("pkg.mod.parse_header", ("pkg/mod.py", 4, 6))]
        assert ev.check_units(app.store, root, good) == []
        shifted = ev.check_units(app.store, root, [("pkg.mod.parse_header", ("pkg/mod.py", 5, 6))])
        assert shifted == ["pkg.mod.parse_header: not at pkg/mod.py:5-6 in the index (it is at pkg/mod.py:4-6)"]
        missing = ev.check_units(app.store, root, [("pkg.mod.parse_headers", ("pkg/mod.py", 4, 6))])
        assert missing == ["pkg.mod.parse_headers: no such symbol in the index"]
    finally:
        app.close()


# ---- the pipeline on a small real repository ------------------------------------------------------


def _eval_task(units: list[str], evidence: list[str], text: str) -> ev.EvalTask:
    from codesynapse.bench.workload import parse_workload

    wl = parse_workload({"tasks": [{"id": "t", "kind": "lookup", "evidence": evidence, "request": {
        "method": "codesynapse/minimalContext", "params": {"task": text}}}]})
    return ev.EvalTask(task=wl.tasks[0], repo="python_repo", corpus="", split="tune", group="plain_english",
                       units=units, file="")


def test_a_run_measures_each_task_through_the_daemons_request_path():
    repo = str(Path(__file__).resolve().parents[2] / "fixtures" / "python_repo")
    task = _eval_task(["shop.pricing.apply_discount"], ["shop/pricing.py:6-8"],
                      "How is an amount reduced by a percentage?")
    res = ev.run_corpus(repo, [task], [ev.CURRENT], dense_wait=0)
    (row,) = res["rows"][ev.CURRENT]
    assert row["id"] == "t" and row["units"] == 1
    assert row["tokens"] > 0 and row["baselineA"] > 0  # the answer and the raw file (shop/pricing.py) are counted
    # the card-level recall and the answer-level evidence check agree on this one-unit task
    assert row["ok"] == (row["unitsFound"] == 1)
    assert row["rr"] == (1.0 / (row["cards"].index("shop.pricing.apply_discount") + 1)
                         if "shop.pricing.apply_discount" in row["cards"] else 0.0)


def test_a_run_stops_before_any_request_when_a_unit_is_not_at_its_lines():
    repo = str(Path(__file__).resolve().parents[2] / "fixtures" / "python_repo")
    task = _eval_task(["shop.pricing.apply_discount"], ["shop/pricing.py:7-8"], "How is an amount reduced?")
    with pytest.raises(ev.EvalSetError, match=r"apply_discount: not at shop/pricing.py:7-8 in the index"):
        ev.run_corpus(repo, [task], [ev.CURRENT], dense_wait=0)


# ---- the fresh half: a third folder, outside the computed split -------------------------------------


def _write_as(root: Path, half: str, name: str, body: str) -> None:
    (root / half).mkdir(parents=True, exist_ok=True)
    (root / half / name).write_text(textwrap.dedent(body), encoding="utf-8")


ALL = ev.HALVES + (ev.FRESH,)


def test_fresh_tasks_take_no_part_in_the_computed_split(tmp_path):
    # SHA-256 prefixes: f6 3efda6, f1 3f524c, t1 628b49, t4 a2f1a6. Were f1 and f6 counted with
    # t1 and t4 (same repository and group), the order f6, f1, t1, t4 would make t1 held out.
    _write(tmp_path, "tune", "corpus: x\ntasks:" + _task("t1", "tune", "Why is every header read twice?"))
    _write(tmp_path, "heldout", "corpus: x\ntasks:" + _task("t4", "heldout", "Which code reads a header line?"))
    _write(tmp_path, "fresh", "corpus: x\ntasks:" + _task("f1", "fresh", "Where is a header line split?")
           + _task("f6", "fresh", "Which code lower-cases a header name?"))
    tasks = ev.load_eval_set(tmp_path, ALL)
    assert sorted((t.id, t.split) for t in tasks) == [("f1", "fresh"), ("f6", "fresh"), ("t1", "tune"),
                                                       ("t4", "heldout")]


def test_the_split_is_still_checked_when_the_fresh_folder_is_loaded(tmp_path):
    _write(tmp_path, "tune", "corpus: x\ntasks:" + _task("t4", "tune", "Why is every header read twice?"))
    _write(tmp_path, "heldout", "corpus: x\ntasks:" + _task("t1", "heldout", "Which code reads a header line?"))
    _write(tmp_path, "fresh", "corpus: x\ntasks:" + _task("f1", "fresh", "Where is a header line split?"))
    with pytest.raises(ev.EvalSetError) as e:
        ev.load_eval_set(tmp_path, ALL)
    assert "t4: recorded split 'tune', computed 'heldout'" in str(e.value)
    assert "f1" not in str(e.value)


def test_a_fresh_task_must_say_fresh_and_may_not_leak(tmp_path):
    _write(tmp_path, "fresh", "corpus: x\ntasks:" + _task("f1", "tune", "Where is a header line split?")
           + _task("f2", "fresh", "Why does parse header drop the value?"))
    with pytest.raises(ev.EvalSetError) as e:
        ev.load_eval_set(tmp_path, (ev.FRESH,))
    msg = str(e.value)
    assert "f1: split 'tune' but the file is in fresh/" in msg
    assert "f2: the task text spells 'parse_header' as the words 'parse header'" in msg


def test_the_shipped_fresh_set_passes_its_own_checks():
    tasks = ev.load_eval_set(ev.SET_DIR, ALL)
    fresh = [t for t in tasks if t.split == ev.FRESH]
    pe = [t for t in fresh if t.group == "plain_english"]
    assert len(pe) >= 30 and len({t.repo for t in fresh}) >= 4
    # repositories of their own: none is also a tune/held-out repository
    assert not {t.corpus for t in fresh} & {t.corpus for t in tasks if t.split != ev.FRESH}
    assert all(t.file.endswith(".yaml") and "/fresh/" in t.file for t in fresh)


def test_the_answers_of_held_out_and_fresh_tasks_are_not_written_out():
    def row(split):
        return {"id": split, "split": split, "cards": ["a.b"], "missing": ["p.py:1-2"], "ok": False}

    res = {"corpora": [{"rows": {ev.FULL: [row("tune"), row("heldout"), row("fresh")]}}]}
    ev.drop_untuned_answers(res)
    tune, heldout, fresh = res["corpora"][0]["rows"][ev.FULL]
    assert tune["cards"] == ["a.b"] and tune["missing"] == ["p.py:1-2"]
    assert "cards" not in heldout and "missing" not in heldout
    assert "cards" not in fresh and "missing" not in fresh
    assert fresh["ok"] is False  # the verdict stays


def _pe(tid: str, split: str, text: str, unit: str, evidence: str) -> str:
    return f"""
      - id: {tid}
        split: {split}
        group: plain_english
        kind: lookup
        request: {{method: codesynapse/minimalContext, params: {{task: "{text}"}}}}
        units: [{unit}]
        evidence: ["{evidence}"]
    """


def _fixture_set(root: Path, fresh_evidence: str) -> None:
    repo = Path(__file__).resolve().parents[2] / "fixtures" / "python_repo"
    head = f"corpus: '{repo}'\nrepo: python_repo\ntasks:"
    _write_as(root, "tune", "python_repo.yaml", head + _pe("t1", "tune", "How is an amount reduced by a percentage?",
                                                            "shop.pricing.apply_discount", "shop/pricing.py:6-8"))
    _write_as(root, "heldout", "python_repo.yaml", head + _pe("t4", "heldout", "Where is tax added to a net amount?",
                                                               "shop.pricing.with_tax", "shop/pricing.py:11-13"))
    _write_as(root, "fresh", "python_repo.yaml", head + _pe("f1", "fresh", "Which code charges money through a gateway?",
                                                             "shop.payment.Gateway.charge", fresh_evidence))


@pytest.fixture
def bench_env(tmp_path, monkeypatch):
    monkeypatch.setenv("CODESYNAPSE_BENCH_CACHE", str(tmp_path / "bench-cache"))
    monkeypatch.setenv("CODESYNAPSE_EMBEDDER", "none")


def test_a_fresh_run_runs_only_the_fresh_tasks(tmp_path, bench_env):
    _fixture_set(tmp_path / "set", "shop/payment.py:12-14")
    res = ev.run_eval("fresh", dense_wait=0, root=tmp_path / "set")
    assert res["halves"] == ["fresh"]
    assert list(res["summary"]) == ["fresh"]
    (corpus,) = res["corpora"]
    for cname, rows in corpus["rows"].items():
        assert [(r["id"], r["split"]) for r in rows] == [("f1", "fresh")], cname
    assert res["summary"]["fresh"][res["configs"][-1]]["plain_english"]["tasks"] == 1
    assert "### fresh half" in ev.markdown(res)


def test_a_fresh_run_checks_the_fresh_lines_before_any_request(tmp_path, bench_env):
    _fixture_set(tmp_path / "set", "shop/payment.py:13-14")
    with pytest.raises(ev.EvalSetError, match=r"f1: shop.payment.Gateway.charge: not at shop/payment.py:13-14"):
        ev.run_eval("fresh", dense_wait=0, root=tmp_path / "set")


def test_the_cli_offers_the_fresh_half():
    from codesynapse.cli import build_parser

    args = build_parser().parse_args(["bench", "retrieval", "--half", "fresh"])
    assert args.half == "fresh"
