"""``codesynapse bench tokens``: run a workload against a fresh copy of a corpus and compare
each answer with the two raw-context baselines.

The harness copies the corpus (edits for stale tasks must not touch the original), indexes
the copy with the benchmark policy, starts the live updater (no file watcher: edits are
announced as ``didSave`` would announce them), then for every task: runs its setup (memory
requests, possibly as another tenant or session; file edits), sends the request in-process
through the same dispatch table the daemon uses, checks the evidence, and measures the
answer and both baselines in bytes, bytes/4 estimated tokens and real tokens.

Returned size is the JSON-RPC response as the daemon would write it
(``{"jsonrpc":"2.0","id":1,"result":…}``, compact, UTF-8), without the Content-Length header.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from codesynapse.bench import stats
from codesynapse.bench.baselines import (
    Baseline,
    CorpusText,
    Request,
    raw_baselines,
)
from codesynapse.bench.corpora import Corpus, cache_dir, writable_copy
from codesynapse.bench.tokenizer import Tokenizers, default_tokenizers
from codesynapse.bench.workload import Task, Workload, check
from codesynapse.ledger import (
    jsonrpc_bytes,  # the one measure of a response, shared with the ledger
)

log = logging.getLogger(__name__)

DEADLINE_S = 10.0  # the daemon's deadline for every context request




class Runner:
    def __init__(self, app, root: Path, tokenizers: Tokenizers | None):
        from codesynapse.context.service import ContextService
        from codesynapse.watch.live import LiveUpdater

        self.app = app
        self.root = root
        self.ctx = ContextService(app)
        self.tok = tokenizers
        files = [(f.path, f.language) for f in app.store.files() if f.status != "skipped"]
        self.corpus = CorpusText(str(root), files)
        self._file_tokens: dict[str, dict[str, int]] = {}
        self.live = LiveUpdater(app)
        self.live.start(watch=False)
        self._scopes: dict[tuple[str, str], Any] = {}
        self.overran = 0
        self.orphans: list[threading.Thread] = []

    def close(self) -> None:
        from codesynapse.bench.apps import settle

        self.live.stop()
        left = settle(self.app, self.orphans)
        if left:
            log.warning("%d overrunning requests still running at close", left)

    # -- setup -------------------------------------------------------------------------------
    def _wait_applied(self, gen: int, timeout: float = 30.0) -> None:
        end = time.monotonic() + timeout
        with self.live.applied:
            while self.live.generation <= gen:
                left = end - time.monotonic()
                if left <= 0:
                    raise TimeoutError("the live updater did not apply the edit")
                self.live.applied.wait(left)
        self.live.wait_idle(timeout)

    def _edit(self, path: str, find: str, replace: str) -> str:
        full = self.root / path
        text = full.read_text(encoding="utf-8")
        if find not in text:
            raise ValueError(f"edit: {find!r} is not in {path}")
        gen = self.live.generation
        full.write_text(text.replace(find, replace, 1), encoding="utf-8")
        self.corpus.invalidate(path)
        self._file_tokens.pop(path, None)
        self.live.buffer_saved(path)
        self._wait_applied(gen)
        return text

    def _restore(self, path: str, text: str) -> None:
        gen = self.live.generation
        (self.root / path).write_text(text, encoding="utf-8")
        self.corpus.invalidate(path)
        self._file_tokens.pop(path, None)
        self.live.buffer_saved(path)
        self._wait_applied(gen)

    def _scope(self, actor: dict[str, Any]):
        from codesynapse.scope import make_scope

        key = (str(actor.get("tenant", self.app.settings.tenant)), str(actor.get("session", "")))
        if key not in self._scopes:
            self._scopes[key] = make_scope(key[0], self.app.workspace.identity, key[1])
        return self._scopes[key]

    def _send_deadline(self, method: str, params: dict[str, Any], scope: Any = None) -> Any:
        """The request as the daemon serves it: in a worker thread, answered with a deadline
        error when it has not finished in DEADLINE_S. Each request gets a fresh thread, so a
        task never queues behind an earlier one that overran (which, as in the daemon, is
        not killed and runs on)."""
        from codesynapse.errors import DeadlineExceeded

        box: dict[str, Any] = {}

        def run() -> None:
            try:
                box["answer"] = self._send(method, params, scope=scope)
            except BaseException as e:  # handed to the caller
                box["error"] = e

        t = threading.Thread(target=run, name="bench-request", daemon=True)
        t.start()
        t.join(DEADLINE_S + 0.5)
        if t.is_alive():
            self.overran += 1
            self.orphans.append(t)
            raise DeadlineExceeded(DEADLINE_S)
        if "error" in box:
            raise box["error"]
        return box["answer"]

    def _send(self, method: str, params: dict[str, Any], actor: dict[str, Any] | None = None,
              scope: Any = None) -> Any:
        from codesynapse.methods import call_method

        if actor:
            from codesynapse.methods import METHODS

            if method not in METHODS or METHODS[method].reads != "memory":
                raise ValueError(f"only memory requests can be sent as another actor, not {method}")
            return call_method(self.app, method, params, self._scope(actor))
        return call_method(self.app, method, params, scope)

    # -- measuring ----------------------------------------------------------------------------
    def _tokens_of_file(self, path: str) -> dict[str, int]:
        if self.tok is None:
            return {}
        t = self._file_tokens.get(path)
        if t is None:
            t = self._file_tokens[path] = self.tok.count(self.corpus.text(path))
        return t

    def _measure_baseline(self, b: Baseline) -> dict[str, Any]:
        real: dict[str, int] = {}
        if self.tok is not None:
            for p in b.files:
                for k, v in self._tokens_of_file(p).items():
                    real[k] = real.get(k, 0) + v
            if b.extra_text:
                for k, v in self.tok.count(b.extra_text).items():
                    real[k] = real.get(k, 0) + v
            for n in self.tok.names:
                real.setdefault(n, 0)
        return {"files": len(b.files), "bytes": b.bytes, "estTokens": stats.est_tokens(b.bytes), "tokens": real,
                "roundTrips": b.round_trips, "fileList": b.files[:50], "detail": b.detail}

    def run_task(self, task: Task) -> dict[str, Any]:
        from codesynapse.errors import CodeSynapseError
        from codesynapse.methods import error_payload
        from codesynapse.scope import make_scope

        row: dict[str, Any] = {"id": task.id, "kind": task.kind, "method": task.method, "tags": task.tags}
        # each task is a session of its own (a fresh connection): its ledger holds the task's
        # setup and request only, as the task's baselines do
        session = make_scope(self.app.settings.tenant, self.app.workspace.identity)
        ledger_row: dict[str, Any] | None = None
        restores: list[tuple[str, str]] = []
        error: str | None = None
        answer: Any = None
        try:
            for step in task.setup:
                if "edit" in step:
                    e = step["edit"]
                    restores.append((e["path"], self._edit(e["path"], e["find"], e["replace"])))
                else:
                    self._send(step["method"], step.get("params", {}), step.get("actor"), scope=session)
            t0 = time.perf_counter()
            try:
                answer = self._send_deadline(task.method, task.params, session)
                body = jsonrpc_bytes(answer)
            except CodeSynapseError as e:
                payload = error_payload(e)
                answer = payload
                error = f"{payload['error']['kind']}: {payload['error']['message']}"
                body = jsonrpc_bytes(None, {"code": -32602, "message": str(e)})
            row["latencyMs"] = round((time.perf_counter() - t0) * 1000, 2)
            ev = check(task, answer)
            if error and not task.expect.get("error"):
                ev["ok"] = False
            _idents, a, b = raw_baselines(task, self.app, self.ctx, self.corpus)
            if error is None:  # the ledger's figures for the same answer, read before edits are undone
                last = self.app.services.ledger.answer(session, 1, deadline_s=60.0)["last"]
                ledger_row = last[0] if last and last[0]["method"] == task.method else None
                if ledger_row is not None:  # the bench's baselines of the request alone (no workload additions)
                    ledger_row = {**ledger_row, "core": self._core(task)}
        except Exception as e:  # a harness or server failure fails the task, loudly
            log.exception("task %s failed to run", task.id)
            row.update({"ok": False, "error": f"{e.__class__.__name__}: {e}", "evidence": {
                "required": len(task.evidence), "found": 0, "missing": [x.label() for x in task.evidence],
                "leaked": [], "unmet": []}})
            row.update(self._empty_measures())
            return row
        finally:
            for path, text in reversed(restores):
                try:
                    self._restore(path, text)
                except Exception:
                    log.exception("could not restore %s", path)
        row["ok"] = ev.pop("ok")
        row["error"] = error
        row["evidence"] = ev
        resp_tokens = self.tok.count(body.decode("utf-8")) if self.tok else {}
        row["response"] = {"bytes": len(body), "estTokens": stats.est_tokens(len(body)), "tokens": resp_tokens,
                           "answerTokensField": answer.get("tokens") if isinstance(answer, dict) else None,
                           "roundTrips": 1}
        row["a"] = self._measure_baseline(a)
        row["b"] = self._measure_baseline(b)
        row["reduction"] = self._reductions(row)
        row["ledger"] = _agreement(task, ledger_row, row)
        return row

    def _core(self, task: Task) -> tuple[int, int]:
        """Estimated tokens of (a) and (b) for the task's request as the daemon sees it: its
        method and params, and for a recall the task's own earlier turns; without the
        evidence and given identifiers only the workload knows."""
        req = Request(method=task.method, params=task.params, kind="recall" if task.kind == "recall" else "",
                      requests=[s for s in task.requests if not s.get("actor")] if task.kind == "recall" else [])
        # the files the index holds now, as the daemon reads them (the table's corpus is the
        # list at the start: a live update that fails leaves a file out of the index, not of it)
        files = [(f.path, f.language) for f in self.app.store.files() if f.status != "skipped"]
        _i, a, b = raw_baselines(req, self.app, self.ctx, CorpusText(str(self.root), files))
        return stats.est_tokens(a.bytes), stats.est_tokens(b.bytes)

    def _empty_measures(self) -> dict[str, Any]:
        z = {n: 0 for n in (self.tok.names if self.tok else ())}
        m = {"files": 0, "bytes": 0, "estTokens": 0, "tokens": dict(z), "roundTrips": 0, "fileList": [], "detail": {}}
        return {"response": {"bytes": 0, "estTokens": 0, "tokens": dict(z), "answerTokensField": None,
                             "roundTrips": 1}, "a": dict(m), "b": dict(m), "reduction": {}, "latencyMs": None}

    def _reductions(self, row: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for base in ("a", "b"):
            r = {"est": stats.reduction_pct(row[base]["estTokens"], row["response"]["estTokens"])}
            for n, v in row[base]["tokens"].items():
                r[n] = stats.reduction_pct(v, row["response"]["tokens"].get(n, 0))
            out[base] = r
        return out


def _agreement(task: Task, led: dict[str, Any] | None, row: dict[str, Any]) -> dict[str, Any]:
    """The ledger's raw estimates of a task's answer beside the bench's baselines: equal unless
    the workload widens the bench's baseline with what only it knows (evidence names and
    locations, given identifiers), which the daemon cannot see."""
    if led is None or "rawA" not in led:
        return {"compared": False}
    widened = bool(task.baseline.get("identifiers")) or any(e.kind in ("name", "location") for e in task.evidence)
    eq_a = led["rawA"] == row["a"]["estTokens"]
    eq_b = led["rawB"] == row["b"]["estTokens"]
    core_a, core_b = led["core"]
    return {"compared": True, "rawA": led["rawA"], "rawB": led["rawB"], "tokens": led["tokens"],
            "equalA": eq_a, "equalB": eq_b, "workloadWidens": widened,
            "coreA": core_a, "coreB": core_b, "equalCore": led["rawA"] == core_a and led["rawB"] == core_b,
            "tokensEqual": led["tokens"] == row["response"]["estTokens"]}


def agreement_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """How many tasks' ledger estimates equal the bench's baselines. Every ledger figure must
    equal the bench's baseline of the same request (``equalCore``: the request alone) and its
    returned tokens; the table's baseline may add what the workload knows (evidence, given
    identifiers). ``unexplained``: tasks where the ledger and the bench disagree."""
    c = [r for r in rows if r.get("ledger", {}).get("compared")]
    same = [r for r in c if r["ledger"]["equalA"] and r["ledger"]["equalB"]]
    differ = [r for r in c if r not in same]
    return {"compared": len(c), "equal": len(same), "equalCore": sum(1 for r in c if r["ledger"]["equalCore"]),
            "tokensEqual": sum(1 for r in c if r["ledger"]["tokensEqual"]),
            "differWidenedByWorkload": [r["id"] for r in differ if r["ledger"]["equalCore"]],
            "unexplained": sorted({r["id"] for r in c if not (r["ledger"]["equalCore"] and r["ledger"]["tokensEqual"])})}


def flat(row: dict[str, Any], counter: str) -> dict[str, Any]:
    """One row's counts under one counter (``est`` or a tokenizer name) for stats.aggregate."""
    if counter == "est":
        return {"ok": row["ok"], "a": row["a"]["estTokens"], "b": row["b"]["estTokens"],
                "ret": row["response"]["estTokens"]}
    return {"ok": row["ok"], "a": row["a"]["tokens"].get(counter, 0), "b": row["b"]["tokens"].get(counter, 0),
            "ret": row["response"]["tokens"].get(counter, 0)}


def aggregates(rows: list[dict[str, Any]], counters: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for c in counters:
        fr = [flat(r, c) for r in rows]
        out[c] = {"a": stats.aggregate(fr, "a", "ret"), "b": stats.aggregate(fr, "b", "ret"),
                  "medianA": stats.median_reduction(fr, "a", "ret"),
                  "medianB": stats.median_reduction(fr, "b", "ret")}
    req = sum(r["evidence"]["required"] for r in rows)
    got = sum(r["evidence"]["found"] for r in rows)
    out["evidence"] = {"required": req, "found": got, "coveragePct": stats.coverage(got, req),
                       "tasksComplete": sum(1 for r in rows if r["ok"]), "tasks": len(rows)}
    out["roundTrips"] = {"codesynapse": sum(r["response"]["roundTrips"] for r in rows),
                         "a": sum(r["a"]["roundTrips"] for r in rows), "b": sum(r["b"]["roundTrips"] for r in rows)}
    out["responseBytes"] = sum(r["response"]["bytes"] for r in rows)
    return out


def run_workload(workload: Workload, corpus: Corpus, work_dir: Path | None = None,
                 tokenizers: Tokenizers | None = None, keep: bool = False, progress=None) -> dict[str, Any]:
    from codesynapse.bench.apps import open_app, what_if_analyze

    tokenizers = tokenizers if tokenizers is not None else default_tokenizers()
    base = Path(work_dir) if work_dir else Path(tempfile.mkdtemp(prefix=f"tokens-{corpus.name}-",
                                                                  dir=cache_dir()))
    root = base / "tree"
    data = base / "data"
    t0 = time.perf_counter()
    writable_copy(corpus, root)
    copy_s = time.perf_counter() - t0
    shutil.rmtree(data, ignore_errors=True)
    app = open_app(root, data, corpus.exclude, corpus.include, watch=False)
    runner = None
    try:
        t1 = time.perf_counter()
        report = app.index()
        index_s = time.perf_counter() - t1
        analyzed = what_if_analyze(app)
        runner = Runner(app, root, tokenizers)
        rows = []
        for task in workload.tasks:
            row = runner.run_task(task)
            rows.append(row)
            if progress:
                progress(f"  {task.id}: {'ok' if row['ok'] else 'FAILED'} {row.get('latencyMs')} ms"
                         + (f" ({row['error']})" if row.get("error") else ""))
        counters = ["est"] + list(tokenizers.names if tokenizers else ())
        status = app.status()
        return {
            "workload": {"name": workload.name, "version": workload.version, "path": _rel_path(workload.path),
                         "tasks": len(workload.tasks)},
            "corpus": {**corpus.describe(), "files": status["files"], "symbols": status["symbols"],
                       "languages": status["languages"]},
            "policyFingerprint": getattr(app.policy, "fingerprint", ""),
            "estimator": "bytes/4 (ceil)",
            "tokenizer": tokenizers.label() if tokenizers else "unavailable",
            "index": {"seconds": round(index_s, 2), "copySeconds": round(copy_s, 2), "files": report.files,
                      "parsed": report.parsed},
            "whatIfAnalyze": analyzed,
            "overranDeadline": runner.overran,
            "rows": rows,
            "aggregates": aggregates(rows, counters),
            "ledgerAgreement": agreement_summary(rows),
        }
    finally:
        if runner is not None:
            runner.close()
        app.close()
        if not keep and not work_dir:
            shutil.rmtree(base, ignore_errors=True)


def _rel_path(p: str) -> str:
    if not p:
        return ""
    try:
        return os.path.relpath(p, Path(__file__).resolve().parents[3])
    except ValueError:
        return p
