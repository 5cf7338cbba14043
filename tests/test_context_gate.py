"""The auto-recall gate (memex/context/gate.py; docs/context-engine.md, "Which memories are recalled").

Plumbing: the two ways in, the cosine bar's growth with the vault's size,
and where a cosine may not decide. Quality with the real model is in
tests/test_context_recall_quality.py and tests/test_readme_recall.py.
"""

from __future__ import annotations

import math
from dataclasses import replace

from memex.context.gate import GROWS_FROM, clear_cosine, cosine_bar, recall_gate
from memex.context.settings import ContextSettings
from memex.embedding import profiles
from memex.embedding.profiles import FALLBACK_CALIBRATION
from memex.search.hybrid import Hit

MINILM = profiles.MINILM.calibration
SETTINGS = ContextSettings(recall_score_threshold=0.31, recall_cosine_threshold=0.36, recall_cosine_growth=0.04)


def hit(name: str, score: float, cosine: float | None) -> Hit:
    return Hit(id=name, score=score, body=name, path=f"{name}.md", scope="user", source=None, session=None,
               source_ref=None, category=None, confidence=0.8, created="2026-12-01T00:00:00Z", status="active",
               superseded_by=None, semantic=cosine)


def test_the_bar_holds_in_small_vaults_and_grows_by_the_e_fold_beyond() -> None:
    assert cosine_bar(SETTINGS, 0) == cosine_bar(SETTINGS, 3) == cosine_bar(SETTINGS, GROWS_FROM) == 0.36
    assert math.isclose(cosine_bar(SETTINGS, GROWS_FROM * 10), 0.36 + 0.04 * math.log(10))
    assert cosine_bar(SETTINGS, 10_000) > cosine_bar(SETTINGS, 1_000) > cosine_bar(SETTINGS, 200)
    assert cosine_bar(replace(SETTINGS, recall_cosine_growth=0.0), 10_000) == 0.36


def test_a_hit_gets_in_on_its_score_or_on_its_cosine_alone() -> None:
    # MiniLM's calibration: (cos - 0.15) / 0.5, so cosine 0.40 is 0.50 and 0.31 is 0.32.
    paraphrase = hit("paraphrase", 0.198, 0.403)  # README's example: no shared word, a short memory
    keyword = hit("keyword", 0.45, 0.25)  # BM25 ranks it high, the cosine is low
    weak = hit("weak", 0.21, 0.31)  # just over search's floor, nothing else
    gate = recall_gate("which indentation does the user prefer", SETTINGS, MINILM, size=3)
    assert [h.id for h in gate([keyword, weak, paraphrase])] == ["keyword", "paraphrase"]
    # In a vault of 10k memories the same cosine is what chance reaches: only the score counts.
    big = recall_gate("which indentation does the user prefer", SETTINGS, MINILM, size=10_000)
    assert [h.id for h in big([keyword, weak, paraphrase])] == ["keyword"]


def test_a_cosine_decides_only_where_the_model_reads_the_language() -> None:
    # MiniLM maps most Chinese to [UNK]: its cosine for a Chinese prompt says nothing.
    assert clear_cosine("which indentation", 0.6, MINILM, 0.36)
    assert not clear_cosine("代码注释用什么语言写？", 0.6, MINILM, 0.36)
    multilingual = profiles.MULTILINGUAL.calibration
    assert clear_cosine("代码注释用什么语言写？", 0.95, multilingual, 0.65)
    # A model nobody measured, or a hit without a vector: no cosine way in.
    assert not clear_cosine("which indentation", 0.99, FALLBACK_CALIBRATION, 0.36)
    assert not clear_cosine("which indentation", None, MINILM, 0.36)


def test_multilingual_cosines_are_read_on_their_own_scale() -> None:
    """The compressed e5 scale: 0.87 is a paraphrase there, 0.82 is unrelated text."""
    model = profiles.MULTILINGUAL
    settings = ContextSettings(recall_score_threshold=model.recall_score_threshold,
                               recall_cosine_threshold=model.recall_cosine_threshold,
                               recall_cosine_growth=model.recall_cosine_growth)
    gate = recall_gate("which indentation does the user prefer", settings, model.calibration, size=3)
    assert [h.id for h in gate([hit("unrelated", 0.3, 0.82), hit("paraphrase", 0.35, 0.873)])] == ["paraphrase"]
