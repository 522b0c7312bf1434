"""The two raw-context baselines of a task.

(a) **Seed baseline** — the full text of the files defining the task's subject symbols plus
    the files of their direct callers (resolved edges and unresolved call sites named like
    the symbol), direct callees and tests, plus every file named in the task's evidence.
    Like the seed, it finds those files through the code graph.

(b) **Grep-and-read agent** — the output of a word grep (``grep -rnw IDENT``, lines printed
    as ``path:line:text``) for each subject identifier over the eligible files, plus the full
    text of the files the agent then opens to see the definition: the files whose hits look
    like a definition of the identifier (``def``/``class``/assignment, ``func``/``type``,
    ``function``/``class``/``interface``/``const``…); when no hit looks like one (an error
    string, a no-match), the first ``OPEN_MAX`` files with hits in path order. It uses
    no graph at all.

For recall tasks both baselines are the earlier turns that carried the facts: the JSON of
the setup requests sent in the task's own scope (what an agent without memory would have to
keep in its context). Eligible files are the files the index holds (same policy).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

OPEN_MAX = 3
GREP_LINE_MAX = 2000  # grep prints whole lines; a minified line is cut here (as a terminal would not)
_IDENT = re.compile(r"^[A-Za-z_$][\w$]*$")
_TOKEN = re.compile(r"[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)*")
_STOP = frozenset("""a an the and or of to in on for with by is are be it this that from as at into how why what
where which when who do does did can should would could fix add make use using get set find show change update
remove new all any not no we i you they our my their its code file function method class who calls called
callers callees explain where's defined raised error message""".split())


def _def_patterns(ident: str) -> dict[str, re.Pattern[str]]:
    i = re.escape(ident)
    py = rf"^\s*(?:async\s+)?def\s+{i}\b|^\s*class\s+{i}\b|^{i}\s*(?::[^=]*)?=(?!=)"
    go = (rf"^func\s+(?:\([^)]*\)\s*)?{i}\b|^\s*type\s+{i}\b|^(?:var|const)\s+{i}\b"
          rf"|^\s+{i}\s+(?:=|[A-Za-z*\[(])")
    ts = (rf"\b(?:function\*?|class|interface|type|enum|namespace)\s+{i}\b|\b(?:const|let|var)\s+{i}\b\s*[:=]"
          rf"|^\s*(?:(?:public|private|protected|static|async|readonly|abstract|override|declare|export|get|set)\s+)*"
          rf"{i}\s*[<(]")
    return {"python": re.compile(py), "go": re.compile(go), "typescript": re.compile(ts),
            "tsx": re.compile(ts), "javascript": re.compile(ts)}


@dataclass
class GrepResult:
    identifier: str
    output_bytes: int
    hits: int
    files: list[str]
    def_files: list[str]
    text: str = ""


@dataclass
class Baseline:
    files: list[str] = field(default_factory=list)
    file_bytes: int = 0
    extra_text: str = ""  # grep output or transcript
    round_trips: int = 0
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def bytes(self) -> int:
        return self.file_bytes + len(self.extra_text.encode("utf-8"))


class Yielded(Exception):
    """A grep given up because ``CorpusText.stop`` said so (the daemon has work to do)."""


class CorpusText:
    """The eligible files of an index and their text, read lazily and cached; invalidated
    per path after an edit. ``stop``: when set, a grep asks it between files and gives up
    (``Yielded``) once it answers true."""

    def __init__(self, root: str, files: list[tuple[str, str]]):
        self.root = root
        self.stop: Callable[[], bool] | None = None
        self.files = sorted(files)  # (path, language)
        self.language = dict(files)
        self._text: dict[str, str] = {}
        self._bytes: dict[str, int] = {}

    def text(self, path: str) -> str:
        t = self._text.get(path)
        if t is None:
            try:
                with open(os.path.join(self.root, path), "rb") as f:
                    data = f.read()
            except OSError:
                data = b""
            self._bytes[path] = len(data)
            t = self._text[path] = data.decode("utf-8", "replace")
        return t

    def nbytes(self, path: str) -> int:
        if path not in self._bytes:
            self.text(path)
        return self._bytes[path]

    def invalidate(self, path: str) -> None:
        self._text.pop(path, None)
        self._bytes.pop(path, None)

    def grep(self, ident: str, keep_text: bool = True) -> GrepResult:
        """``grep -rnw`` over the eligible files (fixed string, word boundaries)."""
        pat = re.compile(r"(?<![\w$])" + re.escape(ident) + r"(?![\w$])")
        defs = _def_patterns(ident)
        out: list[str] = []
        nbytes = 0
        hits = 0
        files: list[str] = []
        def_files: list[str] = []
        stop = self.stop
        for i, (path, lang) in enumerate(self.files):
            if stop is not None and not i % 64 and stop():
                raise Yielded(ident)
            text = self.text(path)
            if ident not in text:
                continue
            if not pat.search(text):
                continue
            files.append(path)
            dpat = defs.get(lang)
            is_def = False
            for n, line in enumerate(text.splitlines(), 1):
                if pat.search(line):
                    hits += 1
                    shown = line if len(line) <= GREP_LINE_MAX else line[:GREP_LINE_MAX]
                    entry = f"{path}:{n}:{shown}\n"
                    nbytes += len(entry.encode("utf-8"))
                    if keep_text:
                        out.append(entry)
                    if not is_def and dpat is not None and dpat.search(line):
                        is_def = True
            if is_def:
                def_files.append(path)
        return GrepResult(ident, nbytes, hits, files, def_files, "".join(out))


def identifiers_for(task, app, ctx) -> list[str]:
    """What the grep-and-read agent greps for: the task's ``baseline.identifiers``, else a
    guess from the request (the selector's last name, the search query, the names of the
    symbols a diff touches, identifier-like words of a task text)."""
    given = task.baseline.get("identifiers")
    if given:
        return [str(x) for x in given]
    p = task.params
    m = task.method
    sel = p.get("selector")
    if isinstance(sel, str):
        return [re.split(r"\.|::|#|/", sel.strip())[-1]]
    if isinstance(sel, dict):
        try:
            from codesynapse.context.models import Position

            s, _ = ctx.resolve_selector(Position(uri=sel["uri"], line=int(sel["line"]),
                                                 character=int(sel.get("character", 0))), False)
            return [s.name] if s is not None else []
        except Exception:
            return []
    if m.endswith("/search") and isinstance(p.get("query"), str):
        q = p["query"].strip()
        return [re.split(r"\.|::", q)[-1]] if _IDENT.match(q.replace(".", "_").replace("::", "_")) else [q]
    if m.endswith("/prContext") and isinstance(p.get("diff"), str):
        return sorted({s.name for s in changed_symbols(app, p["diff"])})
    if m.endswith("/minimalContext") and isinstance(p.get("task"), str):
        words = [w for w in dict.fromkeys(_TOKEN.findall(p["task"])) if w.lower() not in _STOP and len(w) > 2]
        known = [w for w in words if ("_" in w or "." in w or any(c.isupper() for c in w[1:]))]
        return [w.split(".")[-1] for w in (known or words)][:8]
    return []


def changed_symbols(app, diff: str):
    from codesynapse.context.service import parse_unified_diff

    out = []
    for path, ranges, status in parse_unified_diff(diff):
        if status == "deleted":
            continue
        for s in app.store.symbols_in_file(path):
            if s.kind != "module" and any(a <= s.end_line and s.start_line <= b for a, b in ranges):
                out.append(s)
    return out


def _subjects(task, app, ctx, idents: list[str]):
    """The symbols a task is about, found the way the seed's baseline finds them."""
    store = app.store
    p = task.params
    m = task.method
    subs = []
    sel = p.get("selector")
    if sel is not None:
        try:
            from codesynapse.codec import decode
            from codesynapse.context.models import SymbolParams

            prm = decode({"selector": sel}, SymbolParams)
            s, extra = ctx.resolve_selector(prm.selector, False)
            if s is not None:
                subs.append(s)
            for c in extra.get("candidates", []):
                subs.extend(store.symbols_by_qname(c["qualifiedName"])[:1])
        except Exception:
            pass
    elif m.endswith("/prContext") and isinstance(p.get("diff"), str):
        subs.extend(changed_symbols(app, p["diff"]))
    else:
        for ident in idents:
            subs.extend(store.symbols_by_qname(ident))
            subs.extend(store.symbols_by_name(ident.split(".")[-1], limit=10))
    for ev in task.evidence:
        if ev.kind == "name":
            subs.extend(store.symbols_by_qname(ev.value)[:1])
    seen = set()
    out = []
    for s in subs:
        if s.id not in seen:
            seen.add(s.id)
            out.append(s)
    return out


def baseline_a(task, app, ctx, corpus: CorpusText, idents: list[str]) -> Baseline:
    store = app.store
    if task.kind == "recall":
        return transcript_baseline(task)
    files: dict[str, str] = {}  # path -> why
    subjects = _subjects(task, app, ctx, idents)
    for s in subjects:
        files.setdefault(s.path, "definition")
        for c in store.callers(s.qname, limit=1000):
            files.setdefault(c.path, "caller")
        if s.kind != "module":
            for c in store.unresolved_named(s.name, limit=100):
                files.setdefault(c.path, "unresolved caller")
        for c in store.callees(s.qname, limit=1000):
            if c.target:
                for r in store.symbols_by_qname(c.target)[:1]:
                    files.setdefault(r.path, "callee")
    if not subjects and task.method.endswith("/search"):
        # a string lookup: the file(s) holding the string are the "defining" files
        for ident in idents:
            for f in corpus.grep(ident, keep_text=False).files[:OPEN_MAX]:
                files.setdefault(f, "holds the string")
    if task.method.endswith("/prContext") and isinstance(task.params.get("diff"), str):
        from codesynapse.context.service import parse_unified_diff

        for path, _r, status in parse_unified_diff(task.params["diff"]):
            if status != "deleted" and path in corpus.language:
                files.setdefault(path, "changed file")
    for ev in task.evidence:
        if ev.kind == "location" and ev.value[0] in corpus.language:
            files.setdefault(ev.value[0], "evidence")
    paths = sorted(files)
    return Baseline(files=paths, file_bytes=sum(corpus.nbytes(p) for p in paths), round_trips=len(paths),
                    detail={"subjects": [s.qname for s in subjects][:20],
                            "why": {k: sum(1 for v in files.values() if v == k) for k in sorted(set(files.values()))}})


def baseline_b(task, corpus: CorpusText, idents: list[str]) -> Baseline:
    if task.kind == "recall":
        return transcript_baseline(task)
    texts: list[str] = []
    opened: list[str] = []
    hits = 0
    for ident in idents:
        g = corpus.grep(ident)
        texts.append(g.text)
        hits += g.hits
        for f in (g.def_files or g.files[:OPEN_MAX]):
            if f not in opened:
                opened.append(f)
    return Baseline(files=opened, file_bytes=sum(corpus.nbytes(p) for p in opened), extra_text="".join(texts),
                    round_trips=len(idents) + len(opened),
                    detail={"identifiers": idents, "grepHits": hits})


@dataclass
class Request:
    """A request as the baselines see it: what ``bench tokens`` knows of a task, minus what
    only a workload knows. The daemon's ledger measures every answer with one of these
    (``codesynapse.ledger``); ``bench tokens`` passes its Task, which has the same fields plus
    the workload's evidence and given identifiers. ``requests``: for a recall, the earlier
    turns of the session that carried the facts (JSON-RPC ``method`` and ``params``)."""

    method: str
    params: dict[str, Any]
    kind: str = ""
    evidence: list[Any] = field(default_factory=list)
    baseline: dict[str, Any] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)


def raw_baselines(req, app, ctx, corpus: CorpusText) -> tuple[list[str], Baseline, Baseline]:
    """The one computation of both raw-context baselines of an answer, shared by
    ``bench tokens`` and the daemon's ledger: (identifiers grepped for, (a), (b))."""
    idents = identifiers_for(req, app, ctx)
    return idents, baseline_a(req, app, ctx, corpus, idents), baseline_b(req, corpus, idents)


def transcript_baseline(task) -> Baseline:
    turns = [{"method": s["method"], "params": s.get("params", {})} for s in task.requests if not s.get("actor")]
    text = "".join(json.dumps(t, ensure_ascii=False, separators=(",", ":")) for t in turns)
    return Baseline(extra_text=text, round_trips=0, detail={"transcriptTurns": len(turns)})
