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


# the full stop of an abbreviation does not end a sentence ("... from the environment, i.e.
# HTTP_PROXY ..."); "etc." does, unless the sentence goes on in lower case
_ABBREV = re.compile(r"\b(?:e\.g|i\.e|cf|vs|viz|approx|resp|incl|esp)\.$", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s")


def end_row(node: Node) -> int:
    """The row ``node`` ends on: a node that takes its newline (``#define``) ends at column 0
    of the row below it."""
    return node.end_point[0] - (1 if node.end_point[1] == 0 else 0)


def first_sentence(doc: str, cap: int = 200) -> str:
    doc = doc.strip()
    if not doc:
        return ""
    para = doc.split("\n\n", 1)[0]
    para = _WS.sub(" ", para).strip()
    for m in _SENTENCE_END.finditer(para):
        head = para[: m.start()]
        if _ABBREV.search(head) is None and not (head.endswith("etc.") and para[m.end():m.end() + 1].islower()):
            para = head
            break
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
        # a blank line inside the comment ends a paragraph (``first_sentence`` stops there)
        return _BLANK_RUN.sub("\n\n", "\n".join(lines)).strip("\n")
    return c


_BLANK_RUN = re.compile(r"\n{2,}")
# Doc-comment markup (Javadoc, JSDoc/TSDoc, PHPDoc, KDoc): an inline tag stands for the text it
# shows: ``{@code n}`` → n, ``{@link Foo#bar(Baz)}`` → Foo.bar, ``{@link Foo label}`` → label;
# ``{@inheritDoc}`` shows nothing the comment itself says
_INLINE_TAG = re.compile(r"\{@(\w+)\s*([^{}]*)\}")
# the HTML a Javadoc comment is written in: a block tag starts a paragraph, an inline one is
# left out (only these names: a ``<`` in prose or a generic type, ``List<T>``, stays)
_HTML_BLOCK = re.compile(r"</?(?:p|pre|ul|ol|li|dl|dt|dd|h[1-6]|blockquote|table|tr|td|th|br|hr)\b[^<>]*>",
                         re.IGNORECASE)
_HTML_INLINE = re.compile(r"</?(?:b|i|em|strong|code|tt|a|var|kbd|samp|sup|sub|u|s|small|span|cite)\b[^<>]*>",
                          re.IGNORECASE)
_ENTITY = {"&lt;": "<", "&gt;": ">", "&amp;": "&", "&quot;": '"', "&#39;": "'", "&nbsp;": " "}
_RETURN_TAG = re.compile(r"^\s*@returns?\s+(.*)", re.DOTALL | re.MULTILINE)
_DESCRIPTION_TAG = re.compile(r"^\s*@(?:summary|description|desc)\s+(.*)", re.DOTALL | re.MULTILINE)
# a comment line that instructs a tool (a compiler directive, a linter's or formatter's
# switch) is not prose about the code below it: Go's doc comments leave ``//go:`` directives
# out the same way
_DIRECTIVE = re.compile(
    r"^(?:go:[a-z]\w*|\+build\b|nolint\b|NOLINT|eslint-(?:disable|enable)|@ts-(?:ignore|expect-error|nocheck)\b"
    r"|prettier-ignore|istanbul ignore|c8 ignore|noinspection\b|clang-format (?:on|off)|pylint: ?(?:disable|enable)"
    r"|noqa\b|type: ?ignore\b|fmt: ?(?:on|off|skip)\b|rubocop:(?:disable|enable|todo)|@formatter:(?:on|off)"
    r"|#?(?:end)?region\b|frozen_string_literal:)")


def _inline_tag(m: re.Match) -> str:
    tag, body = m.group(1), m.group(2).strip()
    if tag in ("inheritDoc", "index", "docRoot"):
        return ""
    if tag in ("link", "linkplain", "see"):
        # target [label]: the label when there is one, else the target as a name
        target, _, label = body.partition(" ")
        if label.strip():
            return label.strip()
        target = target.split("(", 1)[0].replace("#", ".").strip(".")
        return target
    return body  # code, literal, value and the like show their text


def doc_text(doc: str) -> str:
    """The description of a doc comment's text (its comment marks already stripped): the
    part above its block tags (``@param``, ``@throws``, ``@author``), without tool directive
    lines (``//go:generate``, ``// eslint-disable-next-line``), with inline tags and HTML
    markup replaced by the text they show. A comment whose description is empty but that
    says what the method returns (``/** @return whether the key is held */``, a common
    Javadoc and JSDoc style) is described by that: "Returns whether the key is held"; one
    with JSDoc's ``@summary``/``@description`` tag by that tag's text."""
    lines = [ln for ln in doc.split("\n") if not _DIRECTIVE.match(ln.strip())]
    cut = next((k for k, ln in enumerate(lines) if ln.lstrip().startswith("@")), len(lines))
    desc = "\n".join(lines[:cut])
    if not desc.strip() and cut < len(lines):
        tags = "\n".join(lines[cut:])
        m = _DESCRIPTION_TAG.search(tags)
        if m:
            # JSDoc's explicit description: ``@description text`` / ``@summary text``
            desc = re.split(r"\n\s*@", m.group(1), maxsplit=1)[0]
        m = None if desc.strip() else _RETURN_TAG.search(tags)
        if m:
            ret = re.split(r"\n\s*@", m.group(1), maxsplit=1)[0].strip()
            # JSDoc writes the type first: ``@returns {boolean} whether ...``
            ret = re.sub(r"^\{[^{}]*\}\s*", "", ret)
            if ret:
                desc = "Returns " + ret
    if "{@" in desc:
        desc = _INLINE_TAG.sub(_inline_tag, desc)
    if "<" in desc:
        desc = _HTML_BLOCK.sub("\n\n", desc)
        desc = _HTML_INLINE.sub("", desc)
    if "&" in desc:
        desc = re.sub(r"&(?:lt|gt|amp|quot|#39|nbsp);", lambda m: _ENTITY[m.group(0)], desc)
    return desc


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
        # a doc comment's block tags (JSDoc/Javadoc/PHPDoc ``@param``, ``@internal``) and its
        # markup are not its description: the summary is the first sentence of ``doc_text``
        return first_sentence(doc_text(self.leading_comment(node, src)))

    def leading_comment(self, node: Node, src: bytes) -> str:
        """The comment block directly above the definition, comment marks stripped."""
        comments: list[str] = []
        prev = node.prev_sibling
        line = node.start_point[0]
        while prev is not None and prev.type in self.comment_types and prev.end_point[0] >= line - 1:
            before = prev.prev_sibling
            if before is not None and before.type not in self.comment_types and end_row(before) == prev.start_point[0]:
                break  # written after code on its line: that code's comment (``#endif /* X_H */``)
            comments.append(strip_comment(text(prev, src)))
            line = prev.start_point[0]
            prev = prev.prev_sibling
        comments.reverse()
        return "\n".join(comments)

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
