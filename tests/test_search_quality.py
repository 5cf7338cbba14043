"""Search quality with the real model, judged on the labelled set.

The set (tests/data/search_eval.jsonl) and the scoring come from
scripts/eval_search.py, so the test and the published figures measure the
same thing.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from memex.vault import Vault
from tests.scriptkit import load_script

pytestmark = pytest.mark.model

EVAL = load_script("eval_search")
RULES = load_script("eval_rules")
MEMORIES, QUERIES = EVAL.load_set(EVAL.DEFAULT_DATA)


@pytest.fixture(scope="module")
def eval_vault(tmp_path_factory: pytest.TempPathFactory, real_embedder: Any) -> Iterator[Vault]:
    with EVAL.build_vault(tmp_path_factory.mktemp("eval") / "vault", MEMORIES, real_embedder) as v:
        yield v


@pytest.fixture(scope="module")
def results(eval_vault: Vault) -> dict[str, dict[str, Any]]:
    rules = RULES.standard(eval_vault.embedder.model_id if eval_vault.embedder else None)
    out: dict[str, dict[str, Any]] = EVAL.evaluate(eval_vault, QUERIES, rules)
    return out


def test_the_set_is_big_enough_to_judge_by() -> None:
    assert len(MEMORIES) >= 150
    assert len(QUERIES) >= 60
    assert sum(q["lang"] == "zh" for q in QUERIES) >= 10
    assert sum(m["lang"] == "zh" for m in MEMORIES) >= 20


def test_the_rule_beats_each_signal_alone(results: dict[str, dict[str, Any]]) -> None:
    rule = results[RULES.IN_FORCE]["all"]
    for alone in (RULES.BM25, RULES.COSINE):
        assert rule["mrr"] > results[alone]["all"]["mrr"]
        assert rule["recall@1"] > results[alone]["all"]["recall@1"]


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
