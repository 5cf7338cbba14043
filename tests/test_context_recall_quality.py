"""Auto-recall with the real model at the default threshold (docs/context-engine.md).

The cases are the ones ``scripts/context_threshold.py`` measures: each
relevant prompt must get its memory injected (and first), no unrelated
prompt may get anything.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memex.context import assemble, load_settings
from memex.context.settings import DEFAULT_SCORE_THRESHOLD
from memex.vault import Vault

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
