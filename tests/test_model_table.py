"""Every per-model number lives in one table, memex/embedding/profiles.py."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import memex
from memex.consolidation import pairscore
from memex.embedding import embed, profiles
from memex.search import fusion

PACKAGE = Path(memex.__file__).parent
PARAMETER_TYPES = {"Calibration", "Fusion", "ScoreProfile", "ModelProfile"}


def _built_outside_the_table() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel == "embedding/profiles.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", "")
                if name in PARAMETER_TYPES:
                    found.append(f"{rel}:{node.lineno} {name}(...)")
    return found


def test_no_module_but_profiles_builds_a_models_numbers() -> None:
    assert _built_outside_the_table() == []


def test_search_and_consolidation_read_the_loaded_models_profile() -> None:
    for model_id in (embed.DEFAULT_MODEL_ID, embed.MULTILINGUAL_MODEL_ID):
        profile = profiles.for_model(model_id)
        assert fusion.calibration_for(model_id) is profile.calibration
        assert fusion.fusion_for(model_id) is profile.fusion
        assert pairscore.profile_for(model_id) is profile.pair_score
    assert profiles.MINILM.fusion is not profiles.MULTILINGUAL.fusion


def test_an_unmeasured_model_gets_no_cosine_floor_but_minilms_rules() -> None:
    got = profiles.for_model("local:my-model")
    assert got.calibration is fusion.calibration_for("local:my-model") and not got.calibration.measured
    assert got.fusion is fusion.fusion_for("local:my-model") is profiles.MINILM.fusion
    assert got.pair_score is pairscore.profile_for("local:my-model") is profiles.MINILM.pair_score
    assert pairscore.profile_for(None) is profiles.LEXICAL_PAIR_SCORE  # no model: Jaccard alone


def test_the_index_meta_keeps_the_dedup_figures_only() -> None:
    # The recorded profile's keys are what indexes built before the table
    # moved recorded: a changed set would make every index look stale.
    assert set(json.loads(profiles.MINILM.as_meta())) == {
        "model_id", "cosine_duplicate", "cosine_similar", "session_cosine_duplicate", "cjk_cosine",
        "cjk_cosine_duplicate", "recall_score_threshold",
    }
