"""Search quality with the real model, judged on the labelled set.

The set (tests/data/search_eval.jsonl) and the scoring come from
scripts/eval_search.py, so the test and the published figures measure the
same thing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from memex.search.hybrid import DEFAULT_FUSION, Fusion, search
from memex.vault import Vault
from tests.scriptkit import load_script

pytestmark = pytest.mark.model

EVAL = load_script("eval_search")
MEMORIES, QUERIES = EVAL.load_set(EVAL.DEFAULT_DATA)


@pytest.fixture(scope="module")
def eval_vault(tmp_path_factory: pytest.TempPathFactory, real_embedder: Any) -> Iterator[Vault]:
    with EVAL.build_vault(tmp_path_factory.mktemp("eval") / "vault", MEMORIES, real_embedder) as v:
        yield v


@pytest.fixture(scope="module")
def results(eval_vault: Vault) -> dict[str, dict[str, Any]]:
    fusions = (Fusion("lexical"), Fusion("semantic"), Fusion("rrf", rrf_k=60), DEFAULT_FUSION)
    out: dict[str, dict[str, Any]] = EVAL.evaluate(eval_vault, QUERIES, fusions)
    return out


def test_the_set_is_big_enough_to_judge_by() -> None:
    assert len(MEMORIES) >= 150
    assert len(QUERIES) >= 60
    assert sum(q["lang"] == "zh" for q in QUERIES) >= 10
    assert sum(m["lang"] == "zh" for m in MEMORIES) >= 20


def test_chosen_fusion_beats_each_signal_alone(results: dict[str, dict[str, Any]]) -> None:
    chosen = results[DEFAULT_FUSION.name]["all"]
    assert chosen["mrr"] > results["lexical"]["all"]["mrr"]
    assert chosen["mrr"] > results["semantic"]["all"]["mrr"]
    assert chosen["recall@1"] > results["lexical"]["all"]["recall@1"]
    assert chosen["recall@1"] > results["semantic"]["all"]["recall@1"]


def test_chosen_fusion_beats_naive_rrf(results: dict[str, dict[str, Any]]) -> None:
    assert results[DEFAULT_FUSION.name]["all"]["mrr"] > results["rrf_k60"]["all"]["mrr"]


def test_chinese_queries_find_chinese_memories(eval_vault: Vault) -> None:
    chinese = {m["id"] for m in MEMORIES if m["lang"] == "zh"}
    for q in (q for q in QUERIES if q["lang"] == "zh"):
        hits = eval_vault.search(q["query"], limit=5)
        assert hits, q["query"]
        assert hits[0].id in chinese, (q["query"], hits[0].body)
        assert set(q["relevant"]) & {h.id for h in hits}, (q["query"], [h.body for h in hits])


def test_english_paraphrase_needs_the_vector_side(eval_vault: Vault) -> None:
    """A query sharing no content word with its answer is still answered."""
    hits = eval_vault.search("why is the CI so slow for atlas tests?", limit=3)
    assert hits[0].id == "m020"
    hits = eval_vault.search("how should I write dates?", limit=1)
    assert hits[0].id == "m090"


def test_added_chinese_memory_is_found_by_a_chinese_query(model_vault: Vault) -> None:
    model_vault.add("The build server is in Frankfurt", scope="user")
    target = model_vault.add("周会改到每周三上午十点，在三楼会议室。", scope="user")
    model_vault.add("Weekly planning happens on Monday mornings", scope="user")
    hits = model_vault.search("周会什么时候开？", limit=3)
    assert hits[0].id == target.id
