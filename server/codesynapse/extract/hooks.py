"""Per-language behaviour that a query cannot express: module naming, imports, kinds,
summaries, signatures, test detection and receiver-type hints.

The engine (``engine.py``) calls a ``LanguageHooks`` object; each language subclasses it
in its own module under ``extract/lang/``.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from tree_sitter import Node

from codesynapse.extract.model import ImportRef

_WS = re.compile(r"\s+")


def text(node: Node | None, src: bytes) -> str:
    if node is None:
        return ""
    return src[node.start_byte:node.end_byte].decode("utf-8", "replace")


def squash(s: str, cap: int = 240) -> str:
    s = _WS.sub(" ", s).strip()
    return s if len(s) <= cap else s[: cap - 1] + "…"


def first_sentence(doc: str, cap: int = 200) -> str:
    doc = doc.strip()
    if not doc:
        return ""
    para = doc.split("\n\n", 1)[0]
    para = _WS.sub(" ", para).strip()
    m = re.search(r"(?<=[.!?])\s", para)
    if m:
        para = para[: m.start()]
    return para if len(para) <= cap else para[: cap - 1] + "…"


def strip_comment(c: str) -> str:
    c = c.strip()
    for pre in ("///", "//!", "//", "#", "--"):
        if c.startswith(pre):
            return c[len(pre):].strip()
    if c.startswith("/*"):
        c = c[2:]
        if c.endswith("*/"):
            c = c[:-2]
        lines = [ln.strip().lstrip("*").strip() for ln in c.splitlines()]
        return "\n".join(ln for ln in lines if ln)
    return c


class LanguageHooks:
    """Defaults that suit C-like languages; override per language."""

    sep = "."
    # Whether a statement's extraction depends on other top-level statements only through
    # names the hooks report (``trace_begin``/``trace_end``, ``table_names``): such a
    # language's files can be re-extracted a statement at a time (extract/incremental.py).
    traces_file_facts = False
    # How a line reads, for that re-extraction: the starts of a line that is only a comment (or
    # a line inside one), and what on a line shows a comment (the last line above a statement,
    # when it holds one, is that statement's summary)
    comment_lines: tuple[bytes, ...] = (b"//", b"/*", b"*")
    comment_marks: tuple[bytes, ...] = (b"//", b"/*", b"*/")
    offside_rule = False  # indentation is syntax (an indented comment ends the body above it)
    # top-level nodes whose children are statements of their own for that re-extraction (C's
    # conditional compilation: a header's include guard wraps the whole file in one ``#ifndef``)
    block_containers: frozenset[str] = frozenset()
    # whether such a file's extraction is also kept on disk (the first change of a large file
    # the daemon holds nothing of then starts from it instead of a whole extraction)
    disk_keep = True

    def trace_begin(self) -> None:
        """Start recording the top-level names the next ``receiver_hints`` looks up."""

    def trace_end(self) -> frozenset[str]:
        """The names looked up since ``trace_begin``."""
        return frozenset()

    def table_names(self, node: Node, src: bytes) -> tuple[str, ...]:
        """The names a top-level statement defines in the file's lookup tables."""
        return ()
    comment_types = frozenset({"comment", "line_comment", "block_comment"})

    def module_name(self, relpath: str, root: str) -> str:
        p = PurePosixPath(relpath)
        return str(p.with_suffix(""))

    def is_package(self, relpath: str) -> bool:
        return False

    def imports(self, nodes: list[Node], src: bytes, module: str, relpath: str) -> list[ImportRef]:
        """Decode the ``@import`` nodes the query captured."""
        return []

    def refine_kind(self, kind: str, node: Node, parent_kind: str) -> str:
        if kind == "function" and parent_kind in ("class", "struct", "interface", "trait", "enum"):
            return "method"
        return kind

    def body(self, node: Node) -> Node | None:
        return node.child_by_field_name("body")

    def signature(self, node: Node, src: bytes) -> str:
        body = self.body(node)
        end = body.start_byte if body is not None else node.end_byte
        sig = src[node.start_byte:end].decode("utf-8", "replace")
        if body is None:
            sig = sig.split("\n", 1)[0]
        return squash(sig.rstrip().rstrip("{:").rstrip())

    def summary(self, node: Node, src: bytes) -> str:
        """Leading comment block directly above the definition."""
        comments: list[str] = []
        prev = node.prev_sibling
        line = node.start_point[0]
        while prev is not None and prev.type in self.comment_types and prev.end_point[0] >= line - 1:
            comments.append(strip_comment(text(prev, src)))
            line = prev.start_point[0]
            prev = prev.prev_sibling
        comments.reverse()
        # a doc comment's block tags (JSDoc/Javadoc/PHPDoc ``@param``, ``@internal``) are not
        # its description: the summary is the first sentence before them
        lines = "\n".join(comments).split("\n")
        cut = next((k for k, ln in enumerate(lines) if ln.lstrip().startswith("@")), len(lines))
        return first_sentence("\n".join(lines[:cut]))

    def is_test(self, name: str, kind: str, relpath: str, node: Node, src: bytes, parent: str) -> bool:
        return False

    def receiver_hints(self, unit: Node, src: bytes) -> dict[str, str]:
        """Local variable → type (as written) for receivers of method calls in this unit."""
        return {}

    def constant_ok(self, name: str, node: Node) -> bool:
        return True

    def callee_text(self, callee: Node, src: bytes) -> str:
        return re.sub(r"\s+", "", text(callee, src))

    def exported(self, name: str, node: Node, src: bytes) -> bool:
        return not name.startswith("_")

    def tree_module(self, root: Node, src: bytes, module: str) -> str:
        """The module qname declared in the file (Java ``package``, C# ``namespace``), or ""
        to keep the path-based ``module_name``."""
        return ""

    def owner(self, node: Node, src: bytes) -> str:
        """For a definition not inside its type's body (Go ``func (s *T) m()``, Rust
        ``impl T { fn m() }``, C++ ``void T::m()``): the owning type's name, else ""."""
        return ""

    def base_owner(self, base: Node, src: bytes) -> str:
        """For a base-type capture outside any type body (Rust ``impl Trait for T``): the
        name of the type that implements it, else ""."""
        return ""
