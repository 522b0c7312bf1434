"""``codesynapse bench incremental``: save-to-queryable latency and change-storm absorption.

On a scratch tree of the corpus (the stdlib by default; ``--corpus linux-6.1`` for the kernel),
indexed first. The tree is made of hard links to the corpus's files (a copy where links are
not possible), and every edit replaces a file (a new file renamed over it, as many editors
save), so the corpus itself is never written. Its index is kept in the bench cache between
runs: a run on an index already there catches it up (a stat of every file) instead of
indexing again, which is what makes the kernel's run minutes instead of a quarter hour.

* **One-line edits.** A one-line function (``def _cs_probe_N(): return N``; in C
  ``int _cs_probe_N(void) { return N; }``) is appended to a file; the clock
  starts just before the write and stops when a ``codesynapse/symbolCard`` request for
  ``_cs_probe_N`` (sent through the daemon's dispatch table, polled every ``POLL_S``)
  answers ``found: true``. Two paths: *didSave* (the write, then the live updater's
  ``buffer_saved`` exactly as the LSP ``textDocument/didSave`` handler calls it; no file
  watcher) and *disk write* (only the write; the watchfiles watcher must notice it). Small
  files (50–150 lines) and the largest files of the corpus, separately.
* **Change storm.** 1,000 files get a new function appended at once (a branch switch, seen by
  the watcher); absorbed = every new function is queryable. Requests sent meanwhile are
  timed and their freshness stamp is read (``pending`` > 0 while work is queued). The storm
  is then undone the same way.
"""

from __future__ import annotations

import os
import random
import shutil
import threading
import time
from pathlib import Path
from typing import Any

from codesynapse.bench import stats
from codesynapse.bench.corpora import cache_dir
from codesynapse.bench.machine import load_average, machine_info, machine_line
from codesynapse.bench.proc import TreeSampler, rss_bytes, tree
from codesynapse.bench.report import met, ms, num, save_raw, say, write_perf_section

POLL_S = 0.002
STORM = 1000
# the one-line function an edit adds, per language of the corpus's files
PROBES = {"python": "def {name}(): return {n}", "c": "int {name}(void) {{ return {n}; }}"}


def _found(app, name: str) -> bool:
    from codesynapse.methods import call_method

    return bool(call_method(app, "codesynapse/symbolCard", {"selector": name}).get("found"))


def _wait_visible(app, name: str, timeout: float = 30.0) -> float | None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if _found(app, name):
            return time.perf_counter()
        time.sleep(POLL_S)
    return None


def link_tree(corpus, dest: Path) -> Path:
    """A scratch tree of ``corpus`` under ``dest``: a hard link per file (a copy where the
    file system refuses links), folders the policy drops anyway left out. Edits must
    replace files (``replace_file``), never write into them: a write would reach the corpus
    through the link."""
    from codesynapse.bench.corpora import skip_names

    if dest.exists():
        shutil.rmtree(dest)
    ignore = skip_names(corpus)
    for dirpath, dirs, files in os.walk(corpus.path):
        dropped = ignore(dirpath, dirs + files)
        dirs[:] = sorted(d for d in dirs if d not in dropped)
        rel = os.path.relpath(dirpath, corpus.path)
        out = dest if rel == "." else dest / rel
        out.mkdir(parents=True, exist_ok=True)
        for f in files:
            if f in dropped:
                continue
            src = os.path.join(dirpath, f)
            if os.path.islink(src):
                os.symlink(os.readlink(src), out / f)
                continue
            try:
                os.link(src, out / f)
            except OSError:
                shutil.copy2(src, out / f)
    return dest


def replace_file(path: Path, data: bytes) -> None:
    """``path`` now holds ``data``, as a new file renamed over it (its old inode, which the
    corpus may share, is never written). The temporary name has no source extension, so no
    language claims it."""
    tmp = path.with_name(f".{path.name}.cs-bench~")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def _probe(language: str, name: str, n: int | str) -> str:
    return PROBES[language].format(name=name, n=n)


def _pick_files(app, rng: random.Random, n: int, language: str = "python") -> tuple[list[str], list[str], list[str]]:
    """``n`` small files, the ``n`` largest, and the ``2n`` largest after those."""
    # files that parse cleanly: in a file with syntax errors (status "partial") an appended
    # function may never become a symbol, which would measure the file, not the updater
    files = [f for f in app.store.files() if f.status == "indexed" and f.language == language]
    small = sorted(f.path for f in files if 50 <= f.lines <= 150)
    by_size = [f.path for f in sorted(files, key=lambda f: (-f.lines, f.path))]
    if not small:  # a corpus of tiny files: its smallest files stand in
        small = [f.path for f in sorted(files, key=lambda f: (f.lines, f.path))[:n]]
    small = sorted(rng.sample(small, min(n, len(small))))
    return small, by_size[:n], by_size[n:3 * n]


def _middle(text: str, line: str, starts: list[int] = ()) -> str:
    """``text`` with ``line`` inserted in its middle (a definition added between two others):
    before the top-level definition starting nearest the middle line among ``starts`` (their
    0-based rows, as indexed), else before the first line at or after the middle that looks
    like a top-level statement (it may be inside a string)."""
    lines = text.split("\n")
    at = len(lines) // 2
    if starts:
        at = min(starts, key=lambda r: (abs(r - at), r))
    else:
        while at < len(lines) - 1 and lines[at][:1] in ("", " ", "\t", ")", "]", "}", "#", "@"):
            at += 1
    lines[at:at] = [line, ""]
    return "\n".join(lines)


def _definition_rows(app, rel: str, language: str = "python") -> list[int]:
    """0-based rows where the file's top-level functions and classes start, undecorated and
    without a comment above (which would become the summary of the inserted line), as indexed;
    in C, top-level definitions whose first line starts with a letter after a blank line (not
    inside an enum's body, whose entries may sit at column 0 too), and ``#define``s not below
    a continued or commented line (a generated header is thousands of them in one include
    guard, with no other place in its middle)."""
    rows = app.store.symbols_in_file(rel)
    module = next((r.qname for r in rows if r.kind == "module"), None)
    text = app.workspace.root.joinpath(rel).read_text(encoding="utf-8", errors="replace").split("\n")
    out = []
    for r in rows:
        k = r.start_line - 1
        if r.kind == "module" or not 0 < k < len(text):
            continue
        if language == "python":
            ok = r.kind in ("function", "class") and r.parent == module \
                and text[k].startswith(("def ", "class ", "async def ")) and not text[k - 1].startswith(("@", "#"))
        else:
            above = text[k - 1].rstrip()
            ok = r.parent == module and ((text[k][:1].isalpha() and not above) or (
                text[k].startswith("#define") and not above.endswith("\\") and not any(
                    m in above for m in ("/*", "*/", "//"))))
        if ok:
            out.append(k)
    return sorted(out)


def _edit_series(app, live, root: Path, paths: list[str], samples: int, tag: str, via_save: bool,
                 counter: list[int], where: str = "end", language: str = "python") -> dict[str, Any]:
    """One-line edits, ``where`` in the file: appended at the ``end`` or inserted in the
    ``middle`` (every line below it moves). Through didSave the files are opened first, as an
    editor opens a document before it saves it; the first edit of each file through the disk
    is the first change of that file the daemon sees (reported apart)."""
    from codesynapse.extract import incremental

    lat: list[float] = []
    first: list[float] = []  # the first edit of each file
    timeouts = 0
    originals: dict[str, bytes] = {}
    ext0 = dict(incremental.stats)
    if via_save:
        for rel in paths:
            live.buffer_opened(rel, (root / rel).read_text(encoding="utf-8", errors="surrogateescape"))
        live.warm_idle(60)
    for i in range(samples):
        rel = paths[i % len(paths)]
        full = root / rel
        raw = full.read_bytes()
        originals.setdefault(rel, raw)
        text = raw.decode("utf-8", "surrogateescape")
        counter[0] += 1
        name = f"_cs_probe_{tag}_{counter[0]}"
        line = _probe(language, name, counter[0])
        new = _middle(text, line, _definition_rows(app, rel, language)) if where == "middle" \
            else text + ("" if text.endswith("\n") else "\n") + line + "\n"
        live.wait_idle(30)
        t0 = time.perf_counter()
        replace_file(full, new.encode("utf-8", "surrogateescape"))
        if via_save:
            live.buffer_saved(rel)
        t1 = _wait_visible(app, name)
        if t1 is None:
            timeouts += 1
        else:
            lat.append((t1 - t0) * 1000)
            if i < len(paths):
                first.append(lat[-1])
    for rel, raw in originals.items():
        replace_file(root / rel, raw)
        if via_save:
            live.buffer_saved(rel)
    time.sleep(0.3)
    live.wait_idle(60)
    lines = sorted({app.store.file(p).lines for p in paths if app.store.file(p)})
    ext = {k: v - ext0.get(k, 0) for k, v in incremental.stats.items() if v - ext0.get(k, 0)}
    return {"latencyMs": stats.latency_summary(lat), "timeouts": timeouts, "files": len(paths),
            "fileLines": [lines[0], lines[-1]] if lines else None, "samples": samples, "where": where,
            "firstEditMs": stats.latency_summary(first), "laterEditsMs": stats.latency_summary(lat[len(first):]),
            "extractions": ext}


def _count_storm_symbols(app) -> int:
    """How many ``_cs_storm_*`` functions the index holds (one read-only SQL count on the
    SQLite file: checking 1,000 names one request at a time would measure the checker)."""
    import sqlite3

    conn = sqlite3.connect(f"file:{app.workspace.db_path}?mode=ro", uri=True, timeout=30)
    try:
        return conn.execute("SELECT count(*) FROM symbols WHERE name LIKE '\\_cs\\_storm\\_%' ESCAPE '\\'").fetchone()[0]
    finally:
        conn.close()


def _storm(app, live, root: Path, paths: list[str], undo: dict[str, bytes] | None, rng: random.Random,
           language: str = "python", selectors: list[str] = ()) -> dict[str, Any]:
    from codesynapse.methods import call_method

    t0 = time.perf_counter()
    if undo is None:
        undo = {}
        for k, rel in enumerate(paths):
            full = root / rel
            raw = full.read_bytes()
            undo[rel] = raw
            tail = b"" if raw.endswith(b"\n") else b"\n"
            replace_file(full, raw + tail + _probe(language, f"_cs_storm_{k}", k).encode() + b"\n")
        check = lambda: _count_storm_symbols(app) >= len(paths)  # noqa: E731
    else:
        for rel, raw in undo.items():
            replace_file(root / rel, raw)
        check = lambda: _count_storm_symbols(app) == 0  # noqa: E731
    t_written = time.perf_counter()
    # requests served meanwhile: cards of the functions of the corpus's largest files
    sel = list(selectors) or [s.qname for s in app.store.symbols_by_name("__init__", limit=200)] or ["__init__"]
    req_lat: list[float] = []
    pending_seen = 0
    errors = 0
    done = threading.Event()

    def requester():
        nonlocal pending_seen, errors
        while not done.is_set():
            q = rng.choice(sel)
            t = time.perf_counter()
            try:
                a = call_method(app, "codesynapse/symbolCard", {"selector": q})
                if a.get("provenance", {}).get("freshness", {}).get("pending", 0) > 0:
                    pending_seen += 1
            except Exception:
                errors += 1
            req_lat.append((time.perf_counter() - t) * 1000)
            time.sleep(0.02)

    th = threading.Thread(target=requester, daemon=True)
    th.start()
    absorbed = None
    end = time.monotonic() + 600
    while time.monotonic() < end:
        time.sleep(0.1)
        if live.q.empty() and app.pending == 0 and check():
            absorbed = time.perf_counter()
            break
    done.set()
    th.join(5)
    return {"files": len(paths), "writeSeconds": t_written - t0,
            "absorbSeconds": (absorbed - t0) if absorbed else None,
            "requestsDuring": stats.latency_summary(req_lat), "requestsSeeingPending": pending_seen,
            "requestErrors": errors, "undo": undo}


def run_incremental_bench(args) -> dict[str, Any]:
    from codesynapse.bench.apps import open_app
    from codesynapse.bench.corpora import resolve
    from codesynapse.watch.live import LONE_QUIET_S, LiveUpdater

    quick = getattr(args, "quick", False)
    corpus = resolve((args.corpus or ["python-stdlib"])[0])
    language = corpus.languages[0] if corpus.languages else None
    if language is not None and language not in PROBES:
        raise SystemExit(f"bench incremental: corpus {corpus.name} is {language}; it edits {', '.join(PROBES)} files")
    samples = 20 if quick else 60
    base = cache_dir() / "incremental"
    for old in ("tree", "data"):  # the layout before one folder per corpus
        shutil.rmtree(base / old, ignore_errors=True)
    root, data = base / corpus.name / "tree", base / corpus.name / "data"
    say(f"incremental: linking {corpus.version}")
    link_tree(corpus, root)
    reused = (data / "graph.db").exists()
    app = open_app(root, data, corpus.exclude, corpus.include)
    rng = random.Random(7)
    # resident memory of this process and its children (the extraction workers): the serving
    # process is this one, so its steady state is what a daemon on this index holds
    sampler = TreeSampler(os.getpid()).start()
    memory: dict[str, dict[str, float]] = {}

    def resident(label: str) -> None:
        me = os.getpid()
        sizes = {p: rss_bytes(p) for p in tree(me)}
        memory[label] = {"all": sum(sizes.values()) / 1e6, "main": sizes[me] / 1e6, "children": len(sizes) - 1}

    try:
        t0 = time.perf_counter()
        app.index()
        index_s = time.perf_counter() - t0
        from codesynapse.bench.apps import what_if_analyze

        analyzed = what_if_analyze(app)
        say(f"  {'caught up the kept index' if reused else 'indexed the tree'} in {index_s:.1f} s")
        resident("after the index")
        if language is None:  # a folder given by path: the language most of its indexed files are in
            counts: dict[str, int] = {}
            for f in app.store.files():
                if f.status == "indexed" and f.language in PROBES:
                    counts[f.language] = counts.get(f.language, 0) + 1
            if not counts:
                raise SystemExit(f"bench incremental: {corpus.path} has no {' or '.join(PROBES)} file indexed")
            language = max(sorted(counts), key=counts.get)
        kept = [p.stat().st_size for p in (app.workspace.data_dir / "kept").glob("*.kept")]
        small, large, untouched = _pick_files(app, rng, 10, language)
        selectors = [r.qname for rel in large for r in app.store.symbols_in_file(rel) if r.kind == "function"]
        selectors = sorted(rng.sample(selectors, min(200, len(selectors))))
        counter = [0]
        load_before = load_average()
        results: dict[str, Any] = {"corpus": corpus.describe(), "indexSeconds": index_s, "indexReused": reused,
                                   "language": language, "probe": _probe(language, "_cs_probe_N", "N"), "quick": quick,
                                   "whatIfAnalyze": analyzed, "keptOnDisk": {"files": len(kept), "bytes": sum(kept)},
                                   "debounceMs": app.settings.debounce_ms, "loneQuietMs": LONE_QUIET_S * 1000,
                                   "edits": {}}
        live = LiveUpdater(app)
        t0 = time.perf_counter()
        live.start(watch=False)
        # a daemon's worker reads the symbol table and warms the resolver before its first
        # update; edits are timed from then on (the start is reported on its own)
        live.ready.wait(900)
        results["workerReadySeconds"] = time.perf_counter() - t0
        say(f"  worker ready {results['workerReadySeconds']:.1f} s after it started")
        resident("worker ready")
        for size, paths in (("small", small), ("large", large)):
            results["edits"][f"didSave/{size}"] = _edit_series(app, live, root, paths, samples, f"s{size[0]}", True,
                                                               counter, language=language)
            say(f"  didSave {size}: {results['edits'][f'didSave/{size}']['latencyMs']}")
        results["edits"]["didSave/large, middle"] = _edit_series(app, live, root, large, samples, "sm", True,
                                                                 counter, where="middle", language=language)
        say(f"  didSave large, middle: {results['edits']['didSave/large, middle']['latencyMs']}")
        live.stop()
        time.sleep(0.6)
        live = LiveUpdater(app)
        live.start(watch=True)
        live.ready.wait(900)
        time.sleep(1.0)  # let the watcher start
        from codesynapse.extract import incremental

        # the next 20 largest files, edited once each: the first change of a file untouched since
        # the index (its extraction as the index kept it on disk)
        incremental.forget()
        results["edits"]["disk/large, middle, untouched since the index"] = _edit_series(
            app, live, root, untouched, len(untouched), "du", False, counter, where="middle", language=language)
        say(f"  disk write large, middle, untouched: "
            f"{results['edits']['disk/large, middle, untouched since the index']['latencyMs']}")
        for size, paths in (("small", small), ("large", large)):
            incremental.forget()  # the first disk edit of a file is the first change of it seen
            results["edits"][f"disk/{size}"] = _edit_series(app, live, root, paths, samples, f"d{size[0]}", False,
                                                            counter, language=language)
            say(f"  disk write {size}: {results['edits'][f'disk/{size}']['latencyMs']}")
        incremental.forget()
        results["edits"]["disk/large, middle"] = _edit_series(app, live, root, large, samples, "dm", False,
                                                              counter, where="middle", language=language)
        say(f"  disk write large, middle: {results['edits']['disk/large, middle']['latencyMs']}")
        same = sorted(f.path for f in app.store.files() if f.status == "indexed" and f.language == language)
        storm_paths = sorted(rng.sample(same, min(STORM, len(same))))
        resident("after the edits")
        storm = _storm(app, live, root, storm_paths, None, rng, language, selectors)
        undo = storm.pop("undo")
        say(f"  storm of {len(storm_paths)} files absorbed in {storm['absorbSeconds']}")
        revert = _storm(app, live, root, storm_paths, undo, rng, language, selectors)
        revert.pop("undo")
        say(f"  revert storm absorbed in {revert['absorbSeconds']}")
        resident("after the storms")
        live.stop()
        results["storm"] = storm
        results["stormRevert"] = revert
        results["loadBefore"] = load_before
        results["loadAfter"] = load_average()
    finally:
        sampler.stop()
        app.close()
    results["residentMB"] = memory
    results["peakResidentMB"] = sampler.peak_total / 1e6
    points = ", ".join(f"{k} {v['all']:,.0f} / {v['main']:,.0f}" for k, v in memory.items())
    say(f"  resident MB (all / main): {points}; peak {results['peakResidentMB']:,.0f}")
    section = "incremental_whatif" if results.get("whatIfAnalyze") else "incremental"
    if corpus.name != "python-stdlib":
        section += f"_{corpus.name}"
    write_perf_section(Path(args.out), section, incremental_markdown(results, machine_info()))
    save_raw(section, results)
    return results


def incremental_markdown(r: dict[str, Any], machine: dict[str, Any]) -> str:
    lines = ["## Save-to-queryable latency and change storms"
             + ("" if r["corpus"]["name"] == "python-stdlib" else f" — {r['corpus']['version']}")
             + (" — what-if: SQLite ANALYZE run on the index first" if r.get("whatIfAnalyze") else ""), "",
             f"* **Machine:** {machine_line(machine)}",
             f"* **Corpus:** {r['corpus']['version']} (a scratch tree of hard links to it, policy exclude "
             f"{r['corpus']['policyExclude']}); "
             + (f"the index kept from an earlier run caught up in {r['indexSeconds']:.1f} s"
                if r.get("indexReused") else f"the tree indexed in {r['indexSeconds']:.1f} s")
             + (f"; the live worker ready {r['workerReadySeconds']:.1f} s after it started (the symbol table "
                "read, the resolver warmed; edits are timed from then on)" if r.get("workerReadySeconds") is not None
                else "")
             + f"; live-updater debounce {r['debounceMs']} ms (the default)"
             + (f", of which a lone disk change waits {r['loneQuietMs']:g} ms of quiet (a burst waits it out)"
                if r.get("loneQuietMs") is not None else "") + "."
             + (" **--quick** run (fewer samples)." if r.get("quick") else ""),
             "* **Method:** `codesynapse bench incremental`, in-process (the daemon's LiveUpdater and dispatch "
             f"table; no JSON-RPC transport). A one-line edit appends `{r.get('probe') or 'def _cs_probe_N(): return N'}` "
             f"to a {r.get('language', 'python')} file (the file replaced by a new one, as editors that save by "
             "rename do); the "
             "clock runs from just before the write to the first `codesynapse/symbolCard` answer (polled every "
             "2 ms) that finds the new function. *didSave*: write + `buffer_saved` as the didSave handler calls it; "
             "*disk*: write only, noticed by the watchfiles watcher. Small = 50–150-line files, large = the 10 "
             "largest files. Requests during a storm: `symbolCard` of up to 200 functions of the large files. "
             "Load average (1 min) "
             f"{(r.get('loadBefore') or ['?'])[0]} before, {(r.get('loadAfter') or ['?'])[0]} after (shared machine).",
             "",
             "",
             "*Middle*: the line is inserted before the top-level function or class (as indexed, undecorated) "
             "starting nearest the file's middle line instead (every line below moves). Through didSave each file is opened first (`didOpen`), as "
             "an editor does; a large file's extraction is then prepared in the background and the first save "
             "re-extracts only the statements it touched, like the later ones. Through the disk nothing is "
             "prepared: the daemon forgets what it kept in memory before each disk series (as a restart would), so "
             "the first edit of each file is the first change of it the daemon sees (its own column); it starts "
             "from the extraction that the index (or the file's last update) kept on disk; *untouched since the "
             "index*: the next 20 largest files, each edited once (mid-file), so every sample is the first change "
             "of a file, starting from what the index kept"
             + (f" ({num(r['keptOnDisk']['files'])} files, {r['keptOnDisk']['bytes'] / 1e6:.1f} MB after the index)"
                if r.get("keptOnDisk") else "") + ". "
             "*Extractions*: how the edited large files were extracted — by statement (incremental) or whole, "
             "and why whole.",
             "",
             "| path / files | samples | file lines | p50 ms | p95 ms | p99 ms | max ms | first edit of a file p50 / "
             "p95 ms | later edits p50 / p95 ms | timeouts | extractions |",
             "|---|---:|---|---:|---:|---:|---:|---|---|---:|---|"]
    for k, v in r["edits"].items():
        lat = v["latencyMs"]
        fl = v.get("fileLines")
        fe, le = v.get("firstEditMs") or {}, v.get("laterEditsMs") or {}
        ext = ", ".join(f"{n} {why}" for why, n in sorted((v.get("extractions") or {}).items())) or "—"
        lines.append(f"| {k} | {lat['n']} | {f'{fl[0]}–{fl[1]}' if fl else '—'} | {ms(lat['p50'])} | "
                     f"{ms(lat['p95'])} | {ms(lat['p99'])} | {ms(lat['max'])} | "
                     f"{ms(fe.get('p50'))} / {ms(fe.get('p95'))} | {ms(le.get('p50'))} / {ms(le.get('p95'))} | "
                     f"{v['timeouts']} | {ext} |")
    lines += ["", "| storm | files | writes s | absorbed s | requests meanwhile | their p50 / p95 ms | "
                  "answers saying work is pending | errors |", "|---|---:|---:|---:|---:|---|---:|---:|"]
    for label, s in ((f"{r['storm']['files']:,}-file change", r["storm"]), ("undo of it", r["stormRevert"])):
        q = s["requestsDuring"]
        ab = s["absorbSeconds"]
        lines.append(f"| {label} | {num(s['files'])} | {s['writeSeconds']:.2f} | "
                     f"{'not absorbed in 600 s' if ab is None else f'{ab:.1f}'} | {q['n']} | "
                     f"{ms(q['p50'])} / {ms(q['p95'])} | {s['requestsSeeingPending']} | {s['requestErrors']} |")
    p95s = [(v["latencyMs"]["p95"], k) for k, v in r["edits"].items() if v["latencyMs"]["p95"] is not None]
    worst = max(p95s) if p95s else (None, "")
    warm = [((v.get("laterEditsMs") or {}).get("p95") if k.startswith("disk/") else v["latencyMs"]["p95"], k)
            for k, v in r["edits"].items()]
    warm_worst = max(((p, k) for p, k in warm if p is not None), default=(None, ""))
    kernel = r["corpus"]["name"].startswith("linux")
    issue = "issue 24, on a kernel-size index" if kernel else "issue 3"
    resident = r.get("residentMB") or {}
    if resident:
        end = resident.get("after the storms") or {}
        lines += ["", "Resident memory of the serving process (this one) and its children — the extraction "
                  "workers, while they live — in MB, from /proc, all / main process: "
                  + ", ".join(f"{k} **{v['all']:,.0f}** / {v['main']:,.0f}" for k, v in resident.items())
                  + f"; peak over the run (all, sampled every 50 ms) {r['peakResidentMB']:,.0f}."
                  + (f" Target (issue 24 #2): steady-state RSS ≤ 1 GB after the index — "
                     f"{met(end.get('all', 1e9) <= 1000)} ({end.get('all', 0):,.0f} MB after the edits and "
                     "storms)." if kernel else "")]
    lines += ["", f"Target ({issue}, benchmark): p95 ≤ 100 ms for a one-line edit — "
                  f"{met(worst[0] is not None and worst[0] <= 100)} over every sample (worst p95 {ms(worst[0])} ms, "
                  f"{worst[1]}); leaving out the first disk change of each file: "
                  f"{met(warm_worst[0] is not None and warm_worst[0] <= 100)} (worst p95 {ms(warm_worst[0])} ms, "
                  f"{warm_worst[1]})."]
    return "\n".join(lines)
