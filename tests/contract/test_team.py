"""A team on one graph server (issue 26, docs/TEAM.md): clones of one remote share the base
graph of their commit and keep their own uncommitted work in a local overlay.

Every test runs on both graph server backends, the session's Neo4j 5.26 and HugeGraph 1.5.0
(``team`` is parametrized like the other contract fixtures). Every step is a real
``codesynapse`` process (``index``, ``index --publish``, ``query``, ``repo``), configured only
through the environment; each test uses a remote URL of its own (so graph ids of its own) and
removes its bases and repository entries afterwards.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from codesynapse.scope import graph_id_for
from codesynapse.store.team import COMPLETE, base_graph_id

from tests.contract.support import BACKENDS

# the graph server backends (SQLite keeps one graph per checkout: no team graphs)
SERVER_BACKENDS = [p for p in BACKENDS if p.values[0] != "sqlite"]

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "python_repo"
ALICE_FN = "shop.payment.alice_private_refund"
BOB_FN = "shop.cart.bob_private_discount"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), "-c", "user.email=t@example.invalid", "-c", "user.name=t", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


class Team:
    """An upstream repository, its clones (all with one remote URL) and the server."""

    def __init__(self, tmp: Path, backend: str, uri: str, remote: str, upstream: Path | None = None):
        self.tmp, self.backend, self.uri, self.remote = tmp, backend, uri, remote
        self.upstream = upstream or tmp / "upstream"
        if upstream is None:
            shutil.copytree(FIXTURE, self.upstream)
            git(self.upstream, "init", "-q", "-b", "main")
            git(self.upstream, "add", "-A")
            git(self.upstream, "commit", "-qm", "c1")
        self.graph_id = graph_id_for(remote)
        self.source = self.upstream  # what clones are made from (``use_remote``: a bare repository)
        self.commits: set[str] = set()
        self.tenants: set[str] = set()

    def settings(self):
        from codesynapse.settings import load_settings

        key = "hugegraph_url" if self.backend == "hugegraph" else "neo4j_uri"
        return load_settings({"backend": self.backend, key: self.uri}, env={})

    def grant(self, tenant: str = "local") -> None:
        """The repository entry that lets ``tenant`` read the bases (as ``repo grant`` makes it)."""
        from codesynapse.store.team import grant, open_base

        store = open_base(self.settings(), self.graph_id)
        try:
            grant(store, tenant, self.graph_id, self.remote)
        finally:
            store.close()
        self.tenants.add(tenant)

    def use_remote(self) -> Path:
        """A bare repository (a copy of the upstream's) that the remote URL stands for in the
        clones made from now on (git's ``url.<bare>.insteadOf``): they push to it and pull
        from it, while their ``remote.origin.url`` (the identity) stays the remote URL."""
        bare = self.tmp / "remote.git"
        subprocess.run(["git", "clone", "-q", "--bare", str(self.upstream), str(bare)], check=True,
                       capture_output=True)
        self.source = bare
        return bare

    def clone(self, who: str, branch: str = "main") -> Path:
        root = self.tmp / who
        subprocess.run(["git", "clone", "-q", "-b", branch, str(self.source), str(root)], check=True,
                       capture_output=True)
        git(root, "remote", "set-url", "origin", self.remote)
        if self.source != self.upstream:
            git(root, "config", f"url.{self.source}.insteadOf", self.remote)
        self.commits.add(git(root, "rev-parse", "HEAD"))
        return root

    def env(self, who: str, **extra: str) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CODESYNAPSE_")}
        server = {"CODESYNAPSE_HUGEGRAPH_URL" if self.backend == "hugegraph" else "CODESYNAPSE_NEO4J_URI": self.uri}
        env.update(CODESYNAPSE_BACKEND=self.backend, CODESYNAPSE_WORKERS="1", **server,
                   CODESYNAPSE_DATA_DIR=str(self.tmp / f"data-{who}"), CODESYNAPSE_EMBEDDER="none",
                   CODESYNAPSE_SYMBOL_VECTORS="0", **extra)
        return env

    def run(self, who: str, args: list[str], **extra: str) -> dict:
        proc = subprocess.run([sys.executable, "-m", "codesynapse", *args], check=False, env=self.env(who, **extra),
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode in (0, 1), proc.stderr[-3000:]
        return json.loads(proc.stdout)

    def index(self, who: str) -> dict:
        return self.run(who, ["index", str(self.tmp / who), "--json"])

    def query(self, who: str, method: str, params: dict) -> dict:
        return self.run(who, ["query", method, "--root", str(self.tmp / who), "--no-index", "--compact",
                              "--params", json.dumps(params)])

    def found(self, who: str, qname: str) -> bool:
        return self.query(who, "codesynapse/symbolCard", {"selector": qname})["found"]

    def app(self, who: str):
        """An in-process App on the checkout, configured as its processes are (no index run):
        several questions without a process each."""
        from codesynapse.app import App
        from codesynapse.settings import load_settings

        return App(self.tmp / who, load_settings(env=self.env(who)))

    def base_listed(self) -> list[str]:
        """The commits of the repository's complete bases on the server (as ``repo list``)."""
        from codesynapse.store.team import list_bases, open_base

        store = open_base(self.settings(), self.graph_id)
        try:
            return sorted(b["commit"] for b in list_bases(store, self.graph_id) if b["complete"])
        finally:
            store.close()

    def base(self, commit: str):
        """The base graph of ``commit`` as a plain store of the backend (no team view)."""
        gid = base_graph_id(self.graph_id, commit)
        if self.backend == "hugegraph":
            from codesynapse.store.hugegraph.graph import HugeGraphStore

            return HugeGraphStore(self.uri, gid)
        from codesynapse.store.neo4j.graph import Neo4jGraphStore

        return Neo4jGraphStore(self.uri, gid)

    def cleanup(self) -> None:
        from codesynapse.store.team import open_base, revoke, team_server

        store = open_base(self.settings(), self.graph_id)
        try:
            for t in self.tenants | {"local", "other"}:
                revoke(store, t, self.graph_id)
        finally:
            store.delete_graph()
            store.close()
        for c in self.commits:
            store = self.base(c)
            try:
                store.delete_graph()
                team_server(store).drop_lock(store.graph_id)
            finally:
                store.close()


@pytest.fixture(params=SERVER_BACKENDS)
def team(request, tmp_path):
    backend = request.param
    server = request.getfixturevalue("hugegraph_server" if backend == "hugegraph" else "neo4j_server")
    # no .git: the identity
    remote = f"https://git.example.invalid/team/{request.node.originalname}-{backend}-{time.time_ns()}"
    t = Team(tmp_path, backend, server.uri, remote)
    t.grant("local")  # the default tenant's repository entry
    yield t
    t.cleanup()


def add_function(root: Path, rel: str, text: str) -> None:
    p = root / rel
    p.write_text(p.read_text() + "\n\n" + text)


def test_alice_and_bob_each_see_only_their_own_uncommitted_work(team: Team):
    alice, bob = team.clone("alice"), team.clone("bob")
    add_function(alice, "shop/payment.py",
                 'def alice_private_refund(order):\n    """Alice WIP: refunds without audit."""\n'
                 '    return pay_for(order)\n')
    add_function(bob, "shop/cart.py", "def bob_private_discount(cart):\n    return cart\n")
    (bob / "tests" / "test_cart.py").unlink()  # Bob deletes a file he has not committed the deletion of

    team.index("alice")
    team.index("bob")
    from codesynapse.methods import call_method

    apps = {who: team.app(who) for who in ("alice", "bob")}
    try:
        def ask(who: str, method: str, params: dict) -> dict:
            return call_method(apps[who], method, params)

        def found(who: str, qname: str) -> bool:
            return ask(who, "codesynapse/symbolCard", {"selector": qname})["found"]

        # the order that leaked before: Alice, Bob, Alice again, then both ask
        assert found("alice", ALICE_FN)
        team.index("alice")
        assert found("alice", ALICE_FN) and not found("alice", BOB_FN)
        assert found("bob", BOB_FN) and not found("bob", ALICE_FN)
        hits = ask("bob", "codesynapse/search", {"query": "alice_private_refund refunds without audit"})
        assert ALICE_FN not in json.dumps(hits)
        # Alice's callers of pay_for include her function; Bob's include neither it nor the deleted test
        callers = ask("alice", "codesynapse/callGraph", {"selector": "shop.payment.pay_for", "direction": "callers"})
        names = {n["qualifiedName"] for n in callers["callers"]["nodes"]}
        assert ALICE_FN in names and "test_cart.test_pay_for" in names
        callers = ask("bob", "codesynapse/callGraph", {"selector": "shop.payment.pay_for", "direction": "callers"})
        assert {n["qualifiedName"] for n in callers.get("callers", {}).get("nodes", [])} == set()
        assert found("alice", "test_cart.test_pay_for") and not found("bob", "test_cart.test_pay_for")
        # the answers say which base and how many of the checkout's own files they used
        (commit,) = team.commits
        card = ask("alice", "codesynapse/symbolCard", {"selector": ALICE_FN})
        assert card["provenance"]["freshness"]["baseCommit"] == commit
        assert card["provenance"]["freshness"]["overlayFiles"] == 1
        status = ask("bob", "codesynapse/indexStatus", {})
        assert (status["baseCommit"], status["overlayFiles"]) == (commit, 2)
    finally:
        for a in apps.values():
            a.close()

    # one base on the server, holding the committed tree only
    base = team.base(commit)
    try:
        assert base.get_meta(COMPLETE) == "1"
        assert base.symbols_by_qname(ALICE_FN) == [] and base.symbols_by_qname(BOB_FN) == []
        assert base.file("tests/test_cart.py") is not None
    finally:
        base.close()


def test_unpushed_commits_stay_in_the_checkouts_overlay_until_pushed(team: Team):
    """The issue's leak one commit later: Alice commits her function without pushing. Her
    daemon must not publish that commit's base (anyone the repository entry lets read the
    server would read it): it stands on the base of the last pushed commit, and her overlay
    holds the unpushed commit's files with her uncommitted ones. Once pushed, the commit's
    base is published and shared."""
    team.use_remote()
    alice, bob = team.clone("alice"), team.clone("bob")
    (c1,) = team.commits
    add_function(alice, "shop/payment.py",
                 'def alice_private_refund(order):\n    """Alice WIP: refunds without audit."""\n'
                 '    return pay_for(order)\n')
    git(alice, "commit", "-qam", "Alice WIP")
    c2 = git(alice, "rev-parse", "HEAD")
    team.commits.add(c2)  # removed afterwards, should a base of it have been published
    add_function(alice, "shop/cart.py", "def alice_uncommitted(cart):\n    return cart\n")

    team.index("alice")
    team.index("bob")
    assert team.found("alice", ALICE_FN) and team.found("alice", "shop.cart.alice_uncommitted")
    status = team.query("alice", "codesynapse/indexStatus", {})
    # her base is the pushed commit's; her overlay: the unpushed commit's file and the uncommitted one
    assert (status["indexedCommit"], status["baseCommit"], status["overlayFiles"]) == (c2, c1, 2)
    # nothing of the unpushed commit is on the server: no base of it, nothing in Bob's answers
    listed = team.run("bob", ["repo", "list", "--root", str(bob)])
    assert [(b["commit"], b["complete"]) for b in listed["bases"]] == [(c1, True)]
    assert not team.found("bob", ALICE_FN)
    hits = team.query("bob", "codesynapse/search", {"query": "alice_private_refund refunds without audit"})
    assert ALICE_FN not in json.dumps(hits)

    # pushed: Alice's next index publishes c2's base (a delta over c1's) and stands on it
    git(alice, "push", "-q", "origin", "main")
    team.index("alice")
    status = team.query("alice", "codesynapse/indexStatus", {})
    assert (status["baseCommit"], status["overlayFiles"]) == (c2, 1)  # only the uncommitted file is hers
    listed = team.run("bob", ["repo", "list", "--root", str(bob)])
    assert sorted(b["commit"] for b in listed["bases"] if b["complete"]) == sorted([c1, c2])
    # Bob pulls it: his checkout re-uses the published base and parses nothing
    git(bob, "pull", "-q", "--ff-only")
    assert team.index("bob")["parsed"] == 0
    assert team.found("bob", ALICE_FN) and not team.found("bob", "shop.cart.alice_uncommitted")
    status = team.query("bob", "codesynapse/indexStatus", {})
    assert (status["baseCommit"], status["overlayFiles"]) == (c2, 0)


def test_a_second_checkout_at_the_same_commit_parses_no_file(team: Team):
    team.clone("first")
    team.clone("second")
    first = team.index("first")
    second = team.index("second")
    assert first["files"] == second["files"] == 6
    assert second["parsed"] == 0
    q = ("codesynapse/callGraph", {"selector": "shop.cart.Cart.checkout", "direction": "callees", "depth": 2})
    answers = [team.query(who, *q) for who in ("first", "second")]
    for a in answers:  # the stamps differ by their update time only
        a["provenance"]["freshness"].pop("lastUpdate", None)
    assert answers[0] == answers[1] and answers[0]["found"]


def test_moving_head_to_a_published_commit_reuses_its_base(team: Team):
    team.clone("dev")
    team.index("dev")
    add_function(team.upstream, "shop/pricing.py", "def loyalty_bonus(total):\n    return total\n")
    git(team.upstream, "commit", "-qam", "c2")
    ci = team.clone("ci")  # a CI job publishes the new commit
    out = team.run("ci", ["index", str(ci), "--publish"])
    assert out["status"] == "built"
    # the new base stores what changed (pricing.py) and shares every other file with the first
    c1, c2 = git(team.tmp / "dev", "rev-parse", "HEAD"), git(ci, "rev-parse", "HEAD")
    first, second = team.base(c1), team.base(c2)
    try:
        assert [f.path for f in second.files()] == ["shop/pricing.py"]
        assert second.get_meta("base_parent") == c1
        assert second.stats().symbols < first.stats().symbols / 2
    finally:
        first.close()
        second.close()
    git(team.tmp / "dev", "pull", "-q", "--ff-only", str(team.upstream), "main")
    report = team.index("dev")
    assert report["parsed"] == 0  # pricing.py changed, and comes from the new base
    assert team.found("dev", "shop.pricing.loyalty_bonus")
    status = team.query("dev", "codesynapse/indexStatus", {})
    assert status["baseCommit"] == git(team.tmp / "dev", "rev-parse", "HEAD") and status["overlayFiles"] == 0


def test_two_builders_race_for_one_commit(team: Team):
    a, b = team.clone("a"), team.clone("b")
    procs = [subprocess.Popen([sys.executable, "-m", "codesynapse", "index", str(root), "--publish"],
                              env=team.env(who), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for who, root in (("a", a), ("b", b))]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
        outs.append(json.loads(out)["status"])
    assert sorted(outs) == ["built", "exists"]
    (commit,) = team.commits
    base = team.base(commit)
    try:
        assert base.get_meta(COMPLETE) == "1" and len(base.files()) == 6
    finally:
        base.close()


def test_kill_9_mid_publish_leaves_no_visible_base(team: Team):
    # enough files that the build is still writing when it is killed
    for i in range(600):
        (team.upstream / "shop" / f"gen_{i:03d}.py").write_text(
            f"from shop.pricing import with_tax\n\n\ndef gen_{i}(x):\n    return with_tax(x) + {i}\n")
    git(team.upstream, "add", "-A")
    git(team.upstream, "commit", "-qm", "many")
    root = team.clone("ci")
    (commit,) = team.commits
    env = team.env("ci", CODESYNAPSE_TEAM_LEASE_S="3")
    proc = subprocess.Popen([sys.executable, "-m", "codesynapse", "index", str(root), "--publish"], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    base = team.base(commit)
    try:
        deadline = time.monotonic() + 240
        while not base.stats().files:  # the builder has written a first batch
            assert proc.poll() is None, proc.stderr.read().decode()[-3000:]
            assert time.monotonic() < deadline
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        assert base.get_meta(COMPLETE) is None
        written = base.stats().files
        assert written > 0

        # a reader ignores the half base: it has no base yet and builds its own view
        from codesynapse.settings import load_settings
        from codesynapse.store.team import open_team_store
        from codesynapse.workspace import open_workspace

        settings = load_settings(env=env)
        reader = open_team_store(settings, open_workspace(root, team.tmp / "reader-data"))
        try:
            assert reader.base_commit == "" and reader.files() == []
        finally:
            reader.close()

        # the next builder takes the lock over once its lease ends, drops the half and builds
        out = team.run("ci", ["index", str(root), "--publish"], CODESYNAPSE_TEAM_LEASE_S="3")
        assert out["status"] == "built"
        assert base.get_meta(COMPLETE) == "1" and base.stats().files == 606
    finally:
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
        base.close()


def test_a_tenant_without_a_repository_entry_reads_no_base(team: Team):
    team.clone("ci")
    assert team.run("ci", ["index", str(team.tmp / "ci"), "--publish"])["status"] == "built"
    (commit,) = team.commits
    root = team.clone("outsider")
    add_function(root, "shop/cart.py", "def bob_private_discount(cart):\n    return cart\n")
    # another tenant's daemon: no entry, so the published base is not read; it indexes on its own
    report = team.run("outsider", ["index", str(root), "--json"], CODESYNAPSE_TENANT="other")
    assert report["parsed"] == 6
    status = team.run("outsider", ["query", "codesynapse/indexStatus", "--root", str(root), "--no-index"],
                      CODESYNAPSE_TENANT="other")
    assert (status["baseCommit"], status["files"]) == ("", 6)
    listed = team.run("outsider", ["repo", "list", "--root", str(root)], CODESYNAPSE_TENANT="other")
    assert listed["authorized"] is False
    # publishing needs the entry too
    proc = subprocess.run([sys.executable, "-m", "codesynapse", "index", str(root), "--publish"],
                          check=False, env=team.env("outsider", CODESYNAPSE_TENANT="other"), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 2 and "repo grant" in proc.stderr

    entry = team.run("outsider", ["repo", "grant", "--root", str(root)], CODESYNAPSE_TENANT="other")["entry"]
    assert (entry["tenant_id"], entry["graph_id"]) == ("other", team.graph_id)
    report = team.run("outsider", ["index", str(root), "--json"], CODESYNAPSE_TENANT="other")
    status = team.run("outsider", ["query", "codesynapse/indexStatus", "--root", str(root), "--no-index"],
                      CODESYNAPSE_TENANT="other")
    assert (status["baseCommit"], status["overlayFiles"], status["files"]) == (commit, 1, 6)
    listed = team.run("outsider", ["repo", "list", "--root", str(root)], CODESYNAPSE_TENANT="other")
    assert listed["authorized"] is True
    assert [(b["commit"], b["complete"]) for b in listed["bases"]] == [(commit, True)]


def test_gc_keeps_the_last_commits_of_each_branch_and_their_parents(team: Team):
    def publish(who: str, branch: str = "main") -> str:
        root = team.clone(who, branch)
        assert team.run(who, ["index", str(root), "--publish"])["status"] == "built"
        return git(root, "rev-parse", "HEAD")

    c1 = publish("ci1")
    git(team.upstream, "checkout", "-qb", "feature")
    add_function(team.upstream, "shop/cart.py", "def feature_only(cart):\n    return cart\n")
    git(team.upstream, "commit", "-qam", "f1")
    f1 = publish("ci-feature", "feature")
    git(team.upstream, "checkout", "-q", "main")
    git(team.upstream, "branch", "-qD", "feature")  # merged nowhere, deleted: no branch needs f1
    add_function(team.upstream, "shop/pricing.py", "def step_2(x):\n    return x\n")
    git(team.upstream, "commit", "-qam", "c2")
    c2 = publish("ci2")
    shutil.rmtree(team.tmp / "ci-feature")

    out = team.run("ci2", ["repo", "gc", "--root", str(team.tmp / "ci2"), "--keep", "1"])
    # c2 is main's last commit; its base is a delta over c1's, so c1's stays too
    assert out["removed"] == [f1] and sorted(out["kept"]) == sorted([c1, c2])
    listed = team.run("ci2", ["repo", "list", "--root", str(team.tmp / "ci2")])
    assert sorted(b["commit"] for b in listed["bases"]) == sorted([c1, c2])
    # the kept delta base still answers: a checkout at c2 reads it without indexing
    assert team.found("ci2", "shop.pricing.step_2") and team.found("ci2", "shop.cart.Cart")
    assert team.index("ci2")["parsed"] == 0


def test_the_base_lock_has_one_holder_when_processes_race(team: Team):
    """Create-if-absent of the build lock is atomic on the server: processes that ask for the
    lock of one new base at the same instant get one holder (HugeGraph: a deterministic vertex
    id under the Gremlin server's lock; Neo4j: MERGE on a uniqueness constraint)."""
    bases = [base_graph_id(team.graph_id, f"{i:040x}") for i in range(6)]
    script = (
        "import json, sys, time\n"
        "from codesynapse.settings import load_settings\n"
        "from codesynapse.store.team import open_base, team_server\n"
        "server = team_server(open_base(load_settings(), sys.argv[1]))\n"
        "start, owner = float(sys.argv[2]), sys.argv[3]\n"
        "out = []\n"
        "for gid in sys.argv[4:]:\n"
        "    time.sleep(max(0.0, start - time.time()))\n"
        "    out.append(server.acquire_lock(gid, owner, 600.0))\n"
        "    start += 1.0\n"
        "print(json.dumps(out))\n")
    start = time.time() + 25  # after every process has connected
    procs = [subprocess.Popen([sys.executable, "-c", script, team.graph_id, str(start), f"racer{i}", *bases],
                              env=team.env(f"racer{i}"), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i in range(3)]
    results = []
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err[-3000:]
        results.append(json.loads(out))
    from codesynapse.store.team import open_base, team_server

    store = open_base(team.settings(), team.graph_id)
    try:
        for i, gid in enumerate(bases):
            assert sum(r[i] for r in results) == 1, (gid, [r[i] for r in results])
            # and the holder keeps it: a latecomer does not get it while the lease runs
            assert team_server(store).acquire_lock(gid, "latecomer", 600.0) is False
    finally:
        for gid in bases:
            team_server(store).drop_lock(gid)
        store.close()


def test_a_backend_without_team_graphs_refuses_the_team_commands(tmp_path: Path):
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "c1")
    env = {k: v for k, v in os.environ.items() if not k.startswith("CODESYNAPSE_")}
    env.update(CODESYNAPSE_BACKEND="sqlite", CODESYNAPSE_DATA_DIR=str(tmp_path / "data"))
    for args in (["repo", "list", "--root", str(root)], ["index", str(root), "--publish"]):
        proc = subprocess.run([sys.executable, "-m", "codesynapse", *args], check=False, env=env,
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 2 and proc.stdout == ""
        assert "'sqlite'" in proc.stderr and "neo4j or hugegraph" in proc.stderr
