"""The pinned real tokenizer: quicktok (PyPI ``quicktok-v1``), which bundles cl100k_base and
o200k_base and works offline; token ids are byte-identical to tiktoken's. Text is counted
as ordinary text (a special-token string in a source file is just text)."""

from __future__ import annotations

from functools import lru_cache

ENCODINGS = ("cl100k_base", "o200k_base")


class Tokenizers:
    def __init__(self, names: tuple[str, ...] = ENCODINGS):
        import quicktok

        self.version = f"quicktok {quicktok.__version__}"
        self.names = names
        self._enc = {n: quicktok.get_encoding(n) for n in names}

    def label(self) -> str:
        return f"{self.version} ({', '.join(self.names)})"

    def count(self, text: str) -> dict[str, int]:
        return {n: len(e.encode_ordinary(text)) for n, e in self._enc.items()}


@lru_cache(maxsize=1)
def default_tokenizers() -> Tokenizers | None:
    try:
        return Tokenizers()
    except ImportError:
        return None
