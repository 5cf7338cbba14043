"""What dedup compares a new memory's vector with: the memories nearest it by
body vector (no chunks), and its cosine to chosen ones.

:meth:`memex.store.protocol.FeatureQueries.body_search` gives one view per
check, so both answers come from the same source: on SQLite the in-process
copy of the vectors (:mod:`memex.store.sqlite.vecmatrix`) when this process has
loaded it (exact, and 10x faster than sqlite-vec's scan at 100k), else
:class:`StoredBodies`, which asks the store (sqlite-vec's KNN, PostgreSQL's
index) and computes the cosines from the stored vectors. No SQL here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

__all__ = ["BodySearch", "StoredBodies"]


class BodySearch(Protocol):
    def nearest_bodies(self, qvec: np.ndarray, k: int) -> dict[int, float]:
        """The ``k`` memories whose own vectors are nearest ``qvec``, with their cosines."""
        ...

    def body_cosines(self, qvec: np.ndarray, rowids: list[int] | set[int]) -> dict[int, float]:
        """Cosine of ``qvec`` to each of these memories' own vectors (those that have one)."""
        ...


class _BodyVectors(Protocol):
    def knn_bodies(self, blob: bytes, k: int) -> dict[int, float]: ...

    def body_vectors(self, rowids: Sequence[int]) -> dict[int, bytes]: ...


class StoredBodies:
    """:class:`BodySearch` from what the store keeps."""

    __slots__ = ("store",)

    def __init__(self, store: _BodyVectors) -> None:
        self.store = store

    def nearest_bodies(self, qvec: np.ndarray, k: int) -> dict[int, float]:
        return self.store.knn_bodies(np.ascontiguousarray(qvec, dtype=np.float32).tobytes(), k)

    def body_cosines(self, qvec: np.ndarray, rowids: list[int] | set[int]) -> dict[int, float]:
        found = self.store.body_vectors(list(rowids))
        return {r: float(np.dot(np.frombuffer(blob, dtype=np.float32), qvec)) for r, blob in found.items()}
