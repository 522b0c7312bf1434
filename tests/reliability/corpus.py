"""Generated source trees for the reliability suite: deterministic (seeded), with calls
across modules, imports, classes and inheritance, so an index of them has every kind of
row and edge the integrity check looks at."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

from codesynapse.app import App
from codesynapse.settings import load_settings
from codesynapse.store.sqlite.graph import SqliteGraphStore
from codesynapse.workspace import open_workspace


def python_tree(root: Path, packages: int = 8, modules: int = 25, funcs: int = 8, seed: int = 0) -> list[Path]:
    """``packages`` × ``modules`` Python modules; every function calls a function of its
    own module, one of another module (through an import) and a method of a class."""
    rng = random.Random(seed)
    written: list[Path] = []
    names = [(f"pkg{p}", f"mod{m}") for p in range(packages) for m in range(modules)]
    for p in range(packages):
        (root / f"pkg{p}").mkdir(parents=True, exist_ok=True)
        (root / f"pkg{p}" / "__init__.py").write_text(f'"""Package {p}."""\n')
    for i, (pkg, mod) in enumerate(names):
        other_pkg, other_mod = names[rng.randrange(len(names))]
        lines = [f'"""Module {pkg}.{mod}: generated."""', "",
                 f"from {other_pkg}.{other_mod} import f0 as other_f0, Base{other_pkg}{other_mod} as OtherBase",
                 "", ""]
        lines += [f"class Base{pkg}{mod}:", f'    """Base class {i}."""', "",
                  "    def run(self, x):", "        return self.step(x) + 1", "",
                  "    def step(self, x):", "        return x * 2", "", ""]
        lines += [f"class Child{pkg}{mod}(OtherBase):", f'    """Child class {i}."""', "",
                  "    def step(self, x):", "        return super().step(x) - other_f0(x)", "", ""]
        for f in range(funcs):
            callee = f"f{rng.randrange(funcs)}"
            lines += [f"def f{f}(x):", f'    """Function {f} of {pkg}.{mod}."""',
                      f"    y = {callee}(x) if x > {f} else x",
                      f"    z = Base{pkg}{mod}().run(y)",
                      "    return other_f0(z) if z < 0 else z", "", ""]
        path = root / pkg / f"{mod}.py"
        path.write_text("\n".join(lines))
        written.append(path)
    return written


def mutate(path: Path, rng: random.Random) -> str:
    """One edit of a generated module: add, rename or remove a function. Returns a label."""
    text = path.read_text()
    choice = rng.randrange(3)
    if choice == 0:
        n = rng.randrange(10_000)
        text += f"\ndef added{n}(x):\n    return f0(x) + other_f0(x)\n"
        what = f"add added{n}"
    elif choice == 1 and "def f1(" in text:
        n = rng.randrange(10_000)
        text = text.replace("def f1(", f"def renamed{n}(").replace("f1(x)", f"renamed{n}(x)")
        what = f"rename f1 -> renamed{n}"
    else:
        text = text.replace("def f2(x):", "def _gone(x):")
        what = "remove f2"
    path.write_text(text)
    return what


# ---- hostile files ---------------------------------------------------------------------------

def nested_sources(n: int) -> dict[str, str]:
    """One file per language whose syntax tree is ``n`` levels deep: nested parentheses in
    an expression, nested calls, nested blocks or indentation, whatever the language nests."""
    p, q = "(" * n, ")" * n
    calls = "g(" * n + "1" + ")" * n
    arr = "[" * n + "]" * n
    return {
        "deep_expr.py": f"def f():\n    return {p}1{q}\n\n\ndef g(x):\n    return {calls}\n",
        "deep_list.py": f"X = {arr}\n",
        "deep_blocks.py": "".join("    " * d + f"def level_{d}():\n" for d in range(min(n, 400)))
                          + "    " * min(n, 400) + "return 1\n",
        "deep.js": f"const a = {arr};\nfunction f() {{ return {calls}; }}\n",
        "deep_blocks.js": "function f() " + "{ " * n + "}" * n + "\n",
        "deep.ts": f"const a: unknown = {arr};\nexport function f(): number {{ return {p}1{q}; }}\n",
        "deep.tsx": f"export const C = () => {''.join('<div>' for _ in range(min(n, 3000)))}x"
                    f"{''.join('</div>' for _ in range(min(n, 3000)))};\n",
        "deep.go": f"package deep\n\nfunc F() int {{\n\treturn {p}1{q}\n}}\n",
        "deep.rs": f"fn f() -> i32 {{ {p}1{q} }}\nfn g() {{ {'{ ' * n}{'}' * n} }}\n",
        "Deep.java": f"class Deep {{ int f() {{ return {p}1{q}; }} }}\n",
        "deep.c": f"int f(void) {{ return {p}1{q}; }}\nvoid g(void) {{ {'{ ' * n}{'}' * n} }}\n",
        "deep.cpp": f"int f() {{ return {p}1{q}; }}\n",
        "Deep.cs": f"class Deep {{ int F() {{ return {p}1{q}; }} }}\n",
        "deep.rb": f"def f\n  {p}1{q}\nend\n",
        "deep.php": f"<?php\nfunction f() {{ return {p}1{q}; }}\n",
        "deep.kt": f"fun f(): Int {{ return {p}1{q} }}\n",
        "deep.json": "[" * n + "]" * n,
        "deep.toml": f"a = {arr}\n",
        "deep_flow.yaml": f"a: {arr}\n",
        "deep_block.yaml": "".join("  " * d + f"k{d}:\n" for d in range(min(n, 300))) + "  " * min(n, 300) + "v: 1\n",
        "deep_inline.yaml": "- " * min(n, 5000) + "x\n",
        "deep_quote.md": "> " * n + "quote\n",
        "deep_list.md": "".join("  " * d + "- item\n" for d in range(min(n, 300))),
        "deep_emph.md": "*" * n + "x" + "*" * n + "\n",
    }


def wide_tree(root: Path, files: int, per_dir: int = 100, indexed_every: int = 1) -> int:
    """``files`` small files in folders of ``per_dir``; every ``indexed_every``-th one is
    Python (calling a function of the previous one), the rest are text files the walk
    sees but no extractor reads. Returns how many are Python."""
    py = 0
    for i in range(files):
        d = root / f"d{i // per_dir:05d}"
        if i % per_dir == 0:
            d.mkdir(parents=True, exist_ok=True)
        if i % indexed_every == 0:
            prev = f"d{(i - indexed_every) // per_dir:05d}.m{i - indexed_every}" if py else ""
            body = f"from {prev.rsplit('.', 1)[0]} import m{i - indexed_every} as prev\n\n\n" if prev else ""
            body += f"def f{i}(x):\n    return x\n"
            (d / f"m{i}.py").write_text(body)
            py += 1
        else:
            (d / f"n{i}.txt").write_text(f"note {i}\n")
    for d in {root / f"d{i // per_dir:05d}" for i in range(0, files, per_dir)}:
        (d / "__init__.py").touch()
    return py


def fresh_dump(root: Path, where: Path) -> dict:
    """The graph of a full index of ``root`` from nothing (in ``where``), as ``store.dump()``."""
    shutil.rmtree(where, ignore_errors=True)
    app = App(root, load_settings({"data_dir": str(where), "watch": False}))
    try:
        app.index()
        return app.store.dump()
    finally:
        app.close()


def stored_dump(data: Path, root: Path) -> dict:
    """The graph stored for ``root`` in the data folder ``data``, as ``store.dump()``."""
    ws = open_workspace(root, data)
    store = SqliteGraphStore(ws.db_path, ws.graph_id)
    try:
        return store.dump()
    finally:
        store.close()
