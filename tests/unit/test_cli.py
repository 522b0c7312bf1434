"""The command line as a user meets it: --version, help on every option, where `bench` writes,
and an unknown request's error naming every request (memory ones included)."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

import pytest

from codesynapse import cli
from codesynapse.bench import cli as bench_cli
from codesynapse.bench import report as bench_report

REPO = Path(__file__).resolve().parents[2]


def test_version_prints_the_package_version(capsys):
    want = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out == f"codesynapse {want}\n"


@pytest.mark.parametrize("command", ["query", "bench", "index", "serve", "demo"])
def test_every_option_has_help(command):
    parser = cli.build_parser()
    sub = next(a for a in parser._actions if a.dest == "command").choices[command]
    missing = [a.dest for a in sub._actions if a.dest != "help" and not (a.help or "").strip()
               and not (command in ("index", "demo") and a.dest == "path")]
    assert missing == []


def test_unknown_method_error_lists_the_memory_requests(tmp_path, capsys):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "m.py").write_text("def f():\n    return 1\n")
    code = cli.main(["query", "codesynapse/nope", "--root", str(root), "--data-dir", str(tmp_path / "data")])
    assert code == 1
    err = json.loads(capsys.readouterr().out)
    message = json.dumps(err)
    assert "unknown method 'codesynapse/nope'" in message
    for method in ("codesynapse/memory/remember", "codesynapse/memory/recall", "codesynapse/memory/forget",
                   "codesynapse/memory/list", "codesynapse/symbolCard"):
        assert method in message, message


def test_bench_out_defaults_to_the_checkouts_docs_not_the_current_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # some other project
    args = cli.build_parser().parse_args(["bench", "index"])
    assert args.out is None
    assert bench_cli.default_out() == REPO / "docs"
    # installed from a wheel: no checkout around the package
    fake = tmp_path / "site-packages-root"
    fake.mkdir()
    monkeypatch.setattr(bench_report, "REPO", fake)  # (default_out lives in bench/report.py)
    assert bench_cli.default_out() == tmp_path / "codesynapse-bench"
    help_text = cli.build_parser()._subparsers._group_actions[0].choices["bench"].format_help()
    assert "results go to docs/" not in help_text
    assert re.search(r"default: docs/ of the\s+CodeSynapse\s+checkout", help_text), help_text
