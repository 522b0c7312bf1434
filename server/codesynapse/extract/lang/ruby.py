"""Ruby: classes, modules, methods, ``Foo.new``, mixins, ``require``, Minitest and RSpec.

Ruby constants live in one global namespace (``Object``), classes are reopened across files
and Rails-style autoloading needs no ``require``; so every Ruby file's module qname is
``Object`` and definitions are qualified by their nesting only (``Object.Shop.Cart.total``,
also for ``class Shop::Cart``). A reference to ``Shop::Cart`` from any file resolves as
module-local. ``require``/``require_relative`` are recorded as imports (the path as written,
``require_relative`` made repository-relative, as star imports) but resolution does not need
them.

``Foo.new(...)`` is an instantiation of ``Foo`` (kind ``new``); ``x = Foo.new`` and
``@x = Foo.new`` (in any method of the class) make receiver hints. ``include``/``prepend``
record the mixin as a base; a module with instance methods is a ``trait`` (so methods mixed
into a class are found through it), one without is a ``module`` (a namespace). Tests: Minitest ``test_*`` methods in ``*_test.rb`` /
``test_*.rb`` files or ``*Test`` classes; RSpec ``describe``/``context``/``it`` blocks in
``*_spec.rb`` files, named by their argument as written.
"""

from __future__ import annotations

import posixpath
import re
from pathlib import PurePosixPath

from tree_sitter import Node

from codesynapse.extract.hooks import LanguageHooks, doc_text, first_sentence, squash, strip_comment, text
from codesynapse.extract.model import ImportRef

MODULE = "Object"
_CONST = re.compile(r"^[A-Z][A-Z0-9_]*$")
_TYPE = re.compile(r"^[A-Z]\w*(\.[A-Z]\w*)*$")
_DROP = frozenset({"require", "require_relative", "include", "extend", "prepend"})
_SCOPES = frozenset({"method", "singleton_method", "class", "module", "lambda"})


def _const_path(node: Node | None, src: bytes) -> str:
    if node is None:
        return ""
    if node.type == "constant":
        return text(node, src)
    if node.type == "scope_resolution":
        scope = node.child_by_field_name("scope")
        name = text(node.child_by_field_name("name"), src)
        return f"{_const_path(scope, src)}.{name}" if scope is not None else name
    return ""


def _norm(node: Node | None, src: bytes, depth: int = 0) -> str:
    if node is None or depth > 16:
        return "?"
    t = node.type
    if t in ("identifier", "constant", "instance_variable", "class_variable", "global_variable"):
        return text(node, src)
    if t == "self":
        return "self"
    if t == "scope_resolution":
        return _const_path(node, src) or "?"
    if t == "call":
        recv = node.child_by_field_name("receiver")
        method = text(node.child_by_field_name("method"), src)
        if method == "new" and recv is not None:
            return f"{_norm(recv, src, depth + 1)}()"
        head = f"{_norm(recv, src, depth + 1)}." if recv is not None else ""
        return f"{head}{method}()"
    if t == "parenthesized_statements":
        kids = node.named_children
        return _norm(kids[-1], src, depth + 1) if kids else "?"
    if t == "element_reference":
        kids = node.named_children
        return f"{_norm(kids[0], src, depth + 1)}[]" if kids else "?"
    return "?"


def _is_test_file(relpath: str) -> bool:
    base = PurePosixPath(relpath).name
    return base.endswith("_test.rb") or base.startswith("test_") or base.endswith("_spec.rb")


class RubyHooks(LanguageHooks):
    sep = "."
    comment_types = frozenset({"comment"})

    def module_name(self, relpath: str, root: str) -> str:
        return MODULE

    def owner(self, node: Node, src: bytes) -> str:
        if node.type in ("class", "module"):
            name = node.child_by_field_name("name")
            if name is not None and name.type == "scope_resolution":
                return _const_path(name.child_by_field_name("scope"), src)
        return ""

    def refine_kind(self, kind: str, node: Node, parent_kind: str) -> str:
        if kind == "module":
            # a module with instance methods is a mixin: a trait (a base of the classes that
            # include it); one with only constants, classes and `def self.x` is a namespace
            body = node.child_by_field_name("body")
            if body is not None and any(c.type == "method" for c in body.named_children):
                return "trait"
            return kind
        if kind == "function" and parent_kind in ("class", "module", "trait"):
            return "method"
        return kind

    def constant_ok(self, name: str, node: Node) -> bool:
        return bool(_CONST.match(name))

    def body(self, node: Node) -> Node | None:
        if node.type == "call":  # an RSpec block
            blk = node.child_by_field_name("block")
            return blk.child_by_field_name("body") if blk is not None else None
        if node.type == "assignment":
            return None
        return node.child_by_field_name("body")

    def signature(self, node: Node, src: bytes) -> str:
        t = node.type
        if t == "assignment":
            return text(node.child_by_field_name("left"), src)
        if t == "call":
            args = node.child_by_field_name("arguments")
            return squash(f"{text(node.child_by_field_name('method'), src)} {text(args, src)}")
        if t in ("method", "singleton_method"):  # `def name(params)`, never the body
            last = node.child_by_field_name("parameters") or node.child_by_field_name("name")
            end = last.end_byte if last is not None else node.end_byte
            return squash(src[node.start_byte:end].decode("utf-8", "replace"))
        if t in ("class", "module"):
            body = node.child_by_field_name("body")
            end = body.start_byte if body is not None else node.end_byte
            return squash(src[node.start_byte:end].decode("utf-8", "replace").split("\n", 1)[0])
        return super().signature(node, src)

    def summary(self, node: Node, src: bytes) -> str:
        target = node
        if node.type == "call" and node.parent is not None and node.parent.type == "body_statement":
            target = node
        comments: list[str] = []
        prev = target.prev_sibling
        if prev is None and target.parent is not None and target.parent.type == "body_statement":
            prev = target.parent.prev_sibling  # `class Foo\n  # comment\n  class Bar`
        line = target.start_point[0]
        while prev is not None and prev.type == "comment" and prev.end_point[0] >= line - 1:
            comments.append(strip_comment(text(prev, src)))
            line = prev.start_point[0]
            prev = prev.prev_sibling
        comments.reverse()
        return first_sentence(doc_text("\n".join(comments)))

    def is_test(self, name: str, kind: str, relpath: str, node: Node, src: bytes, parent: str) -> bool:
        if kind == "test":
            return relpath.endswith("_spec.rb")
        if kind in ("method", "function") and name.startswith("test_"):
            return _is_test_file(relpath) or parent.endswith("Test")
        return False

    def exported(self, name: str, node: Node, src: bytes) -> bool:
        """False after a bare ``private``/``protected`` in the same class body."""
        if node.type not in ("method", "singleton_method"):
            return True
        prev = node.prev_named_sibling
        while prev is not None:
            if prev.type == "identifier" and text(prev, src) in ("private", "protected"):
                return False
            if prev.type == "identifier" and text(prev, src) == "public":
                return True
            prev = prev.prev_named_sibling
        return True

    def callee_text(self, callee: Node, src: bytes) -> str:
        if callee.type == "call":
            method = text(callee.child_by_field_name("method"), src)
            recv = callee.child_by_field_name("receiver")
            if recv is None and method in _DROP:
                return ""
            if recv is None and method in ("describe", "context", "it", "specify") and \
                    callee.child_by_field_name("block") is not None:
                return ""  # an RSpec block: a definition
            s = _norm(callee, src)
            return s[:-2] if s.endswith("()") else s
        s = _norm(callee, src)  # the receiver of Foo.new: Foo
        return "" if s == "?" else s

    def imports(self, nodes: list[Node], src: bytes, module: str, relpath: str) -> list[ImportRef]:
        out: list[ImportRef] = []
        for node in nodes:
            method = text(node.child_by_field_name("method"), src)
            args = node.child_by_field_name("arguments")
            arg = args.named_children[0] if args is not None and args.named_children else None
            if arg is None or arg.type != "string":
                continue
            path = "".join(text(c, src) for c in arg.named_children if c.type == "string_content")
            if not path:
                continue
            if method == "require_relative":
                path = posixpath.normpath(posixpath.join(posixpath.dirname(relpath), path))
            if path.endswith(".rb"):
                path = path[:-3]
            # loading a file makes everything it defines visible: a star import
            out.append(ImportRef(module=path, name="*", line=node.start_point[0] + 1))
        return out

    # -- receiver hints ----------------------------------------------------------------
    @staticmethod
    def _new_type(v: Node | None, src: bytes) -> str:
        if v is None or v.type != "call" or text(v.child_by_field_name("method"), src) != "new":
            return ""
        return _const_path(v.child_by_field_name("receiver"), src)

    def receiver_hints(self, unit: Node, src: bytes) -> dict[str, str]:
        hints: dict[str, str] = {}
        conflicts: set[str] = set()

        def put(var: str, typ: str) -> None:
            if var in conflicts:
                return
            if not typ or not _TYPE.match(typ):
                conflicts.add(var)
                hints.pop(var, None)
                return
            if var in hints and hints[var] != typ:
                conflicts.add(var)
                del hints[var]
                return
            hints[var] = typ

        is_type = unit.type in ("class", "module")
        body = unit.child_by_field_name("body")
        if unit.type == "call":
            blk = unit.child_by_field_name("block")
            body = blk.child_by_field_name("body") if blk is not None else None
        stack = [body] if body is not None else []
        while stack:
            n = stack.pop()
            if n.type == "assignment":
                left = n.child_by_field_name("left")
                if left is not None and (left.type == "instance_variable" or
                                         (left.type == "identifier" and not is_type)):
                    put(text(left, src), self._new_type(n.child_by_field_name("right"), src))
            for c in reversed(n.named_children):
                # a class's hints are its methods' instance variables; a method's its locals
                if c.type in _SCOPES and not (is_type and c.type in ("method", "singleton_method")):
                    continue
                stack.append(c)
        if is_type:
            return {k: v for k, v in hints.items() if k.startswith("@")}
        return hints
