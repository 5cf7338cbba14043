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
per-model profile (each model's ``pair_score`` in memex/embedding/profiles.py,
viewed here as :data:`PROFILES`, keyed by the embedder's ``model_id``);
a model without a profile uses :data:`DEFAULT_PROFILE`, and no model at all
the lexical-only :data:`LEXICAL_PROFILE`. Add a model's profile by running
the eval script with that model and copying its ``fitted_profile``.
"""

from __future__ import annotations

import numpy as np

from memex.embedding import profiles
from memex.embedding.tuning import ScoreProfile as ScoreProfile
from memex.text import content_tokens, jaccard


# Views of the one table of per-model numbers (memex/embedding/profiles.py).
PROFILES: dict[str, ScoreProfile] = {m: p.pair_score for m, p in profiles.PROFILES.items()}
DEFAULT_PROFILE = profiles.MINILM.pair_score
LEXICAL_PROFILE = profiles.LEXICAL_PAIR_SCORE


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
