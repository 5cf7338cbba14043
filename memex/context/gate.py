"""Which of a search's hits an agent is shown: the auto-recall gate.

Recall searches like ``memex search`` (memex/vault.py ``Vault.recall``), so
every hit has passed search's relevance floor (memex/search/fusion.py
``relevant``: a cosine clearly above what the model gives unrelated text, or
enough of the prompt's words). An agent's prompt is not a search the user
chose to run, though: what is injected should be a clear match, not merely
a related one. A hit is injected when either

- its fused score reaches ``recall_score_threshold``: cosine and BM25
  together rank it high; or
- its cosine alone, calibrated for the model
  (:meth:`memex.embedding.tuning.Calibration.calibrate`), reaches
  :func:`cosine_bar`: ``recall_cosine_threshold`` in a vault of up to
  :data:`GROWS_FROM` memories, plus ``recall_cosine_growth`` for every
  e-fold beyond.

The second way exists because the fused score is a ranking score, not a
measure of relevance. A memory that matches a prompt by meaning, sharing no
word with it, gets nothing from BM25, and the short-memory prior takes up
to 60% off a short one: README's "The user prefers tabs over spaces" scores
0.198 for "which indentation does the user prefer" at cosine 0.40 (0.51
calibrated), a clear paraphrase for MiniLM.

The cosine is absolute, unlike the fused score's BM25 share (relative to
the query's candidates), but the *best* cosine a prompt about something
else reaches grows with the number of memories it is compared with.
Measured with MiniLM on 40 off-topic prompts against random subsets of the
eval sets' memories, the 99th percentile of that best cosine (calibrated)
is 0.16 among 3 memories, 0.34 among 100 and 0.47 among 2,000: about 0.04
more per e-fold from 100 on (scripts/eval_recall.py --sizes). Hence the growth: the bar stays above what
chance reaches in a vault that size, so a paraphrase is recalled in the
small vault a new user starts with, and noise is not let in at 10k.

The same gate picks SessionStart's memories about the project
(memex/agents/hooks.py ``start_memories``, via :func:`for_vault`), whose
query is the project's name and memories: measured with
scripts/eval_session_start.py, docs/context-engine.md.

Both bars are per model (memex/embedding/profiles.py), measured with
scripts/eval_recall.py; figures in docs/context-engine.md.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from memex.context.settings import ContextSettings
from memex.embedding.tuning import Calibration
from memex.search.fusion import calibration_for
from memex.search.hybrid import Hit
from memex.text import has_cjk

if TYPE_CHECKING:
    from memex.vault import Vault

# Up to this many memories the cosine bar is recall_cosine_threshold; it grows from here on.
GROWS_FROM = 100


def cosine_bar(settings: ContextSettings, size: int) -> float:
    """The calibrated cosine a hit needs on its own in a vault of ``size`` memories."""
    return settings.recall_cosine_threshold + settings.recall_cosine_growth * math.log(max(1.0, size / GROWS_FROM))


def clear_cosine(query: str, cosine: float | None, calibration: Calibration, bar: float) -> bool:
    """Whether a cosine alone clears the recall bar (never for a model whose
    cosines mean nothing known, nor for a CJK query where the model's CJK
    cosines do not tell related from unrelated)."""
    if not calibration.measured:
        return False
    score = calibration.trusted(cosine, has_cjk(query))
    return score is not None and score >= bar


def passes(query: str, hit: Hit, settings: ContextSettings, calibration: Calibration, bar: float) -> bool:
    """Whether one hit (past search's floor) is shown to the agent; ``bar``: :func:`cosine_bar`."""
    return hit.score >= settings.recall_score_threshold or clear_cosine(query, hit.semantic, calibration, bar)


def recall_gate(
    query: str, settings: ContextSettings, calibration: Calibration, size: int
) -> Callable[[Sequence[Hit]], list[Hit]]:
    """The gate for one prompt in a vault of ``size`` memories, as :meth:`memex.vault.Vault.recall` takes it."""
    bar = cosine_bar(settings, size)
    return lambda hits: [h for h in hits if passes(query, h, settings, calibration, bar)]


def for_vault(vault: Vault, query: str, settings: ContextSettings) -> Callable[[Sequence[Hit]], list[Hit]]:
    """:func:`recall_gate` for ``query`` in ``vault``: its model's calibration, its size.

    Every search whose hits are shown to an agent unasked (prompt recall,
    SessionStart) goes through here.
    """
    calibration = calibration_for(vault.embedder.model_id if vault.embedder is not None else None)
    return recall_gate(query, settings, calibration, vault.store.memory_count())
