"""An incremental update must leave the graph identical to a full re-index of the same tree.

Randomized edit sequences (seeded, so a failure replays) over a copy of fixtures/python_repo:
add/delete/rename files, add/remove/rename functions and methods, change base classes and
imports. After every step the incrementally maintained store must dump exactly like a store
built from scratch.
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path

import pytest
from codesynapse.index.indexer import Indexer
from codesynapse.store.sqlite.graph import SqliteGraphStore

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "python_repo"

NAMES = ["alpha", "beta", "gamma", "delta", "apply_discount", "with_tax", "count", "total", "add", "charge"]
CLASSES = ["BaseCart", "Cart", "Gateway", "Thing", "Other"]


def _write(path: Path, text: str, tick: list[int]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    tick[0] += 1_000_000_000
    os.utime(path, ns=(tick[0], tick[0]))  # a distinct mtime, even within one clock tick


def _random_module(rng: random.Random) -> str:
    lines = ["from shop.cart import Cart, BaseCart", "from shop import pricing", "from shop.pricing import *", ""]
    for _ in range(rng.randint(1, 3)):
        fn = rng.choice(NAMES)
        callee = rng.choice(NAMES)
        lines += [f"def {fn}(x):", f"    return {callee}(x) + pricing.{rng.choice(NAMES)}(x)", ""]
    base = rng.choice(CLASSES)
    cls = rng.choice(CLASSES)
    meth = rng.choice(NAMES)
    lines += [f"class {cls}({base}):", f"    def {meth}(self):", f"        return self.{rng.choice(NAMES)}()",
              f"    def run(self):", f"        c = Cart()", f"        return c.{rng.choice(NAMES)}()", ""]
    return "\n".join(lines)


def _step(root: Path, rng: random.Random, tick: list[int]) -> str:
    py = sorted(p for p in root.rglob("*.py"))
    op = rng.choice(["add", "delete", "edit", "rename", "edit_base", "package"])
    if op == "package":  # a package marker appears or disappears: every module below is renamed
        init = root / "shop" / "__init__.py"
        if init.exists():
            init.unlink()
            return "delete shop/__init__.py"
        _write(init, "from .cart import Cart\n", tick)
        return "add shop/__init__.py"
    if op == "add" or len(py) < 3:
        name = f"shop/gen_{rng.randint(0, 9)}.py"
        _write(root / name, _random_module(rng), tick)
        return f"add {name}"
    victim = rng.choice([p for p in py if p.name != "__init__.py"])
    if op == "delete":
        victim.unlink()
        return f"delete {victim.relative_to(root)}"
    if op == "rename":
        new = victim.with_name(f"moved_{rng.randint(0, 9)}.py")
        if new.exists():
            return "noop"
        text = victim.read_text()
        victim.unlink()
        _write(new, text, tick)
        return f"rename {victim.relative_to(root)} -> {new.relative_to(root)}"
    text = victim.read_text()
    if op == "edit_base" and "class " in text:
        old = rng.choice(CLASSES)
        new = rng.choice(CLASSES)
        _write(victim, text.replace(f"({old})", f"({new})"), tick)
        return f"rebase {victim.relative_to(root)} {old}->{new}"
    old = rng.choice(NAMES)
    new = rng.choice(NAMES)
    _write(victim, text.replace(f"def {old}(", f"def {new}(") + f"\n\ndef {rng.choice(NAMES)}_x():\n    return {old}(1)\n",
           tick)
    return f"edit {victim.relative_to(root)} {old}->{new}"


def _full_dump(root: Path, tmp: Path) -> dict:
    db = tmp / f"full-{random.random()}.db"
    store = SqliteGraphStore(db, "g")
    try:
        Indexer(root, store, None, workers=1).index_tree()
        return store.dump()
    finally:
        store.close()


def _check_steps(tmp_path: Path, seed: int, steps: int, step, keep_dir: Path | None = None, before=None,
                 fixture: Path = FIXTURE) -> None:
    """Apply ``steps`` random edits (``step(root, rng, tick, k)``), updating one store
    incrementally; after each, the store must dump exactly like a full index of the tree.
    ``before(rng)`` runs before each update."""
    root = tmp_path / "repo"
    shutil.copytree(fixture, root)
    tick = [1_700_000_000_000_000_000]
    store = SqliteGraphStore(tmp_path / "inc.db", "g")
    ix = Indexer(root, store, None, workers=1, keep_dir=keep_dir)
    ix.index_tree()
    rng = random.Random(seed)
    history = []
    for k in range(steps):
        history.append(step(root, rng, tick, k))
        if before is not None and before(rng):
            history.append("(restart)")
        ix.index_tree()
        inc = store.dump()
        full = _full_dump(root, tmp_path)
        for table in full:
            assert inc[table] == full[table], f"seed {seed}, after {history}: table {table} differs"
    store.close()


@pytest.mark.parametrize("seed", range(1, int(os.environ.get("CODESYNAPSE_FUZZ_SEEDS", "8")) + 1))
def test_incremental_equals_full(tmp_path: Path, seed: int) -> None:
    _check_steps(tmp_path, seed, 12, lambda root, rng, tick, _k: _step(root, rng, tick))


def test_reindex_of_unchanged_tree_parses_nothing(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)
    store = SqliteGraphStore(tmp_path / "g.db", "g")
    ix = Indexer(root, store, None, workers=1)
    first = ix.index_tree()
    again = ix.index_tree()
    assert first.parsed == 6  # 5 Python files and README.md
    assert again.parsed == 0
    store.close()


def test_restart_catch_up_updates_only_what_changed(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(FIXTURE, root)
    db = tmp_path / "g.db"
    store = SqliteGraphStore(db, "g")
    Indexer(root, store, None, workers=1).index_tree()
    store.close()
    # while "the daemon is down": one edit, one new file, one delete
    tick = [1_800_000_000_000_000_000]
    _write(root / "shop" / "pricing.py", (root / "shop" / "pricing.py").read_text() + "\ndef rebate(x):\n    return x\n",
           tick)
    _write(root / "shop" / "extra.py", "from shop.pricing import rebate\n\ndef use():\n    return rebate(2)\n", tick)
    (root / "shop" / "payment.py").unlink()
    store = SqliteGraphStore(db, "g")
    report = Indexer(root, store, None, workers=1).index_tree()
    assert (report.parsed, report.deleted) == (2, 1)
    calls = {(c.caller, c.target) for c in store.callers("shop.pricing.rebate")}
    assert calls == {("shop.extra.use", "shop.pricing.rebate")}
    assert store.symbols_by_qname("shop.payment.pay_for") == []
    # the deleted file's caller edges are gone too
    assert {c.caller for c in store.callers("shop.cart.Cart")} == {"test_cart.test_total"}
    assert store.dump() == _full_dump(root, tmp_path)
    store.close()


def _line_step(root: Path, rng: random.Random, tick: list[int]) -> str:
    """An edit inside a file, as typing makes them: a line inserted, deleted or changed, a
    function inserted between two others, a call added to a method."""
    py = sorted(p for p in root.rglob("*.py") if p.name != "__init__.py")
    if not py:
        return "noop"
    victim = rng.choice(py)
    lines = victim.read_text().split("\n")
    at = rng.randrange(0, len(lines))
    op = rng.choice(["insert_def", "delete_line", "duplicate_line", "add_call", "blank"])
    if op == "insert_def":
        while at < len(lines) and lines[at][:1] in (" ", "\t", ")", "]", "}", "#"):
            at += 1
        fn = rng.choice(NAMES)
        lines[at:at] = [f"def {fn}(y):", f"    return {rng.choice(NAMES)}(y)", ""]
    elif op == "delete_line":
        del lines[at]
    elif op == "duplicate_line":
        lines.insert(at, lines[at])
    elif op == "add_call":
        indent = len(lines[at]) - len(lines[at].lstrip())
        lines.insert(at + 1, " " * indent + f"{rng.choice(NAMES)}(1)")
    else:
        lines.insert(at, "")
    _write(victim, "\n".join(lines), tick)
    return f"{op} {victim.relative_to(root)}:{at + 1}"


@pytest.mark.parametrize("seed", range(1, int(os.environ.get("CODESYNAPSE_FUZZ_SEEDS", "8")) + 1))
def test_incremental_equals_full_in_bulk(tmp_path: Path, seed: int, monkeypatch) -> None:
    """The same with every update written in bulk (as an update of more than LIVE_BATCH
    files is: a branch switch), several files changed at once: the held-back calls keep
    their stored resolutions unless they name what changed, and the graph is still a full
    index's."""
    from codesynapse.index import indexer

    monkeypatch.setattr(indexer, "LIVE_BATCH", 0)

    def steps(root: Path, rng: random.Random, tick: list[int], _k: int) -> str:
        return "; ".join(_step(root, rng, tick) for _ in range(rng.randint(1, 3)))

    _check_steps(tmp_path, seed, 12, steps)


C_NAMES = ["alpha", "beta", "gamma", "delta", "eps", "zeta"]
C_STEMS = ["core", "util", "net", "mem", "io", "log"]


def _c_file(rng: random.Random, header: bool, includes: list[str]) -> str:
    """A C file that includes ``includes``' headers and defines or declares functions calling
    others by name (several modules define a name: the include order decides)."""
    lines = [f'#include "{s}.h"' for s in includes]
    lines.append("#include <stdio.h>")
    for _ in range(rng.randint(1, 3)):
        fn, a, b = rng.choice(C_NAMES), rng.choice(C_NAMES), rng.choice(C_NAMES)
        if header and rng.random() < 0.5:
            lines.append(f"int {fn}(int x);")
        else:
            static = "static " if rng.random() < 0.2 else ""
            lines.append(f"{static}int {fn}(int x) {{ return {a}(x) + {b}(x - 1); }}")
    return "\n".join(lines) + "\n"


def _c_step(root: Path, rng: random.Random, tick: list[int]) -> str:
    """Rewrite a file's definitions (its includes kept), or add or delete a file that
    includes nothing: the include graph stays as it is (see the xfail test below)."""
    files = sorted(p for p in root.rglob("*.[ch]"))
    plain = [p for p in files if '#include "' not in p.read_text()]
    op = rng.choice(["add", "delete", "rewrite", "rewrite"])
    if op == "add" or (op == "delete" and not plain):
        stem = rng.choice(C_STEMS)
        rel = f"include/{stem}.h" if rng.random() < 0.5 else f"src/{stem}.c"
        if (root / rel).exists():
            op, victim = "rewrite", root / rel
        else:
            _write(root / rel, _c_file(rng, rel.endswith(".h"), []), tick)
            return f"add {rel}"
    elif op == "delete":
        victim = rng.choice(plain)
        victim.unlink()
        return f"delete {victim.relative_to(root)}"
    else:
        victim = rng.choice(files)
    includes = [line[10:-3] for line in victim.read_text().splitlines() if line.startswith('#include "')]
    _write(victim, _c_file(rng, victim.suffix == ".h", includes), tick)
    return f"rewrite {victim.relative_to(root)}"


@pytest.mark.parametrize("bulk", [True, False])
@pytest.mark.parametrize("seed", range(1, int(os.environ.get("CODESYNAPSE_FUZZ_SEEDS", "8")) + 1))
def test_c_incremental_equals_full(tmp_path: Path, seed: int, bulk: bool, monkeypatch) -> None:
    """C files including each other's headers (names resolve through the include graph and
    its cycles), several rewritten, added or deleted at once; written live or in bulk, the
    graph equals a full index's after every update."""
    from codesynapse.index import indexer

    if bulk:
        monkeypatch.setattr(indexer, "LIVE_BATCH", 0)
    fixture = tmp_path / "c_fixture"
    rng = random.Random(seed * 1000)
    for stem in C_STEMS:
        for rel, header in ((f"include/{stem}.h", True), (f"src/{stem}.c", False)):
            (fixture / rel).parent.mkdir(parents=True, exist_ok=True)
            includes = rng.sample(C_STEMS, rng.randint(0, 3))
            (fixture / rel).write_text(_c_file(rng, header, includes))

    def steps(root: Path, rng: random.Random, tick: list[int], _k: int) -> str:
        return "; ".join(_c_step(root, rng, tick) for _ in range(rng.randint(1, 4)))

    _check_steps(tmp_path, seed, 12, steps, fixture=fixture)


@pytest.mark.xfail(strict=True, reason="known gap: an update re-resolves the calls that name what its files "
                   "define or bind, not those that reached a name through an include (star import) the update "
                   "removed or added elsewhere; see the 2026-12-03 note")
def test_an_include_that_goes_unresolves_what_it_reached(tmp_path: Path) -> None:
    """log.h reaches mem.h's gamma only through util.h; deleting util.h (the module util
    stays, util.c defines something) leaves log.h's call of gamma unresolved in a full
    index, and must in an update too."""
    root = tmp_path / "repo"
    files = {"include/mem.h": "int gamma(int x) { return x; }\n",
             "include/util.h": '#include "mem.h"\nint u(int x);\n',
             "src/util.c": "int u(int x) { return x; }\n",
             "include/log.h": '#include "util.h"\nint d(int x) { return gamma(x); }\n'}
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    store = SqliteGraphStore(tmp_path / "inc.db", "g")
    try:
        ix = Indexer(root, store, None, workers=1)
        ix.index_tree()
        assert [c.target for c in store.all_calls() if c.caller == "log.d"] == ["mem.gamma"]
        (root / "include/util.h").unlink()
        ix.index_tree()
        full = _full_dump(root, tmp_path)
        assert [c for c in full["calls"] if c[1] == "log.d"][0][8] == ""  # the full index: unresolved
        assert store.dump()["calls"] == full["calls"]
    finally:
        store.close()


@pytest.mark.parametrize("kept", ["in memory", "on disk"])
@pytest.mark.parametrize("seed", range(1, int(os.environ.get("CODESYNAPSE_FUZZ_SEEDS", "8")) + 1))
def test_incremental_equals_full_with_statement_updates(tmp_path: Path, seed: int, kept: str, monkeypatch) -> None:
    """The same, with every known Python file re-extracted a statement at a time
    (extract/incremental.py, normally for files of 32 KiB and more) and written by its delta
    (SqliteGraphStore.write_delta), under edits inside files as well as whole-file ones.
    Edits may break the syntax; the graph must still equal a full index's. *On disk*: the
    extractions are kept on disk too, and half the updates start with nothing in memory (a
    restart): they start from what the index or an earlier update kept on disk."""
    from codesynapse.extract import incremental

    monkeypatch.setattr(incremental, "MIN_BYTES", 0)
    incremental.forget()
    incremental.stats.update(incremental=0, whole=0)
    incremental.stats.pop("loaded from disk", None)
    on_disk = kept == "on disk"

    def restart(rng: random.Random) -> bool:
        if rng.random() < 0.5:
            incremental.forget()
            return True
        return False

    _check_steps(tmp_path, seed, 16,
                 lambda root, rng, tick, k: _line_step(root, rng, tick) if k % 4 else _step(root, rng, tick),
                 keep_dir=tmp_path / "kept" if on_disk else None, before=restart if on_disk else None)
    assert incremental.stats["incremental"] > 0
    assert (incremental.stats.get("loaded from disk", 0) > 0) == on_disk


@pytest.mark.parametrize("by_statement", [True, False])
def test_a_star_import_that_goes_or_comes_resolves_the_file_again(tmp_path: Path, by_statement: bool,
                                                                  monkeypatch) -> None:
    """A bare call resolved through ``from lib import *`` is resolved again when the star
    import goes, and when it comes back, also when the file is written by its delta (or with
    its noted resolutions) and its other calls keep what is stored (found by the randomized
    graph test, seed 114: the call kept its target after the import was deleted)."""
    from codesynapse.extract import incremental

    monkeypatch.setattr(incremental, "MIN_BYTES", 0 if by_statement else 1 << 30)
    incremental.forget()
    root = tmp_path / "repo"
    tick = [1_700_000_000_000_000_000]
    _write(root / "lib.py", "def apply_discount(x):\n    return x\n", tick)
    user = "from lib import *\n\n\ndef add(x):\n    return apply_discount(x)\n\n\ndef other(x):\n    return add(x)\n"
    _write(root / "user.py", user, tick)
    store = SqliteGraphStore(tmp_path / "g.db", "g")
    ix = Indexer(root, store, None, workers=1)
    ix.index_tree()

    def target() -> tuple[str, str]:
        [c] = [c for c in store.calls_in_files(["user.py"]) if c.callee == "apply_discount"]
        return c.target, c.resolution

    assert target() == ("lib.apply_discount", "import")
    for text, expected in ((user.replace("from lib import *\n", ""), ("", "unresolved")),
                           (user, ("lib.apply_discount", "import"))):
        if by_statement:
            assert ix.warm("user.py", (root / "user.py").read_bytes())
        n = incremental.stats["incremental"]
        _write(root / "user.py", text, tick)
        ix.index_tree()
        assert incremental.stats["incremental"] == n + (1 if by_statement else 0)
        assert target() == expected
        assert store.dump() == _full_dump(root, tmp_path)
    store.close()


@pytest.mark.parametrize("seed", range(1, int(os.environ.get("CODESYNAPSE_FUZZ_SEEDS", "8")) // 2 + 1))
def test_incremental_equals_full_with_the_symbol_table_patched(tmp_path: Path, seed: int, monkeypatch) -> None:
    """The same, with every file already in the symbol table patched by what its update
    changed (SymbolIndex._patch, normally for files of 256 symbols and more), under whole-file
    edits and statement-at-a-time ones."""
    from codesynapse.extract import incremental
    from codesynapse.index import resolve

    monkeypatch.setattr(resolve, "_PATCH_MIN", 0)
    monkeypatch.setattr(incremental, "MIN_BYTES", 0)
    incremental.forget()
    calls = []
    real = resolve.SymbolIndex._patch

    def counted(self, *a, **k):
        got = real(self, *a, **k)
        calls.append(got is not None)
        return got

    monkeypatch.setattr(resolve.SymbolIndex, "_patch", counted)
    _check_steps(tmp_path, seed, 16,
                 lambda root, rng, tick, k: _line_step(root, rng, tick) if k % 4 else _step(root, rng, tick))
    assert sum(calls) >= 8  # most updates of a known file keep its imports: patched


def test_a_patched_files_listeners_hear_the_names_its_edit_touched(tmp_path: Path, monkeypatch) -> None:
    """A save of a large file tells the index's listeners (memory anchors) the names of the
    definitions its edit added, removed or re-extracted, not every name of the file; a
    definition whose body changed is among them (its hash moved)."""
    from codesynapse.extract import incremental

    monkeypatch.setattr(incremental, "MIN_BYTES", 0)
    incremental.forget()
    root = tmp_path / "repo"
    tick = [1_700_000_000_000_000_000]
    funcs = [f"def f{i}(x):\n    return x + {i}\n" for i in range(400)]
    _write(root / "big.py", "\n\n".join(funcs), tick)
    store = SqliteGraphStore(tmp_path / "g.db", "g")
    ix = Indexer(root, store, None, workers=1)
    ix.index_tree()
    heard: list[set[str]] = []
    ix.listeners.append(lambda paths, names: heard.append(set(names)))
    assert ix.warm("big.py", (root / "big.py").read_bytes())
    funcs[200] = "def f200(x):\n    return x * 2\n"  # a body edit
    funcs.insert(202, "def added(y):\n    return f7(y)\n")
    _write(root / "big.py", "\n\n".join(funcs), tick)
    ix.index_tree()
    assert heard and {"f200", "added"} <= heard[-1]
    assert "f5" not in heard[-1] and len(heard[-1]) < 10
    assert store.symbols_by_name("added", limit=5)[0].start_line == 202 * 4 + 1
    store.close()


def test_a_delta_the_store_refuses_is_written_whole(tmp_path: Path, monkeypatch) -> None:
    """A statement-level extraction is made against the version kept in memory; when the store
    holds another (an update that failed to write left the keep ahead of the store), the store
    refuses the delta and the file is written whole, as a full index would have it."""
    from codesynapse.errors import StoreError
    from codesynapse.extract import incremental
    from codesynapse.index.indexer import Candidate

    monkeypatch.setattr(incremental, "MIN_BYTES", 0)
    incremental.forget()
    root = tmp_path / "repo"
    root.mkdir()
    base = "".join(f"def f{j}(x):\n    return g(x) + {j}\n\n" for j in range(40)) + "def g(x):\n    return x\n"
    (root / "big.py").write_text(base)
    store = SqliteGraphStore(tmp_path / "inc.db", "g")
    try:
        ix = Indexer(root, store, None, workers=1)
        ix.index_tree()

        def update(text: str) -> None:
            ix.update([Candidate("big.py", "python", len(text), -1)], [], overlays={"big.py": text.encode()})

        update(base + "\n\ndef warm(x):\n    return g(x)\n")  # kept in memory now
        conn = store._conn()
        conn.execute(f"PRAGMA max_page_count={conn.execute('PRAGMA page_count').fetchone()[0]}")
        grown = base + "\n\ndef warm(x):\n    return g(x)\n" + "".join(
            f"def grown_{j}(x):\n    return g(x) + {j}\n\n" for j in range(400))
        with pytest.raises(StoreError):
            update(grown)  # the disk is full: nothing stored, the keep has this version
        conn.execute("PRAGMA max_page_count=1073741823")
        final = grown + "def last(x):\n    return g(x)\n"
        update(final)
        (root / "big.py").write_text(final)
        inc = store.dump()
        full = _full_dump(root, tmp_path)
        assert any(row[1] == "big.last" for row in full["symbols"])
        for table in full:
            assert inc[table] == full[table], table
    finally:
        store.close()


# -- parameter types under edits ---------------------------------------------------------------
# Functions whose parameter's calls are bound by what their callers hand them (the parameter
# pass: extract/model.py ``param_hint``), callers that hand on instances and functions as
# values, and edits that add, drop and move those calls inside files.
_PARAM_CORE = """class A:
    def run(self):
        return 1

    def stop(self):
        return 2


class B:
    def run(self):
        return 3


def take(obj):
    return obj.run()


def hold(obj):
    obj.stop()
    return obj.run()


def use(fn):
    return fn(A())


def helper(x):
    return take(x)
"""
_PARAM_LINES = ["take(A())", "take(B())", "hold(A())", "hold(B())", "use(take)", "use(hold)", "helper(B())",
                "x.run()", "x.stop()", "take(x)", "use(helper)"]


def _param_module(rng: random.Random, n: int) -> str:
    lines = ["from shop.pcore import A, B, take, hold, use, helper", ""]
    for k in range(rng.randint(1, 3)):
        lines += [f"def c{n}_{k}(x):"] + [f"    {rng.choice(_PARAM_LINES)}" for _ in range(rng.randint(1, 3))]
        lines += ["    return x", ""]
    return "\n".join(lines)


def _param_step(root: Path, rng: random.Random, tick: list[int]) -> str:
    """A call that hands on a value comes, goes or moves inside a file (the core one too:
    its functions' own calls, and the definitions the callers name), or a file is rewritten."""
    files = sorted(p for p in (root / "shop").glob("p*.py"))
    victim = rng.choice(files)
    if rng.random() < 0.2 and victim.name != "pcore.py":
        _write(victim, _param_module(rng, rng.randint(0, 99)), tick)
        return f"rewrite {victim.name}"
    lines = victim.read_text().split("\n")
    bodies = [i for i, line in enumerate(lines) if line.startswith("    ") and not line.startswith("        ")]
    op = rng.choice(["add", "add", "delete", "duplicate", "rename_def"])
    at = rng.choice(bodies) if bodies else len(lines) - 1
    if op == "add":
        lines.insert(at, f"    {rng.choice(_PARAM_LINES)}")
    elif op == "delete":
        del lines[at]
    elif op == "duplicate":
        lines.insert(at, lines[at])
    else:  # a definition another file names comes or goes
        defs = [i for i, line in enumerate(lines) if line.startswith("def ")]
        if not defs:
            return "noop"
        i = rng.choice(defs)
        name = lines[i][4:lines[i].index("(")]
        new = rng.choice(["take", "hold", "use", "helper", "gone"])
        lines[i] = lines[i].replace(f"def {name}(", f"def {new}(", 1)
        op = f"rename_def {name}->{new}"
    _write(victim, "\n".join(lines), tick)
    return f"{op} {victim.name}:{at + 1}"


@pytest.mark.parametrize("by_statement", [True, False])
@pytest.mark.parametrize("seed", range(1, int(os.environ.get("CODESYNAPSE_FUZZ_SEEDS", "8")) + 1))
def test_parameter_types_equal_full_under_edits(tmp_path: Path, seed: int, by_statement: bool, monkeypatch) -> None:
    """The parameter pass after live updates: every call bound through a parameter equals a
    full index's, with every file written by its delta (``by_statement``: the pass counts the
    lines a delta replaced, not the file's calls) or whole."""
    from codesynapse.extract import incremental

    monkeypatch.setattr(incremental, "MIN_BYTES", 0 if by_statement else 1 << 30)
    incremental.forget()
    fixture = tmp_path / "fixture"
    rng = random.Random(seed * 7919)
    (fixture / "shop").mkdir(parents=True)
    (fixture / "shop" / "__init__.py").write_text("")
    (fixture / "shop" / "pcore.py").write_text(_PARAM_CORE)
    for n in range(3):
        (fixture / "shop" / f"p{n}.py").write_text(_param_module(rng, n))
    _check_steps(tmp_path, seed, 24, lambda root, rng, tick, _k: _param_step(root, rng, tick), fixture=fixture)
