"""bench incremental's scratch tree (bench/incremental.py): a tree of hard links to the corpus
whose edits replace files, so the corpus (the bench cache's kernel, shared with bench index
and its quarter samples) is never written. The benchmark itself runs in `codesynapse bench
incremental`, not here."""

from __future__ import annotations

import os

from codesynapse.bench.corpora import Corpus
from codesynapse.bench.incremental import _middle, _probe, link_tree, replace_file


def _corpus(tmp_path):
    src = tmp_path / "corpus"
    (src / "lib").mkdir(parents=True)
    (src / "lib" / "a.c").write_bytes(b"int a(void) { return 1; }\n")
    (src / "lib" / "latin1.c").write_bytes(b"/* caf\xe9 */\nint b(void) { return 2; }\n")
    (src / "node_modules" / "x").mkdir(parents=True)
    (src / "node_modules" / "x" / "y.js").write_text("y()\n")
    (src / "vendor").mkdir()
    (src / "vendor" / "v.c").write_text("int v(void) { return 0; }\n")
    os.symlink("lib/a.c", src / "alias.c")
    return Corpus("t", src, "t v1", "test", exclude=("/vendor/",), languages=("c",))


def test_link_tree_links_files_and_leaves_out_what_the_policy_drops(tmp_path):
    corpus = _corpus(tmp_path)
    tree = link_tree(corpus, tmp_path / "tree")
    assert os.path.samefile(tree / "lib" / "a.c", corpus.path / "lib" / "a.c")
    assert (tree / "lib" / "latin1.c").read_bytes() == b"/* caf\xe9 */\nint b(void) { return 2; }\n"
    assert os.readlink(tree / "alias.c") == "lib/a.c"
    assert not (tree / "node_modules").exists()
    assert not (tree / "vendor").exists()


def test_an_edit_replaces_the_tree_file_and_never_writes_the_corpus(tmp_path):
    corpus = _corpus(tmp_path)
    tree = link_tree(corpus, tmp_path / "tree")
    raw = (tree / "lib" / "latin1.c").read_bytes()
    new = raw + _probe("c", "_cs_probe_7", 7).encode() + b"\n"
    replace_file(tree / "lib" / "latin1.c", new)
    assert (tree / "lib" / "latin1.c").read_bytes() == new
    assert (corpus.path / "lib" / "latin1.c").read_bytes() == raw
    assert not os.path.samefile(tree / "lib" / "latin1.c", corpus.path / "lib" / "latin1.c")
    assert sorted(p.name for p in (tree / "lib").iterdir()) == ["a.c", "latin1.c"]  # no temporary left


def test_link_tree_starts_again_from_the_corpus(tmp_path):
    corpus = _corpus(tmp_path)
    tree = link_tree(corpus, tmp_path / "tree")
    replace_file(tree / "lib" / "a.c", b"int changed(void);\n")
    (tree / "lib" / "new.c").write_text("int n(void);\n")
    tree = link_tree(corpus, tmp_path / "tree")
    assert (tree / "lib" / "a.c").read_bytes() == b"int a(void) { return 1; }\n"
    assert not (tree / "lib" / "new.c").exists()


def test_probe_lines_per_language():
    assert _probe("python", "_cs_probe_3", 3) == "def _cs_probe_3(): return 3"
    assert _probe("c", "_cs_probe_3", 3) == "int _cs_probe_3(void) { return 3; }"


def test_middle_inserts_before_the_nearest_definition_row():
    text = "\n".join(f"line{i}" for i in range(10))
    out = _middle(text, "NEW", [2, 6]).split("\n")
    # the middle line is row 5; row 6 is nearer than row 2
    assert out[5:9] == ["line5", "NEW", "", "line6"]
    assert out.count("NEW") == 1 and len(out) == 12
