"""The numbers a task writes (issue 16): "a POST answered with 302 is followed as a GET" names a
status that code writes as it is (``301 | 302 | 303 =>``); a number of three digits or more is
looked up by the literal leg where the code writes it (not in a comment), weighed as a plain
word: the function handling that status is a candidate though no word of the task is in its
metadata."""

from __future__ import annotations

from codesynapse.context.budget import Deadline
from codesynapse.context.retrieval import _NUMBER, Retriever
from codesynapse.methods import call_method
from infra.apps import indexed_app

FILES = {
    "netkit/hops.py": (
        "def next_hop(status, verb):\n"
        "    if status in (301, 302, 303):\n"
        "        return 'GET'\n"
        "    return verb\n"),
    "netkit/client.py": (
        "def send(request):\n"
        '    """Send a request and follow what the server answers."""\n'
        "    # a 302 is handled by the hop code\n"
        "    return request\n\n\n"
        "def answer(request):\n"
        '    """The answer of the server to a request."""\n'
        "    return request\n"),
}
TASK = "A request the server answered with 302 is sent again with another verb. Where is that decided?"


def test_the_numbers_of_a_task_are_three_digits_or_more_not_in_a_version():
    assert _NUMBER.findall("answered 302, then 307; v1.2.300, 3.14159, 20 MB, 404. 500x (405)") == [
        "302", "307", "404", "405"]
    assert _NUMBER.findall("a limit of 10,000 rows or 1,500 tokens, 2048 bytes") == ["2048"]


def test_a_number_of_the_task_finds_the_code_writing_it(tmp_path):
    a = indexed_app(tmp_path, FILES)
    try:
        got = Retriever(a, a.store).rank(TASK, Deadline())
        legs = {got.rows[i].qname: got.legs.get(i, set()) for i in got.order}
        assert "literal" in legs.get("hops.next_hop", set())
        assert "literal" not in legs.get("client.send", set())  # written in a comment there
        ans = call_method(a, "codesynapse/minimalContext", {"task": TASK})
        assert "hops.next_hop" in [c["qualifiedName"] for c in ans["cards"]]
    finally:
        a.close()
