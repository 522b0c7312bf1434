"""The literal leg (context/literals.py): phrases and unnamed words found where the indexed
code writes them, any case for phrases and on word boundaries for identifiers, documents and
config files left out, production files before tests, common words saturated, and never a hit
that overlaps a secret the redactor finds (a query cannot confirm a secret)."""

from __future__ import annotations

from codesynapse.context import literals
from codesynapse.context.literals import Hit, Needle


def tree(tmp_path, files: dict[str, str]):
    for rel, body in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(body)
    return [(rel, {"py": "python", "go": "go", "md": "markdown", "json": "json"}[rel.rsplit(".", 1)[1]])
            for rel in files]


def test_phrases_any_case_words_on_boundaries_code_only(tmp_path):
    files = tree(tmp_path, {
        "tests/test_dump.py": "def test_dump():\n    assert 'FROM sqlite_master' in out\n",
        "dump.py": "def iterdump(conn):\n    q = '''\n        SELECT name FROM \"sqlite_master\"\n    '''\n"
                   "    raise ValueError('Expecting property name enclosed in double quotes')\n",
        "other.py": "my_sqlite_master_copy = 1\n",
        "README.md": "Expecting property name enclosed in double quotes\n",
        "io.go": 'package io\n\nvar ErrShortWrite = errors.New("short write")\n',
    })
    scan = literals.find(str(tmp_path), files, [
        Needle("expecting PROPERTY name enclosed in double quotes", word=False),
        Needle("sqlite_master", word=True),
        Needle("short write", word=False),
    ])
    hits, saturated = scan.hits, scan.saturated
    assert hits == [
        Hit("expecting PROPERTY name enclosed in double quotes", "dump.py", 5),
        Hit("sqlite_master", "dump.py", 3),
        Hit("short write", "io.go", 3),
        Hit("sqlite_master", "tests/test_dump.py", 2),  # tests after production code
    ]
    assert saturated == set()


def test_a_hit_inside_a_secret_is_never_reported(tmp_path):
    files = tree(tmp_path, {
        "settings.py": 'AWS_ACCESS_KEY_ID = "AKIAIOSFODNN7EXAMPLE"\nREGION = "eu-west-1"\n',
    })
    hits = literals.find(str(tmp_path), files, [Needle("AKIAIOSFODNN7EXAMPLE", word=True),
                                                Needle("IOSFODNN7", word=False),
                                                Needle("eu-west-1", word=False)]).hits
    assert hits == [Hit("eu-west-1", "settings.py", 2)]


def test_common_words_saturate_and_short_needles_are_ignored(tmp_path, monkeypatch):
    monkeypatch.setattr(literals, "MAX_FILES", 3)
    files = tree(tmp_path, {f"m{i}.py": "value = 'common'\n" for i in range(5)} | {"z.py": "x = 'rare one'\n"})
    scan = literals.find(str(tmp_path), files, [Needle("common", word=True), Needle("rare one", word=False),
                                                Needle("x", word=True)])
    hits, saturated = scan.hits, scan.saturated
    assert saturated == {"common"}
    assert hits == [Hit("common", "m0.py", 1), Hit("common", "m1.py", 1), Hit("common", "m2.py", 1),
                    Hit("rare one", "z.py", 1)]


def test_out_of_time_the_hits_so_far_are_kept_and_the_unread_files_counted(tmp_path):
    files = tree(tmp_path, {f"m{i:02d}.py": "x = 'needle here'\n" for i in range(40)})
    scan = literals.find(str(tmp_path), files, [Needle("needle here", word=False)], seconds=0.0)
    assert (scan.hits, scan.unread) == ([], 40)  # the budget is checked before every 32nd file
    scan = literals.find(str(tmp_path), files, [Needle("needle here", word=False)])
    assert (len(scan.hits), scan.unread) == (40, 0)


def test_a_word_in_a_comment_is_prose_a_phrase_counts_anywhere(tmp_path):
    files = tree(tmp_path, {
        "sched.go": "package sched\n\n// asks the runtime for a timer\n/* the runtime again\n * and runtime here\n */\n"
                    "func run() { runtime.Gosched() } // runtime in a trailing comment still counts\n"
                    "// the error \"no timer left\" is returned below\nvar errNone = errors.New(\"no timer left\")\n",
        "conf.py": "# the runtime is permissive\nRUNTIME = 'runtime'\n    # runtime indented comment\n",
    })
    hits = literals.find(str(tmp_path), files, [Needle("runtime", word=True),
                                                Needle("no timer left", word=False)]).hits
    assert hits == [
        Hit("runtime", "conf.py", 2),  # in the string, not in the two comment lines
        Hit("runtime", "sched.go", 7),  # in the code and in the trailing comment of line 7
        Hit("runtime", "sched.go", 7),
        Hit("no timer left", "sched.go", 8),
        Hit("no timer left", "sched.go", 9),
    ]
