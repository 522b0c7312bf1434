"""SymbolIndex.add_file patches a large file already in the table (issue 24: a one-line save of a
15,000-definition header no longer counts every definition out and in). The patched table must
be the table a remove-then-add gives: the same kinds, parents, declared results and fields,
name bits and star counts, on random edits of files that share qualified names."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from codesynapse.extract.model import ImportRef
from codesynapse.index import resolve
from codesynapse.index.resolve import SymbolIndex

KINDS = ("function", "method", "class", "struct", "macro", "variable")


def _row(rng: random.Random, module: str, language: str, n: int) -> tuple[str, str, str, str]:
    name = f"n{rng.randrange(n)}"
    kind = rng.choice(KINDS)
    parent = module if rng.random() < 0.8 else f"{module}.C{rng.randrange(4)}"
    qname = f"{parent}.{name}"
    if language == "python":
        sig = rng.choice(["", f"def {name}(x) -> T{rng.randrange(3)}", f"def {name}(x)", f"async def {name}()"])
    else:
        sig = rng.choice(["", f"func {name}() (*T{rng.randrange(3)}, error)",
                          f"type {name} struct {{a *T{rng.randrange(3)}; b pkg.U}}"])
    return qname, kind, parent, sig


def _imports(rng: random.Random) -> list[ImportRef]:
    return [ImportRef(module="pkg", name="*", line=1), ImportRef(module="os", name="path", line=2),
            *([ImportRef(module="extra", name="thing", line=3)] if rng.random() < 0.2 else [])]


def _state(idx: SymbolIndex) -> dict:
    files = {p: (fi.module, fi.language, fi.sym_qnames, fi.sym_kinds, fi.results, fi.fields, fi.bindings,
                 fi.alternatives, fi.stars) for p, fi in idx.files.items()}
    return {"kinds": idx.kinds, "parents": idx.parents, "results": idx.results, "fields": idx.fields,
            "module_files": {m: sorted(ps) for m, ps in idx.module_files.items() if ps},
            "names": bytes(idx._names), "star_prefixes": dict(idx.star_prefixes),
            "ref_parts": dict(idx.ref_parts), "files": files}


def _scan_returning(idx: SymbolIndex, names: set[str]) -> set[str]:
    """names_returning as a scan of every declared result and field (its rule, spelt out)."""
    out = set()
    for qname, by_path in idx.results.items():
        if any(t and ({t.lstrip("[]").split(".", 1)[0], t.rsplit(".", 1)[-1]} & names) for res in by_path.values()
               for t in res):
            out.add(qname.rsplit(".", 1)[-1])
    for qname, by_path in idx.fields.items():
        if any({t.lstrip("*").split(".", 1)[0], t.rsplit(".", 1)[-1]} & names for flds in by_path.values()
               for t in flds.values()):
            out.add(qname.rsplit(".", 1)[-1])
    return out


@pytest.mark.parametrize("language", ["python", "go"])
@pytest.mark.parametrize("seed", range(6))
def test_a_patched_file_leaves_the_table_a_remove_then_add_leaves(language: str, seed: int,
                                                                   monkeypatch) -> None:
    rng = random.Random(seed)
    patched, whole = SymbolIndex(), SymbolIndex()
    # a large file and two small ones sharing its module's qnames (C: a header and its .c)
    big = [("m", "module", "")] + [_row(rng, "m", language, 400) for _ in range(600)]
    others = {f"o{k}.x": [("m", "module", "")] + [_row(rng, "m", language, 400) for _ in range(30)]
              for k in range(2)}
    for idx in (patched, whole):
        for p, rows in others.items():
            idx.add_file(p, "m", language, list(rows), _imports(random.Random(seed)))
        idx.add_file("big.x", "m", language, list(big), _imports(random.Random(seed)))
    took_patch = 0
    for step in range(25):
        rows = list(big)
        for _ in range(rng.randrange(1, 6)):  # an edit: rows replaced, added, removed, re-kinded
            op = rng.random()
            k = rng.randrange(1, len(rows))
            if op < 0.3:
                rows[k] = _row(rng, "m", language, 400)
            elif op < 0.55:
                rows.insert(k, _row(rng, "m", language, 400))
            elif op < 0.75 and len(rows) > 300:
                del rows[k]
            elif op < 0.9:
                q, _kind, p, sig = rows[k]
                rows[k] = (q, rng.choice(KINDS), p, sig)
            else:  # a second definition of a typed name (voids its results)
                rows.insert(k, rows[rng.randrange(1, len(rows))])
        imports = _imports(rng)
        got = patched.add_file("big.x", "m", language, list(rows), imports)
        monkeypatch.setattr(resolve, "_PATCH_MIN", 1 << 30)  # the remove-then-add way
        assert whole.add_file("big.x", "m", language, list(rows), imports) is None
        monkeypatch.setattr(resolve, "_PATCH_MIN", 256)
        if got is not None:
            took_patch += 1
            before = Counter((q, k) for q, k, *_ in big)
            after = Counter((q, k) for q, k, *_ in rows)
            # what it reports: the qnames of the (qname, kind) pairs gained or lost (a second
            # definition of a pair too: the name's definitions are counted)
            assert got == {q for q, _k in (before - after) + (after - before)}
        assert _state(patched) == _state(whole), f"step {step}"
        for q in {r[0] for r in rows[:50]}:
            assert patched.result_of(q, 0) == whole.result_of(q, 0)
        # the result names' index (kept across edits that change no declared type)
        for names in ({"T0"}, {"T1", "U"}, {"T2", "pkg"}, {"error", "nothing"}):
            assert patched.names_returning(names) == whole.names_returning(names) == _scan_returning(patched, names)
        if step % 5 == 4:  # a small file comes and goes
            patched.remove_file("o0.x")
            whole.remove_file("o0.x")
            assert patched.names_returning({"T0", "T1", "T2"}) == _scan_returning(patched, {"T0", "T1", "T2"})
            for idx in (patched, whole):
                idx.add_file("o0.x", "m", language, list(others["o0.x"]), _imports(random.Random(seed)))
        big = rows
    # the imports differ from the last version's in about a third of the edits: those go the
    # whole way; the others are patched
    assert 8 <= took_patch < 25


def test_a_small_file_and_a_changed_import_take_the_whole_way() -> None:
    idx = SymbolIndex()
    small = [("s", "module", ""), ("s.f", "function", "s", "def f() -> A")]
    idx.add_file("s.py", "s", "python", small, [])
    assert idx.add_file("s.py", "s", "python", small + [("s.g", "function", "s", "")], []) is None
    big = [("b", "module", "")] + [(f"b.f{i}", "function", "b", "") for i in range(300)]
    idx.add_file("b.py", "b", "python", big, [])
    assert idx.add_file("b.py", "b", "python", big + [("b.g", "class", "b", "")], []) == {"b.g"}
    assert idx.kinds["b.g"] == "class" and idx.parents["b.g"] == "b"
    assert idx.add_file("b.py", "b", "python", big, [ImportRef(module="os", name="*", line=1)]) is None
    assert idx.files["b.py"].stars == ["os"] and "b.g" not in idx.kinds
