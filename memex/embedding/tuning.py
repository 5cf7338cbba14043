"""The parameter types a model profile is made of (memex/embedding/profiles.py).

- :class:`Calibration`: what one embedding model's cosines mean (search's
  relevance floor, the context engine's recall gate; docs/search.md).
- :class:`Fusion`: how search ranks: the blend of BM25 and cosine, the
  question prior, conversation context (docs/search.md); the computation
  is in memex/search/fusion.py.
- :class:`ScoreProfile`: consolidation's logistic pair score and its merge
  threshold (docs/consolidation.md); used by memex/consolidation/pairscore.py.

They are plain values, defined below search and consolidation so that the
one table of per-model numbers (:mod:`memex.embedding.profiles`) can hold
them without importing the layers that use them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np


@dataclass(frozen=True)
class Calibration:
    """What one model's cosines mean, measured per model.

    ``unrelated``: about the highest cosine the model gives a query and a
    memory that have nothing to do with each other; ``strong``: a clear
    match. A cosine maps to ``(cos - unrelated) / (strong - unrelated)``,
    clipped to 0..1. ``floor`` is the calibrated value a hit needs to pass
    the relevance floor on its cosine alone; ``*_cjk`` are the same for
    queries in CJK scripts, where an English model's cosines run higher.
    """

    unrelated: float
    strong: float
    floor: float
    unrelated_cjk: float
    strong_cjk: float
    floor_cjk: float
    # False: this model's cosines for CJK text do not tell related from
    # unrelated (all-MiniLM is English-only), so only shared words count.
    trust_cjk: bool
    # False for a model nobody measured: its cosines clear every hit, so the
    # floor never hides what such a model finds (only words can fail it).
    measured: bool = True
    # A lower calibrated floor for a hit that shares at least one content
    # word (or CJK bigram) with the query. For a model with compressed
    # cosines (multilingual-e5) one bar cannot both empty unrelated queries
    # and keep real answers; a shared word is the tie-breaker. None: off.
    floor_shared_word: float | None = None

    def calibrate(self, cosine: float, cjk: bool) -> float:
        low, high = (self.unrelated_cjk, self.strong_cjk) if cjk else (self.unrelated, self.strong)
        return float(min(1.0, max(0.0, (cosine - low) / (high - low))))

    def floor_for(self, cjk: bool) -> float:
        return self.floor_cjk if cjk else self.floor

    def trusted(self, cosine: float | None, cjk: bool) -> float | None:
        """The calibrated cosine when it says something here: there is one, and
        for a CJK query the model's CJK cosines mean something; else None.
        (A model nobody measured is the caller's to decide: ``measured``.)"""
        if cosine is None or (cjk and not self.trust_cjk):
            return None
        return self.calibrate(cosine, cjk)


@dataclass(frozen=True)
class Fusion:
    """How search ranks its candidates (docs/search.md; computed in memex/search/fusion.py).

    1. The blend: ``semantic_weight × cosine + (1 − semantic_weight) × BM25 / the
       query's best BM25``. ``semantic_norm`` ``raw`` takes the cosine as it
       is; ``minmax`` scales it over the query's candidates (for a model
       whose cosines are all compressed into a narrow band).
    2. A memory that is itself a question (it ends in ``?``) keeps
       ``1 − question_penalty`` of its blend: it asks, it does not answer.
    3. Hubs lose: a memory whose density (the mean cosine to its nearest
       memories, kept by the index: memex/store/density.py) is above
       ``density_floor`` keeps ``1 − density_penalty × (d − floor) / (1 − floor)``
       of it. Small talk sits near everything, so near every query too.
       The floor is a cosine, so it is per model.
    4. Conversation context: plus ``context_weight ×`` the best blend of the
       memories just before and just after it in the same session (as the
       index keeps them: :class:`memex.store.facts.Facts`); the answer to
       a question is often the turn after the one that names its subject.
    """

    semantic_weight: float = 0.5
    semantic_norm: str = "raw"
    question_penalty: float = 0.0
    context_weight: float = 0.0
    density_penalty: float = 0.0
    density_floor: float = 0.0

    def density_factor(self, density: float | None) -> float:
        """Multiplier in (0, 1] for a memory with this density (None: unknown, 1)."""
        if not self.density_penalty or density is None or density <= self.density_floor:
            return 1.0
        return 1.0 - self.density_penalty * min(1.0, (density - self.density_floor) / (1.0 - self.density_floor))

    @property
    def name(self) -> str:
        name = f"blend_w{self.semantic_weight:g}"
        if self.semantic_norm != "raw":
            name += f"_{self.semantic_norm}"
        if self.question_penalty:
            name += f"_q{self.question_penalty:g}"
        if self.context_weight:
            name += f"_context{self.context_weight:g}"
        if self.density_penalty:
            name += f"_dens{self.density_penalty:g}above{self.density_floor:g}"
        return name


@dataclass(frozen=True)
class ScoreProfile:
    """Logistic coefficients and the merge threshold for one embedding model."""

    bias: float
    w_cosine: float
    w_jaccard: float
    # Pairs scoring at or above this merge (chosen on dev for pair
    # precision >= 0.97 with the most recall).
    merge_threshold: float

    def score(self, cosine: np.ndarray, jac: np.ndarray) -> np.ndarray:
        import numpy as np  # consolidation's, not search's: a lexical hook loads no numpy

        z = self.bias + self.w_cosine * cosine + self.w_jaccard * jac
        out: np.ndarray = 1.0 / (1.0 + np.exp(-z))
        return out
