"""The bundled model without fastembed (docs/models.md): same vectors, and
fastembed is not imported on that path."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from memex.embedding import embed
from memex.embedding import onnx, prebuilt

TEXTS = [
    "Use ruff for linting.",
    "数据同步每周一需要清理旧数据。",
    " ".join(f"Sentence {i} about the billing retry loop and its backoff." for i in range(60)),
    "Émile prefers café-style standups; naïve timestamps are banned.",
    "x",
    "Deploys happen on Tuesdays.",
    "한국어 문장도 임베딩됩니다",
    "Emoji 🚀 and <tags> and `code` and [links](http://example.com).",
]


@pytest.mark.model
def test_direct_onnx_vectors_equal_fastembeds() -> None:
    model_dir = embed._bundled_model_dir()
    assert model_dir is not None
    direct = embed.FastEmbedder(model_dir, "direct", direct=True)
    through_fastembed = embed.FastEmbedder(model_dir, "fastembed")
    a, b = direct.embed(TEXTS), through_fastembed.embed(TEXTS)
    assert a.shape == b.shape == (len(TEXTS), 384)
    assert a.dtype == b.dtype == np.float32
    assert float(np.abs(a - b).max()) <= 1e-5
    # Past the first texts the process builds the optimized session
    # (memex/onnx.py): its vectors agree as well.
    model = direct._run.__self__  # type: ignore[attr-defined]
    assert isinstance(model, onnx.OnnxModel) and not model.optimized
    many = [f"{t} (variant {i})" for i in range(onnx.QUICK_TEXTS // len(TEXTS) + 1) for t in TEXTS]
    c, d = direct.embed(many), through_fastembed.embed(many)
    assert model.optimized
    assert float(np.abs(c - d).max()) <= 1e-5
    assert float(np.abs(direct.embed(TEXTS) - a).max()) <= 1e-5
    # Truncation at the model's window is the same on both paths.
    assert direct._lengths(TEXTS) == through_fastembed._lengths(TEXTS)
    assert max(direct._lengths(TEXTS)) == embed.MAX_TOKENS


def _imported_after(code: str, env_backend: str | None = None) -> set[str]:
    env_line = "" if env_backend is None else f"import os; os.environ['{onnx.ENV_BACKEND}'] = '{env_backend}'; "
    out = subprocess.run(
        [sys.executable, "-c", f"{env_line}{code}; import sys; print(' '.join(sorted(sys.modules)))"],
        capture_output=True, text=True, check=True,
    ).stdout
    return set(out.split())


@pytest.mark.model
def test_loading_the_bundled_model_does_not_import_fastembed() -> None:
    modules = _imported_after("from memex.embedding import embed; assert embed.load_embedder('auto') is not None")
    assert "onnxruntime" in modules
    assert "fastembed" not in modules


@pytest.mark.model
def test_the_environment_can_send_the_bundled_model_through_fastembed() -> None:
    modules = _imported_after(
        "from memex.embedding import embed; assert embed.load_embedder('auto') is not None", env_backend="fastembed"
    )
    assert "fastembed" in modules


def test_backend_choice_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(onnx.ENV_BACKEND, raising=False)
    assert onnx.wanted()
    monkeypatch.setenv(onnx.ENV_BACKEND, "FastEmbed ")
    assert not onnx.wanted()


@pytest.mark.model
def test_the_quick_session_does_not_busy_wait() -> None:
    """A one-shot command's session sleeps between runs instead of spinning
    its pool threads (60-70 ms of CPU on the other core, docs/benchmarks.md);
    the optimized session of long runs keeps onnxruntime's default."""
    model_dir = embed._bundled_model_dir()
    assert model_dir is not None
    model = embed.FastEmbedder(model_dir, "direct", direct=True)._run.__self__  # type: ignore[attr-defined]
    assert isinstance(model, onnx.OnnxModel) and not model.optimized
    options = model.session.get_session_options()
    for key in ("session.intra_op.allow_spinning", "session.inter_op.allow_spinning"):
        assert options.get_session_config_entry(key) == "0", key
    model.embed([f"text {i}" for i in range(onnx.QUICK_TEXTS + 1)])
    assert model.optimized
    with pytest.raises(RuntimeError, match="does not have configuration"):  # never set: the default
        model.session.get_session_options().get_session_config_entry("session.intra_op.allow_spinning")


@pytest.mark.model
def test_the_bundled_model_knows_its_size_without_running() -> None:
    """The vector size comes from the graph's output shape: loading the
    model runs no probe text (a one-shot command runs the model once, for
    its own text; start-up, docs/benchmarks.md)."""
    model_dir = embed._bundled_model_dir()
    assert model_dir is not None
    embedder = embed.FastEmbedder(model_dir, "direct", direct=True)
    model = embedder._run.__self__  # type: ignore[attr-defined]
    assert embedder.dim == 384 and model.dim == 384
    assert model._embedded == 0


@pytest.mark.model
def test_the_first_run_on_the_side_does_not_change_any_vector() -> None:
    """The session's one-token first run (on its own thread, memex/embedding/onnx.py)
    leaves the vectors exactly as a session that never had it gives them."""
    model_dir = embed._bundled_model_dir()
    assert model_dir is not None
    started = onnx.OnnxModel(model_dir, embed.MAX_TOKENS, 2)
    plain = onnx.OnnxModel(model_dir, embed.MAX_TOKENS, 2)
    plain.embed(["x"])  # its own start thread joined, then a fresh session with no run yet
    plain.session = plain._session(optimized=False)
    for text in TEXTS:
        assert np.array_equal(started.embed([text]), plain.embed([text])), text


def test_the_embedding_module_does_not_import_the_index() -> None:
    """The CLI's head start imports memex.embedding.embed to build the model:
    it reaches onnxruntime without SQLite or the store's modules. Nor numpy,
    which only making or reading vectors needs: a hook answering lexically
    imports this module too (memex/agents/hook_run.py)."""
    modules = _imported_after("from memex.embedding import embed")
    assert "numpy" not in modules
    for index_module in ("apsw", "memex.store", "memex.store.sqlite", "memex.index"):
        assert index_module not in modules, index_module


@pytest.fixture
def own_model_dir(tmp_path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """The bundled model's folder in a cache of this test's own (no saved graph yet)."""
    monkeypatch.setenv("MEMEX_CACHE_DIR", str(tmp_path / "cache"))
    model_dir = embed._bundled_model_dir()
    assert model_dir is not None and not list(model_dir.glob(f"{prebuilt.PREFIX}*"))
    return model_dir


def _saved_graphs(model_dir) -> list:  # type: ignore[no-untyped-def]
    return sorted(p for p in model_dir.glob(f"{prebuilt.PREFIX}*") if (p / prebuilt.GRAPH).is_file())


@pytest.mark.model
def test_the_optimized_graph_is_saved_once_and_gives_the_same_vectors(own_model_dir) -> None:  # type: ignore[no-untyped-def]
    """The optimized session saves its graph (memex/embedding/prebuilt.py); a
    later process loads it instead of building a session, and its vectors are
    the optimized session's bit for bit (what the index stores) and
    fastembed's within 1e-5."""
    first = onnx.OnnxModel(own_model_dir, embed.MAX_TOKENS, 2)
    assert not first.from_saved_graph
    quick = np.concatenate([first.embed([t]) for t in TEXTS])
    first.embed([f"text {i}" for i in range(onnx.QUICK_TEXTS + 1)])  # switches to the optimized session
    assert first.optimized and not first.from_saved_graph
    saved = _saved_graphs(own_model_dir)
    assert len(saved) == 1 and (saved[0] / prebuilt.WEIGHTS).stat().st_size > 50_000_000
    optimized = np.concatenate([first.embed([t]) for t in TEXTS])

    later = onnx.OnnxModel(own_model_dir, embed.MAX_TOKENS, 2)
    assert later.from_saved_graph and not later.optimized
    from_saved = np.concatenate([later.embed([t]) for t in TEXTS])
    assert np.array_equal(from_saved, optimized)
    assert float(np.abs(from_saved - quick).max()) <= 1e-5
    through_fastembed = embed.FastEmbedder(own_model_dir, "fastembed")
    assert float(np.abs(from_saved - through_fastembed.embed(TEXTS)).max()) <= 1e-5
    assert _saved_graphs(own_model_dir) == saved  # not saved again


@pytest.mark.model
def test_a_damaged_saved_graph_is_removed_and_the_model_loads_anyway(own_model_dir) -> None:  # type: ignore[no-untyped-def]
    import onnxruntime

    where = prebuilt.folder(own_model_dir / "model.onnx", onnxruntime.__version__)
    assert where is not None
    where.mkdir()
    (where / prebuilt.GRAPH).write_bytes(b"not a model")
    (where / prebuilt.WEIGHTS).write_bytes(b"\0" * 1024)
    model = onnx.OnnxModel(own_model_dir, embed.MAX_TOKENS, 2)
    assert not model.from_saved_graph and not where.exists()
    reference = embed.FastEmbedder(own_model_dir, "fastembed")
    assert float(np.abs(model.embed(TEXTS[:3]) - reference.embed(TEXTS[:3])).max()) <= 1e-5


@pytest.mark.model
def test_save_graph_saves_it_for_the_next_process(own_model_dir) -> None:  # type: ignore[no-untyped-def]
    """What the warm model server calls at start (memex/agents/warm.py)."""
    embedder = embed.FastEmbedder(own_model_dir, "direct", direct=True)
    before = embedder.embed(TEXTS[:2])
    embedder.save_graph()
    assert len(_saved_graphs(own_model_dir)) == 1
    assert float(np.abs(embedder.embed(TEXTS[:2]) - before).max()) <= 1e-5
    assert onnx.OnnxModel(own_model_dir, embed.MAX_TOKENS, 2).from_saved_graph


def test_a_saved_graph_belongs_to_one_model_file_and_runtime(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A changed model file (size or time) or another onnxruntime never loads
    a copy made from the old one."""
    import os

    model = tmp_path / "model.onnx"
    model.write_bytes(b"weights v1")
    first = prebuilt.folder(model, "1.32.0")
    assert first is not None and first.parent == tmp_path
    assert prebuilt.folder(model, "1.32.0") == first
    assert prebuilt.folder(model, "1.33.0") != first
    stat = model.stat()
    os.utime(model, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert prebuilt.folder(model, "1.32.0") != first
    assert prebuilt.find(model, "1.32.0") is None
    assert prebuilt.folder(tmp_path / "missing.onnx", "1.32.0") is None


def test_publishing_keeps_a_copy_another_process_saved_first(tmp_path) -> None:  # type: ignore[no-untyped-def]
    where = tmp_path / f"{prebuilt.PREFIX}abc"
    older = tmp_path / f"{prebuilt.PREFIX}old"
    for folder, text in ((where, "theirs"), (older, "stale")):
        folder.mkdir()
        (folder / prebuilt.GRAPH).write_text(text)
        (folder / prebuilt.WEIGHTS).write_text(text)
    ours = tmp_path / f"{prebuilt.PREFIX}abc.tmp-1-2"
    ours.mkdir()
    (ours / prebuilt.GRAPH).write_text("ours")
    (ours / prebuilt.WEIGHTS).write_text("ours")
    prebuilt._publish(ours, where)
    assert (where / prebuilt.GRAPH).read_text() == "theirs"
    fresh = tmp_path / f"{prebuilt.PREFIX}new"
    prebuilt._publish(ours, fresh)
    assert (fresh / prebuilt.GRAPH).read_text() == "ours"
    assert not older.exists() and not where.exists()  # copies of other model files or runtimes go


def test_a_lone_surrogate_in_a_query_is_read_not_a_crash(model_vault) -> None:  # type: ignore[no-untyped-def]
    """Found from outside: a prompt holding a lone surrogate (JSON "\\ud800", as a
    hook payload or `memex context assemble` may carry) made the bundled model's
    tokenizer raise `TypeError: TextEncodeInput must be Union[...]`: the hook
    answered without memories, `context assemble` printed a traceback, and
    search and recall raised. The surrogate reads as U+FFFD."""
    kept = model_vault.add("The office wifi is fast on the fourth floor")
    assert [h.id for h in model_vault.search("office wifi \ud800 fourth floor")][:1] == [kept.id]
    assert [h.id for h in model_vault.recall("office wifi \udc80 fourth floor", limit=3)][:1] == [kept.id]
    got = model_vault.embedder.embed(["office wifi \ud800"])
    assert np.allclose(got, model_vault.embedder.embed(["office wifi \ufffd"]))
