"""How sure a resolved call is, by how it was resolved: the one table of the resolver, which
assigns these values, and of the context answers, which leave an edge's confidence out when it
is its resolution's usual one (docs/PROTOCOL.md). The extension fills the value back in from a
copy of this table (editor-client/src/protocol.ts DEFAULT_CONFIDENCE), which
tests/unit/test_confidence_table.py holds equal to this one."""

from __future__ import annotations

from types import MappingProxyType

CONFIDENCE = MappingProxyType({
    "local": 1.0,  # a name defined in the same file or scope
    "import": 0.95,  # bound through an import (or a package __init__ re-export)
    "module": 0.95,  # an attribute of a module bound by an import
    "self": 0.95,  # self.m / cls.m / this.m through the enclosing class and its bases
    "super": 0.9,  # super().m: the first base that has m
    "inferred": 0.85,  # a receiver whose type is known from a constructor, an annotation or a hint
    "external": 0.0,  # a builtin or a library outside the index: no edge
    "unresolved": 0.0,  # not bound: reported by name
})

# A receiver whose type is a function's declared result (not a class called): below a
# constructor's inferred 0.85, since a declared result may be a base of the object returned.
INFERRED_FROM_RESULT = 0.8

# A receiver that is an untyped parameter, typed by the one class every in-project call site
# passes there (Python parameter hints): below a declared result's 0.8, since a call from
# outside the project (or through a value the index does not see) may pass something else.
INFERRED_FROM_CALLERS = 0.75
