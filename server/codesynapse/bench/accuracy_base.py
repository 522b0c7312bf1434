"""What the two call-accuracy benches share (bench/accuracy.py against Jedi, bench/accuracy_lsp.py
against a language server): the arithmetic of a score (``ratio``, ``score``, ``micro``) and an
App over a corpus (``CorpusRun``, ``open_corpus_app``). A module of its own so that neither
bench imports the other's internals (accuracy writes accuracy_lsp's section of ACCURACY.md)."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)


# -- the arithmetic ---------------------------------------------------------------------------

def ratio(num: int, den: int) -> float | None:
    """num / den, or None ("not applicable") when den is 0."""
    return None if den == 0 else num / den


def score(ours: set[str], oracle: set[str], confirmed: set[str] = frozenset(),
          excluded: set[str] = frozenset()) -> dict[str, Any]:
    """Unit sets → counts. ``confirmed``: our units the oracle's goto confirmed although its
    reference search missed them (true positives); ``excluded``: our units at the oracle's
    blind spots (neither side)."""
    tp_units = (ours & oracle) | (ours & set(confirmed))
    fp_units = ours - tp_units - set(excluded)
    fn_units = oracle - ours
    tp, fp, fn = len(tp_units), len(fp_units), len(fn_units)
    return {"tp": tp, "fp": fp, "fn": fn, "precision": ratio(tp, tp + fp), "recall": ratio(tp, tp + fn)}


def micro(rows: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """Micro-average: precision and recall from summed tp/fp/fn."""
    tp = fp = fn = 0
    for r in rows:
        tp += r["tp"]
        fp += r["fp"]
        fn += r["fn"]
    return {"tp": tp, "fp": fp, "fn": fn, "precision": ratio(tp, tp + fp), "recall": ratio(tp, tp + fn)}


# -- a corpus App ---------------------------------------------------------------------------------

@dataclass
class CorpusRun:
    name: str
    path: Path
    version: str
    exclude: tuple[str, ...] = ()
    include: tuple[str, ...] = ()
    skip_dirs: tuple[str, ...] = ("site-packages", "__pycache__")
    extra: dict[str, Any] = field(default_factory=dict)


class _TinyPolicy:
    """Used only when the policy package cannot build a policy: drop the skipped folders."""

    max_file_bytes = 1_048_576
    redact_patterns = ()
    fingerprint = ""

    def __init__(self, skip: Iterable[str]):
        self.skip = set(skip)

    def excluded(self, rel: str, is_dir: bool = False) -> str | None:
        return "excluded" if any(part in self.skip for part in rel.split("/")) else None

    def language_override(self, rel: str) -> str | None:
        return None


def open_corpus_app(corpus: CorpusRun, data_dir: Path):
    """An App over the corpus whose index lives in ``data_dir``."""
    try:
        from codesynapse.bench.apps import open_app

        return open_app(corpus.path, data_dir, corpus.exclude, corpus.include, watch=False)
    except Exception as e:  # the policy package may still be in the making
        log.warning("opening the corpus with a minimal policy (%s)", e)
        import codesynapse.app as appmod
        from codesynapse.settings import load_settings

        original = appmod.load_policy_for
        appmod.load_policy_for = lambda root, previous=None: (None, [])
        try:
            app = appmod.App(corpus.path, load_settings({"data_dir": str(data_dir), "watch": False}))
        finally:
            appmod.load_policy_for = original
        pol = _TinyPolicy(corpus.skip_dirs)
        app.policy = pol
        app.indexer.policy = pol
        return app
