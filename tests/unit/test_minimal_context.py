"""minimalContext ranking on a small real repository: a name the task shares with several
symbols counts for the one the task's other identifiers are linked to; a plain word of the
task that is a word of the found symbols' names describes them and is not looked up again; a
word in a comment is not code."""

from __future__ import annotations

from pathlib import Path

import pytest

from codesynapse.app import App
from codesynapse.methods import call_method
from codesynapse.settings import load_settings

FILES = {
    "timers.py": ('def set_timer(handler, delay):\n    """Ask the platform for a timer."""\n    return 1\n\n\n'
                  "def flush(queue):\n    for action in queue:\n        action.run()\n"),
    "actions.py": (
        "from timers import set_timer\n\n\n"
        "class AsyncAction:\n    def request_id(self, delay):\n        return set_timer(self.run, delay)\n\n"
        "    def run(self):\n        return None\n\n\n"
        "class QueueAction(AsyncAction):\n    def request_id(self, delay):\n        return 0\n\n\n"
        "class AsapAction(AsyncAction):\n    def request_id(self, delay):\n        return 2\n"
    ),
    # the word "ready" only in comments, and in the code of one function (in no symbol's name,
    # signature or summary: the lexical leg cannot find it, the literal leg reads the files)
    "notes.py": ("def explain():\n    # the runtime is ready\n    return 'x'\n\n\n"
                 "def boot():\n    # ready comes up here\n    return 1\n\n\n"
                 "def probe(runtime):\n    return runtime.ready\n"),
}


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    root: Path = tmp_path_factory.mktemp("minimal") / "repo"
    root.mkdir()
    for name, body in FILES.items():
        (root / name).write_text(body)
    # the lexical legs alone: the answers do not depend on when the symbol vectors are ready
    a = App(root, load_settings({"data_dir": str(root.parent / "data"), "workers": 1, "symbol_vectors": False}))
    a.index()
    yield a
    a.close()


def names(answer):
    return [c["qualifiedName"] for c in answer["cards"]]


def test_homonyms_are_told_apart_by_the_tasks_other_identifiers(app):
    a = call_method(app, "codesynapse/minimalContext",
                    {"task": "Which action asks for a timer with set_timer (request_id)?"})
    # request_id is written in three actions; only AsyncAction's calls set_timer. "action" is
    # a word of AsyncAction's name: it describes the symbols found, it is not looked up in the
    # code (where flush writes it: no literal leg). The lexical leg adds flush, a symbol of
    # timers.py ("timer" in its path), after the two the task names; the graph stage adds
    # AsyncAction.run, which request_id hands to set_timer (``self.run``: a read, no call)
    assert names(a) == ["timers.set_timer", "actions.AsyncAction.request_id", "actions.AsyncAction.run",
                        "timers.flush"]
    assert a["cards"][2]["legs"] == ["graph"] and a["cards"][3]["legs"] == ["lexical"]
    assert "literal" not in a["provenance"]["legs"]


def test_a_plain_word_is_looked_up_where_the_code_writes_it_not_in_comments(app):
    a = call_method(app, "codesynapse/minimalContext", {"task": "where is ready checked"})
    assert names(a) == ["notes.probe"]
    assert a["cards"][0]["legs"] == ["literal"] and a["cards"][0]["line"] == 12  # return runtime.ready
