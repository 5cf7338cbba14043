"""Search filters (:class:`memex.store.rows.Filters`) as PostgreSQL SQL.

One definition for every reader of the PostgreSQL index: BM25
(:mod:`memex.store.postgres.bm25`), vector KNN and the store's reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from memex.store.rows import Filters


@dataclass(frozen=True)
class PgFilters:
    """:class:`memex.store.rows.Filters` as a PostgreSQL WHERE clause over ``memories m``."""

    filters: Filters

    def sql(self) -> tuple[str, list[Any]]:
        f = self.filters
        clauses: list[str] = []
        params: list[Any] = []
        if f.scopes:
            clauses.append("m.scope = ANY(%s)")
            params.append([s.strip() for s in f.scopes])
        if f.source:
            clauses.append("m.source = %s")
            params.append(f.source)
        if f.session:
            clauses.append("m.session = %s")
            params.append(f.session)
        if not f.include_superseded:
            clauses.append("m.status = 'active'")
        return (" AND ".join(clauses) or "TRUE"), params
