"""Auto-recall with the real model at the default threshold (docs/context-engine.md).

The cases are the ones ``scripts/context_threshold.py`` measures: each
relevant prompt must get its memory injected (and first), no unrelated
prompt may get anything.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memex.context import assemble, load_settings
from memex.context.settings import DEFAULT_SCORE_THRESHOLD
from memex.vault import Vault, init_vault

CASES = json.loads((Path(__file__).parent / "data" / "context" / "recall_cases.json").read_text("utf-8"))
pytestmark = pytest.mark.model


def test_default_threshold_separates_relevant_from_unrelated(model_vault: Vault) -> None:
    assert load_settings(model_vault).recall_score_threshold == DEFAULT_SCORE_THRESHOLD
    key_of = {model_vault.add(body).id: key for key, body in CASES["memories"].items()}
    for case in CASES["relevant"]:
        out = assemble(model_vault, "q", [{"role": "user", "content": case["prompt"]}], 200_000)
        got = [key_of[i] for i in out["injected"]]
        assert got and got[0] == case["expect"], (case["prompt"], got)
        assert out["mode"] == "recall"
    for prompt in CASES["unrelated"]:
        out = assemble(model_vault, "q", [{"role": "user", "content": prompt}], 200_000)
        assert out["injected"] == [], (prompt, [key_of[i] for i in out["injected"]])
        assert out["messages"] == [{"role": "user", "content": prompt}]


TINY = json.loads((Path(__file__).parent / "data" / "context" / "tiny_vaults.json").read_text("utf-8"))
UNRELATED = [json.loads(line)["query"] for line in
             (Path(__file__).parent / "data" / "unrelated_queries.jsonl").read_text("utf-8").splitlines() if line]


@pytest.mark.parametrize("spec", TINY["vaults"], ids=lambda spec: str(spec["name"]))
def test_a_small_vault_recalls_what_search_shows_for_a_real_question(
    tmp_path: Path, real_embedder: Any, spec: dict[str, Any]
) -> None:
    """A new user's vault of a few memories: a question whose memory ``memex search`` shows gets it
    injected, paraphrases with no shared word included (found from outside: README's own example
    was not); a prompt no memory answers gets nothing the fused score alone would not have let in."""
    with Vault(init_vault(tmp_path / "vault", git=False), embedder=real_embedder) as vault:
        key_of = {vault.add(body).id: key for key, body in spec["memories"].items()}
        threshold = load_settings(vault).recall_score_threshold
        for case in spec["relevant"]:
            shown = [key_of[h.id] for h in vault.search(case["prompt"])]
            out = assemble(vault, "q", [{"role": "user", "content": case["prompt"]}], 200_000)
            if case["expect"] in shown:
                assert case["expect"] in [key_of[i] for i in out["injected"]], (case["prompt"], shown)
        for prompt in spec["unrelated"] + (UNRELATED if spec["name"] == "readme" else []):
            scores = {h.id: h.score for h in vault.search(prompt)}
            out = assemble(vault, "q", [{"role": "user", "content": prompt}], 200_000)
            assert all(scores[i] >= threshold for i in out["injected"]), (prompt, out["injected"])
