"""The ``meta`` table: the index's own settings (vector model and dimension,
model profile, chunk rule, a pending scrub), one text value per key."""

from __future__ import annotations

from typing import Any

import apsw

from memex.store.protocol import SCRUB_PENDING as SCRUB_PENDING  # a key every backend's store knows

# The keys memex keeps in ``meta`` (docs/store.md).
VECTOR_MODEL = "vector_model"
VECTOR_DIM = "vector_dim"
MODEL_PROFILE = "model_profile"
CHUNK_RULE = "chunk_rule"


def scalar(conn: apsw.Connection, sql: str, params: tuple[Any, ...] = ()) -> Any:
    """The first column of the first row (None when there is none); for the store's own statements."""
    row = conn.execute(sql, params).fetchone()
    return None if row is None else row[0]


def get_meta(conn: apsw.Connection, key: str) -> str | None:
    value = scalar(conn, "SELECT value FROM meta WHERE key = ?", (key,))
    return None if value is None else str(value)


def set_meta(conn: apsw.Connection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO meta(key, value) VALUES (?, ?) "
        "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def delete_meta(conn: apsw.Connection, key: str) -> None:
    conn.execute("DELETE FROM meta WHERE key = ?", (key,))
