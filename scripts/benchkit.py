"""What several benchmarks share (imported by the scripts beside it)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


class RandomEmbedder:
    """Random unit vectors of the bundled model's dimension: the index's size
    and speed without the model's cost (not its quality)."""

    model_id = "bench-random-384"
    dim = 384

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = self.rng.standard_normal((len(texts), self.dim)).astype(np.float32)
        normed: np.ndarray = out / np.linalg.norm(out, axis=1, keepdims=True)
        return normed
