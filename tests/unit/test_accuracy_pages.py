"""The accuracy bench reads our callers through every callGraph page (issue 18): on a
generated function with 1,200 distinct callers, all are listed by the pages, none is
completed from the store, and the first page's omitted count is exact."""

from __future__ import annotations

from codesynapse.app import App
from codesynapse.bench.accuracy import our_callers
from codesynapse.settings import load_settings
from tests.e2e.test_all_callers import make_repo


def test_our_callers_walks_every_page(tmp_path):
    root = make_repo(tmp_path / "repo")
    app = App(root, load_settings({"data_dir": str(tmp_path / "data"), "workers": 1, "symbol_vectors": False,
                                   "embedder": "none"}))
    try:
        app.index()
        got = our_callers(app, "lib.target.hot")
        assert got["found"] is True
        assert len(got["units"]) == 1200 and got["callSites"] == 2400
        assert got["answerNodes"] == 1200 and got["fromStore"] == 0
        assert got["pages"] == 6 and got["omittedNodes"] == 1000  # 200 a page
    finally:
        app.close()
