"""Where the index's connection, schema and transactions used to live; they
are the store's now (:mod:`memex.store.schema`, :mod:`memex.store.meta`).
Kept so that existing imports keep working; new code imports the store."""

from __future__ import annotations

from memex.store.meta import get_meta, scalar, set_meta
from memex.store.schema import (
    BUSY_TIMEOUT_MS,
    MIGRATIONS,
    NEW_INDEX_PAGE_SIZE,
    SCHEMA_VERSION,
    connect,
    ensure_chunk_rule,
    ensure_model_profile,
    ensure_vector_tables,
    has_vector_tables,
    migrate,
    vec_extension_path,
    write_txn,
)

__all__ = [
    "BUSY_TIMEOUT_MS", "MIGRATIONS", "NEW_INDEX_PAGE_SIZE", "SCHEMA_VERSION", "connect", "ensure_chunk_rule",
    "ensure_model_profile", "ensure_vector_tables", "get_meta", "has_vector_tables", "migrate", "scalar",
    "set_meta", "vec_extension_path", "write_txn",
]
