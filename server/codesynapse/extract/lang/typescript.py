"""TypeScript and TSX: the JavaScript hooks (module paths, ES/CommonJS imports, test blocks)
plus type annotations as receiver hints (``x: Repo``, ``constructor(private repo: Repo)``,
class fields ``repo: Repo``), interfaces, type aliases and enums (see javascript.py)."""

from __future__ import annotations

from tree_sitter import Node

from codesynapse.extract.lang.javascript import JavaScriptHooks


class TypeScriptHooks(JavaScriptHooks):
    def refine_kind(self, kind: str, node: Node, parent_kind: str) -> str:
        if kind == "function" and parent_kind in ("class", "interface"):
            return "method"
        return kind

    def body(self, node: Node) -> Node | None:
        if node.type in ("method_signature", "abstract_method_signature", "type_alias_declaration"):
            return None
        return super().body(node)

    def signature(self, node: Node, src: bytes) -> str:
        if node.type in ("method_signature", "abstract_method_signature"):
            from codesynapse.extract.hooks import squash, text

            return squash(text(node, src).rstrip(";,"))
        return super().signature(node, src)


class TsxHooks(TypeScriptHooks):
    pass
