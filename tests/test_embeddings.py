import os

import numpy as np
import pytest

from evalkit import corpora
from evalkit.embeddings import (PACKAGED, PACKAGED_MODEL, Embedder, ModelSpec, ensure_vectors, load_vectors, loaded,
                                packaged_fastembed_cache, windows)
from evalkit.pages import PageStore

from .conftest import make_pdf

SPEC = ModelSpec(PACKAGED_MODEL, PACKAGED, 256, 160)


def test_windows_cut_pages_into_word_windows():
    text = " ".join(f"w{i}" for i in range(350))
    assert [len(w.split()) for w in windows(text, 160)] == [160, 160, 30]
    assert windows(text, 0) == [text]
    assert windows("   ", 160) == [""]


def test_the_cache_key_names_everything_that_changes_a_vector():
    keys = {SPEC.key, ModelSpec(PACKAGED_MODEL, PACKAGED, 512, 160).key,
            ModelSpec(PACKAGED_MODEL, PACKAGED, 256, 0).key}
    assert len(keys) == 3
    assert SPEC.weights_id().startswith("sha256:8199be6f699a")  # the int8 ONNX file pinned in OFFLINE_MODELS.md


def test_the_packaged_model_embeds_like_minilm():
    e = Embedder(SPEC)
    v = e.passages(["The booktabs package gives tables professional rules.", "Bake bread at 220 degrees."])
    q = e.query("rules in tables")
    assert v.shape == (2, 384) and q.shape == (384,)
    assert np.allclose(np.linalg.norm(v, axis=1), 1, atol=1e-4)
    assert v[0] @ q > v[1] @ q + 0.2


def test_a_process_loads_the_model_once_per_setting_and_again_for_new_weights(tmp_path, monkeypatch):
    from evalkit import embeddings

    built = []
    monkeypatch.setattr(embeddings, "Embedder", lambda spec, **kw: built.append((spec.key, kw)) or object())
    (tmp_path / "model.onnx").write_bytes(b"weights one")
    spec = ModelSpec("mine", str(tmp_path), 256, 160)
    monkeypatch.delenv("EVALKIT_THREADS", raising=False)
    assert loaded(spec) is loaded(spec) and len(built) == 1
    assert loaded(spec, threads=1) is not loaded(spec) and len(built) == 2
    monkeypatch.setenv("EVALKIT_THREADS", "1")  # read at each call: the one-thread model
    assert loaded(spec) is loaded(spec, threads=1) and len(built) == 2
    (tmp_path / "model.onnx").write_bytes(b"weights two")  # replaced in place: loaded again, not the old ones
    os.utime(tmp_path / "model.onnx", (1, 1))
    loaded(spec)
    assert len(built) == 3 and built[2][0] != built[0][0]


def test_fastembed_finds_the_packaged_model_by_name_offline(monkeypatch):
    """What a tool that takes only a model name (an MCP server) is given: the same weights, found by fastembed
    in a hub-shaped cache with HF_HUB_OFFLINE=1, not downloaded."""
    from fastembed import TextEmbedding

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    by_name = TextEmbedding(PACKAGED_MODEL, cache_dir=str(packaged_fastembed_cache()))
    text = "The booktabs package gives tables professional rules."
    v = next(iter(by_name.embed([text])))
    assert np.allclose(v / np.linalg.norm(v), Embedder(SPEC).passages([text])[0], atol=1e-4)


def test_an_interrupted_embedding_resumes_and_a_second_run_embeds_nothing(tmp_path):
    folder = tmp_path / "pdfs"
    folder.mkdir()
    for i in range(3):
        make_pdf(folder / f"d{i}.pdf", [f"document {i} page one about topic {i}", f"page two of {i}"])
    with PageStore(tmp_path / "s.sqlite") as store:
        c = store.ingest(corpora.from_dir(folder), progress=False).corpus
        real = Embedder(SPEC)
        seen = []

        class Dies:
            def passages(self, texts):
                if seen:
                    raise KeyboardInterrupt
                seen.append(texts)
                return real.passages(texts)

        with pytest.raises(KeyboardInterrupt):
            ensure_vectors(store, list(c.documents), SPEC, Dies, progress=False)
        assert store.db.execute("SELECT count(*) FROM vector_docs").fetchone()[0] == 1
        calls = []

        class Counting:
            def passages(self, texts):
                calls.append(len(texts))
                return real.passages(texts)

        ensure_vectors(store, list(c.documents), SPEC, Counting, progress=False)
        assert calls == [2, 2]  # the two documents not done, two pages each
        ensure_vectors(store, list(c.documents), SPEC, lambda: pytest.fail("embedded again"), progress=False)
        pages, vecs = load_vectors(store, c.documents[0], SPEC.key)
        assert list(pages) == [1, 2] and vecs.shape == (2, 384)
    with PageStore(tmp_path / "s.sqlite") as again:  # what a command prints: what it reused and embedded
        ensure_vectors(again, list(c.documents), SPEC, lambda: pytest.fail("embedded again"), progress=False)
        assert again.usage() == f"vectors ({SPEC.model}): 6 pages reused, 0 embedded"
        ensure_vectors(again, list(c.documents), SPEC, lambda: pytest.fail("embedded again"), progress=False)
        assert again.usage() == f"vectors ({SPEC.model}): 6 pages reused, 0 embedded"  # a second arm: once
        # a notebook keeps the store open: a second run says what it reused, not the kernel's total
        counted = again.counted()
        assert again.usage(since=counted) == ""
        ensure_vectors(again, list(c.documents), SPEC, lambda: pytest.fail("embedded again"), progress=False)
        assert again.usage(since=counted) == f"vectors ({SPEC.model}): 6 pages reused, 0 embedded"
        assert again.usage() == f"vectors ({SPEC.model}): 12 pages reused, 0 embedded"
