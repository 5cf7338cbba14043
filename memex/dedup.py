"""The save-side dedup pipeline that every ``Vault.add`` runs before writing.

Layer 1, exact: the hash of the normalized body (provenance prefix and
injected ``<relevant-memories>`` blocks stripped; frontmatter never part of
it), looked up over the whole scope.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from memex.text import body_hash

if TYPE_CHECKING:
    from memex.vault import Vault


@dataclass
class SimilarFact:
    id: str
    similarity: float
    body: str


@dataclass
class Decision:
    status: str = "created"  # created | duplicate | refused
    method: str | None = None  # exact | jaccard | cosine | session_cosine | turn_echo | erased
    existing_id: str | None = None
    similarity: float | None = None
    similar_facts: list[SimilarFact] = field(default_factory=list)


@dataclass
class Candidate:
    """What an add wants to store, as the pipeline sees it."""

    body: str
    scope: str
    source: str | None
    session: str | None
    qvec: np.ndarray | None = None


@dataclass
class AddResult:
    status: str
    id: str
    path: str
    method: str | None = None
    existing_id: str | None = None
    similarity: float | None = None
    similar_facts: list[SimilarFact] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def check(vault: Vault, cand: Candidate) -> Decision:
    """Decide whether ``cand`` is new (run inside the vault's write lock)."""
    row = vault.conn.execute(
        "SELECT id FROM memories WHERE scope = ? AND body_hash = ? ORDER BY status = 'active' DESC LIMIT 1",
        (cand.scope, body_hash(cand.body)),
    ).fetchone()
    if row is not None:
        return Decision(status="duplicate", method="exact", existing_id=row[0], similarity=1.0)
    return Decision()
