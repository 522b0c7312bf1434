"""minimalContext ranks at most as many requests at once as the machine has cores; the
others wait their turn and are answered (issue 16 #6: at concurrency 8 on 2 cores, side by
side they slowed each other)."""

from __future__ import annotations

import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from codesynapse.context import minimal as minimal_mod
from codesynapse.methods import call_method
from tests.infra.apps import indexed_app


def test_minimal_context_ranks_at_most_a_core_count_of_requests_at_once(tmp_path: Path, monkeypatch) -> None:
    files = {f"pkg/m{i}.py": f'def parse_header_{i}(raw):\n    """Parse a header line."""\n    return raw\n'
             for i in range(6)}
    app = indexed_app(tmp_path, files)
    running, most = [0], [0]
    lock = threading.Lock()
    real = minimal_mod.MinimalContextAnswers.minimal_context

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

    monkeypatch.setattr(minimal_mod.MinimalContextAnswers, "minimal_context", counted)
    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(lambda i: call_method(app, "codesynapse/minimalContext",
                                                      {"task": f"where is header line {i} parsed"}), range(8)))
    assert len(answers) == 8 and all(a["cards"] for a in answers)
    assert most[0] == min(8, os.cpu_count() or 1)


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
