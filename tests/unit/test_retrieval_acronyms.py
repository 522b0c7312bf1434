"""A word of capital letters in a task (issue 16): English writes acronyms so ("a POST answered
with 302", "the HTTP status"), and code writes them mostly inside strings. Such a word is an
identifier of the task only when a symbol is named so; otherwise it is a word, and the
function whose body writes ``"POST"`` is no exact match: it does not hold a card ahead of the
approximate candidates, nor cut them to the few shown beside the symbols a task names."""

from __future__ import annotations

from codesynapse.context.budget import Deadline
from codesynapse.context.minimal import NEAR_WITH_SURE
from codesynapse.context.retrieval import Retriever, acronym, code_like
from codesynapse.methods import call_method
from infra.apps import indexed_app

FILES = {
    "webkit/verbs.py": (
        "def post(url, body):\n"
        '    """Send a body to a url."""\n'
        '    return send("POST", url, body)\n\n\n'
        "def send(verb, url, body=None):\n"
        '    """Send one request."""\n'
        "    return (verb, url, body)\n"),
    "webkit/redirects.py": "".join(
        f"def redirect_step_{c}(status, verb):\n"
        f'    """Redirect status {c}: choose the verb of the next hop."""\n'
        "    return verb\n\n\n" for c in "abcdef"),
    "webkit/native.py": (
        "class CDLL:\n"
        '    """A shared library loaded with dlopen."""\n\n'
        "    def __init__(self, name):\n"
        "        self.name = name\n"),
}
TASK = "A POST answered with a redirect status: where is the verb of the next hop chosen?"


def _app(tmp_path):
    return indexed_app(tmp_path, FILES)


def test_an_acronym_is_a_word_unless_a_symbol_is_named_so():
    assert acronym("POST") and acronym("HTTP") and not acronym("CDLL_x") and not acronym("A")
    assert not code_like("POST") and code_like("HTTPServer") and code_like("max_retries")


def test_an_acronym_written_in_a_string_is_no_exact_match_and_does_not_cut_the_cards(tmp_path):
    a = _app(tmp_path)
    try:
        got = Retriever(a, a.store).rank(TASK, Deadline())
        names = {got.rows[i].qname for i in got.sure}
        assert "verbs.post" not in names and not names
        ans = call_method(a, "codesynapse/minimalContext", {"task": TASK})
        cards = [c["qualifiedName"] for c in ans["cards"]]
        steps = [f"redirects.redirect_step_{c}" for c in "abcdef"]
        # every redirect step is shown: more approximate cards than beside a named symbol
        assert set(steps) <= set(cards) and len(cards) > NEAR_WITH_SURE
    finally:
        a.close()


def test_an_acronym_a_symbol_is_named_is_an_identifier(tmp_path):
    a = _app(tmp_path)
    try:
        got = Retriever(a, a.store).rank("where does CDLL open the library", Deadline())
        assert "native.CDLL" in {got.rows[i].qname for i in got.sure}
    finally:
        a.close()
