"""How alike two memories are: one calibrated score from lexical and semantic evidence.

Consolidation used to link two memories when their token Jaccard *or* their
embedding cosine passed its own threshold. Neither measure is a probability
and the OR adds both measures' false links. Here the two are combined by a
logistic model fitted on labelled pairs (``scripts/eval_consolidate.py``,
``tests/data/consolidate_pairs.jsonl``, dev split):

    score = 1 / (1 + exp(-(bias + w_cosine * cosine + w_jaccard * jaccard)))

so ``score`` estimates the chance that the pair states one fact, and one
threshold on it (``merge_threshold``) decides. The guards of
:mod:`memex.dedup.values` run on top: a pair with a changed value, a flipped
polarity, ... is never merged whatever its score.

Cosine scales differ between embedding models, so the coefficients are a
per-model profile (:data:`PROFILES`, keyed by the embedder's ``model_id``);
a model without a profile uses :data:`DEFAULT_PROFILE`, and no model at all
the lexical-only :data:`LEXICAL_PROFILE`. Add a model's profile by running
the eval script with that model and copying its ``fitted_profile``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from memex.text import content_tokens, jaccard


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
        z = self.bias + self.w_cosine * cosine + self.w_jaccard * jac
        out: np.ndarray = 1.0 / (1.0 + np.exp(-z))
        return out


# Fitted by scripts/eval_consolidate.py on the same-topic dev pairs the
# guards let through (its "fitted_profile"); docs/consolidation.md has the
# figures. For MiniLM the merge line is about cosine >= 0.61 - 0.04 * Jaccard:
# on this data cosine carries nearly all the evidence.
PROFILES: dict[str, ScoreProfile] = {
    "all-MiniLM-L6-v2-int8": ScoreProfile(bias=-8.498, w_cosine=15.647, w_jaccard=0.682, merge_threshold=0.74),
    # multilingual-e5-small: its cosines are compressed (unrelated pairs sit
    # at 0.75-0.92), so MiniLM's profile would merge almost everything
    # (pair precision 0.24 on the test split). Fitted on dev with
    # `scripts/eval_consolidate.py --model multilingual --min-precision 0.95`.
    "multilingual-e5-small-q4": ScoreProfile(bias=-18.409, w_cosine=17.198, w_jaccard=16.348, merge_threshold=0.62),
}
DEFAULT_PROFILE = PROFILES["all-MiniLM-L6-v2-int8"]
# Without a model only Jaccard speaks ("fitted_lexical_profile"): about
# Jaccard >= 0.33 merges.
LEXICAL_PROFILE = ScoreProfile(bias=-3.792, w_cosine=0.0, w_jaccard=21.876, merge_threshold=0.97)


def profile_for(model_id: str | None) -> ScoreProfile:
    if model_id is None:
        return LEXICAL_PROFILE
    return PROFILES.get(model_id, DEFAULT_PROFILE)


def pair_matrices(bodies: list[str], vectors: np.ndarray | None) -> tuple[np.ndarray, np.ndarray]:
    """Token Jaccard and cosine of every pair (cosine zeros without vectors)."""
    n = len(bodies)
    toks = [content_tokens(b) for b in bodies]
    jac = np.zeros((n, n))
    for i in range(n):
        for j in range(i + 1, n):
            jac[i, j] = jac[j, i] = jaccard(toks[i], toks[j])
    if vectors is None:
        return jac, np.zeros((n, n))
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit = vectors / np.where(norms == 0, 1.0, norms)
    return jac, np.clip(unit @ unit.T, -1.0, 1.0)


def fit_logistic(cosine: np.ndarray, jac: np.ndarray, gold: np.ndarray, l2: float = 1e-2) -> tuple[float, float, float]:
    """(bias, w_cosine, w_jaccard) by Newton's method on the (lightly L2
    regularized) log loss: the score is then a probability at the base rate
    of the labelled pairs."""
    x = np.column_stack([np.ones(len(gold)), cosine, jac])
    y = gold.astype(float)
    weight = np.ones(len(y))
    w = np.zeros(3)
    for _ in range(50):
        p = 1.0 / (1.0 + np.exp(-(x @ w)))
        grad = x.T @ (weight * (p - y)) + l2 * w
        hess = (x * (weight * p * (1 - p))[:, None]).T @ x + l2 * np.eye(3)
        step = np.linalg.solve(hess, grad)
        w -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return float(w[0]), float(w[1]), float(w[2])
