"""Dedup quality with the real model: the labelled pairs, and the issue's "done when"."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from memex.vault import Vault
from tests.scriptkit import load_script

pytestmark = pytest.mark.model

DATA = Path(__file__).resolve().parent / "data"
# Measured with `scripts/eval_dedup.py` (docs/write-path.md, "Dedup"): precision 1.0 on
# both sets; recall 0.802 on the 430 tuning pairs and 0.818 on the 165
# held-out pairs. (0.868 / 0.889 before a paraphrase that brings words the
# stored memory lacks was kept rather than dropped: on real conversations
# such words are as often new information; docs/write-path.md, "Real
# conversations".) The floors leave room for model noise only.
RECALL_FLOOR = {"dedup_pairs.jsonl": 0.78, "dedup_pairs_holdout.jsonl": 0.80}


def _eval_module() -> ModuleType:
    return load_script("eval_dedup")


@pytest.mark.parametrize("name", sorted(RECALL_FLOOR))
def test_labelled_pairs_precision_and_recall(model_vault: Vault, name: str) -> None:
    ev = _eval_module()
    pairs = ev.load_pairs(DATA / name)
    assert len(pairs) >= (300 if name == "dedup_pairs.jsonl" else 150)
    kinds = {(p["kind"], p["lang"]) for p in pairs}
    for kind in ("exact_provenance", "near_copy", "paraphrase", "value_change", "distinct_same_topic"):
        assert {(kind, "en"), (kind, "zh")} <= kinds

    report = ev.evaluate(model_vault, pairs)

    assert report["precision"] >= 0.98, report["false_merges"]
    assert report["recall"] >= RECALL_FLOOR[name], report["missed"]
    # Every exact copy (other provenance, injected block, whitespace) is caught.
    assert report["by_kind"]["exact_provenance/en"]["judged_duplicate"] == report["by_kind"]["exact_provenance/en"]["pairs"]
    assert report["by_kind"]["exact_provenance/zh"]["judged_duplicate"] == report["by_kind"]["exact_provenance/zh"]["pairs"]
    assert report["by_kind"]["value_change/en"]["judged_duplicate"] == 0
    assert report["by_kind"]["value_change/zh"]["judged_duplicate"] == 0


def test_done_when(model_vault: Vault) -> None:
    # The same turn captured by two writers is stored once.
    gateway = model_vault.add(
        "[hm session:g1 src:keyword event:UserPromptSubmit] Use uv, not pip, to install dependencies.",
        source="keyword", session="turn-1", source_ref="gateway.log#L12",
    )
    agent_copy = model_vault.add(
        "Use uv, not pip, to install dependencies.", source="openclaw", session="oc-7", source_ref="oc.jsonl#L3"
    )
    assert (agent_copy.status, agent_copy.existing_id) == ("duplicate", gateway.id)

    # A paraphrase re-save by the agent right after the hook capture is not stored: it points at
    # the stored id. ("uv, not pip" is a contrast, no negation, so since the value guards were shared with consolidation the cosine layer
    # already calls it a duplicate; before, the polarity guard sent it on to the turn-echo guard.)
    para = model_vault.add(
        "Dependencies should be installed with uv rather than pip", source="tool", session="turn-1"
    )
    assert para.status in {"duplicate", "refused"} and para.existing_id == gateway.id

    # A changed value is never lost.
    model_vault.add("The API rate limit is 100 requests per minute.", session="turn-2")
    changed = model_vault.add("The API rate limit is 500 requests per minute.", session="turn-3")
    assert changed.status == "created"
    assert changed.similar_facts[0].suggestion == "supersede"
    assert len(list((model_vault.root / "memories").rglob("*.md"))) == 3
