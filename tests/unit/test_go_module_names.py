"""Go module-style names (issue 22 #10): a package is named by its import path — the nearest
go.mod's module path plus the directory under it — also when a repository holds several
modules (a nested go.mod starts a module of its own), with a major-version suffix, and
without any go.mod (the directory, or the package clause at the root)."""

from __future__ import annotations

import pytest

from codesynapse.extract import extract_source

FILES = {
    "go.mod": "module github.com/acme/chi/v5\n\ngo 1.22\n",
    "mux.go": "package chi\n\ntype Mux struct{}\n\nfunc (mx *Mux) routeHTTP() {}\n",
    "middleware/logger.go": "package middleware\n\nfunc Logger() {}\n",
    "tools/go.mod": "module github.com/acme/tools\n",
    "tools/gen/gen.go": "package gen\n\nfunc Run() {}\n",
}


@pytest.mark.parametrize("rel, qname", [
    ("mux.go", "github.com/acme/chi/v5.Mux.routeHTTP"),
    ("middleware/logger.go", "github.com/acme/chi/v5/middleware.Logger"),
    ("tools/gen/gen.go", "github.com/acme/tools/gen.Run"),  # the nested module's own path
])
def test_import_path_names(tmp_path, rel, qname):
    for name, body in FILES.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(body)
    f = extract_source(str(tmp_path), rel, (tmp_path / rel).read_bytes(), "go")
    assert qname in {s.qname for s in f.symbols}


def test_without_go_mod(tmp_path):
    (tmp_path / "pkg" / "store").mkdir(parents=True)
    body = b"package store\n\nfunc Get() {}\n"
    nested = extract_source(str(tmp_path), "pkg/store/store.go", body, "go")
    assert nested.module == "pkg/store"  # the directory
    root = extract_source(str(tmp_path), "main.go", b"package main\n\nfunc main() {}\n", "go")
    assert root.module == "main"  # the package clause
