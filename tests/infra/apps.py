"""A real App over a small repository written from a dict, indexed: the fixture of the
retrieval tests."""

from __future__ import annotations

from pathlib import Path

from codesynapse.app import App
from codesynapse.settings import load_settings


def indexed_app(tmp_path: Path, files: dict[str, str]) -> App:
    """``files`` (relative path → text) written under ``tmp_path/repo``, indexed into
    ``tmp_path/data`` by one worker, without symbol vectors (the dense leg is left out)."""
    root = tmp_path / "repo"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    a = App(root, load_settings({"data_dir": str(tmp_path / "data"), "workers": 1, "symbol_vectors": False}))
    a.index()
    return a
