"""The scale series' report (bench/scale.py) on synthetic points: the least-squares fits and
the files it writes. No corpus is indexed here (that is `codesynapse bench index --corpus scale`)."""

from __future__ import annotations

import json

import pytest

from codesynapse.bench.scale import fits, linear_fit, write_scale

MACHINE = {"cpu": "test cpu", "cores": 2, "ramGiB": 8.0, "os": "Linux", "python": "3.11",
           "codesynapseCommit": "abc123", "uncommittedServerFiles": [], "date": "2026-12-02 00:00 UTC"}


def _result(name: str, lines: int, seconds: float, peak_mb: float, index_mb: float) -> dict:
    return {"corpus": {"name": name, "version": f"{name} v1"},
            "full": {"files": lines // 100, "parsed": lines // 100, "lines": lines, "symbols": lines // 10,
                     "calls": lines // 5, "seconds": seconds, "processWallSeconds": seconds + 1,
                     "peakTreeRss": peak_mb * 1e6, "peakMainRss": peak_mb * 0.8e6, "peakWorkerRss": 50e6,
                     "indexBytes": index_mb * 1e6, "loadBefore": [1.5, 1, 1], "loadAfter": [2.25, 1, 1]},
            "catchUp": {"seconds": 0.5, "peakTreeRss": 80e6}}


def test_linear_fit_of_points_on_a_line_is_exact():
    a, b, r2 = linear_fit([1.0, 2.0, 4.0], [5.0, 8.0, 14.0])  # y = 3x + 2
    assert (a, b, r2) == pytest.approx((3.0, 2.0, 1.0))


def test_linear_fit_of_scattered_points():
    # by hand: mean x 2, mean y 5/3; slope 1/2; intercept 2/3; SS_tot 6/9, SS_res 1/6 → R² 0.75
    a, b, r2 = linear_fit([1.0, 2.0, 3.0], [1.0, 2.0, 2.0])
    assert (a, b, r2) == pytest.approx((0.5, 2 / 3, 0.75))


def test_linear_fit_of_a_flat_series_has_no_slope():
    assert linear_fit([1.0, 2.0, 3.0], [700.0, 700.0, 700.0]) == pytest.approx((0.0, 700.0, 1.0))
    with pytest.raises(ValueError):
        linear_fit([], [])


def test_fits_need_two_distinct_line_counts():
    one = [{"lines": 1_000_000, "wallSeconds": 10.0, "peakRssAllMB": 100.0, "indexMB": 50.0}]
    assert fits(one) == {}
    assert fits(one * 2) == {}


def test_write_scale_writes_json_markdown_plot_and_the_performance_section(tmp_path):
    (tmp_path / "PERFORMANCE.md").write_text("# Performance\n\nkept text\n", encoding="utf-8")
    # out of order on purpose: the report sorts by lines; wall = 40 s/M + 5, memory flat 700 MB,
    # index 300 MB/M
    results = [_result("big", 4_000_000, 165.0, 700.0, 1200.0), _result("small", 1_000_000, 45.0, 700.0, 300.0),
               _result("mid", 2_000_000, 85.0, 700.0, 600.0)]
    doc = write_scale(tmp_path, results, MACHINE)

    saved = json.loads((tmp_path / "scale.json").read_text(encoding="utf-8"))
    assert saved == json.loads(json.dumps(doc))
    assert [p["corpus"] for p in saved["points"]] == ["small", "mid", "big"]
    assert saved["points"][0]["peakRssAllMB"] == 700.0 and saved["points"][2]["indexMB"] == 1200.0
    assert saved["points"][0]["loadBefore"] == [1.5, 1, 1]
    assert saved["fits"]["wallSeconds"] == {"perMLines": 40.0, "intercept": 5.0, "r2": 1.0}
    assert saved["fits"]["peakRssAllMB"] == {"perMLines": 0.0, "intercept": 700.0, "r2": 1.0}
    assert saved["fits"]["indexMB"]["perMLines"] == pytest.approx(300.0)

    md = (tmp_path / "scale.md").read_text(encoding="utf-8")
    assert md.startswith("# Scale series (issue 24)")
    assert "| small v1 | 10,000 | 1,000,000 | 100,000 | 45.0 | 22,222 | 700 | 560 | 300 | 0.50 | 1.5 → 2.2 |" in md
    assert "wall ≈ 40.0 s/M + 5.0 s (R² 1.000)" in md
    perf = (tmp_path / "PERFORMANCE.md").read_text(encoding="utf-8")
    assert "kept text" in perf and "<!-- bench:scale -->" in perf and "<!-- /bench:scale -->" in perf
    assert "| big v1 |" in perf
    pytest.importorskip("matplotlib")
    assert (tmp_path / "scale.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "![time and peak memory against lines](scale.png)" in md

    # a second run replaces the section instead of adding another
    write_scale(tmp_path, results[:2], MACHINE)
    perf = (tmp_path / "PERFORMANCE.md").read_text(encoding="utf-8")
    assert perf.count("<!-- bench:scale -->") == 1 and "| mid v1 |" not in perf


def test_scale_disk_relayout_keeps_the_rows(tmp_path):
    from codesynapse.bench.scale_disk import relayout, space
    from codesynapse.extract.model import CallSite, FileExtraction, Symbol
    from codesynapse.graph.model import Resolution
    from codesynapse.store.sqlite.graph import SqliteGraphStore

    fx = FileExtraction(path="a.c", language="c", hash="h", size=1, lines=9, module="a", symbols=[
        Symbol(qname="a.f", name="f", kind="function", signature="int f(void)", start_line=1, end_line=3,
               start_col=0, end_col=1, hash="ab" * 20)],
        calls=[CallSite(caller="a.f", callee="g", name="g", line=2, col=1),
               CallSite(caller="a.f", callee="p->ops.run", name="run", line=3, col=1)])
    old = SqliteGraphStore(tmp_path / "old.db", "x" * 16)
    old.write_files([(fx, 1)], call_targets={("a.c", 0): Resolution("a.f", "local", 1.0)})
    before = old.dump()
    old.close()
    got = relayout(tmp_path / "old.db", tmp_path / "new.db")
    assert got["rows"] == {"files": 1, "symbols": 1, "calls": 2, "imports": 0, "inherits": 0}
    assert got["byTable"]["calls"] > 0 and "symbols_lex" in got["byTable"]
    new = SqliteGraphStore(tmp_path / "new.db", "x" * 16)
    try:
        assert new.dump() == before
        assert [c.line for c in new.callers("a.f")] == [2] and len(new.calls_touching(["p"])) == 1
        assert [s.qname for s, _ in new.search("f", 5)] == ["a.f"]
    finally:
        new.close()
    assert space(tmp_path / "old.db")["rows"]["calls"] == 2
