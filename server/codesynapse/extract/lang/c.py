"""C: functions, structs/unions/enums/typedefs, constants, calls, ``#include``.

C has one global namespace for functions with external linkage, and a header and its source
file describe one unit; so the module qname is the file's stem (``src/store.c`` and
``include/store.h`` are both module ``store``), and ``#include "store.h"`` is a star import
of ``store``. Same-named files in different directories share a module (they rarely define
the same names, and when they do the linker would complain too). ``<system>`` headers are
star imports of the header as written and never resolve (the libc names are "external").

Definitions: function definitions (not prototypes), struct/union/enum definitions at file
scope (a ``typedef struct {…} name`` is named by the typedef), other typedefs, ``#define``
constants and ``const`` file-scope variables named in UPPER_CASE. ``static`` functions are
not exported. Tests: ``test_*`` functions in files named ``test_*``/``*_test`` or under a
``test``/``tests`` directory.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from tree_sitter import Node

from codesynapse.extract.hooks import LanguageHooks, squash, text
from codesynapse.extract.model import ImportRef

_CONST = re.compile(r"^[A-Z][A-Z0-9_]*$")


def norm_callee(node: Node | None, src: bytes, depth: int = 0) -> str:
    if node is None or depth > 16:
        return "?"
    t = node.type
    if t in ("identifier", "field_identifier", "type_identifier", "namespace_identifier"):
        return text(node, src)
    if t == "this":
        return "this"
    if t == "field_expression":
        return f"{norm_callee(node.child_by_field_name('argument'), src, depth + 1)}." \
               f"{norm_callee(node.child_by_field_name('field'), src, depth + 1)}"
    if t == "call_expression":
        return f"{norm_callee(node.child_by_field_name('function'), src, depth + 1)}()"
    if t == "subscript_expression":
        return f"{norm_callee(node.child_by_field_name('argument'), src, depth + 1)}[]"
    if t == "qualified_identifier":
        scope = node.child_by_field_name("scope")
        name = node.child_by_field_name("name")
        head = norm_callee(scope, src, depth + 1) if scope is not None else ""
        return f"{head}::{norm_callee(name, src, depth + 1)}" if head else norm_callee(name, src, depth + 1)
    if t in ("template_function", "template_type"):
        return norm_callee(node.child_by_field_name("name"), src, depth + 1)
    if t in ("parenthesized_expression", "pointer_expression"):
        kid = node.child_by_field_name("argument") if t == "pointer_expression" else None
        if kid is None and node.named_children:
            kid = node.named_children[0]
        return norm_callee(kid, src, depth + 1)
    if t == "destructor_name":
        return re.sub(r"\s+", "", text(node, src))
    return "?"


def include_module(path: str) -> str:
    return PurePosixPath(path).stem


class CHooks(LanguageHooks):
    sep = "."
    # a top-level statement's facts depend on no other statement (no receiver hints, a summary
    # from the comment right above it): large files are re-extracted a statement at a time
    traces_file_facts = True
    # but not kept on disk: the kernel's 1,298 large files that parse cleanly (127 MB) would
    # keep ~50 MB (0.39 of the source, measured on 100 of them), which its 3 GB index target
    # has no room for; a large C file's first change seen only through the disk is extracted
    # whole, the next ones (and every save of an opened file) a statement at a time
    disk_keep = False
    # a header's include guard (or any top-level #if/#ifdef) wraps many statements in one node:
    # its lines and the statements inside it are blocks of their own, so an edit inside
    # re-extracts its own statements, not the whole #ifndef (a 15,656-#define generated header
    # took 4-5 s a save); a range cutting a directive from its #endif does not parse alone
    # (a syntax error), and that file is extracted whole
    block_containers = frozenset({"preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef"})
    comment_types = frozenset({"comment"})

    def module_name(self, relpath: str, root: str) -> str:
        return PurePosixPath(relpath).stem

    def refine_kind(self, kind: str, node: Node, parent_kind: str) -> str:
        return kind

    def constant_ok(self, name: str, node: Node) -> bool:
        return bool(_CONST.match(name))

    def body(self, node: Node) -> Node | None:
        if node.type in ("preproc_def", "declaration", "type_definition"):
            if node.type == "type_definition":
                t = node.child_by_field_name("type")
                return t.child_by_field_name("body") if t is not None else None
            return None
        return node.child_by_field_name("body")

    def signature(self, node: Node, src: bytes) -> str:
        t = node.type
        if t == "preproc_def":  # the name, never the value
            return f"#define {text(node.child_by_field_name('name'), src)}"
        if t == "declaration":  # const FOO = …: everything before the value
            init = next((d for d in node.children_by_field_name("declarator") if d.type == "init_declarator"), None)
            value = init.child_by_field_name("value") if init is not None else None
            end = value.start_byte if value is not None else node.end_byte
            return squash(src[node.start_byte:end].decode("utf-8", "replace").rstrip().rstrip("=;").rstrip())
        if t == "type_definition":
            typ = node.child_by_field_name("type")
            body = typ.child_by_field_name("body") if typ is not None else None
            if body is not None:
                head = src[node.start_byte:body.start_byte].decode("utf-8", "replace").strip()
                return squash(f"{head} {text(node.child_by_field_name('declarator'), src)}")
            return squash(text(node, src).rstrip(";"))
        return super().signature(node, src)

    def _storage(self, node: Node, src: bytes) -> set[str]:
        return {text(c, src) for c in node.children if c.type == "storage_class_specifier"}

    def exported(self, name: str, node: Node, src: bytes) -> bool:
        return "static" not in self._storage(node, src)

    def is_test(self, name: str, kind: str, relpath: str, node: Node, src: bytes, parent: str) -> bool:
        if kind != "function" or not name.startswith("test"):
            return False
        p = PurePosixPath(relpath)
        return p.stem.startswith("test") or p.stem.endswith("_test") or \
            any(d in ("test", "tests") for d in p.parts[:-1])

    def callee_text(self, callee: Node, src: bytes) -> str:
        s = norm_callee(callee, src)
        return "" if s == "?" else s

    def imports(self, nodes: list[Node], src: bytes, module: str, relpath: str) -> list[ImportRef]:
        out: list[ImportRef] = []
        for node in nodes:
            path = node.child_by_field_name("path")
            if path is None:
                continue
            raw = text(path, src)
            line = node.start_point[0] + 1
            if path.type == "string_literal":
                inner = raw.strip('"')
                out.append(ImportRef(module=include_module(inner), name="*", line=line))
            elif path.type == "system_lib_string":
                out.append(ImportRef(module=raw.strip("<>"), name="*", line=line))
        return out
