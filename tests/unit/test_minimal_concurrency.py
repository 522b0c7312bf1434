"""Graph requests on the embedded store answer at most as many at once as the machine has
cores; the others wait their turn and are answered (issue 16 #6: minimalContext at concurrency
8 on 2 cores, side by side they slowed each other; a 2 ms symbolCard waited behind every other
request's slices of the GIL). On a server backend only minimalContext takes a turn."""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from codesynapse.context import cards as cards_mod
from codesynapse.context import minimal as minimal_mod
from codesynapse.methods import call_method
from tests.infra.apps import indexed_app


def test_minimal_context_ranks_at_most_a_core_count_of_requests_at_once(tmp_path: Path, monkeypatch) -> None:
    files = {f"pkg/m{i}.py": f'def parse_header_{i}(raw):\n    """Parse a header line."""\n    return raw\n'
             for i in range(6)}
    app = indexed_app(tmp_path, files)
    calls = [lambda i=i: call_method(app, "codesynapse/minimalContext", {"task": f"where is header line {i} parsed"})
             for i in range(8)]
    most, answers = _most_at_once(monkeypatch, minimal_mod.MinimalContextAnswers, "minimal_context", calls)
    assert len(answers) == 8 and all(a["cards"] for a in answers)
    assert most == min(8, os.cpu_count() or 1)


def test_waiting_requests_take_their_turns_in_the_order_they_came() -> None:
    from codesynapse.context.service import _Turns

    turns = _Turns(1)
    order: list[int] = []
    turns.__enter__()  # the place is taken
    threads = []
    for k in range(5):
        def wait(k=k):
            with turns:
                order.append(k)
        t = threading.Thread(target=wait)
        t.start()
        threads.append(t)
        deadline = time.monotonic() + 5
        while len(turns._waiting) < k + 1 and time.monotonic() < deadline:
            time.sleep(0.001)  # the next one comes once this one waits
    turns.__exit__(None, None, None)
    for t in threads:
        t.join(5)
    assert order == [0, 1, 2, 3, 4]
    with turns:  # and the place is free again
        pass


def _most_at_once(monkeypatch, cls, name: str, calls) -> tuple[int, list]:
    """How many calls of ``cls.name`` ran at once at most while ``calls`` ran on 8 threads
    (each call held long enough for the others to arrive), and the answers."""
    running, most = [0], [0]
    lock = threading.Lock()
    real = getattr(cls, name)

    def counted(self, prm):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        try:
            time.sleep(0.05)  # hold the place long enough for the others to arrive
            return real(self, prm)
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(cls, name, counted)
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda f: f(), calls))
    return most[0], answers


def test_symbol_cards_on_sqlite_answer_at_most_a_core_count_at_once(tmp_path: Path, monkeypatch) -> None:
    app = indexed_app(tmp_path, {f"pkg/m{i}.py": f"def parse_header_{i}(raw):\n    return raw\n" for i in range(8)})
    assert app.settings.backend == "sqlite"
    calls = [lambda i=i: call_method(app, "codesynapse/symbolCard", {"selector": f"m{i}.parse_header_{i}"})
             for i in range(8)]
    most, answers = _most_at_once(monkeypatch, cards_mod.CardAnswers, "symbol_card", calls)
    assert all(a["found"] for a in answers)
    assert most == min(8, os.cpu_count() or 1)


def test_on_a_server_backend_only_minimal_context_takes_a_turn() -> None:
    from types import SimpleNamespace

    from codesynapse.context.service import CPU_TURNS
    from codesynapse.services import Services

    for backend in ("neo4j", "hugegraph"):
        svc = Services(SimpleNamespace(settings=SimpleNamespace(backend=backend)))
        assert svc.turn("codesynapse/minimalContext") is CPU_TURNS
        assert svc.turn("codesynapse/symbolCard") is not CPU_TURNS
        assert svc.turn("codesynapse/callGraph") is not CPU_TURNS
    svc = Services(SimpleNamespace(settings=SimpleNamespace(backend="sqlite")))
    assert all(svc.turn(m) is CPU_TURNS for m in ("codesynapse/symbolCard", "codesynapse/callGraph",
                                                  "codesynapse/search", "codesynapse/minimalContext"))


def test_a_thread_holding_a_turn_enters_again_without_waiting() -> None:
    from codesynapse.context.service import _Turns

    turns = _Turns(1)
    done = threading.Event()

    def nested() -> None:
        with turns, turns:
            done.set()

    t = threading.Thread(target=nested, daemon=True)
    t.start()
    t.join(5)
    assert done.is_set()
    taken = threading.Event()

    def other() -> None:
        with turns:
            taken.set()

    t2 = threading.Thread(target=other, daemon=True)
    t2.start()
    t2.join(5)
    assert taken.is_set()  # the place was given back once, after the outer exit
