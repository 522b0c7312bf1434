"""The method table (``codesynapse.methods``): one static list of every custom request."""

from __future__ import annotations

import json
import subprocess
import sys

MEMORY = ["codesynapse/memory/forget", "codesynapse/memory/list", "codesynapse/memory/recall",
          "codesynapse/memory/remember"]


def test_an_unknown_method_lists_every_method_without_importing_memory_first(tmp_path):
    """In a fresh process that imports only ``codesynapse.methods`` (as the LSP server and
    every bench do), the unknown-method error names the memory requests too: the table does
    not depend on who imported what before (issue 22, point 7)."""
    code = ("import json\n"
            "from codesynapse.errors import InvalidParams\n"
            "from codesynapse.methods import call_method\n"
            "try:\n"
            "    call_method(None, 'codesynapse/nope', {})\n"
            "except InvalidParams as e:\n"
            "    print(json.dumps({'field': e.field, 'message': str(e)}))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         cwd=tmp_path, check=True)
    err = json.loads(out.stdout)
    assert err["field"] == "method"
    known = err["message"].split("known: ", 1)[1].split(", ")
    assert known == sorted([
        "codesynapse/callGraph", "codesynapse/indexStatus", "codesynapse/ledger", "codesynapse/minimalContext",
        "codesynapse/modules", "codesynapse/policyEffects", "codesynapse/prContext", "codesynapse/search", "codesynapse/snippet",
        "codesynapse/symbolCard", "codesynapse/symbolContext", *MEMORY])


def test_importing_memory_registers_nothing():
    """No row is added by importing a module: the table is the same before and after every
    server module is imported."""
    code = ("import pkgutil, importlib, codesynapse\n"
            "from codesynapse.methods import METHODS\n"
            "before = sorted(METHODS)\n"
            "for m in pkgutil.walk_packages(codesynapse.__path__, 'codesynapse.'):\n"
            "    if m.name != 'codesynapse.__main__':  # runs the CLI\n"
            "        importlib.import_module(m.name)\n"
            "print(before == sorted(METHODS), len(METHODS))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.split() == ["True", "15"]
