"""A large SARIF log imports in bounded memory (issue 21): the peak resident set of a fresh
process importing a ~50 MB log of 10,000 results is within a few MB of the same import of a
~4 MB log with the same results — the log is streamed and each result keeps a bounded part
of its message, so memory follows the number of results, not the size of the file (a
``json.load`` of the large log alone would take over 150 MB more). Peak RSS is the child's own
VmHWM: wait4's ru_maxrss also counts the forked copy of this (large) pytest process before exec."""

from __future__ import annotations

from codesynapse.app import App
from codesynapse.bench.findings_bench import _import_child, make_repo, write_sarif
from codesynapse.settings import load_settings

SLACK_MB = 20  # allocator noise, and the larger JSON objects built one at a time


def test_a_50_mb_sarif_log_imports_in_the_memory_of_a_4_mb_one(tmp_path):
    root, data = tmp_path / "repo", tmp_path / "data"
    root.mkdir()
    sites = make_repo(root, 40)
    app = App(root, load_settings({"data_dir": str(data), "workers": 1}))
    try:
        app.index()
    finally:
        app.close()
    small, large = tmp_path / "small.sarif", tmp_path / "large.sarif"
    small_size = write_sarif(small, root, sites, 10_000)
    large_size = write_sarif(large, root, sites, 10_000, pad=2_500)
    assert small_size < 5 * 2**20 and large_size > 45 * 2**20
    a = _import_child(root, data, small)
    b = _import_child(root, data, large)
    assert a["stored"] == b["stored"] == 10_000
    assert b["peakRssMb"] <= a["peakRssMb"] + SLACK_MB, (a, b)
    assert b["peakRssMb"] < 200, b
