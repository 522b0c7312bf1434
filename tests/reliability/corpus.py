"""Generated source trees for the reliability suite: deterministic (seeded), with calls
across modules, imports, classes and inheritance, so an index of them has every kind of
row and edge the integrity check looks at."""

from __future__ import annotations

import random
from pathlib import Path


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
