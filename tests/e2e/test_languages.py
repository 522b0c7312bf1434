"""The real daemon on each language's fixture repository: languages seen, one definition's
exact qualified name, kind and line range, its callers with how each call was resolved, and
a module's imports. Expectations are written out from the fixture sources."""

from __future__ import annotations

import shutil

import pytest
import pytest_lsp
from pytest_lsp import LanguageClient

from tests.e2e.lspclient import FIXTURES, check_budget, config, init_params, request, wait_indexed

CASES = {
    # module-style names: package.json's name ("notes") plus the path under src/
    "js": ({"javascript": 6, "json": 1}, "notes/util.slugify", "function", "src/util.js", (7, 9),
           [("notes/legacy.legacyAdd", "module"), ("notes/service.NoteService.add", "import"),
            ("notes/service.NoteService.find", "module"), ("notes/store.Store.validate", "import")]),
    "ts": ({"json": 1, "tsx": 1, "typescript": 4}, "src/registry.Registry.add", "method", "src/registry.ts", (25, 29),
           [("src/registry.Registry.demo", "inferred"), ('test/registry.spec."Registry"."sums areas"', "inferred")]),
    "go": ({"go": 6}, "example.com/shop/internal/store.NewMemory", "function", "internal/store/store.go", (34, 36),
           [("example.com/shop/cmd/shop.main", "module"), ("example.com/shop/internal/service.Catalog.Seed", "module"),
            ("example.com/shop/internal/service.TestPrice", "module"),
            ("example.com/shop/internal/store.TestMemoryPutGet", "local")]),
    "rust": ({"rust": 5, "toml": 1}, "ledger::account::Account::new", "method", "src/account.rs", (20, 22),
             [("ledger::account::tests::deposit_adds", "local"), ("ledger::open", "import"),
              ("ledger::tests::ledger_test::opens_with_owner", "import")]),
    "java": ({"java": 7}, "com.acme.orders.model.Order.getCents", "method",
             "src/main/java/com/acme/orders/model/Order.java", (17, 19),
             [("com.acme.orders.service.OrderService.place", "inferred"),
              ("com.acme.orders.service.OrderService.validate", "inferred")]),
    "c": ({"c": 6}, "calc.calc_eval", "function", "src/calc.c", (17, 33),
          [("main.main", "import"), ("test_calc.test_eval_adds", "import"),
           ("test_calc.test_eval_multiplies", "import")]),
    "cpp": ({"cpp": 6}, "(global)::geo::Registry::add", "method", "include/registry.hpp", (13, 13),
            [("(global)::RegistryTest.SumsAreas", "inferred"), ("(global)::main", "inferred")]),
    "csharp": ({"csharp": 5}, "Library.Core.Book.Label", "method", "src/Library.Core/Book.cs", (6, 6),
               [("Library.Core.Catalogue.Register", "inferred"), ("Library.Core.Catalogue.Register", "inferred")]),
    "ruby": ({"ruby": 5}, "Object.Bank.Ledger.size", "method", "lib/bank/ledger.rb", (15, 17),
             [("Object.AccountTest.test_deposit_adds_to_balance", "inferred"), ("Object.Bank.Ledger.record", "self")]),
    "php": ({"json": 1, "php": 5}, "App\\Model\\Invoice\\isPaid", "method", "src/Model/Invoice.php", (16, 19),
            [("App\\Service\\Billing\\check", "inferred")]),
    "kotlin": ({"kotlin": 5}, "com.acme.tasks.Board.add", "method", "src/main/kotlin/com/acme/tasks/Board.kt", (9, 14),
               [("com.acme.tasks.BoardTest.finishesATask", "inferred")]),
}


@pytest.fixture(params=sorted(CASES))
def lang(request):
    return request.param


@pytest.fixture()
def repo(lang, tmp_path):
    root = tmp_path / f"{lang}_repo"
    shutil.copytree(FIXTURES / f"{lang}_repo", root)
    return root


@pytest_lsp.fixture(config=config(data_dir="/tmp/codesynapse-e2e-languages"))
async def client(lsp_client: LanguageClient, repo):
    await lsp_client.initialize_session(init_params(repo))
    await wait_indexed(lsp_client)
    yield
    await lsp_client.shutdown_session()


async def test_language_fixture(client, lang):
    languages, qname, kind, path, (start, end), callers = CASES[lang]
    st = await request(client, "codesynapse/indexStatus", {})
    assert st["languages"] == languages
    card = await request(client, "codesynapse/symbolCard", {"selector": qname})
    check_budget(card)
    c = card["card"]
    assert (c["qualifiedName"], c["kind"], c["path"], c["range"]) == (
        qname, kind, path, [start, end])
    g = await request(client, "codesynapse/callGraph", {"selector": qname, "direction": "callers"})
    check_budget(g)
    # a call site bound through an import gives no resolution (docs/PROTOCOL.md): read as "import"
    assert sorted((n["qualifiedName"], e.get("resolution", "import")) for n in g["callers"]["nodes"]
                  for e in n["sites"]) == callers
    if lang in MODULE_IMPORTS and MODULE_IMPORTS[lang][1] is not None:
        module, imports = MODULE_IMPORTS[lang]
        m = await request(client, "codesynapse/symbolCard", {"selector": module})
        assert sorted((i["module"], i["alias"], i["target"]) for i in m["card"]["imports"]) == imports


MODULE_IMPORTS = {
    # a module card lists the file's imports with their resolved targets
    "go": ("example.com/shop/cmd/shop", [
        ("example.com/shop/internal/service", "", "example.com/shop/internal/service"),
        ("example.com/shop/internal/store", "st", "example.com/shop/internal/store"),
        ("fmt", "", "")]),
}
