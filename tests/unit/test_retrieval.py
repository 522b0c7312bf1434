"""The retrieval legs' parts with written-out values: sub-word splitting and stemming of
symbol fields and queries, roles, and the dense leg's provenance (unavailable, broken,
pending, stale hits) on a real index of fixtures/retrieval_repo."""

from __future__ import annotations

import shutil
from types import SimpleNamespace

import pytest
from codesynapse.app import App
from codesynapse.context import lexical
from codesynapse.context.retrieval import RetrievalConfig, asked_roles, role_of
from codesynapse.errors import InvalidParams
from codesynapse.methods import call_method
from codesynapse.settings import load_settings

from tests.e2e.lspclient import FIXTURES
from tests.infra.apps import indexed_app


def test_identifiers_split_into_sub_words():
    assert lexical.sub_words("HTTPServerError") == ["http", "server", "error"]
    assert lexical.sub_words("parse_http2") == ["parse", "http", "2"]
    assert lexical.sub_words("nextDelayMs") == ["next", "delay", "ms"]
    assert lexical.sub_words("__init__") == ["init"]


def test_fields_and_queries_are_stemmed_alike():
    # name (sub-words, stemmed, and the name whole), qualified name above it, signature,
    # summary and path words, function words left out except in the name
    assert lexical.symbol_fields("retryRequests", "net.client.Pool.retryRequests",
                                 "def retryRequests(self, max_tries)", "Retries the failed requests.",
                                 "net/client.py") == (
        "retri request retryrequests", "net client pool", "def retri request self max tri",
        "retri fail request", "net client")
    assert lexical.query_terms("Why are parsed headers retried?") == ["pars", "header", "retri"]
    assert lexical.stem("parsed") == lexical.stem("parse") == "pars"
    # an identifier written in several parts is a term whole, beside its parts
    assert lexical.query_terms("maxRetries") == ["maxretries", "max", "retri"]


def test_roles_from_paths_flags_kinds_and_languages():
    assert role_of("netkit/client.py") == "library"
    assert role_of("tests/test_client.py") == "test"
    assert role_of("pkg/util.py", is_test=True) == "test"
    assert role_of("src/foo_test.go") == "test"
    assert role_of("docs/guide.md", kind="section", language="markdown") == "docs"
    assert role_of("package.json", kind="key", language="json") == "config"
    assert role_of("examples/basic/main.go") == "example"
    assert role_of("vendor/github.com/x/y.go") == "vendored"
    assert role_of("api/v1/service_pb2.py") == "generated"
    assert asked_roles("which test covers the parser") == {"test"}
    assert asked_roles("where is the retry configured") == {"config"}
    assert asked_roles("why does the parser fail") == set()


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    root = tmp_path_factory.mktemp("retrieval") / "repo"
    shutil.copytree(FIXTURES / "retrieval_repo", root)
    a = App(root, load_settings({"data_dir": str(root.parent / "data"), "workers": 1, "symbol_vectors": False}))
    a.index()
    yield a
    a.close()


@pytest.fixture
def vectors(app):
    """Put a stand-in symbol-vector store on the app for one test, then take it away."""
    had = hasattr(app, "symbol_vectors")
    old = getattr(app, "symbol_vectors", None)

    def put(sv):
        app.symbol_vectors = sv

    yield put
    if had:
        app.symbol_vectors = old
    else:
        del app.symbol_vectors


def dense_entry(answer):
    return next(x for x in answer["provenance"]["legs"] if isinstance(x, dict) and x.get("leg") == "dense")


TASK = "send request retries on server error"


def test_without_a_dense_leg_the_lexical_legs_answer_and_say_why(app, vectors):
    vectors(None)
    a = call_method(app, "codesynapse/minimalContext", {"task": TASK})
    assert a["cards"][0]["qualifiedName"] == "netkit.client.send_request"
    assert "lexical" in a["provenance"]["legs"]
    assert dense_entry(a) == {"leg": "dense", "state": "unavailable", "reason": "dense leg not available"}


class _Broken:
    """A vector store whose model fails on every query (a fault the tests cannot cause with
    the real model, which is intact)."""

    def search(self, text, limit=10, timeout=2.0):
        raise RuntimeError("the model file is damaged")


class _Fixed:
    def __init__(self, hits, state="ready", reason=""):
        self.result = SimpleNamespace(hits=[SimpleNamespace(qname=q, path=p, score=s) for q, p, s in hits],
                                      state=state, reason=reason)

    def search(self, text, limit=10, timeout=2.0):
        return self.result


def test_a_broken_model_leaves_the_lexical_answer_with_the_reason(app, vectors):
    vectors(_Broken())
    a = call_method(app, "codesynapse/minimalContext", {"task": TASK})
    assert a["cards"][0]["qualifiedName"] == "netkit.client.send_request"
    assert dense_entry(a) == {"leg": "dense", "state": "unavailable",
                              "reason": "RuntimeError: the model file is damaged"}


def test_dense_hits_map_to_current_symbols_and_stale_ones_are_dropped(app, vectors):
    vectors(_Fixed([("netkit.backoff.nextDelayMs", "netkit/backoff.py", 0.9),
                    ("netkit.client.gone", "netkit/client.py", 0.8),  # no such symbol any more
                    ("netkit.client.parse", "netkit/old_client.py", 0.7)]))  # moved since embedded
    a = call_method(app, "codesynapse/minimalContext", {"task": "how long to wait before trying again"})
    assert "dense" in a["provenance"]["legs"]
    cards = {c["qualifiedName"]: c for c in a["cards"]}
    assert "dense" in cards["netkit.backoff.nextDelayMs"]["legs"]
    assert "netkit.client.gone" not in cards
    assert "dense" not in cards.get("netkit.client.parse", {}).get("legs", [])


def test_a_pending_dense_leg_is_said_in_provenance(app, vectors):
    vectors(_Fixed([], state="pending", reason="3 of 12 symbols embedded"))
    a = call_method(app, "codesynapse/minimalContext", {"task": TASK})
    assert dense_entry(a) == {"leg": "dense", "state": "pending", "reason": "3 of 12 symbols embedded"}
    assert a["cards"][0]["qualifiedName"] == "netkit.client.send_request"


def test_the_ablation_switches_turn_legs_off(app, vectors):
    vectors(None)
    try:
        app.retrieval_config = RetrievalConfig(lexical=False, dense=False, expand=False, priors=False)
        a = call_method(app, "codesynapse/minimalContext", {"task": TASK})
        # no lexical leg: no word of the task names a symbol, the literal leg reads the files
        # for them (send_request writes "retries")
        assert "lexical" not in a["provenance"]["legs"] and "graph" not in a["provenance"]["legs"]
        assert all(c["legs"] == ["literal"] for c in a["cards"])
        app.retrieval_config = RetrievalConfig(dense=False, expand=False, priors=False)
        b = call_method(app, "codesynapse/minimalContext", {"task": TASK})
        # without the role prior the test whose name holds every word of the task comes first;
        # without expansion the callee that does the work is not there
        assert b["cards"][0]["qualifiedName"] == "test_client.test_send_request_retries_request_on_server_error"
        assert "netkit.client._attempt" not in [c["qualifiedName"] for c in b["cards"]]
    finally:
        app.retrieval_config = RetrievalConfig()


def test_an_empty_task_names_the_field(app):
    with pytest.raises(InvalidParams) as e:
        call_method(app, "codesynapse/minimalContext", {"task": " \n "})
    assert e.value.field == "task"


def test_sqlite_leaves_out_query_terms_most_symbols_hold(tmp_path):
    """A term in more than 10% of the symbols and more than 1,000 of them is left out of the
    lexical query (ranking every symbol that holds it is what such a query costs, and BM25
    gives it almost no weight); alone, it stays."""
    root = tmp_path / "repo"
    root.mkdir()
    body = "".join(f"def check_{i}():\n    return {i}\n\n\n" for i in range(1100))
    (root / "big.py").write_text(body + "def parse():\n    return 0\n")
    a = App(root, load_settings({"data_dir": str(tmp_path / "data"), "workers": 1, "symbol_vectors": False}))
    try:
        a.index()
        store = a.store
        assert [r.qname for r, _ in store.lexical_search(["check", "pars"], 5)] == ["big.parse"]
        assert store.count_lexical(["check", "pars"]) == 1
        assert [r.qname for r, _ in store.lexical_search(["check"], 2)] == ["big.check_0", "big.check_1"]
        assert store.count_lexical(["check"]) == 1100
    finally:
        a.close()


def test_the_graph_hop_gives_a_callee_many_functions_call_less_than_the_one_doing_the_work(tmp_path):
    """The hop's share for a callee is divided by the square root of the callee's own
    callers (as the hit's share is by its callees): ``compact_ledger`` is called only by the
    hit and does its work; ``log_event`` is a helper six functions call. Before, both got
    the same share."""
    helpers = "".join(f"def task_{i}():\n    log_event('{i}')\n\n\n" for i in range(5))
    a = indexed_app(tmp_path, {"books.py": (
        "def log_event(msg):\n    return msg\n\n\n"
        "def compact_ledger(rows):\n    return rows\n\n\n"
        "def archive_old_entries(rows):\n"
        "    \"\"\"Archive old ledger entries.\"\"\"\n"
        "    log_event('archive')\n    return compact_ledger(rows)\n\n\n" + helpers)})
    try:
        from codesynapse.context.budget import Deadline
        from codesynapse.context.retrieval import Retriever

        cfg = RetrievalConfig(exact=False, lexical=True, dense=False, expand=True, priors=True)
        got = Retriever(a, a.store, cfg).rank("archive old entries", Deadline())
        by = {got.rows[i].qname: got.score[i] for i in got.order}
        assert list(by)[0] == "books.archive_old_entries"
        assert by["books.compact_ledger"] > 2 * by["books.log_event"]  # 1/sqrt(1) vs 1/sqrt(6)
    finally:
        a.close()


def test_the_summary_in_the_authors_words_outranks_a_name_sharing_two_words(tmp_path):
    """A task in plain words is matched against the one field written in plain words, the
    summary, at half the name's weight (context/lexical.py FIELD_WEIGHTS): the function whose
    docstring says what the task asks outranks one whose name holds two words of it (with the
    summary at the signature's weight, the name won: 6.53 against 4.86)."""
    a = indexed_app(tmp_path, {"pool.py": (
        "def discard_connection(item):\n    return None\n\n\n"
        "def put_back(conn):\n"
        "    \"\"\"Drop the connection with a warning when the pool is full.\"\"\"\n"
        "    return conn\n\n\n"
        + "".join(f"def other_{i}(x):\n    \"\"\"Return x.\"\"\"\n    return x\n\n\n" for i in range(10)))})
    try:
        from codesynapse.context.budget import Deadline
        from codesynapse.context.retrieval import Retriever

        cfg = RetrievalConfig(exact=False, lexical=True, dense=False, expand=False, priors=True)
        got = Retriever(a, a.store, cfg).rank("connection discarded with a warning because the pool is full",
                                              Deadline())
        assert [got.rows[i].qname for i in got.order][:2] == ["pool.put_back", "pool.discard_connection"]
    finally:
        a.close()


def test_the_role_prior_orders_the_dense_leg_before_its_cut(tmp_path):
    """The dense leg, like the lexical one, reads ``LEG_POOL`` times ``LEG_LIMIT`` hits and
    lets the role prior order them before keeping ten: twelve tests whose metadata lies
    nearer the task than the library function they exercise no longer fill the leg's ten
    places (before, the leg kept the vector store's first ten hits, all tests, and the
    library function was not a candidate at all)."""
    tests = "".join(f"def test_flush_{i}():\n    flush_buffer([])\n\n\n" for i in range(12))
    a = indexed_app(tmp_path, {"netio/__init__.py": "",
                              "netio/buffer.py": "def flush_buffer(rows):\n    return rows\n",
                              "tests/test_buffer.py": "from netio.buffer import flush_buffer\n\n\n" + tests})
    try:
        from codesynapse.context.budget import Deadline
        from codesynapse.context.retrieval import LEG_LIMIT, Retriever

        hits = [(f"test_buffer.test_flush_{i}", "tests/test_buffer.py", 0.9 - i * 0.01) for i in range(12)]
        hits.append(("netio.buffer.flush_buffer", "netio/buffer.py", 0.6))
        a.symbol_vectors = _Fixed(hits)
        cfg = RetrievalConfig(exact=False, lexical=False, dense=True, expand=False, priors=True)
        got = Retriever(a, a.store, cfg).rank("when is the write buffer emptied", Deadline())
        order = [got.rows[i].qname for i in got.order]
        assert order[0] == "netio.buffer.flush_buffer"
        assert len(order) == LEG_LIMIT
        assert order[1:] == [f"test_buffer.test_flush_{i}" for i in range(9)]
        # without the prior the leg keeps the vector order: the library function is cut
        off = Retriever(a, a.store, RetrievalConfig(exact=False, lexical=False, dense=True, expand=False,
                                                    priors=False)).rank("when is the write buffer emptied",
                                                                        Deadline())
        assert "netio.buffer.flush_buffer" not in [off.rows[i].qname for i in off.order]
    finally:
        a.symbol_vectors = None  # the stand-in has nothing to close
        a.close()


class _Changing:
    """A dense leg whose answer changes between two requests while the index does not: the
    vectors still being embedded, or a query that timed out (the stand-in swaps its hits when
    told; the tests cannot time the real model's progress)."""

    def __init__(self, first, later):
        self.hits, self.later = first, later

    def search(self, text, limit=10, timeout=2.0):
        return SimpleNamespace(hits=[SimpleNamespace(qname=q, path=p, score=s) for q, p, s in self.hits],
                               state="pending", reason="some symbols embedded")


def test_a_search_cursor_keeps_the_first_pages_dense_hits(app, vectors):
    first = [("netkit.backoff.nextDelayMs", "netkit/backoff.py", 0.9)]
    later = [("netkit.client.parse", "netkit/client.py", 0.9)]
    q = {"query": "request retry delay", "limit": 1}

    def walk(sv, swap):
        vectors(sv)
        a = call_method(app, "codesynapse/search", q)
        names = [r["qualifiedName"] for r in a["results"]]
        if swap:
            sv.hits = sv.later
        while a.get("cursor"):
            a = call_method(app, "codesynapse/search", {**q, "cursor": a["cursor"]})
            assert dense_entry(a)["reason"] == "as on the first page (the cursor keeps its dense hits)"
            names += [r["qualifiedName"] for r in a["results"]]
        return names

    steady = walk(_Changing(first, first), swap=False)
    assert len(steady) >= 4 and "netkit.backoff.nextDelayMs" in steady and "netkit.client.parse" not in steady
    assert walk(_Changing(first, later), swap=True) == steady


def test_tests_found_by_their_words_lead_to_the_code_they_exercise(tmp_path):
    """A test is named in the words of the behaviour it checks; the function it tests is named
    for its mechanism (``normalize_block``) and shares no word with the task. The role prior
    sets the tests back behind library functions that share a word of the task, so the graph
    hop (from the five best candidates) never starts from them: the ``tested`` leg hands
    their place on to their library callees, a callee many functions call (``load_text``)
    getting less than the one only they call. Before, ``normalize_block`` was no candidate."""
    a = _tested_app(tmp_path)
    try:
        from codesynapse.context.budget import Deadline
        from codesynapse.context.retrieval import Retriever

        cfg = RetrievalConfig(exact=False, lexical=True, dense=False, expand=True, priors=True)
        got = Retriever(a, a.store, cfg).rank("trailing whitespace is not stripped from every line", Deadline())
        order = [got.rows[i].qname for i in got.order]
        assert "textkit.clean.normalize_block" in order[:8]
        i = got.order[order.index("textkit.clean.normalize_block")]
        assert "tested" in got.legs[i]
        assert "tested" in got.provenance
        if "textkit.clean.load_text" in order:
            assert order.index("textkit.clean.load_text") > order.index("textkit.clean.normalize_block")
        # without the graph stages the leg does not run
        off = Retriever(a, a.store, RetrievalConfig(exact=False, lexical=True, dense=False, expand=False,
                                                    priors=True)).rank(
            "trailing whitespace is not stripped from every line", Deadline())
        assert "textkit.clean.normalize_block" not in [off.rows[i].qname for i in off.order]
    finally:
        a.close()


def test_tests_calling_a_hit_do_not_thin_out_its_library_caller(tmp_path):
    """The graph hop splits a hit's share over its callers; the callers the role prior sets
    back (tests) count for their prior. ``enforce_quota`` is called by one library function
    and twenty tests: counted whole, the 21 callers were more than ``EXPAND_FANOUT`` and the
    hop only reinforced candidates already found, so ``submit_job`` (which shares no word
    with the task) was no candidate; counted at the prior, they are 6 and it is."""
    tests = "".join(f"def test_case_{i}():\n    assert enforce_quota(1) == 1\n\n\n" for i in range(20))
    a = indexed_app(tmp_path, {
        "jobs/__init__.py": "",
        "jobs/core.py": ("def enforce_quota(n):\n    \"\"\"Reject work over the quota.\"\"\"\n    return n\n\n\n"
                         "def submit_job(n):\n    return enforce_quota(n)\n"),
        "tests/test_core.py": "from jobs.core import enforce_quota\n\n\n" + tests})
    try:
        from codesynapse.context.budget import Deadline
        from codesynapse.context.retrieval import Retriever

        cfg = RetrievalConfig(exact=False, lexical=True, dense=False, expand=True, priors=True)
        got = Retriever(a, a.store, cfg).rank("work over the quota is rejected", Deadline())
        order = [got.rows[i].qname for i in got.order]
        assert order[0] == "jobs.core.enforce_quota"
        assert "jobs.core.submit_job" in order
        assert got.legs[got.order[order.index("jobs.core.submit_job")]] == {"graph"}
    finally:
        a.close()


def _tested_app(tmp_path):
    """Two tests named in the words of the behaviour they check, the library function they
    exercise named for its mechanism (``normalize_block``: no word of the query), a helper
    every reader calls (``load_text``) and library functions sharing the query's words."""
    distractors = "".join(f"def {n}(x):\n    return x\n\n\n" for n in (
        "split_lines", "strip_prefix", "whitespace_chars", "last_line", "every_item", "line_count"))
    users = "".join(f"def read_{i}():\n    return load_text('{i}')\n\n\n" for i in range(8))
    return indexed_app(tmp_path, {
        "textkit/__init__.py": "",
        "textkit/clean.py": ("def normalize_block(text):\n    return text\n\n\n"
                             "def load_text(path):\n    return path\n\n\n" + distractors + users),
        "tests/test_clean.py": (
            "from textkit.clean import load_text, normalize_block\n\n\n"
            "def test_strips_trailing_whitespace_from_every_line():\n"
            "    assert normalize_block(load_text('a ')) == 'a'\n\n\n"
            "def test_trailing_whitespace_on_the_last_line_is_stripped():\n"
            "    assert normalize_block(load_text('b ')) == 'b'\n")})


def test_a_search_lists_matches_and_leaves_the_tested_leg_to_minimal_context(tmp_path):
    """``search`` lists what matches its words (lexical and dense legs); the ``tested`` leg
    infers code the query does not match (what the matching tests call), as the graph hop
    does, and answers in ``minimalContext`` only: ``normalize_block`` (no word of the query)
    is a card of the task's answer, not a search result."""
    a = _tested_app(tmp_path)
    try:
        task = "trailing whitespace is not stripped from every line"
        got = call_method(a, "codesynapse/search", {"query": task})
        legs = {r["qualifiedName"]: r.get("legs") for r in got["results"]}
        assert "textkit.clean.normalize_block" not in legs
        assert "tested" not in got["provenance"]["legs"]
        assert legs["textkit.clean.whitespace_chars"] == ["lexical"]
        mc = call_method(a, "codesynapse/minimalContext", {"task": task})
        cards = {c["qualifiedName"]: c.get("legs") for c in mc["cards"]}
        assert "tested" in cards["textkit.clean.normalize_block"]
    finally:
        a.close()


def test_fusion_weighs_a_legs_candidates_by_their_weights():
    """``fuse`` is RRF (k = 60): a candidate gets 1 / (60 + rank) from each leg holding it;
    a leg with weights gives ``w / (60 + rank)`` instead (an id it does not weigh: 1)."""
    from codesynapse.context.retrieval import fuse
    from codesynapse.memory.rrf import rrf

    plain = fuse([[1, 2, 3], [3, 4]])
    assert plain == pytest.approx({1: 1 / 61, 2: 1 / 62, 3: 1 / 63 + 1 / 61, 4: 1 / 62})
    assert plain == pytest.approx({int(k): v for k, v in rrf([["1", "2", "3"], ["3", "4"]], 60)})
    weighed = fuse([[1, 2, 3], [3, 4, 5]], [None, {3: 0.5, 4: 0.1}])
    assert weighed == pytest.approx({1: 1 / 61, 2: 1 / 62, 3: 1 / 63 + 0.5 / 61, 4: 0.1 / 62, 5: 1 / 63})
    assert fuse([[7, 7, 8]]) == pytest.approx({7: 1 / 61, 8: 1 / 63})  # an id counts once per leg, at its best rank


def test_the_tested_legs_candidates_weigh_their_score_over_the_best(tmp_path):
    """Both tests call ``normalize_block`` and ``load_text`` once; each callee's share is
    divided by the square root of the calls that reach it in the whole graph: 2 for
    ``normalize_block`` (the two tests), 10 for ``load_text`` (the two tests and eight
    readers). Fusion weighs ``normalize_block`` 1 and ``load_text`` sqrt(2 / 10) = 0.447, not
    the full share of its rank 2 (before, every candidate of the leg weighed 1)."""
    a = _tested_app(tmp_path)
    try:
        from codesynapse.context.budget import Deadline
        from codesynapse.context.retrieval import Retriever

        cfg = RetrievalConfig(exact=False, lexical=True, dense=False, expand=True, priors=True)
        r = Retriever(a, a.store, cfg)
        got = r.rank("trailing whitespace is not stripped from every line", Deadline())
        by_name = {got.rows[i].qname: w for i, w in r.tested_weight.items()}
        assert by_name == pytest.approx({"textkit.clean.normalize_block": 1.0,
                                         "textkit.clean.load_text": (2 / 10) ** 0.5})
        load_text = next(i for i in got.rows if got.rows[i].qname == "textkit.clean.load_text")
        assert "tested" in got.legs[load_text]
    finally:
        a.close()


def test_the_lexical_leg_prefers_the_symbol_covering_more_of_the_tasks_terms(tmp_path):
    """BM25 sums over the terms a symbol holds: ``Runner.finish`` holds one word of the task
    ("finished"), rare in this tree, and outranks ``time_left``, whose fields hold three of its
    five terms (bar, show, time), each common here. The lexical leg multiplies BM25 by the
    coordination factor of classic Lucene scoring (the share of the task's terms a symbol
    holds: 1/5 against 3/5), so the symbol that covers more of what the task says comes first
    (before, the leg kept the BM25 order and ``Runner.finish`` led)."""
    fillers = [("a", "Show the bar"), ("b", "Show the time"), ("c", "Redraw the bar"), ("d", "Keep the time"),
               ("e", "Show a frame"), ("f", "Bar and time"), ("g", "Show the time bar"), ("h", "Time the bar"),
               ("i", "Show it"), ("j", "Clear the screen"), ("k", "Move the cursor"), ("l", "Beep")]
    a = indexed_app(tmp_path, {
        "ui/__init__.py": "",
        "ui/core.py": "class Runner:\n    def finish(self):\n        return None\n",
        "ui/clock.py": 'def time_left(bar):\n    """Shows how much time is left on the bar."""\n    return 0\n',
        "ui/other.py": "".join(f'def draw_{n}(x):\n    """{w}."""\n    return x\n\n\n' for n, w in fillers)})
    try:
        from codesynapse.context.budget import Deadline
        from codesynapse.context.retrieval import Retriever

        task = "the bar shows the wrong time once finished"
        cfg = RetrievalConfig(exact=False, lexical=True, dense=False, expand=False, priors=True)
        r = Retriever(a, a.store, cfg)
        assert [x.qname for x, _s in r.lexical_search(task, 2)] == ["ui.core.Runner.finish", "ui.clock.time_left"]
        got = r.rank(task, Deadline())
        order = [got.rows[i].qname for i in got.order]
        assert order[0] == "ui.clock.time_left"
        assert order.index("ui.other.draw_g") < order.index("ui.core.Runner.finish")  # 3/5 of the terms against 1/5
        # search runs the same leg
        a.retrieval_config = cfg
        found = call_method(a, "codesynapse/search", {"query": task, "mode": "compact"})
        assert found["results"][0]["qualifiedName"] == "ui.clock.time_left"
    finally:
        a.close()


def _rank(a, task):
    from codesynapse.context.budget import Deadline
    from codesynapse.context.retrieval import Retriever

    cfg = RetrievalConfig(exact=False, lexical=True, dense=False, expand=True, priors=True)
    got = Retriever(a, a.store, cfg).rank(task, Deadline())
    return got, [got.rows[i].qname for i in got.order]


def test_the_graph_stage_reaches_the_override_of_a_method_the_legs_found(tmp_path):
    """Overrides are graph edges: the words of the task are in the base method's summary
    (``Figure.area``), the work is in the subclass's override (``Circle.area``), which shares
    no word with the task and is called by nothing. The stage gives the override a share of
    the base's score; a subclass that does not override the method adds nothing. Before,
    ``Circle.area`` was no candidate."""
    a = indexed_app(tmp_path, {"geometry.py": (
        "class Figure:\n"
        "    def area(self):\n"
        "        \"\"\"How big the surface is.\"\"\"\n"
        "        raise NotImplementedError\n\n\n"
        "class Circle(Figure):\n"
        "    def area(self):\n"
        "        return 3.14159 * self.r * self.r\n\n\n"
        "class Square(Figure):\n"
        "    side = 1\n")})
    try:
        got, order = _rank(a, "how big is the surface")
        assert order[0] == "geometry.Figure.area"
        assert "geometry.Circle.area" in order
        circle = got.order[order.index("geometry.Circle.area")]
        assert got.legs[circle] == {"graph"}
        assert got.score[circle] < got.score[got.order[0]]
        assert "geometry.Square.area" not in order
    finally:
        a.close()


def test_the_graph_stage_sends_on_what_a_hop_brought_one_more_hop(tmp_path):
    """Two rounds of pushing scores along the graph: the function the task describes
    (``rotate_credentials``) calls ``swap_secrets``, which calls ``persist_vault``, where the
    work ends; neither shares a word with the task. The first round gives ``swap_secrets`` a
    share, the second sends on what that share brought: ``persist_vault`` is a candidate,
    below the function that called it. Before (one hop), it was none."""
    a = indexed_app(tmp_path, {"keys.py": (
        "def persist_vault(blob):\n    return blob\n\n\n"
        "def swap_secrets(old):\n    return persist_vault(old[::-1])\n\n\n"
        "def rotate_credentials(store):\n"
        "    \"\"\"Rotate the stored credentials.\"\"\"\n"
        "    return swap_secrets(store)\n")})
    try:
        got, order = _rank(a, "rotate the stored credentials")
        assert order[0] == "keys.rotate_credentials"
        assert "keys.persist_vault" in order
        score = {q: got.score[i] for q, i in zip(order, got.order)}
        assert got.legs[got.order[order.index("keys.persist_vault")]] == {"graph"}
        assert score["keys.rotate_credentials"] > score["keys.swap_secrets"] > score["keys.persist_vault"] > 0
    finally:
        a.close()


def test_the_graph_stage_hands_a_constants_score_to_the_code_of_its_file_using_it(tmp_path):
    """A constant or a variable does no work; the functions that read or assign it do. The
    index keeps no reference edge, so the stage reads the constant's own file for its name
    (a word, not in a comment): ``read_text`` reads ``BODY_LIMIT`` and becomes a candidate;
    ``describe`` only names it in a comment and does not. Before, ``read_text`` (no word of
    the task in its name, signature or path) was no candidate."""
    a = indexed_app(tmp_path, {"client.py": (
        "BODY_LIMIT = 10 * 1024 * 1024\n\n\n"
        "def read_text(resp):\n"
        "    data = resp.read(BODY_LIMIT + 1)\n"
        "    if len(data) > BODY_LIMIT:\n"
        "        raise ValueError('too big')\n"
        "    return data.decode()\n\n\n"
        "def describe():\n"
        "    # BODY_LIMIT caps what read_text reads\n"
        "    return 'reader'\n")})
    try:
        got, order = _rank(a, "the body limit")
        assert order[0] == "client.BODY_LIMIT"
        assert got.rows[got.order[0]].kind == "constant"
        assert "client.read_text" in order
        assert got.legs[got.order[order.index("client.read_text")]] == {"graph"}
        assert "client.describe" not in order
    finally:
        a.close()


def test_the_graph_stage_counts_the_calls_that_reach_a_callee(tmp_path):
    """A callee's share is divided by the square root of the calls that reach it, counted
    (one counting read per callee), not read: ``log_line`` is called from 400 functions and
    ``audit_entry`` from 250, so the first is the more common helper and gets the smaller
    share (sqrt(251/401) of the other's). Before, up to 200 callers of each were read to count
    the distinct ones: both counted 200 and got the same share."""
    many = "".join(f"def job_{i}():\n    log_line('{i}')\n\n\n" for i in range(400))
    some = "".join(f"def step_{i}():\n    audit_entry('{i}')\n\n\n" for i in range(250))
    a = indexed_app(tmp_path, {"ops.py": (
        "def log_line(msg):\n    return msg\n\n\n"
        "def audit_entry(msg):\n    return msg\n\n\n"
        "def reconcile_balances(rows):\n"
        "    \"\"\"Reconcile the account balances.\"\"\"\n"
        "    log_line('start')\n    return audit_entry(rows)\n\n\n" + many + some)})
    try:
        got, order = _rank(a, "reconcile the account balances")
        score = {q: got.score[i] for q, i in zip(order, got.order)}
        assert order[0] == "ops.reconcile_balances"
        assert score["ops.audit_entry"] > 1.2 * score["ops.log_line"] > 0
    finally:
        a.close()


def test_the_graph_stage_hands_a_types_score_to_the_functions_taking_it(tmp_path):
    """A type's takers are graph edges: the task's words are in the type's summary
    (``VersionGate``); the work is in ``admit``, which takes one as a parameter, shares no
    word with the task and neither calls nor is called by the type. The stage gives ``admit``
    a share of the type's score. ``gate_of`` only returns one (it makes, not takes it),
    ``note`` has a parameter whose words are the type's but whose type is not, and
    ``check`` takes ``other.VersionGate``, another module's type of the same name: none of
    them gets a share. Before, ``admit`` was no candidate."""
    a = indexed_app(tmp_path, {"gates.py": (
        "import other\n\n\n"
        "class VersionGate:\n"
        "    \"\"\"The release a serialized field first appeared in.\"\"\"\n"
        "    number = 0\n\n\n"
        "def admit(gate: VersionGate, configured: int) -> bool:\n"
        "    return gate.number <= configured\n\n\n"
        "def gate_of(column) -> VersionGate:\n"
        "    return column.gate\n\n\n"
        "def note(version_gate):\n"
        "    return version_gate\n\n\n"
        "def check(gate: other.VersionGate) -> bool:\n"
        "    return bool(gate)\n"),
        "other.py": "class VersionGate:\n    pass\n"})
    try:
        got, order = _rank(a, "the release a serialized field first appeared in")
        assert order[0] == "gates.VersionGate"
        assert "gates.admit" in order
        admit = got.order[order.index("gates.admit")]
        assert got.legs[admit] == {"graph"}
        assert 0 < got.score[admit] < got.score[got.order[0]]
        for q in ("gates.gate_of", "gates.note", "gates.check"):
            assert q not in order
    finally:
        a.close()


def test_a_signatures_parameters_are_the_parentheses_after_its_name():
    from codesynapse.context.retrieval import _params

    assert _params("func (n *node) insert(key string, child *node) *node", "insert") == "key string, child *node"
    assert _params("pub fn into_string(self) -> io::Result<String>", "into_string") == "self"
    assert _params("def f(a: Callable[[int], str] = g(1)) -> Gate", "f") == "a: Callable[[int], str] = g(1)"
    assert _params("fn get<T: Clone>(x: T, y: Gate) -> T", "get") == "x: T, y: Gate"
    assert _params("func Map[K comparable](m K) K", "Map") == "m K"
    assert _params("VersionGate", "admit") == "VersionGate"  # no parameter list: all of it
    # the name whole, the first place followed by its parameter list
    assert _params("def ff(a) -> f  # f (b)", "f") == "b"
    assert _params("$f(a) _f(b) f [T] (c)", "f") == "c"


def test_the_takers_read_is_bound_to_its_graph_before_its_limit(tmp_path):
    """``signature_mentions`` reads the signatures naming a type in one read, graph-bound:
    another graph in the same file whose forty functions take a ``Ledger`` does not crowd
    out the function of this graph that does (the limit counts this graph's rows: here the
    class, whose own signature names it, and the function), and
    none of the other graph's rows is answered."""
    from codesynapse.index.indexer import Indexer
    from codesynapse.store.sqlite.graph import SqliteGraphStore

    other, mine = tmp_path / "other", tmp_path / "mine"
    other.mkdir()
    mine.mkdir()
    (other / "books.py").write_text("class Ledger:\n    pass\n\n\n" + "".join(
        f"def close_{i}(book: Ledger) -> None:\n    return None\n\n\n" for i in range(40)))
    (mine / "books.py").write_text("class Ledger:\n    pass\n\n\n"
                                   "def settle(book: Ledger, note: str) -> None:\n    return None\n\n\n"
                                   "def unrelated(count: int) -> int:\n    return count\n")
    db = tmp_path / "g.db"
    a = SqliteGraphStore(db, "other")
    Indexer(other, a, None, workers=1).index_tree()
    b = SqliteGraphStore(db, "mine")
    Indexer(mine, b, None, workers=1).index_tree()
    try:
        got = b.signature_mentions(["Ledger", "Nowhere"], 5)
        assert [r.qname for r in got["Ledger"]] == ["books.Ledger", "books.settle"]  # the class itself too
        assert "Nowhere" not in got
        assert len(a.signature_mentions(["Ledger"], 5)["Ledger"]) == 5
    finally:
        a.close()
        b.close()
