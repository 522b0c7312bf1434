"""The Java accuracy bench (bench/accuracy_java.py, issue 18 #5) scores our callers against the
call sites JavaParser's symbol solver resolved. The solver runs at bench time only (a Maven
build); here its answer for a small tree is written by hand into the oracle's cache, and the
real indexer builds our side. Expected counts are written out."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from codesynapse.bench import accuracy_java as aj

ACCOUNT = """package bank;

public class Account {
    public void withdraw(int amount) {
    }

    public void deposit(int amount) {
    }
}
"""

TELLER = """package bank;

public class Teller {
    private final Account account = new Account();

    public void pay(Account a) {
        a.withdraw(1);
    }

    public void refund() {
        account.deposit(1);
    }

    public void unknown(Object o) {
        ((Account) o).withdraw(2);
    }

    public void blind(Account a) {
        a.withdraw(3);
    }
}
"""


def _site(file, line, name, decl="", decl_line=-1, error=None):
    s = {"file": file, "line": line, "col": 8, "name": name}
    if error:
        s["error"] = error
    else:
        s.update({"decl": decl, "declLine": decl_line, "sig": f"bank.Account.{name}(int)"})
    return s


def test_java_scoring_against_a_cached_oracle(tmp_path):
    root = tmp_path / "src"
    (root / "bank").mkdir(parents=True)
    (root / "bank" / "Account.java").write_text(ACCOUNT)
    (root / "bank" / "Teller.java").write_text(TELLER)
    data = tmp_path / "data"
    data.mkdir()
    # the solver's answer: pay and unknown call withdraw, refund calls deposit; blind's call
    # is one the solver could not resolve (its blind spot)
    sites = [
        _site("bank/Teller.java", 7, "withdraw", "bank/Account.java", 4),
        _site("bank/Teller.java", 11, "deposit", "bank/Account.java", 7),
        _site("bank/Teller.java", 15, "withdraw", "bank/Account.java", 4),
        _site("bank/Teller.java", 19, "withdraw", error="UnsolvedSymbolException"),
    ]
    key = {"schema": aj.ORACLE_SCHEMA, "tree": aj._digest_tree(root), "oracle": aj._oracle_version()}
    cache = data / f"java-sites-{hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]}.json"
    cache.write_text(json.dumps({"key": key, "sites": sites, "seconds": 1.0}))

    res = aj.run(root, 10, "", data, say=lambda m: None)
    rows = {r["symbol"]: r for r in res["rows"]}
    assert res["oracleCached"] is True and res["oracleSites"] == 4 and res["oracleUnresolved"] == 1
    w = rows["bank.Account.withdraw"]
    # pay: both sides; unknown: the cast receiver is the solver's, not ours (a miss); blind:
    # the solver's blind spot, excluded from both sides whatever we answer
    assert (w["tp"], w["fp"], w["fn"]) == (1, 0, 1)
    assert w["misses"] == ["bank/Teller.java:14"]
    assert w["excludedDispatch"] == ["bank/Teller.java:18"]
    d = rows["bank.Account.deposit"]
    assert (d["tp"], d["fp"], d["fn"]) == (1, 0, 0)
    # no constructor is a target
    assert not any(r["symbol"].endswith(".Teller.Teller") or r["symbol"].endswith("Account.Account")
                   for r in res["rows"])
    assert res["micro"]["tp"] == 2 and res["micro"]["fn"] == 1


def test_the_oracle_sources_are_shipped_with_the_bench():
    src = Path(aj.ORACLE_SRC)
    assert (src / "pom.xml").is_file()
    assert "javaparser-symbol-solver-core" in (src / "pom.xml").read_text()
    assert (src / "src/main/java/codesynapse/oracle/CallSites.java").is_file()
