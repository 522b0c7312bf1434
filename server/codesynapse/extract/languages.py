"""The language registry: file names → language, grammar, query file and hooks.

Grammars come from tree-sitter-language-pack 0.13.0, which bundles compiled parsers (no
download at run time). Queries are compiled once per language per process.
"""

from __future__ import annotations

import importlib
import threading
from dataclasses import dataclass
from functools import cache
from importlib import resources

from tree_sitter import Language, Parser, Query


@dataclass(frozen=True)
class LanguageSpec:
    name: str
    grammar: str
    extensions: tuple[str, ...]
    hooks: str  # "module:Class"
    filenames: tuple[str, ...] = ()
    kind: str = "code"  # code | doc
    query: str = ""  # queries/<query>.scm; "" → the language's own name


# Order matters only for display. Code languages first, then documents and config.
LANGUAGES: tuple[LanguageSpec, ...] = (
    LanguageSpec("python", "python", (".py", ".pyi"), "codesynapse.extract.lang.python:PythonHooks"),
    LanguageSpec("javascript", "javascript", (".js", ".jsx", ".mjs", ".cjs"), "codesynapse.extract.lang.javascript:JavaScriptHooks"),
    LanguageSpec("typescript", "typescript", (".ts", ".mts", ".cts"), "codesynapse.extract.lang.typescript:TypeScriptHooks"),
    LanguageSpec("tsx", "tsx", (".tsx",), "codesynapse.extract.lang.typescript:TsxHooks", query="typescript"),
    LanguageSpec("go", "go", (".go",), "codesynapse.extract.lang.go:GoHooks"),
    LanguageSpec("rust", "rust", (".rs",), "codesynapse.extract.lang.rust:RustHooks"),
    LanguageSpec("java", "java", (".java",), "codesynapse.extract.lang.java:JavaHooks"),
    LanguageSpec("c", "c", (".c", ".h"), "codesynapse.extract.lang.c:CHooks"),
    LanguageSpec("cpp", "cpp", (".cc", ".cpp", ".cxx", ".hpp", ".hh", ".hxx"), "codesynapse.extract.lang.cpp:CppHooks"),
    LanguageSpec("csharp", "csharp", (".cs",), "codesynapse.extract.lang.csharp:CSharpHooks"),
    LanguageSpec("ruby", "ruby", (".rb",), "codesynapse.extract.lang.ruby:RubyHooks"),
    LanguageSpec("php", "php", (".php",), "codesynapse.extract.lang.php:PhpHooks"),
    LanguageSpec("kotlin", "kotlin", (".kt", ".kts"), "codesynapse.extract.lang.kotlin:KotlinHooks"),
    LanguageSpec("markdown", "markdown", (".md", ".markdown"), "codesynapse.extract.docs:MarkdownHooks", kind="doc"),
    LanguageSpec("yaml", "yaml", (".yaml", ".yml"), "codesynapse.extract.docs:YamlHooks", kind="doc"),
    LanguageSpec("toml", "toml", (".toml",), "codesynapse.extract.docs:TomlHooks", kind="doc"),
    LanguageSpec("json", "json", (".json",), "codesynapse.extract.docs:JsonHooks", kind="doc"),
)

BY_NAME = {spec.name: spec for spec in LANGUAGES}
_BY_EXT = {ext: spec for spec in LANGUAGES for ext in spec.extensions}


def detect(relpath: str) -> LanguageSpec | None:
    """The language of a path by its suffix, as ``PurePosixPath(relpath).suffix`` (a leading
    or trailing dot is no suffix), without building a path object: a walk asks for every file
    of a tree (a kernel: 78 k names, ~1.5 s of a catch-up's walk as a path object)."""
    name = relpath.rsplit("/", 1)[-1]
    i = name.rfind(".")
    return _BY_EXT.get(name[i:].lower()) if 0 < i < len(name) - 1 else None


def available(name: str) -> bool:
    """True when the language's hooks module and query file exist in this build."""
    try:
        load(name)
        return True
    except (ImportError, FileNotFoundError, AttributeError):
        return False


_lock = threading.Lock()


@dataclass
class Loaded:
    spec: LanguageSpec
    language: Language
    query: Query
    hooks: object

    def parser(self) -> Parser:
        return Parser(self.language)


@cache
def _load(name: str) -> Loaded:
    from tree_sitter_language_pack import get_language

    spec = BY_NAME[name]
    language = get_language(spec.grammar)  # type: ignore[arg-type]
    source = resources.files("codesynapse.extract").joinpath("queries", f"{spec.query or name}.scm").read_text()
    query = Query(language, source)
    mod, cls = spec.hooks.split(":")
    hooks = getattr(importlib.import_module(mod), cls)()
    return Loaded(spec, language, query, hooks)


def load(name: str) -> Loaded:
    with _lock:
        return _load(name)
