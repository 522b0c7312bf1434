"""Go call resolution on fixtures/go_repo through the real indexer: package-qualified calls
(with and without an import alias), same-package calls across files, method sets (receiver
methods, methods promoted from an embedded struct, interface methods through a typed
variable or field), the NewT constructor convention, library types as external, and the
calls that stay unresolved because the receiver's type is not known."""

from __future__ import annotations

from pathlib import Path

import pytest
from codesynapse.index.indexer import Indexer
from codesynapse.store.sqlite.graph import SqliteGraphStore

ROOT = Path(__file__).resolve().parents[2] / "fixtures" / "go_repo"
STORE = "example.com/shop/internal/store"
SVC = "example.com/shop/internal/service"
MAIN = "example.com/shop/cmd/shop.main"


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    s = SqliteGraphStore(tmp_path_factory.mktemp("go") / "g.db", "g")
    Indexer(ROOT, s, None, workers=1).index_tree()
    yield s
    s.close()


def test_every_call_edge(store):
    assert sorted((c.caller, c.callee, c.target, c.resolution) for c in store.all_calls()) == sorted([
        (MAIN, "service.New", f"{SVC}.New", "module"),
        (MAIN, "st.NewMemory", f"{STORE}.NewMemory", "module"),  # aliased import
        # cat := service.New(...): New, in another package, declares *Catalog (a return hint)
        (MAIN, "cat.Seed", f"{SVC}.Catalog.Seed", "inferred"),
        (MAIN, "cat.Price", f"{SVC}.Catalog.Price", "inferred"),
        (MAIN, "fmt.Println", "", "external"),
        (MAIN, "fmt.Println", "", "external"),
        (f"{SVC}.Base.Logf", "log.Printf", "", "external"),
        (f"{SVC}.Catalog.Price", "c.repo.Get", f"{STORE}.Repository.Get", "inferred"),  # interface field
        (f"{SVC}.Catalog.Price", "c.Logf", f"{SVC}.Base.Logf", "inferred"),  # promoted from *Base
        (f"{SVC}.Catalog.Price", "c.discount", f"{SVC}.Catalog.discount", "inferred"),
        (f"{SVC}.Catalog.Seed", "store.NewMemory", f"{STORE}.NewMemory", "module"),
        (f"{SVC}.Catalog.Seed", "r.Put", f"{STORE}.Repository.Put", "inferred"),
        (f"{SVC}.Catalog.Seed", "metrics.Inc", "", "unresolved"),
        (f"{SVC}.TestPrice", "New", f"{SVC}.New", "local"),  # same package, other file
        (f"{SVC}.TestPrice", "store.NewMemory", f"{STORE}.NewMemory", "module"),
        (f"{SVC}.TestPrice", "c.Seed", f"{SVC}.Catalog.Seed", "inferred"),  # New, another file
        (f"{SVC}.TestPrice", "c.Price", f"{SVC}.Catalog.Price", "inferred"),
        (f"{SVC}.TestPrice", "t.Fatalf", "", "external"),  # t *testing.T
        (STORE, "errors.New", "", "external"),
        (f"{STORE}.Memory.Get", "m.mu.Lock", "", "external"),  # sync.Mutex
        (f"{STORE}.Memory.Get", "m.mu.Unlock", "", "external"),
        (f"{STORE}.Memory.Put", "validate", f"{STORE}.validate", "local"),  # validate.go
        (f"{STORE}.Memory.Put", "m.mu.Lock", "", "external"),
        (f"{STORE}.Memory.Put", "m.mu.Unlock", "", "external"),
        (f"{STORE}.Memory.Put", "len", "", "external"),  # builtin
        (f"{STORE}.Memory.Put", "errors.New", "", "external"),
        (f"{STORE}.TestMemoryPutGet", "NewMemory", f"{STORE}.NewMemory", "local"),
        (f"{STORE}.TestMemoryPutGet", "m.Put", f"{STORE}.Memory.Put", "inferred"),  # NewT convention
        (f"{STORE}.TestMemoryPutGet", "t.Fatal", "", "external"),
        (f"{STORE}.TestMemoryPutGet", "m.Get", f"{STORE}.Memory.Get", "inferred"),
        (f"{STORE}.TestMemoryPutGet", "t.Fatal", "", "external"),
        (f"{STORE}.validate", "fmt.Errorf", "", "external"),
    ])


def test_callers_across_packages(store):
    assert sorted((c.path, c.caller) for c in store.callers(f"{STORE}.NewMemory")) == [
        ("cmd/shop/main.go", MAIN),
        ("internal/service/service.go", f"{SVC}.Catalog.Seed"),
        ("internal/service/service_test.go", f"{SVC}.TestPrice"),
        ("internal/store/store_test.go", f"{STORE}.TestMemoryPutGet"),
    ]
    assert sorted(c.caller for c in store.callers(f"{SVC}.Catalog.Price")) == [MAIN, f"{SVC}.TestPrice"]
    assert store.count_unresolved_named("Price") == 0


def test_embedding_base_and_package_imports(store):
    assert [(i.child, i.base, i.target) for i in store.inherits()] == [(f"{SVC}.Catalog", "Base", f"{SVC}.Base")]
    assert sorted((i.path, i.module, i.alias, i.target) for i in store.imports()) == [
        ("cmd/shop/main.go", "example.com/shop/internal/service", "", SVC),
        ("cmd/shop/main.go", "example.com/shop/internal/store", "st", STORE),
        ("cmd/shop/main.go", "fmt", "", ""),
        ("internal/service/service.go", "example.com/shop/internal/store", "", STORE),
        ("internal/service/service.go", "log", "", ""),
        ("internal/service/service_test.go", "example.com/shop/internal/store", "", STORE),
        ("internal/service/service_test.go", "testing", "", ""),
        ("internal/store/store.go", "errors", "", ""),
        ("internal/store/store.go", "sync", "", ""),
        ("internal/store/store_test.go", "testing", "", ""),
        ("internal/store/validate.go", "fmt", "", ""),
    ]


def test_goroot_std_module_has_no_prefix(tmp_path):
    """GOROOT/src has `module std`: its packages are imported as "net/http", not "std/net/http";
    vendored modules under src/vendor are imported by their own paths."""
    src = tmp_path / "src"
    for d in ("fmt", "net/http", "vendor/golang.org/x/text"):
        (src / d).mkdir(parents=True)
    (src / "go.mod").write_text("module std\n\ngo 1.22\n")
    (src / "fmt" / "print.go").write_text("package fmt\n\nfunc Println(a ...any) {}\n")
    (src / "vendor/golang.org/x/text" / "t.go").write_text("package text\n\nfunc Fold(s string) string { return s }\n")
    (src / "net/http" / "client.go").write_text(
        'package http\n\nimport (\n\t"fmt"\n\t"golang.org/x/text"\n)\n\nfunc Get(u string) { fmt.Println(text.Fold(u)) }\n')
    s = SqliteGraphStore(tmp_path / "g.db", "g")
    Indexer(src, s, None, workers=1).index_tree()
    assert sorted((c.caller, c.callee, c.target, c.resolution) for c in s.all_calls()) == [
        ("net/http.Get", "fmt.Println", "fmt.Println", "module"),
        ("net/http.Get", "text.Fold", "golang.org/x/text.Fold", "module"),
    ]
    s.close()


def test_package_variable_receiver(tmp_path):
    """`var DefaultClient = &Client{}` types the package variable: `DefaultClient.Get(u)` in a
    function of the same file binds to Client.Get (net/http.Get's shape); a local that hides
    the name leaves the call unresolved."""
    (tmp_path / "go.mod").write_text("module example.com/web\n\ngo 1.22\n")
    (tmp_path / "client.go").write_text(
        "package web\n\nvar DefaultClient = &Client{}\n\ntype Client struct{}\n\n"
        "func (c *Client) Get(u string) error { return nil }\n\n"
        "func Get(u string) error { return DefaultClient.Get(u) }\n\n"
        "func Other(u string) error { DefaultClient := pick(); return DefaultClient.Get(u) }\n")
    s = SqliteGraphStore(tmp_path / "g.db", "g")
    Indexer(tmp_path, s, None, workers=1).index_tree()
    assert sorted((c.caller, c.callee, c.target, c.resolution) for c in s.all_calls()) == [
        ("example.com/web.Get", "DefaultClient.Get", "example.com/web.Client.Get", "inferred"),
        ("example.com/web.Other", "DefaultClient.Get", "", "unresolved"),
        ("example.com/web.Other", "pick", "", "unresolved"),
    ]
    s.close()
