"""A fast, deterministic stand-in for the embedding model (plumbing tests only).

Each token is hashed to a few dimensions; texts that share words get
similar vectors. Tests that judge search or dedup quality use the real
model instead (the ``model_vault`` fixture).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from memex.text import tokens


class HashEmbedder:
    model_id = "test-hash-64"
    dim = 64

    def __init__(self) -> None:
        self.calls = 0
        self.texts_embedded = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls += 1
        self.texts_embedded += len(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for i, text in enumerate(texts):
            for tok in tokens(text) or ["<empty>"]:
                digest = hashlib.blake2b(tok.encode(), digest_size=8).digest()
                out[i, digest[0] % self.dim] += 1.0
                out[i, digest[1] % self.dim] += 0.5
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        norms[norms == 0] = 1.0
        return out / norms
