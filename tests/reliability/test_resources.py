"""Resources: hostile files (huge, deeply nested in every language, a million lines, binary,
names that are not UTF-8, FIFOs, symlink loops) and a 100,000-file tree neither crash the
daemon, nor exhaust memory, nor stall requests; peak RSS against corpus size.

The figures (peak RSS, index time, how many requests were answered while indexing and how
long the slowest took) are recorded with CODESYNAPSE_RELIABILITY_TALLY=FILE for
docs/RELIABILITY.md; the assertions are on outcomes (alive, answered, consistent, skipped
with a reason) and on generous memory bounds, never on time.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from codesynapse.bench.proc import TreeSampler
from codesynapse.graph.integrity import check_graph
from tests.reliability.conftest import SOAK, scale
from tests.reliability.corpus import nested_sources, python_tree, wide_tree
from tests.reliability.rss import corpus_copy, measure

GiB = 2**30
NESTING = scale(3000, 100_000)


def _record(**row) -> None:
    out = os.environ.get("CODESYNAPSE_RELIABILITY_TALLY")
    if out:
        with open(out, "a", encoding="utf-8") as f:
            f.write(json.dumps({"module": "resources", "soak": SOAK, **row}) + "\n")


def _stored(data: Path) -> dict[str, tuple[str, str]]:
    import sqlite3

    conn = sqlite3.connect(f"file:{data / 'graph.db'}?mode=ro", uri=True)
    try:
        return {p: (s, r) for p, s, r in conn.execute("SELECT path, status, reason FROM files")}
    finally:
        conn.close()


def hostile_tree(root: Path, outside: Path) -> None:
    root.mkdir(parents=True)
    for name, text in nested_sources(NESTING).items():
        (root / name).write_text(text)
    with open(root / "huge.py", "wb") as f:  # 200 MB, over the 1 MiB default cap: never read
        f.seek(200 * 1024 * 1024)
        f.write(b"\n")
    (root / "million.py").write_text("x = 1\n" * 1_000_000)  # a million lines (6 MB): over the cap
    (root / "long_line.js").write_text("var x = [" + ",".join("1" for _ in range(450_000)) + "];\n")  # 900 KB
    (root / "binary.py").write_bytes(os.urandom(4096) + b"\x00" * 16)
    (root / "latin1.py").write_bytes("s = 'caf\xe9'\n".encode("latin-1"))
    (root / "bom.py").write_bytes(b"\xef\xbb\xbfdef with_bom():\n    return 1\n")
    (root / "crlf.py").write_bytes(b"def crlf():\r\n    return 1\r\n")
    (root / "empty.py").write_bytes(b"")
    (root / "nul_late.py").write_bytes(b"def ok():\n    return 1\n" + b" " * 9000 + b"\x00")
    os.mkfifo(root / "pipe.py")
    (root / "loop").symlink_to(root, target_is_directory=True)
    (root / "dangling.py").symlink_to(root / "missing.py")
    (root / "out_link.py").symlink_to(outside / "x.py")
    os.mkdir(os.path.join(os.fsencode(root), b"bad\xffdir"))
    with open(os.path.join(os.fsencode(root), b"bad\xffdir", b"m.py"), "wb") as f:
        f.write(b"def hidden():\n    pass\n")
    (root / "ok.py").write_text("def fine():\n    return 1\n")


@pytest.fixture()
def outside(tmp_path) -> Path:
    out = tmp_path / "outside"
    out.mkdir()
    (out / "x.py").write_text("def outside():\n    pass\n")
    return out


@pytest.mark.parametrize("layout", ["pool", "in-process"])
def test_hostile_files_neither_crash_nor_stall(tmp_path, outside, layout):
    """Every hostile file at once (extraction in worker processes), and the few that used to
    crash a parser alone (fewer than 16 files are extracted inside the daemon itself)."""
    root = tmp_path / "hostile"
    if layout == "pool":
        hostile_tree(root, outside)
    else:
        root.mkdir()
        srcs = nested_sources(NESTING)
        for name in ("deep_inline.yaml", "deep_block.yaml", "deep_quote.md", "deep_list.md", "deep_expr.py"):
            (root / name).write_text(srcs[name])
    data = tmp_path / "data"
    fig = measure(root, data, timeout=1800)
    _record(scenario=f"hostile files ({layout})", nesting=NESTING, **fig)
    assert fig["daemonAlive"], "the daemon died while indexing hostile files"
    assert fig["probeErrors"] == 0
    assert fig["peakRssMiB"] * 2**20 < 2 * GiB
    rep = check_graph(data / "graph.db")
    assert rep.ok, str(rep)
    rows = _stored(data)
    assert rows["deep_inline.yaml"] == ("skipped", "too deeply nested")
    assert rows["deep_quote.md"] == ("skipped", "too deeply nested")
    if layout == "pool":
        assert rows["huge.py"][0] == "skipped" and rows["huge.py"][1].startswith("too large")
        assert rows["million.py"][0] == "skipped" and rows["million.py"][1].startswith("too large")
        assert rows["binary.py"] == ("skipped", "binary (NUL byte)") and rows["latin1.py"] == ("skipped", "not UTF-8")
        assert rows["ok.py"][0] == "indexed" and rows["bom.py"][0] in ("indexed", "partial")
        assert "pipe.py" not in rows and not any(p.startswith("loop/") for p in rows)
        assert rows["out_link.py"] == ("skipped", "symlink outside workspace")
        assert not any("bad" in p and "dir" in p for p in rows)  # the non-UTF-8 folder is ignored
        for name in nested_sources(NESTING):
            assert name in rows, name  # indexed, partial or skipped with a reason: never lost
            assert rows[name][0] in ("indexed", "partial") or rows[name][1], (name, rows[name])


def test_a_million_line_file_admitted_by_policy_stays_bounded(tmp_path):
    """A policy may raise maxFileBytes (up to 1 GiB); a file over the extraction engine's
    CHUNK_BYTES is parsed a piece at a time, so a million lines of 'x = 1' (6 MB, a tree of
    ~850 MB when parsed whole, which peaked at ~1.6 GB) stay far under 1 GiB, and the file is
    still indexed whole."""
    root = tmp_path / "repo"
    root.mkdir()
    (root / "million.py").write_text("x = 1\n" * 1_000_000)
    (root / ".codesynapse.yaml").write_text("version: 1\nmaxFileBytes: 16777216\n")
    proc = subprocess.Popen([sys.executable, "-m", "codesynapse", "index", str(root), "--data-dir",
                             str(tmp_path / "d")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    sampler = TreeSampler(proc.pid, 0.05).start()
    rc = proc.wait(1800)
    sampler.stop()
    _record(scenario="million-line file, maxFileBytes 16 MiB", peakRssMiB=round(sampler.peak_total / 2**20), rc=rc)
    assert rc == 0
    assert sampler.peak_total < 1 * GiB, f"peak RSS {sampler.peak_total / 2**20:.0f} MiB for a 6 MB file"
    assert _stored(tmp_path / "d")["million.py"] == ("indexed", "")


def test_hundred_thousand_file_tree(tmp_path):
    """100,000 files (CI: 10 % Python, the rest text the walk must still see; soak: all
    Python): memory stays bounded and requests keep being answered while indexing."""
    root = tmp_path / "wide"
    py = wide_tree(root, 100_000, indexed_every=scale(10, 1))
    data = tmp_path / "data"
    fig = measure(root, data, timeout=7200)
    _record(scenario="100k-file tree", python_files=py, **fig)
    assert fig["daemonAlive"]
    assert fig["indexedFiles"] >= py
    assert fig["probesWhileIndexing"] > 0, "no request was answered while the tree was being indexed"
    assert fig["probeErrors"] == 0
    assert fig["peakRssMiB"] * 2**20 < 3 * GiB
    rep = check_graph(data / "graph.db")
    assert rep.ok, str(rep)


@pytest.mark.parametrize("size", scale((1, 4), (1, 4, 16)))
def test_peak_rss_grows_slower_than_the_corpus(tmp_path, size):
    """Generated Python trees of 400 × size files: record peak RSS against corpus size."""
    root = tmp_path / "tree"
    python_tree(root, packages=4 * size, modules=100, funcs=8, seed=size)
    fig = measure(root, tmp_path / "data", timeout=3600)
    _record(scenario=f"generated tree x{size}", **fig)
    assert fig["daemonAlive"] and fig["probeErrors"] == 0
    assert fig["peakRssMiB"] * 2**20 < 2 * GiB


@pytest.mark.skipif(not SOAK, reason="real corpora take minutes to fetch and index: CODESYNAPSE_SOAK=1")
@pytest.mark.parametrize("corpus", ["python-stdlib", "django", "go-stdlib"])
def test_peak_rss_on_real_corpora(tmp_path, corpus):
    root = corpus_copy(corpus, tmp_path / "tree")
    fig = measure(root, tmp_path / "data", timeout=7200)
    _record(scenario=f"corpus {corpus}", **fig)
    assert fig["daemonAlive"] and fig["indexedFiles"] > 0
    rep = check_graph(tmp_path / "data" / "graph.db")
    assert rep.ok, str(rep)
    shutil.rmtree(root, ignore_errors=True)
