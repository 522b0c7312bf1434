"""Documents and configuration: Markdown sections and YAML/TOML/JSON key paths.

Only structure is kept, never values: a Markdown heading becomes a ``section`` symbol
(qname ``docs/guide.md#Install > From source``, lines from the heading to the line before the
next heading of the same or a higher level, summary = first sentence of its first paragraph);
a config key becomes a ``key`` symbol (qname ``deploy/app.yaml#server.tls.cert``, list items as
``[i]``, summary = the comment lines directly above it). Every string of the result (headings,
key names and paths, signatures, summaries) passes the redaction gate
(``extract.redact.RecordGate``), so a heading or a key that holds a credential is stored
redacted, like the snippet of the same lines. A key's
``hash`` is the SHA-1 of the file's content hash followed by the pair's bytes, so it changes
when the value changes but cannot be checked against guessed values without the whole file.

Caps: key paths are at most ``MAX_DEPTH`` components deep and a file yields at most
``MAX_KEYS`` keys (or sections); deeper or later ones are not recorded. A file whose later
keys or sections the limit left out is stored ``partial`` with the reason (the line after
which nothing is recorded).
"""

from __future__ import annotations

import hashlib
import json
import re

from tree_sitter import Node, Point, Range

from codesynapse.extract import engine
from codesynapse.extract.hooks import first_sentence, squash, text
from codesynapse.extract.model import FileExtraction, Symbol
from codesynapse.extract.redact import RecordGate

MAX_DEPTH = 6
MAX_KEYS = 2000
_WS = re.compile(r"\s+")


def _gated(fx: FileExtraction, extra) -> FileExtraction:
    """``fx`` with every string through the redaction gate."""
    return RecordGate(extra).record(fx)


def _line_count(src: bytes) -> int:
    return src.count(b"\n") + (0 if src.endswith(b"\n") or not src else 1)


def _end_line(node: Node) -> int:
    """1-based last line; a node that ends at column 0 (its trailing newline) ends the line before."""
    row, col = node.end_point
    if col == 0 and row > node.start_point[0]:
        return row
    return row + 1


def _node_hash(file_hash: str, node: Node, src: bytes) -> str:
    return hashlib.sha1(file_hash.encode() + b"\0" + src[node.start_byte:node.end_byte]).hexdigest()


class _DocHooks:
    """What every document language shares: module = the path, and the symbol plumbing."""

    sep = "#"

    def module_name(self, relpath: str, root: str) -> str:
        return relpath

    def is_package(self, relpath: str) -> bool:
        return False


# -- Markdown ------------------------------------------------------------------------------
class MarkdownHooks(_DocHooks):
    def extract(self, *, relpath: str, src: bytes, parser, module: str, file_hash: str, language: str,
                redact_extra=()) -> FileExtraction:
        lines = src.split(b"\n")
        n_lines = _line_count(src)
        heads, partial, rest_line = self._heads(src, parser)
        heads.sort(key=lambda h: h[4])

        def blank(i: int) -> bool:  # 1-based line
            return 0 < i <= len(lines) and not lines[i - 1].strip()

        symbols: list[Symbol] = []
        path: list[tuple[int, str, str]] = []  # (level, title, qname)
        seen: dict[str, int] = {}
        for i, (level, title, row, col, _start_byte, summary) in enumerate(heads[:MAX_KEYS]):
            if not title:
                continue
            start = row + 1
            end = n_lines
            for lv2, _t, row2, *_rest in heads[i + 1:]:
                if lv2 <= level:
                    end = row2
                    break
            while end > start and blank(end):
                end -= 1
            while path and path[-1][0] >= level:
                path.pop()
            parent = path[-1][2] if path else module
            crumbs = [t for _lv, t, _q in path] + [title]
            qname = f"{module}#{' > '.join(crumbs)}"
            if qname in seen:  # the same heading twice under one parent
                seen[qname] += 1
                qname = f"{qname} ({seen[qname]})"
            else:
                seen[qname] = 1
            path.append((level, title, qname))
            symbols.append(Symbol(
                qname=qname, name=title[:256], kind="section", signature=squash(f"{'#' * level} {title}"),
                start_line=start, end_line=end, start_col=col, end_col=0,
                hash=hashlib.sha1(b"\n".join(lines[start - 1:end])).hexdigest(),
                summary=summary, parent=parent,
            ))
        notes = []
        if rest_line:
            notes.append(f"over {engine.MAX_PIECE_BYTES:,} bytes without a heading from line {rest_line:,}: "
                         f"lines {rest_line:,}-{n_lines:,} left out")
        if any(h[1] for h in heads[MAX_KEYS:]) and symbols:
            notes.append(f"sections limit ({MAX_KEYS:,} a file): sections after line {symbols[-1].start_line:,} "
                         f"left out")
        return _gated(FileExtraction(path=relpath, language=language, hash=file_hash, size=len(src), lines=n_lines,
                                     module=module, symbols=symbols, partial=partial or bool(notes),
                                     error="; ".join(notes)), redact_extra)

    def _heads(self, src: bytes, parser) -> tuple[list[tuple], bool, int]:
        """The headings (level, title, row, column, start byte, first sentence below), whether
        the parse had errors, and the line from which the rest was left out (0: none). A file
        over CHUNK_BYTES is parsed a piece at a time, cut before a heading (a tree costs up to 70
        times the bytes it covers), and only until the first MAX_KEYS sections have their end."""
        if len(src) <= engine.CHUNK_BYTES:
            tree = parser.parse(src)
            return self._collect(tree.root_node, src), tree.root_node.has_error, 0
        heads: list[tuple] = []
        partial = False
        n = len(src)
        lo, lo_row, size = 0, 0, engine.PIECE_BYTES
        try:
            while lo < n:
                hi = min(n, lo + size)
                if hi < n:
                    nl = src.find(b"\n", hi, min(n, hi + (64 << 10)))
                    hi = nl + 1 if nl >= 0 else hi
                hi_row = lo_row + src.count(b"\n", lo, hi)
                hi_col = hi - (src.rfind(b"\n", 0, hi) + 1)
                parser.included_ranges = [Range(Point(lo_row, 0), Point(hi_row, hi_col), lo, hi)]
                tree = parser.parse(src)
                found = self._collect(tree.root_node, src)
                if hi < n:
                    # the next piece starts at the last heading (what precedes it is complete),
                    # or in a piece without one (or one as large as pieces get), at the last
                    # paragraph; a piece whose only heading starts it grows first, so that the
                    # heading's first paragraph is whole
                    cut = max((h[4] for h in found if h[4] > lo and h[3] == 0), default=-1)
                    if cut < 0 and (not found or size >= engine.MAX_PIECE_BYTES):
                        cut = self._last_paragraph(tree.root_node, lo)
                    if cut < 0:
                        if size >= engine.MAX_PIECE_BYTES:
                            return heads, partial, lo_row + 1
                        size *= 2
                        continue
                    found = [h for h in found if h[4] < cut]
                else:
                    cut = n
                partial = partial or tree.root_node.has_error
                heads.extend(found)
                if len(heads) > MAX_KEYS and heads[-1][0] <= min(h[0] for h in heads[:MAX_KEYS]):
                    return heads, partial, 0  # every kept section has its end
                lo_row += src.count(b"\n", lo, cut)
                lo, size = cut, engine.PIECE_BYTES
                del tree
        finally:
            parser.included_ranges = []
        return heads, partial, 0

    @staticmethod
    def _last_paragraph(root: Node, lo: int) -> int:
        """The start of the last paragraph after ``lo`` that is a block of the document (or of
        its sections) and starts a line, or -1."""
        best, n = -1, root
        while n is not None:
            last_section = None
            for c in n.children:
                if c.type == "paragraph" and c.start_point[1] == 0 and c.start_byte > lo:
                    best = max(best, c.start_byte)
                elif c.type == "section":
                    last_section = c
            n = last_section
        return best

    def _collect(self, root: Node, src: bytes) -> list[tuple]:
        heads: list[tuple] = []
        stack = [root]
        while stack:
            n = stack.pop()
            if n.type == "atx_heading":
                level = next((int(c.type[5]) for c in n.children if re.match(r"atx_h\d_marker", c.type)), 1)
                content = n.child_by_field_name("heading_content")
                title = text(content, src).strip().rstrip("#").strip() if content is not None else ""
                heads.append((level, title, n.start_point[0], n.start_point[1], n.start_byte, self._first_paragraph(n, src)))
                continue
            if n.type == "setext_heading":
                level = 1 if any(c.type == "setext_h1_underline" for c in n.children) else 2
                content = n.child_by_field_name("heading_content")
                heads.append((level, _WS.sub(" ", text(content, src)).strip(), n.start_point[0], n.start_point[1],
                              n.start_byte, self._first_paragraph(n, src)))
                continue
            if n.type in ("fenced_code_block", "indented_code_block", "html_block"):
                continue
            stack.extend(reversed(n.children))
        return heads

    @staticmethod
    def _first_paragraph(heading: Node, src: bytes) -> str:
        n = heading.next_named_sibling
        while n is not None and n.type not in ("atx_heading", "setext_heading", "section"):
            if n.type == "paragraph":
                para = text(n, src)
                para = re.sub(r"`([^`]*)`", r"\1", para)
                para = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", para)
                return first_sentence(para)
            n = n.next_named_sibling
        return ""


# -- config files ----------------------------------------------------------------------------
class _KeyCollector:
    """Accumulates key symbols for one file, with the caps and the comment-above summaries."""

    def __init__(self, module: str, src: bytes, file_hash: str, comments: dict[int, str]):
        self.module = module
        self.src = src
        self.file_hash = file_hash
        self.comments = comments  # 0-based row → comment text, for whole-line comments
        self.symbols: list[Symbol] = []
        self.seen: set[str] = set()

    @staticmethod
    def join(path: list[str]) -> str:
        out = ""
        for p in path:
            if p.startswith("["):
                out += p
            else:
                out += ("." if out else "") + p
        return out

    def full(self) -> bool:
        # one key more than the limit is collected: finish() drops it, and knows a key was left out
        return len(self.symbols) > MAX_KEYS

    def finish(self) -> str:
        """Keep the first MAX_KEYS keys; what the limit left out ("" when nothing)."""
        if len(self.symbols) <= MAX_KEYS:
            return ""
        del self.symbols[MAX_KEYS:]
        return f"keys limit ({MAX_KEYS:,} a file): keys after line {self.symbols[-1].start_line:,} left out"

    def summary(self, row: int) -> str:
        found: list[str] = []
        r = row - 1
        while r in self.comments:
            found.append(self.comments[r])
            r -= 1
        found.reverse()
        return first_sentence("\n".join(found))

    def add(self, path: list[str], node: Node, name: str) -> None:
        if not path or len(path) > MAX_DEPTH:
            return
        if self.full():
            return
        # implicit ancestors (TOML ``[a.b]``, ``a.b = 1``) exist as keys too
        for k in range(1, len(path)):
            prefix = path[:k]
            if prefix[-1].startswith("["):
                continue
            q = f"{self.module}#{self.join(prefix)}"
            if q not in self.seen:
                self._emit(prefix, node, prefix[-1], summary=False)
        self._emit(path, node, name, summary=True)

    def _emit(self, path: list[str], node: Node, name: str, summary: bool) -> None:
        if self.full():
            return
        key = self.join(path)
        qname = f"{self.module}#{key}"
        if qname in self.seen:
            return
        self.seen.add(qname)
        parent_path = path[:-1]
        while parent_path and parent_path[-1].startswith("["):
            parent_path = parent_path[:-1]
        parent = f"{self.module}#{self.join(parent_path)}" if parent_path else self.module
        self.symbols.append(Symbol(
            qname=qname, name=name[:256], kind="key", signature=squash(key, 400),
            start_line=node.start_point[0] + 1, end_line=_end_line(node),
            start_col=node.start_point[1], end_col=node.end_point[1],
            hash=_node_hash(self.file_hash, node, self.src),
            summary=self.summary(node.start_point[0]) if summary else "",
            parent=parent,
        ))


def _comments(root: Node, src: bytes) -> dict[int, str]:
    """Whole-line comments by row (a comment after a value on the same line is not one)."""
    out: dict[int, str] = {}
    lines = src.split(b"\n")
    stack = [root]
    while stack:
        n = stack.pop()
        if n.type == "comment":
            row = n.start_point[0]
            if row < len(lines) and not lines[row][:n.start_point[1]].strip():
                c = text(n, src).strip()
                out[row] = c.lstrip("#").strip() if c.startswith("#") else c.lstrip("/").strip()
            continue
        stack.extend(n.children)
    return out


def _unquote(s: str) -> str:
    s = s.strip()
    if len(s) >= 2 and s[0] == s[-1] and s[0] in "'\"":
        return s[1:-1]
    return s


def _json_string(raw: str) -> str:
    """A JSON string literal's value (escapes decoded); the raw text when it is not one."""
    try:
        v = json.loads(raw)
    except ValueError:
        return _unquote(raw)
    return v if isinstance(v, str) else raw


class _ConfigHooks(_DocHooks):
    def extract(self, *, relpath: str, src: bytes, parser, module: str, file_hash: str, language: str,
                redact_extra=()) -> FileExtraction:
        if len(src) > engine.MAX_PIECE_BYTES and language in ("json", "toml"):
            # a JSON document is one statement, and a key's range needs the whole tree (50-150
            # times the bytes): like a code statement over MAX_PIECE_BYTES, it is left out, and
            # the file says so (only a policy that raises maxFileBytes admits such a file)
            return FileExtraction(path=relpath, language=language, hash=file_hash, size=len(src),
                                  lines=_line_count(src), module=module, symbols=[], partial=True,
                                  error=f"a {language.upper()} file over {engine.MAX_PIECE_BYTES:,} bytes is not "
                                        f"parsed: its keys are left out")
        tree = parser.parse(src)
        keys = _KeyCollector(module, src, file_hash, _comments(tree.root_node, src))
        self.walk(tree.root_node, src, keys)
        note = keys.finish()
        return _gated(FileExtraction(path=relpath, language=language, hash=file_hash, size=len(src),
                                     lines=_line_count(src), module=module, symbols=keys.symbols,
                                     partial=tree.root_node.has_error or bool(note), error=note), redact_extra)

    def walk(self, root: Node, src: bytes, keys: _KeyCollector) -> None:
        raise NotImplementedError


# tree-sitter-yaml's scanner gives up after 32,767 lines: a longer file parsed as a whole is
# one ERROR (no keys at all). Keys come from the start of a file (MAX_KEYS), so a longer file
# is read up to a top-level entry before this line; if its keys are not all there, the file
# says which lines were not read.
YAML_MAX_LINES = 32_000
_YAML_NOT_TOP = frozenset((b" ", b"\t", b"\r", b"\n", b"#", b""))


class YamlHooks(_ConfigHooks):
    def extract(self, *, relpath: str, src: bytes, parser, module: str, file_hash: str, language: str,
                redact_extra=()) -> FileExtraction:
        end = -1
        for _ in range(YAML_MAX_LINES):
            end = src.find(b"\n", end + 1)
            if end < 0:
                return super().extract(relpath=relpath, src=src, parser=parser, module=module,
                                       file_hash=file_hash, language=language, redact_extra=redact_extra)
        if src.find(b"\n", end + 1) < 0 and not src[end + 1:].strip():  # exactly YAML_MAX_LINES lines
            return super().extract(relpath=relpath, src=src, parser=parser, module=module,
                                   file_hash=file_hash, language=language, redact_extra=redact_extra)
        cut = end + 1  # before the last line of the first YAML_MAX_LINES that starts a top-level entry
        while cut > 0:
            j = src.rfind(b"\n", 0, cut - 1)
            if src[j + 1:j + 2] not in _YAML_NOT_TOP:
                cut = j + 1
                break
            cut = j + 1 if j >= 0 else 0
        head = src[:cut]
        tree = parser.parse(head)
        keys = _KeyCollector(module, src, file_hash, _comments(tree.root_node, head))
        self.walk(tree.root_node, src, keys)
        lines, first = _line_count(src), src.count(b"\n", 0, cut) + 1
        note = keys.finish() or f"tree-sitter-yaml reads at most 32,767 lines: lines {first:,}-{lines:,} not read"
        return _gated(FileExtraction(path=relpath, language=language, hash=file_hash, size=len(src), lines=lines,
                                     module=module, symbols=keys.symbols,
                                     partial=tree.root_node.has_error or bool(note), error=note), redact_extra)

    def walk(self, root: Node, src: bytes, keys: _KeyCollector) -> None:
        docs = [c for c in root.named_children if c.type == "document"]
        multi = len(docs) > 1
        for i, d in enumerate(docs):
            self._value(d, [f"[{i}]"] if multi else [], src, keys)

    def _key_text(self, key: Node | None, src: bytes) -> str:
        if key is None:
            return ""
        return _unquote(_WS.sub(" ", text(key, src)))

    def _value(self, n: Node | None, path: list[str], src: bytes, keys: _KeyCollector) -> None:
        if n is None or len(path) >= MAX_DEPTH or keys.full():
            return
        t = n.type
        if t in ("block_mapping", "flow_mapping"):
            for pair in n.named_children:
                if pair.type not in ("block_mapping_pair", "flow_pair"):
                    continue
                name = self._key_text(pair.child_by_field_name("key"), src)
                if not name or name == "<<":
                    continue
                keys.add(path + [name], pair, name)
                self._value(pair.child_by_field_name("value"), path + [name], src, keys)
            return
        if t in ("block_sequence", "flow_sequence"):
            items = [c for c in n.named_children if c.type in ("block_sequence_item", "flow_node", "flow_pair")]
            for i, item in enumerate(items):
                self._value(item, path + [f"[{i}]"], src, keys)
            return
        for c in n.named_children:
            if c.type in ("block_node", "flow_node", "block_mapping", "flow_mapping", "block_sequence",
                          "flow_sequence", "block_sequence_item", "document"):
                self._value(c, path, src, keys)


class TomlHooks(_ConfigHooks):
    def _key_parts(self, k: Node, src: bytes) -> list[str]:
        if k.type == "dotted_key":
            out: list[str] = []
            for c in k.named_children:
                out.extend(self._key_parts(c, src))
            return out
        return [_unquote(text(k, src))]

    def walk(self, root: Node, src: bytes, keys: _KeyCollector) -> None:
        arrays: dict[str, int] = {}
        for c in root.named_children:
            if keys.full():
                return
            if c.type == "pair":
                self._pair(c, [], src, keys)
            elif c.type in ("table", "table_array_element"):
                head = next((k for k in c.named_children if k.type in ("bare_key", "quoted_key", "dotted_key")), None)
                if head is None:
                    continue
                path = self._key_parts(head, src)
                if c.type == "table_array_element":
                    j = "\0".join(path)
                    idx = arrays.get(j, -1) + 1
                    arrays[j] = idx
                    keys.add(path, c, path[-1])
                    path = path + [f"[{idx}]"]
                else:
                    keys.add(path, c, path[-1])
                for p in c.named_children:
                    if p.type == "pair":
                        self._pair(p, path, src, keys)

    def _pair(self, pair: Node, path: list[str], src: bytes, keys: _KeyCollector) -> None:
        kids = pair.named_children
        if not kids:
            return
        key = kids[0]
        if key.type not in ("bare_key", "quoted_key", "dotted_key"):
            return
        full = path + self._key_parts(key, src)
        keys.add(full, pair, full[-1])
        if len(kids) > 1:
            self._value(kids[1], full, src, keys)

    def _value(self, v: Node, path: list[str], src: bytes, keys: _KeyCollector) -> None:
        if len(path) >= MAX_DEPTH or keys.full():
            return
        if v.type == "inline_table":
            for p in v.named_children:
                if p.type == "pair":
                    self._pair(p, path, src, keys)
        elif v.type == "array":
            for i, item in enumerate(v.named_children):
                if item.type in ("inline_table", "array"):
                    self._value(item, path + [f"[{i}]"], src, keys)


class JsonHooks(_ConfigHooks):
    def walk(self, root: Node, src: bytes, keys: _KeyCollector) -> None:
        for c in root.named_children:
            self._value(c, [], src, keys)

    def _value(self, v: Node | None, path: list[str], src: bytes, keys: _KeyCollector) -> None:
        if v is None or len(path) >= MAX_DEPTH or keys.full():
            return
        if v.type == "object":
            for pair in v.named_children:
                if pair.type != "pair":
                    continue
                k = pair.child_by_field_name("key")
                name = _json_string(text(k, src)) if k is not None else ""
                if not name:
                    continue
                keys.add(path + [name], pair, name)
                self._value(pair.child_by_field_name("value"), path + [name], src, keys)
        elif v.type == "array":
            items = [c for c in v.named_children if c.type != "comment"]
            for i, item in enumerate(items):
                if item.type in ("object", "array"):
                    self._value(item, path + [f"[{i}]"], src, keys)
