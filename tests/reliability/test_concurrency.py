"""Concurrency: several daemons (clients) on one workspace and one index, many requests in
flight from many threads while files change on disk; a storm of file events larger than the
live-update queue.

Checked: every request is answered (no deadlock: a reply that does not come within a minute
fails the test); every card of the probe function is consistent with one version of the
file that really existed (its summary, line range and callee name the same version); budgets
hold; after the writers stop, every daemon converges and the shared index equals a fresh
index of the final tree; the live-update queue stays bounded (overflow falls back to one
catch-up) and memory with it.
"""

from __future__ import annotations

import json
import math
import os
import random
import re
import threading
import time
from collections import Counter
from concurrent.futures import Future, wait
from pathlib import Path

import pytest

from codesynapse.app import App
from codesynapse.graph.integrity import check_graph, diff_dumps
from codesynapse.settings import load_settings
from codesynapse.watch.live import QUEUE_MAX
from tests.reliability.conftest import SOAK, scale
from tests.reliability.corpus import fresh_dump, mutate, python_tree, stored_dump
from tests.reliability.rawlsp import REQUEST_TIMEOUT, RawLsp, RpcError

DAEMONS = scale(3, 6)
VERSIONS = scale(25, 200)
IN_FLIGHT = scale(12, 48)
PROBE_START = 8


def probe_source(k: int) -> str:
    body = "    x = x + 1\n" * k
    return (f'"""Probe module."""\n\n\ndef helper_{k}(x):\n    return x\n\n\n'
            f'def probe(x):\n    """Version {k}."""\n{body}    return helper_{k}(x)\n')


def write_version(root: Path, k: int) -> None:
    """Replace probe.py atomically: every state the disk ever shows is one whole version."""
    tmp = root / f".probe.{k}.tmp"
    tmp.write_text(probe_source(k))
    os.replace(tmp, root / "probe.py")


def check_budget(answer: dict) -> None:
    n = len(json.dumps(answer, ensure_ascii=False, separators=(",", ":")).encode())
    assert answer["resultBytes"] == n and answer["tokens"] == math.ceil(n / 4)
    if "maxTokens" in answer:
        assert answer["tokens"] <= answer["maxTokens"]


def card_version(answer: dict) -> tuple[str, int | None]:
    """('ok', k) when the card is one real version k; ('missing', None) when the probe was
    not found; ('torn', None) when its parts name different versions."""
    if not answer.get("found"):
        return "missing", None
    c = answer["card"]
    m = re.fullmatch(r"Version (\d+)\.", c.get("summary", ""))
    if not m:
        return "torn", None
    k = int(m.group(1))
    ok = (c["range"] == [PROBE_START, PROBE_START + k + 2]
          and c["counts"]["callees"] == 1
          and [x["qualifiedName"] for x in c.get("callees", [])] == [f"probe.helper_{k}"])
    return ("ok", k) if ok else ("torn", None)


@pytest.fixture()
def tree(tmp_path) -> Path:
    root = tmp_path / "repo"
    python_tree(root, packages=scale(4, 10), modules=scale(30, 60), funcs=6, seed=3)
    (root / "probe.py").write_text(probe_source(0))
    return root


def start_all(daemons: list[RawLsp], root: Path) -> None:
    """Initialize every daemon at once (their first indexes overlap), then wait for all."""
    futs = [d.request_async("initialize", {"processId": os.getpid(), "rootUri": root.as_uri(), "capabilities": {},
                                           "workspaceFolders": [{"uri": root.as_uri(), "name": root.name}]})
            for d in daemons]
    for d, f in zip(daemons, futs):
        f.result(120)
        d.notify("initialized", {})
    for d in daemons:
        d.wait_ready()


def test_daemons_on_one_workspace_share_one_index(tree, tmp_path):
    """Three daemons on one checkout (an editor, an agent, a CLI user) index it together and
    then all apply the same saves (each one's watcher sees them). Each update is one
    transaction under the index's writer lock (graph.db.lock), so the writers take turns
    instead of interleaving (interleaved, they stored every call twice), and a writer that
    finds the index changed by another reloads its symbol index before resolving."""
    data = tmp_path / "shared-index"
    daemons = [RawLsp(data, log=tmp_path / f"shared{i}.log") for i in range(3)]
    try:
        start_all(daemons, tree)
        rng = random.Random(4)
        files = sorted(tree.rglob("mod*.py"))
        for p in rng.sample(files, 12):
            mutate(p, rng)
            time.sleep(0.3)
        for d in daemons:
            d.wait_ready()
        time.sleep(1.0)
        rep = check_graph(data / "graph.db")
        assert rep.ok, str(rep)
        diff = diff_dumps(fresh_dump(tree, tmp_path / "fresh0"), stored_dump(data, tree))
        assert not diff, "daemons indexing one workspace together left a graph unlike a fresh index:\n" + "\n".join(diff)
    finally:
        for d in daemons:
            d.close()


def test_a_writer_reloads_what_another_writer_stored(tmp_path):
    """Two indexers on one index, as two daemons in two processes: the second loaded its
    symbol index before the first stored a new module; its own update (a file importing that
    module) must resolve against what is stored, not against its stale in-memory index."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "a.py").write_text("def helper():\n    return 1\n")
    data = tmp_path / "shared"
    first = App(root, load_settings({"data_dir": str(data), "watch": False}))
    second = App(root, load_settings({"data_dir": str(data), "watch": False}))
    try:
        first.index()
        second.indexer.load()
        (root / "c.py").write_text("def newer():\n    return 2\n")
        first.index()
        (root / "d.py").write_text("from c import newer\n\n\ndef use():\n    return newer()\n")
        second.index()
        assert [(c.callee, c.target, c.resolution) for c in second.store.callees("d.use")] == [
            ("newer", "c.newer", "import")]
        assert second.indexer.index.resolve_qname("c.newer") == "c.newer"
        assert not diff_dumps(fresh_dump(root, tmp_path / "fresh"), stored_dump(data, root))
    finally:
        first.close()
        second.close()


def test_many_clients_many_requests_while_files_change(tree, tmp_path):
    """Several daemons (one per client, each with its own index: sharing one is the test
    above) on one workspace; many requests in flight on each while the tree changes."""
    datas = [tmp_path / f"index{i}" for i in range(DAEMONS)]
    daemons = [RawLsp(datas[i], log=tmp_path / f"daemon{i}.log") for i in range(DAEMONS)]
    try:
        start_all(daemons, tree)

        stop = threading.Event()
        rng = random.Random(11)
        others = sorted(p for p in tree.rglob("mod*.py"))
        written: list[int] = [0]

        def writer() -> None:
            for k in range(1, VERSIONS + 1):
                write_version(tree, k)
                written.append(k)
                if k % 3 == 0:
                    mutate(rng.choice(others), rng)
                time.sleep(rng.uniform(0.02, 0.3))
            stop.set()

        outcomes: Counter = Counter()
        torn: list[dict] = []
        errors: list[str] = []
        versions_seen: set[int] = set()
        lock = threading.Lock()

        def client(d: RawLsp, seed: int) -> None:
            r = random.Random(seed)
            while not stop.is_set():
                batch: list[tuple[str, Future]] = []
                for _ in range(IN_FLIGHT):
                    kind = r.choice(["card", "card", "graph", "search", "minimal", "status"])
                    if kind == "card":
                        f = d.request_async("codesynapse/symbolCard", {"selector": "probe.probe"})
                    elif kind == "graph":
                        f = d.request_async("codesynapse/callGraph", {"selector": "probe.probe", "depth": 2})
                    elif kind == "search":
                        f = d.request_async("codesynapse/search", {"query": "probe helper", "limit": 20})
                    elif kind == "minimal":
                        f = d.request_async("codesynapse/minimalContext", {"task": "what does probe call"})
                    else:
                        f = d.request_async("codesynapse/indexStatus", {})
                    batch.append((kind, f))
                done, not_done = wait([f for _, f in batch], timeout=REQUEST_TIMEOUT)
                if not_done:
                    with lock:
                        errors.append(f"{len(not_done)} requests unanswered after {REQUEST_TIMEOUT:.0f} s (deadlock?)")
                    stop.set()
                    return
                for kind, f in batch:
                    try:
                        a = f.result()
                    except RpcError as e:
                        with lock:
                            outcomes[f"{kind}: error {e.code} {e.data.get('kind', '')}"] += 1
                        if e.data.get("kind") != "deadline":
                            with lock:
                                errors.append(f"{kind}: {e}")
                        continue
                    check_budget(a)
                    if kind == "card":
                        state, k = card_version(a)
                        with lock:
                            outcomes[f"card: {state}"] += 1
                            if state == "torn":
                                torn.append(a["card"])
                            elif k is not None:
                                versions_seen.add(k)
                    else:
                        with lock:
                            outcomes[f"{kind}: ok"] += 1

        threads = [threading.Thread(target=writer)] + [
            threading.Thread(target=client, args=(d, i)) for i, d in enumerate(daemons)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(REQUEST_TIMEOUT * 20)
        assert not any(t.is_alive() for t in threads), "a client or the writer never finished (deadlock?)"
        assert not errors, errors[:5]

        # convergence: every daemon ends on the last version, and the index equals a fresh one
        for d in daemons:
            end = time.monotonic() + 120
            while True:
                a = d.request("codesynapse/symbolCard", {"selector": "probe.probe"})
                if card_version(a) == ("ok", VERSIONS) and d.request("codesynapse/indexStatus", {})["pending"] == 0:
                    break
                assert time.monotonic() < end, f"a daemon did not converge: {card_version(a)}"
                time.sleep(0.2)
        for d in daemons:
            d.wait_ready()
        fresh = fresh_dump(tree, tmp_path / "fresh1")
        diff = []
        for data in datas:
            rep = check_graph(data / "graph.db")
            assert rep.ok, str(rep)
            diff += diff_dumps(fresh, stored_dump(data, tree))
        _record(daemons=DAEMONS, versions=VERSIONS, in_flight=IN_FLIGHT, outcomes=dict(outcomes),
                versions_seen=len(versions_seen), torn=len(torn), converged_equal=not diff)
        # torn cards (parts of two versions) are counted here and asserted in
        # test_answers_are_one_version_of_the_tree
        assert not diff, "after the storm the shared index differs from a fresh index:\n" + "\n".join(diff)
        assert outcomes["card: ok"] > 0 and len(versions_seen) > 1
    finally:
        for d in daemons:
            d.close()


def test_answers_are_one_version_of_the_tree(tree, tmp_path):
    """One daemon, the probe file rewritten through many versions, cards asked for all the
    while: every card must describe one version that existed (never a new function without
    its callees, nor the summary of one version with the callee of another). Each update is
    one write transaction and each request reads one snapshot (methods.call_method)."""
    versions = scale(40, 300)
    with RawLsp(tmp_path / "one", log=tmp_path / "one.log") as d:
        d.initialize(tree)
        d.wait_ready()
        stop = threading.Event()
        states: Counter = Counter()
        torn: list[dict] = []

        def writer() -> None:
            for k in range(1, versions + 1):
                write_version(tree, k)
                time.sleep(0.15)
            time.sleep(1.0)
            stop.set()

        w = threading.Thread(target=writer)
        w.start()
        while not stop.is_set():
            futs = [d.request_async("codesynapse/symbolCard", {"selector": "probe.probe"}) for _ in range(16)]
            for f in futs:
                a = f.result(REQUEST_TIMEOUT)
                state, _ = card_version(a)
                states[state] += 1
                if state == "torn":
                    torn.append(a["card"])
        w.join()
    _record(scenario="one version per answer", versions=versions, states=dict(states))
    assert states["ok"] > 0
    assert not torn, f"{len(torn)} of {sum(states.values())} cards were no version of the file, e.g. {torn[:1]}"


def test_event_storm_larger_than_the_queue_stays_bounded(tmp_path):
    """didChangeWatchedFiles with more events than the live queue holds: the queue stays at
    its bound (overflow turns into one catch-up), requests are answered meanwhile, and the
    index ends equal to a fresh one."""
    root = tmp_path / "repo"
    python_tree(root, packages=2, modules=10, funcs=3, seed=5)
    data = tmp_path / "storm"
    events = QUEUE_MAX + scale(50_000, 400_000)
    with RawLsp(data, env={"CODESYNAPSE_WATCH": "0"}, log=tmp_path / "storm.log") as d:
        d.initialize(root)
        d.wait_ready()
        rng = random.Random(2)
        files = sorted(root.rglob("mod*.py"))
        for p in rng.sample(files, 8):
            mutate(p, rng)
        (root / "pkg0" / "born_in_storm.py").write_text("def newborn():\n    return 1\n")
        uris = [p.as_uri() for p in files] + [(root / "pkg0" / "born_in_storm.py").as_uri()]
        uris += [(root / f"ghost{i}.py").as_uri() for i in range(2000)]  # events for files that do not exist
        sent = 0
        pending_max = 0
        answered = 0
        chunk = 10_000
        while sent < events:
            n = min(chunk, events - sent)
            d.notify("workspace/didChangeWatchedFiles",
                     {"changes": [{"uri": uris[(sent + i) % len(uris)], "type": 2} for i in range(n)]})
            sent += n
            st = d.request("codesynapse/indexStatus", {})
            answered += 1
            pending_max = max(pending_max, st["pending"])
            assert st["pending"] <= QUEUE_MAX + 500  # the queue plus one batch being applied
        end = time.monotonic() + 300
        while True:
            st = d.request("codesynapse/indexStatus", {})
            card = d.request("codesynapse/symbolCard", {"selector": "pkg0.born_in_storm.newborn"})
            if st["pending"] == 0 and card["found"]:
                break
            assert time.monotonic() < end, f"the storm was never absorbed: {st}"
            time.sleep(0.2)
        d.wait_ready()
    rep = check_graph(data / "graph.db")
    assert rep.ok, str(rep)
    diff = diff_dumps(fresh_dump(root, tmp_path / "fresh"), stored_dump(data, root))
    _record(scenario="event storm", events=events, queue_max=QUEUE_MAX, pending_max=pending_max,
            status_answered_during=answered, converged_equal=not diff)
    assert not diff, "\n".join(diff)


def _record(**row) -> None:
    out = os.environ.get("CODESYNAPSE_RELIABILITY_TALLY")
    if out:
        with open(out, "a", encoding="utf-8") as f:
            f.write(json.dumps({"module": "concurrency", "soak": SOAK, **row}) + "\n")
