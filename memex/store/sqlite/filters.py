"""Search filters (:class:`memex.store.rows.Filters`) as SQLite SQL.

One definition for every reader of the SQLite index that narrows: its rows,
FTS5 matches and vector scans (as memex/store/postgres/filters.py is
PostgreSQL's).
"""

from __future__ import annotations

from typing import Any

from memex.store.rows import Filters


def marks(n: int) -> str:
    """``n`` parameter marks for an ``IN (...)`` list."""
    return ",".join("?" * n)


def where(filters: Filters) -> tuple[str, list[Any]]:
    """The WHERE clause over ``memories m`` and its parameters."""
    clauses: list[str] = []
    params: list[Any] = []
    if filters.scopes:
        clauses.append(f"m.scope IN ({marks(len(filters.scopes))})")
        params.extend(s.strip() for s in filters.scopes)  # as add stores them (ScopeRules.check)
    if filters.source:
        clauses.append("m.source = ?")
        params.append(filters.source)
    if filters.session:
        clauses.append("m.session = ?")
        params.append(filters.session)
    if not filters.include_superseded:
        clauses.append("m.status = 'active'")
    return (" AND ".join(clauses) or "1"), params
