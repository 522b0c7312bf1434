"""The dense leg over symbol metadata (context/dense.py), on real parts: the bundled MiniLM
embedder, a milvus-lite folder per test index, the SQLite graph of fixtures/python_repo
(copied, so that edits stay in the test's folder) and the live updater's own update path."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from codesynapse.app import App
from codesynapse.context.dense import (
    NOT_STARTED,
    DenseResult,
    _Mirror,
    open_symbol_vectors,
    query_parts,
    query_vector,
    split_words,
    symbol_text,
    text_hash,
)
from codesynapse.graph.model import SymbolRow
from codesynapse.memory.embedder import default_model_spec
from codesynapse.settings import load_settings
from codesynapse.watch.live import LiveUpdater

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "python_repo"


def row(**kw) -> SymbolRow:
    base = {"id": 1, "path": "shop/pricing.py", "qname": "", "name": "", "kind": "function", "signature": "",
            "start_line": 1, "end_line": 2, "start_col": 0, "end_col": 0, "hash": "", "summary": "", "parent": "",
            "is_test": False, "exported": True, "language": "python"}
    return SymbolRow(**{**base, **kw})


# -- metadata text ----------------------------------------------------------------------------

@pytest.mark.parametrize("text, words", [
    ("apply_discount", ["apply", "discount"]),
    ("parseHTTP2Header", ["parse", "http", "2", "header"]),
    ("__init__", ["init"]),
    ("HTTPServerError", ["http", "server", "error"]),
    ("shop/pricing", ["shop", "pricing"]),
    ("Shop > Pricing", ["shop", "pricing"]),
])
def test_split_words(text, words):
    assert split_words(text) == words


@pytest.mark.parametrize("symbol, text", [
    (row(qname="shop.pricing.apply_discount", name="apply_discount", signature="def apply_discount(amount, percent)",
         summary="Reduce an amount by a percentage."),
     ("function apply discount. in shop pricing. def apply_discount(amount, percent). "
      "Reduce an amount by a percentage. file shop pricing")),
    (row(path="shop/cart.py", qname="shop.cart.BaseCart.__init__", name="__init__", kind="method",
         signature="def __init__(self)"),
     "method init. in shop cart base cart. def __init__(self). file shop cart"),
    (row(qname="shop.pricing", name="pricing", kind="module", summary="Prices and discounts."),
     "module pricing. in shop. Prices and discounts. file shop pricing"),
    (row(qname="shop.pricing.TAX_RATE", name="TAX_RATE", kind="constant", signature="TAX_RATE"),
     "constant tax rate. in shop pricing. TAX_RATE. file shop pricing"),
    # a doc section: its heading path, not the markdown signature
    (row(path="README.md", qname="README.md#Shop > Pricing", name="Pricing", kind="section",
         signature="## Pricing", summary="Discounts and tax live in shop/pricing.py.", language="markdown"),
     "doc section Shop > Pricing. Discounts and tax live in shop/pricing.py. file readme"),
    (row(path="src/net/codec.ts", qname="net.codec.parseHTTP2Header", name="parseHTTP2Header",
         signature="function parseHTTP2Header(buf: Buffer): Header", language="typescript"),
     ("function parse http 2 header. in net codec. function parseHTTP2Header(buf: Buffer): Header. "
      "file src net codec")),
    # whitespace in a signature is folded; a file without an extension keeps its name
    (row(path="Makefile", qname="Makefile.build", name="build", kind="target", signature="build:\n\t  deps"),
     "target build. in makefile. build: deps. file makefile"),
])
def test_symbol_text(symbol, text):
    assert symbol_text(symbol) == text


def test_symbol_text_names_what_the_symbol_calls():
    # the names it calls, split into words, distinct, after the summary and before the file
    r = row(qname="shop.pricing.with_tax", name="with_tax", signature="def with_tax(amount)",
            summary="Add tax to a net amount.")
    assert symbol_text(r, ["round", "applyDiscount", "round", "__init__"]) == (
        "function with tax. in shop pricing. def with_tax(amount). Add tax to a net amount. "
        "calls round, apply discount, init. file shop pricing")
    assert symbol_text(r, [f"step_{i}" for i in range(20)]).count("step") == 12  # at most CALLS_MAX names


@pytest.mark.parametrize("query, parts", [
    ("where is sales tax added", ["where is sales tax added"]),
    ("Requests get a 404. Where is the path matched?",
     ["Requests get a 404. Where is the path matched?", "Requests get a 404.", "Where is the path matched?"]),
    # a piece under three words is no sentence of its own; one sentence left is the query itself
    ("Why? The retry gives up early.", ["Why? The retry gives up early."]),
    ("One two three. Four five six! Seven eight nine? Ten eleven twelve; Thirteen fourteen fifteen.",
     ["One two three. Four five six! Seven eight nine? Ten eleven twelve; Thirteen fourteen fifteen.",
      "One two three.", "Four five six!", "Seven eight nine?", "Ten eleven twelve;"]),
])
def test_query_parts(query, parts):
    assert query_parts(query) == parts


def test_query_vector_is_the_mean_of_the_unit_parts():
    assert query_vector([[3.0, 4.0]]) == [3.0, 4.0]  # one part: as embedded
    assert query_vector([[2.0, 0.0], [0.0, 5.0]]) == [0.5, 0.5]
    # a zero or non-finite part is left out
    assert query_vector([[2.0, 0.0], [0.0, 0.0], [float("nan"), 1.0], [0.0, 1.0]]) == [0.5, 0.5]


def test_symbol_text_is_capped():
    long = row(qname="m.f", name="f", signature="def f(" + "x, " * 200 + ")", summary="word " * 200)
    text = symbol_text(long)
    assert len(text) <= 480
    assert text.startswith("function f. in m. def f(x, x, ")


def test_the_in_process_copy_puts_replaces_and_removes_rows():
    m = _Mirror(3, capacity=2)  # grows past its first capacity
    m.put("a", "x.py", "x.a", [1.0, 0.0, 0.0])
    m.put("b", "x.py", "x.b", [0.0, 2.0, 0.0])  # stored at unit length
    m.put("c", "y.py", "y.c", [0.0, 0.0, 1.0])
    m.put("d", "y.py", "y.d", [0.0, 0.0, 0.0])  # all zeros: never stored
    assert len(m) == 3
    assert m.search([0.0, 1.0, 0.0], 1) == [("b", "x.py", "x.b", 1.0)]
    m.remove("a")  # the last row moves into its place
    m.remove("zz")  # unknown: nothing happens
    assert len(m) == 2
    assert [r[0] for r in m.search([1.0, 0.0, 0.1], 5)] == ["c", "b"]
    m.put("b", "z.py", "z.b", [0.0, 0.0, -1.0])  # replaced in place
    assert m.search([0.0, 0.0, -1.0], 5) == [("b", "z.py", "z.b", 1.0), ("c", "y.py", "y.c", -1.0)]
    m.trim()  # room given back; the rows stay and it grows again
    m.put("e", "e.py", "e.e", [1.0, 0.0, 0.0])
    assert [r[0] for r in m.search([1.0, 0.0, 0.1], 5)] == ["e", "c", "b"]


# -- the service on a real index --------------------------------------------------------------

def _app(tmp_path: Path, name: str = "data", **over) -> App:
    root = tmp_path / "repo"
    if not root.exists():
        shutil.copytree(FIXTURE, root)
    return App(root, load_settings({"data_dir": str(tmp_path / name), **over}))


def _ready(app: App) -> None:
    app.index()
    sv = app.symbol_vectors
    sv.start()
    sv.sync()
    assert sv.wait(120)


def _rows(app: App) -> dict[str, str]:
    """qname → metadata-text hash of this graph's rows as Milvus holds them."""
    sv = app.symbol_vectors
    gid = app.workspace.graph_id
    got = sv.vectors.filtered("test", lambda templated: lambda c: c.query(
        sv.collection, filter=f'graph_d == "{gid}"', output_fields=["qname", "text_h"], limit=10_000))
    return {r["qname"]: r["text_h"] for r in got}


def _top(app: App, text: str, n: int = 3) -> list[str]:
    res = app.symbol_vectors.search(text, 10)
    assert res.state == "ready", res
    return [h.qname for h in res.hits][:n]


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    app = _app(tmp_path_factory.mktemp("dense-shop"))
    _ready(app)
    yield app
    app.close()


def test_status_is_ready_with_every_symbol_embedded(shop):
    st = shop.symbol_vectors.status()
    assert st["state"] == "ready"
    assert st["embedded"] == st["total"] == 23  # fixtures/python_repo: 23 symbols, no redefinitions
    assert set(_rows(shop)) >= {"shop.pricing.apply_discount", "shop.payment.pay_for", "README.md#Shop > Pricing"}


@pytest.mark.parametrize("task, expected", [
    ("lower the price by some percent", "shop.pricing.apply_discount"),
    ("where is sales tax added", "shop.pricing.with_tax"),
    ("pay for a list of purchased things", "shop.payment.pay_for"),
])
def test_plain_english_finds_the_function(shop, task, expected):
    assert expected in _top(shop, task)


def test_the_in_process_copy_answers_what_milvus_answers(shop):
    # searches run on the in-process copy of the collection (milvus-lite 3.x searches row by row
    # in Python); it must rank exactly as Milvus does over the same rows
    sv = shop.symbol_vectors
    for task in ("lower the price by some percent", "charge money through a payment gateway"):
        vec = sv.embedder.embed([task])[0]
        in_milvus = sv._milvus_search(sv.vectors, sv.collection, vec, 8, 10.0)
        copy = sv.search(task, 8).hits
        assert [h.qname for h in copy] == [h["entity"]["qname"] for h in in_milvus]
        assert all(abs(a.score - b["distance"]) < 1e-4 for a, b in zip(copy, in_milvus, strict=True))


def test_search_never_returns_more_than_limit(shop):
    res = shop.symbol_vectors.search("cart", 2)
    assert res.state == "ready" and len(res.hits) == 2
    assert all(h.path and h.qname and -1.0 <= h.score <= 1.0 for h in res.hits)


def test_empty_query_answers_without_hits(shop):
    assert shop.symbol_vectors.search("   ", 10).hits == []


def test_search_timeout_is_reported_not_raised(shop):
    res = shop.symbol_vectors.search("lower the price by some percent", 10, timeout=0.0)
    assert res == DenseResult(hits=[], state="unavailable", reason="timeout")


def test_edits_reembed_only_what_changed_and_deletions_disappear(tmp_path):
    app = _app(tmp_path)
    try:
        _ready(app)
        sv = app.symbol_vectors
        before = _rows(app)
        embedded = sv.stats["embedded"]
        pricing = app.workspace.root / "shop" / "pricing.py"
        live = LiveUpdater(app)

        # a body-only edit changes no metadata: nothing is embedded again
        pricing.write_text(pricing.read_text().replace("round(amount * (1 + TAX_RATE), 2)",
                                                       "round((1 + TAX_RATE) * amount, 2)"))
        live._apply({"shop/pricing.py": "disk"})
        assert sv.wait(60)
        assert sv.stats["embedded"] == embedded
        assert _rows(app) == before

        # a changed docstring: that one function is embedded again, nothing else
        pricing.write_text(pricing.read_text().replace('"""Add tax to a net amount."""',
                                                       '"""Add value-added tax (VAT) to a net amount."""'))
        live._apply({"shop/pricing.py": "disk"})
        assert sv.wait(60)
        assert sv.stats["embedded"] == embedded + 1
        after = _rows(app)
        assert after["shop.pricing.with_tax"] != before["shop.pricing.with_tax"]
        assert {k: v for k, v in after.items() if k != "shop.pricing.with_tax"} == \
            {k: v for k, v in before.items() if k != "shop.pricing.with_tax"}

        # a deleted function leaves the collection and the hits
        assert "shop.pricing.apply_discount" in _top(app, "lower the price by some percent")
        text = pricing.read_text()
        start = text.index("def apply_discount")
        end = text.index("def with_tax")
        pricing.write_text(text[:start] + text[end:])
        live._apply({"shop/pricing.py": "disk"})
        assert sv.wait(60)
        assert "shop.pricing.apply_discount" not in _rows(app)
        assert "shop.pricing.apply_discount" not in _top(app, "lower the price by some percent", 10)
        st = sv.status()
        assert st["state"] == "ready" and st["embedded"] == st["total"] == 22
    finally:
        app.close()


def test_a_changed_call_reembeds_the_caller_only(tmp_path):
    # what a function calls is part of its text: a body edit that changes a call embeds that
    # function again (and no other); one that keeps its calls embeds nothing (above)
    app = _app(tmp_path)
    try:
        _ready(app)
        sv = app.symbol_vectors
        before = _rows(app)
        embedded = sv.stats["embedded"]
        pricing = app.workspace.root / "shop" / "pricing.py"
        pricing.write_text(pricing.read_text().replace("return round(amount * (1 + TAX_RATE), 2)",
                                                       "return float(amount * (1 + TAX_RATE))"))
        LiveUpdater(app)._apply({"shop/pricing.py": "disk"})
        assert sv.wait(60)
        assert sv.stats["embedded"] == embedded + 1
        after = _rows(app)
        assert after["shop.pricing.with_tax"] != before["shop.pricing.with_tax"]
        assert {k: v for k, v in after.items() if k != "shop.pricing.with_tax"} == \
            {k: v for k, v in before.items() if k != "shop.pricing.with_tax"}
    finally:
        app.close()


def test_hits_for_symbols_gone_from_the_graph_are_dropped(tmp_path):
    app = _app(tmp_path)
    try:
        _ready(app)
        assert any(q.startswith("shop.payment.") for q in _top(app, "pay for a list of purchased things"))
        # the graph loses the file without the vectors being told: Milvus still holds its rows,
        # the post-filter against the current graph keeps them out of the hits
        app.indexer.update([], ["shop/payment.py"])
        assert "shop.payment.pay_for" in _rows(app)
        hits = app.symbol_vectors.search("pay for a list of purchased things", 10).hits
        assert hits and all(h.path != "shop/payment.py" for h in hits)
    finally:
        app.close()


def test_a_restart_reuses_stored_vectors(tmp_path):
    app = _app(tmp_path)
    try:
        _ready(app)
        assert app.symbol_vectors.stats["embedded"] == 23
    finally:
        app.close()
    again = _app(tmp_path)
    try:
        _ready(again)
        sv = again.symbol_vectors
        assert sv.stats["embedded"] == 0  # every symbol's metadata text is unchanged
        assert sv.status()["state"] == "ready" and sv.status()["embedded"] == 23
        assert "shop.pricing.apply_discount" in _top(again, "lower the price by some percent")
    finally:
        again.close()


def test_status_goes_from_not_started_to_pending_to_ready(tmp_path):
    app = _app(tmp_path)
    try:
        app.index()
        sv = app.symbol_vectors
        assert sv.status() == {"state": "unavailable", "embedded": 0, "total": 0, "reason": NOT_STARTED}
        assert sv.search("tax", 10).state == "unavailable"
        sv.start()
        assert sv.status()["state"] == "pending"  # nothing is computed before the first sync
        assert sv.search("tax", 10).state == "pending"
        sv.sync()
        assert sv.wait(120)
        assert sv.status()["state"] == "ready"
    finally:
        app.close()


# -- no model, a broken model, no vector store ------------------------------------------------

def _standalone(tmp_path: Path, settings: dict):
    app = _app(tmp_path, symbolVectors=False)
    app.index()
    assert app.symbol_vectors is None
    sv = open_symbol_vectors(lambda: app.store, app.workspace.graph_id, tmp_path / "memory", settings)
    sv.start()
    sv.sync()
    assert sv.wait(60)
    return app, sv


@pytest.mark.parametrize("model", ["missing", "garbage"])
def test_a_broken_model_makes_the_leg_unavailable_not_an_error(tmp_path, model):
    bad = tmp_path / "model.onnx"
    if model == "garbage":
        bad.write_bytes(b"this is not an onnx model" * 100)
    app, sv = _standalone(tmp_path, {"embedder": "custom", "model_file": str(bad),
                                     "tokenizer_dir": default_model_spec().tokenizer_dir, "model_dim": 384})
    try:
        st = sv.status()
        assert st["state"] == "unavailable"
        assert st["reason"].startswith("embedder unavailable: ")
        assert ("does not exist" if model == "missing" else "cannot load embedding model") in st["reason"]
        res = sv.search("lower the price by some percent", 10)
        assert res == DenseResult(hits=[], state="unavailable", reason=st["reason"])
    finally:
        sv.close()
        app.close()


def test_embedder_off_makes_the_leg_unavailable(tmp_path):
    app = _app(tmp_path, embedder="none")
    try:
        app.index()
        st = app.symbol_vectors.status()
        assert st["state"] == "unavailable" and "embedder is off" in st["reason"]
        assert app.symbol_vectors.search("tax", 10).state == "unavailable"
    finally:
        app.close()


def test_a_vector_store_that_is_down_makes_the_leg_unavailable(tmp_path):
    app, sv = _standalone(tmp_path, {"vectors": "server", "milvus_uri": "http://127.0.0.1:9"})
    try:
        st = sv.status()
        assert st["state"] == "unavailable"
        assert "127.0.0.1:9" in st["reason"]
        res = sv.search("lower the price by some percent", 10)
        assert res.state == "unavailable" and res.hits == []
    finally:
        sv.close()
        app.close()


def test_the_setting_turns_it_off(tmp_path):
    app = _app(tmp_path, symbolVectors=False)
    try:
        assert app.symbol_vectors is None
    finally:
        app.close()
    assert load_settings(env={"CODESYNAPSE_SYMBOL_VECTORS": "0"}).symbol_vectors is False


def test_cli_index_computes_the_vectors_only_when_asked(tmp_path):
    import json
    import subprocess
    import sys

    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)

    def index(*flags):
        out = subprocess.run([sys.executable, "-m", "codesynapse", "index", str(root), "--data-dir",
                              str(tmp_path / "data"), "--json", *flags],
                             capture_output=True, text=True, timeout=600, check=True)
        return json.loads(out.stdout)

    assert "symbolVectors" not in index()  # the daemon computes them in the background
    sv = index("--vectors")["symbolVectors"]
    assert (sv["state"], sv["embedded"], sv["total"]) == ("ready", 23, 23)


def _write_repo(root: Path, base_doc: str) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "base.py").write_text(
        "class Base:\n"
        "    def convert(self, value):\n"
        f'        """{base_doc}"""\n'
        "        raise NotImplementedError\n", encoding="utf-8")
    (root / "impl.py").write_text(
        "from base import Base\n\n\n"
        "class Impl(Base):\n"
        "    def convert(self, value):\n"
        "        return value\n\n"
        "    def extra(self):\n"
        "        return 1\n\n\n"
        "class Deeper(Impl):\n"
        "    def convert(self, value):\n"
        "        return value\n", encoding="utf-8")


def test_an_undocumented_override_is_written_with_the_doc_it_inherits(tmp_path):
    # a method without a summary of its own has the summary of the method it overrides (as
    # inspect.getdoc, javadoc and rustdoc show it), two levels up too; one that overrides
    # nothing has none; an edit of the base's doc reaches the override's text at a live update
    # of the base's file alone
    root = tmp_path / "repo"
    _write_repo(root, "Turn a raw value into the target type.")
    app = App(root, load_settings({"data_dir": str(tmp_path / "data")}))
    try:
        _ready(app)
        rows = _rows(app)

        def text(qname: str, doc: str) -> str:
            cls = qname.split(".")[1]
            return text_hash(f"method convert. in impl {' '.join(split_words(cls))}. def convert(self, value). {doc}. "
                             "file impl")

        assert rows["impl.Impl.convert"] == text("impl.Impl.convert", "Turn a raw value into the target type")
        assert rows["impl.Deeper.convert"] == text("impl.Deeper.convert", "Turn a raw value into the target type")
        assert rows["impl.Impl.extra"] == text_hash("method extra. in impl impl. def extra(self). file impl")

        (root / "base.py").write_text((root / "base.py").read_text().replace(
            "Turn a raw value into the target type.", "Parse the text of a value."), encoding="utf-8")
        LiveUpdater(app)._apply({"base.py": "disk"})
        assert app.symbol_vectors.wait(60)
        rows = _rows(app)
        assert rows["impl.Impl.convert"] == text("impl.Impl.convert", "Parse the text of a value")
        assert rows["impl.Deeper.convert"] == text("impl.Deeper.convert", "Parse the text of a value")
    finally:
        app.close()
