"""A large stored file extracted whole by a live update is written as the delta its stored rows
give (index/delta.py): only the rows of the edited lines are replaced, and what is stored is
what a full index of the edited tree stores."""

from __future__ import annotations

import os
import random
import sqlite3
import sys
from pathlib import Path

import pytest
from codesynapse.extract import incremental

sys.path.insert(0, str(Path(__file__).parent))
from test_extract_incremental import _c_edit, _c_source, _edit, _full_dump, _indexed


def _ids(tmp_path: Path, path: str) -> dict[tuple[str, int], int]:
    """Stored symbol row ids of ``path`` by (qname, start_line)."""
    conn = sqlite3.connect(tmp_path / "g.db")
    try:
        return {(q, line): i for i, q, line in conn.execute(
            "SELECT id, qname, start_line FROM symbols WHERE path=? AND kind!='module'", (path,))}
    finally:
        conn.close()


def test_a_whole_extraction_of_a_large_file_rewrites_only_the_edited_rows(tmp_path):
    incremental.forget()
    body = "".join(f"static int step_{i}(int x)\n{{\n\treturn helper_{i % 5}(x) + {i};\n}}\n\n" for i in range(900))
    root, store, ix = _indexed(tmp_path, "drv.c", body)
    before = _ids(tmp_path, "drv.c")
    edited = body.replace("static int step_450(", "static int step_new(int y)\n{\n\treturn y;\n}\n\nstatic int step_450(")
    (root / "drv.c").write_text(edited)
    incremental.forget()  # nothing kept: the update extracts the file whole
    stats = dict(incremental.stats)
    ix.index_tree()
    assert incremental.stats["whole"] == stats["whole"] + 1
    after = _ids(tmp_path, "drv.c")
    # rows above the edit keep their ids; rows below it moved 5 lines, keeping theirs; one is new
    assert all(after[(q, line)] == i for (q, line), i in before.items() if line < 450 * 5)
    assert all(after[(q, line + 5)] == i for (q, line), i in before.items() if line > 450 * 5)
    assert set(after) - {(q, line + (5 if line > 450 * 5 else 0)) for q, line in before} == {("drv.step_new", 2251)}
    assert store.dump() == _full_dump(tmp_path, root)
    store.close()


@pytest.mark.parametrize("language", ["c", "python"])
@pytest.mark.parametrize("seed", range(int(os.environ.get("CODESYNAPSE_FUZZ_SEEDS", "4")) // 2 or 1))
def test_whole_extractions_written_as_deltas_store_what_a_full_index_stores(tmp_path, seed, language):
    rng = random.Random(seed)
    if language == "c":
        rel, text = "drv.c", _c_source(rng, n=600)
        kinds = ["insert_line", "delete_line", "change_line", "insert_fn_middle", "delete_block", "comment_above",
                 "static_toggle", "define_add", "append_fn", "ifdef_around", "open_comment"]
        edit = _c_edit
    else:
        rel = "big.py"
        text = "".join(f"def step_{i}(amount):\n    '''Step {i}.'''\n    return helper_{i % 7}(amount) + {i}\n\n\n"
                       f"class Box{i}:\n    def get(self):\n        return self.put({i})\n\n\n" for i in range(350))
        kinds = ["append_def", "insert_line", "delete_line", "change_line", "insert_def_middle", "delete_block",
                 "open_bracket", "indent_line", "returns_class", "comment_above", "decorator_above", "duplicate_def"]
        edit = _edit
    assert len(text) >= incremental.MIN_BYTES  # a large file: the update's whole extraction is diffed
    incremental.forget()
    root, store, ix = _indexed(tmp_path, rel, text)
    for k in range(8):
        kind = rng.choice(kinds)
        edited = edit(text, rng, kind, k)
        (root / rel).write_text(edited)
        incremental.forget()
        ix.index_tree()
        assert store.dump() == _full_dump(tmp_path, root), f"after edit {k} ({kind})"
        (tmp_path / "full.db").unlink()
        text = edited
    store.close()



def test_a_one_file_workspace_drops_a_call_target_its_edit_removed(tmp_path):
    """A live update of every file of a workspace (here its only one) re-uses the file's stored
    resolutions like any other live update, so it must re-check the calls naming what it
    removed (it took the update for a full index and re-checked none: a call kept its target
    after the target's definition was deleted)."""
    text = "int step_b(int x)\n{\n\treturn x;\n}\n\nint step_c(int x)\n{\n\treturn step_b(x);\n}\n"
    root, store, ix = _indexed(tmp_path, "drv.c", text)
    assert [c.target for c in store.calls_in_files(["drv.c"]) if c.name == "step_b"] == ["drv.step_b"]
    (root / "drv.c").write_text(text.replace("int step_b(int x)\n{\n\treturn x;\n}\n\n", ""))
    ix.index_tree()
    assert [(c.target, c.resolution) for c in store.calls_in_files(["drv.c"]) if c.name == "step_b"] == \
        [("", "unresolved")]
    assert store.dump() == _full_dump(tmp_path, root)
    store.close()


def test_a_delta_write_hands_back_the_call_rows_it_replaced(tmp_path, monkeypatch):
    """write_delta's ``replaced``: the stored call rows of the lines the delta replaces, as a
    read just before the write finds them (the parameter pass counts them: index/indexer.py)."""
    incremental.forget()
    body = "".join(f"static int step_{i}(int x)\n{{\n\treturn helper_{i % 5}(x) + {i};\n}}\n\n" for i in range(900))
    root, store, ix = _indexed(tmp_path, "drv.c", body)
    seen = []
    original = store.write_delta

    def write_delta(fx, mtime, call_targets, inherit_targets, import_targets, replaced=None):
        d = fx.delta
        before = store.calls_in_lines(fx.path, d.first_line, d.last_line)
        ok = original(fx, mtime, call_targets, inherit_targets, import_targets, replaced=replaced)
        seen.append((before, replaced))
        return ok

    monkeypatch.setattr(store, "write_delta", write_delta)
    edited = body.replace("\treturn helper_3(x) + 448;", "\treturn other(x) + helper_1(x) + 448;")
    (root / "drv.c").write_text(edited)
    ix.index_tree()
    assert len(seen) == 1
    before, replaced = seen[0]
    assert [c.callee for c in before] == ["helper_3"]  # the one line edited
    assert sorted(replaced, key=lambda c: c.id) == before
    assert store.dump() == _full_dump(tmp_path, root)
    store.close()
