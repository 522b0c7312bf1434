"""The role prior from the import graph (issue 16): library-path code that imports test code kept
outside its own folder and that only tests import, and the files of its folder that it imports
and that only tests and the harness import, is the test suite's harness (urllib3's
``dummyserver/``): it ranks like tests unless the task asks about tests, in minimalContext, in a
plain-English search and among the homonyms of a bare name. A library module that only tests
import (its public API, used by no other file of the repository), a package importing its own
tests and library code importing the tests but imported by library code stay library code."""

from __future__ import annotations

from codesynapse.context.budget import Deadline
from codesynapse.context.retrieval import (
    TEST,
    RetrievalConfig,
    Retriever,
    find_test_support,
)
from infra.apps import indexed_app

FILES = {
    "pkg/__init__.py": "",
    "pkg/auth.py": ("def strip_auth(headers, old_host, new_host):\n"
                    '    """Drop the authorization header on a redirect."""\n'
                    "    return headers\n"),
    "pkg/extra.py": "def rarely_used(value):\n    return value\n",
    "harness/__init__.py": "",
    "harness/server.py": ("def redirect_handler(request):\n"
                          '    """Answer with a redirect to another host, keeping the authorization header."""\n'
                          "    return request\n"),
    "harness/case.py": ("from tests.util import make_headers\n"
                        "from harness.server import redirect_handler\n"
                        "from pkg.auth import strip_auth\n\n\n"
                        "class ServerCase:\n    def start(self):\n        return redirect_handler(make_headers())\n\n\n"
                        "def strip_auth(headers):\n    return headers\n"),
    # a package that imports its own tests (to run them as a script) is no harness
    "app/__init__.py": "",
    "app/runner.py": "def run():\n    from app.tests.test_runner import test_run\n    return test_run\n",
    "app/tests/__init__.py": "",
    "app/tests/test_runner.py": "from app.runner import run\n\n\ndef test_run():\n    assert run()\n",
    # library code importing the test suite, imported by library code: no harness either
    "lib2/__init__.py": "",
    "lib2/helpers.py": "from tests.util import make_headers\n\n\ndef headers():\n    return make_headers()\n",
    "lib2/core.py": "from lib2.helpers import headers\n\n\ndef build():\n    return headers()\n",
    "tests/__init__.py": "",
    "tests/util.py": "def make_headers():\n    return {}\n",
    "tests/test_redirects.py": ("from harness.case import ServerCase\n"
                                "from harness.server import redirect_handler\n"
                                "from pkg.extra import rarely_used\n"
                                "from lib2.helpers import headers\n"
                                "\n\n"
                                "def test_server():\n    assert ServerCase().start() is not None\n"),
}
TASK = "a redirect to another host keeps the authorization header"


def _app(tmp_path):
    return indexed_app(tmp_path, FILES)


def test_the_harness_is_found_from_the_import_graph(tmp_path):
    a = _app(tmp_path)
    try:
        # case.py imports tests.util and only tests import it; server.py is imported by case.py
        # and a test only; the package's __init__ is imported by no one; pkg/extra.py only by a
        # test, app/runner.py imports its own tests, lib2/helpers.py is imported by lib2/core.py:
        # library
        assert find_test_support(a.store) == {"harness/case.py", "harness/server.py"}
    finally:
        a.close()


def test_the_harness_ranks_like_tests_unless_the_task_asks_about_tests(tmp_path):
    a = _app(tmp_path)
    try:
        cfg = RetrievalConfig(exact=False, lexical=True, dense=False, expand=True, priors=True)
        r = Retriever(a, a.store, cfg)
        got = r.rank(TASK, Deadline())
        order = [got.rows[i].qname for i in got.order]
        assert order.index("pkg.auth.strip_auth") < order.index("harness.server.redirect_handler")
        harness = next(got.rows[i] for i in got.order if got.rows[i].qname == "harness.server.redirect_handler")
        assert r.role(harness) == TEST
        # a task about tests asks for the harness too: no prior sets it back
        got = Retriever(a, a.store, cfg).rank(TASK + " in the tests", Deadline())
        order = [got.rows[i].qname for i in got.order]
        assert order.index("harness.server.redirect_handler") < order.index("pkg.auth.strip_auth")
    finally:
        a.close()


def test_a_plain_english_search_sets_the_harness_back_too(tmp_path):
    from codesynapse.methods import call_method

    a = _app(tmp_path)
    try:
        a.retrieval_config = RetrievalConfig(exact=False, lexical=True, dense=False, expand=True, priors=True)
        ans = call_method(a, "codesynapse/search", {"query": TASK, "mode": "compact", "limit": 10})
        found = [r["qualifiedName"] for r in ans["results"]]
        assert found.index("pkg.auth.strip_auth") < found.index("harness.server.redirect_handler")
    finally:
        a.close()


def test_a_bare_name_shared_with_the_harness_answers_for_the_library(tmp_path):
    from codesynapse.methods import call_method

    a = _app(tmp_path)
    try:
        ans = call_method(a, "codesynapse/symbolCard", {"selector": "strip_auth"})
        assert ans["card"]["qualifiedName"] == "pkg.auth.strip_auth"
        alt = [x["qualifiedName"] for n in ans["omitted"] if n["what"] == "alternatives" for x in n["alternatives"]]
        assert alt == ["harness.case.strip_auth"]
    finally:
        a.close()


def test_after_an_update_the_harness_is_refreshed_without_making_the_request_wait(tmp_path):
    """The harness of the version before answers a request made right after an update (it
    costs seconds on a kernel-size index); a background thread brings the new one."""
    import time

    from codesynapse.context.retrieval import test_support_of

    a = _app(tmp_path)
    try:
        assert test_support_of(a, a.store) == {"harness/case.py", "harness/server.py"}
        # case.py no longer imports the test suite: no file is a seed, there is no harness
        case = a.workspace.root / "harness" / "case.py"
        case.write_text(FILES["harness/case.py"].replace("from tests.util import make_headers\n", ""))
        a.index()
        assert find_test_support(a.store) == frozenset()
        assert test_support_of(a, a.store) == {"harness/case.py", "harness/server.py"}  # the version before
        deadline = time.monotonic() + 30
        while test_support_of(a, a.store) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert test_support_of(a, a.store) == frozenset()
    finally:
        a.close()
