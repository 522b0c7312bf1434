"""The accuracy harness's own logic: scores, units, call-site positions, target lists."""

from __future__ import annotations

from pathlib import Path

import parso
import pytest

from codesynapse.bench.accuracy import (
    TARGETS_DIR,
    _blind_spot,
    _call_unit,
    _name_position,
    load_targets,
    micro,
    score,
    unit_key,
)


def test_score_counts_confirmed_and_excluded_units():
    ours = {"a.py:1", "a.py:9", "b.py:<module>", "c.py:4"}
    oracle = {"a.py:1", "d.py:2"}
    s = score(ours, oracle, confirmed={"a.py:9"}, excluded={"c.py:4"})
    # TP a.py:1 + a.py:9 (confirmed); FP b.py:<module>; FN d.py:2; c.py:4 on neither side
    assert s == {"tp": 2, "fp": 1, "fn": 1, "precision": 2 / 3, "recall": 2 / 3}


def test_score_without_anything_is_not_applicable():
    assert score(set(), set()) == {"tp": 0, "fp": 0, "fn": 0, "precision": None, "recall": None}


def test_micro_average_sums_counts():
    rows = [{"tp": 9, "fp": 1, "fn": 0}, {"tp": 1, "fp": 0, "fn": 9}]
    assert micro(rows) == {"tp": 10, "fp": 1, "fn": 9, "precision": 10 / 11, "recall": 10 / 19}


SRC = '''\
import re
def outer(a=re.escape("d")):
    f = lambda: re.escape("l")
    def inner():
        return re.escape("n")
    return [re.escape(i) for i in "ab"], re.escape
class K:
    v = re.escape("k")
    @staticmethod
    @deco(re.escape("dec"))
    def m(x: re.escape("ann") = 1): re.escape("m")
re.escape("top")
'''


def _units(src: str) -> list[tuple[int, int | None, str]]:
    module = parso.parse(src)
    out = []
    for leaf in module.get_used_names()["escape"]:
        u = _call_unit(leaf)
        out.append((leaf.line, *u) if u is not None else (leaf.line, "not a call", ""))
    return out


def test_call_units_follow_python_scoping():
    assert _units(SRC) == [
        (2, None, "<module>"),      # a default value runs where the def runs
        (3, 2, "outer"),            # a lambda belongs to the function around it
        (5, 4, "inner"),            # nested function
        (6, 2, "outer"),            # comprehension
        (6, "not a call", ""),      # `re.escape` without a call
        (8, 7, "K"),                # class body
        (10, 7, "K"),               # decorator arguments run in the class body
        (11, 7, "K"),               # an annotation of a parameter too
        (11, 11, "m"),              # the method's body
        (12, None, "<module>"),
    ]


def test_unit_keys():
    assert unit_key("a/b.py", 12) == "a/b.py:12"
    assert unit_key("a/b.py", None) == "a/b.py:<module>"


def test_name_position_finds_the_called_name():
    lines = ["x = os.path.join(a, b)", "self.parser.parse_args(", "    argv)", "  f()(g)"]
    assert _name_position(lines, 1, 4, "join") == (1, 12)
    assert _name_position(lines, 2, 0, "parse_args") == (2, 12)
    assert _name_position(lines, 4, 2, "f") == (4, 2)
    assert _name_position(lines, 1, 4, "split") is None


def test_blind_spots():
    assert _blind_spot([], "re.escape") == "no-inference"
    assert _blind_spot([["ntpath.py", 107, "ntpath.join", "function"]], "posixpath.join") == "platform-module"
    assert _blind_spot([["/x/jedi/third_party/typeshed/stdlib/_warnings.pyi", 32, "_warnings.warn", "function"]],
                       "warnings.warn") == "c-accelerator"
    assert _blind_spot([["html/__init__.py", 12, "html.escape", "function"]], "re.escape") is None


def test_shipped_target_lists_are_valid_and_spread():
    for name in ("stdlib.yaml", "django.yaml"):
        tl = load_targets(TARGETS_DIR / name)
        assert len(tl.targets) >= 25
        cats = {c for t in tl.targets for c in t.categories}
        assert cats == {"module-function", "self-method", "class", "local-instance", "private-helper",
                        "ambiguous-name", "many-callers"}


def test_target_list_errors(tmp_path: Path):
    bad = tmp_path / "t.yaml"
    bad.write_text("targets:\n  - symbol: a.b\n    category: [nonsense]\n")
    with pytest.raises(ValueError, match="categories"):
        load_targets(bad)
    bad.write_text("targets:\n  - symbol: a.b\n    category: class\n  - symbol: a.b\n    category: class\n")
    with pytest.raises(ValueError, match="twice"):
        load_targets(bad)


def test_rewriting_accuracy_md_keeps_the_hand_written_notes():
    from codesynapse.bench.accuracy import NOTES, kept_notes
    from codesynapse.bench.accuracy_lsp import SECTION

    doc = ("# Call-graph accuracy\n\n| generated | table |\n\n" + NOTES
           + "\n\n## Re-runs\n\nmeasured by hand\n\n" + SECTION + "\n\n## Go\n\n| go | 1.000 |\n")
    notes = kept_notes(doc)
    assert notes.startswith(NOTES)
    assert "measured by hand" in notes
    assert "generated" not in notes and "## Go" not in notes and SECTION not in notes
    assert kept_notes(doc.replace(SECTION, "")).rstrip().endswith("| go | 1.000 |")
    assert kept_notes("# Call-graph accuracy\n\n| generated | table |\n") == ""
