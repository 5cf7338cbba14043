"""The reference set's body vectors, read in O(S) whatever the vault's size.

:mod:`memex.store.density` needs the vectors of R's ``S + 1`` members
once per connection (and those of the few that enter R later). sqlite-vec
answers ``rowid IN (...)`` with a scan of every vector (R at 10k: 11 ms, at
100k: 108 ms, at 1M: ~1 s) and ``rowid = ?`` at ~0.1 ms a row; every
one-shot ``memex add`` and agent hook is a fresh process and would pay it.

The same vectors are stored a second time, in ``embedding_cache``: a
memory's body vector is the cached vector of its ``embed_key`` under the
index's model (``meta.vector_model``). So R is read as ``memory_density JOIN
memories JOIN embedding_cache``, a few index lookups per member: O(S).

The cache is not trusted to agree: a row can be missing (purged once no
memory used it, cleared by hand, never written) or hold other bits than
``memory_vec`` (two processes embedding the same new text at once, each
on a model session that rounds differently, as the bundled model's quick
and optimized sessions do within 1e-5 (tests/test_embed_onnx.py): the
second ``INSERT OR REPLACE`` wins in the cache, not in ``memory_vec``). So each row of
``memory_density`` keeps a :func:`digest` of the vector written to
``memory_vec`` (8 bytes: BLAKE2b), and a cached vector is used only when
its digest is that one. Every other member (no digest stored, no cache row,
another vector) is read from ``memory_vec``: one by one when few, in one
scan when many; its digest is stored then when it was missing (a row
written before digests existed), so the next process finds it in the cache.
Exact by construction: a member's vector is memory_vec's, or bits whose
64-bit digest equals that of memory_vec's (other bits pass with a chance
of 2^-64; docs/search.md, "Smaller and lighter").

PostgreSQL looks ``memory_vec`` up by its primary key, O(S) already: its
dialect says so (``indexed_vectors``) and reads there, no digest kept.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memex.store.protocol import SqlConnection

_POINT = 64  # vectors read one by one from memory_vec; more in one scan (see from_index)
_SCAN = 30_000  # bound parameters of one statement (SQLite's limit: 32,766)


def indexed(conn: SqlConnection) -> bool:
    """Whether the vector table answers a lookup by rowid from an index (PostgreSQL)."""
    return bool(getattr(conn, "indexed_vectors", False))


def digest(blob: bytes) -> int:
    """A vector's 64-bit fingerprint, as SQLite stores an INTEGER (signed)."""
    return int.from_bytes(hashlib.blake2b(blob, digest_size=8).digest(), "big", signed=True)


def digests(blobs: Iterable[tuple[int, bytes]]) -> dict[int, int]:
    return {rowid: digest(blob) for rowid, blob in blobs}


def read(conn: SqlConnection, rowids: list[int]) -> dict[int, bytes]:
    """The body vectors of these rows of ``memory_density`` (R's members,
    the next in line), exact: from the cache where its vector has the
    stored digest, else from ``memory_vec``."""
    if indexed(conn) or not rowids:
        return from_index(conn, rowids)
    out: dict[int, bytes] = {}
    unknown: list[int] = []  # rows without a stored digest
    model = conn.execute("SELECT value FROM meta WHERE key = 'vector_model'").fetchone()
    # One statement for all of R: SQLite looks its rowids up in sorted order,
    # which reads fewer pages than five batches do (19 vs 22 ms at 100k).
    for start in range(0, len(rowids), _SCAN):
        part = rowids[start : start + _SCAN]
        for rowid, stored, blob in conn.execute(
            "SELECT d.rowid, d.digest, c.vector FROM memory_density d "
            "LEFT JOIN memories m ON m.rowid = d.rowid "
            "LEFT JOIN embedding_cache c ON c.text_hash = m.embed_key AND c.model = ? "
            f"WHERE d.rowid IN ({','.join('?' * len(part))})",
            (model[0] if model else None, *part),
        ):
            if stored is None:
                unknown.append(int(rowid))
            elif blob is not None and digest(bytes(blob)) == stored:
                out[int(rowid)] = bytes(blob)
    rest = [r for r in rowids if r not in out]
    if rest:
        found = from_index(conn, rest)
        out.update(found)
        conn.executemany("UPDATE memory_density SET digest = ? WHERE rowid = ?",
                         [(digest(found[r]), r) for r in unknown if r in found])
    return out


def from_index(conn: SqlConnection, rowids: list[int]) -> dict[int, bytes]:
    """These rows' body vectors from ``memory_vec``. sqlite-vec answers
    ``rowid = ?`` from its index, but slowly (0.1 ms a row at 10k: R's
    2,049 took 240 ms), and ``rowid IN (...)`` with one scan of every vector
    in C (R at 10k: 11 ms, at 100k: 108 ms): a few rows one by one, many in one scan."""
    out: dict[int, bytes] = {}
    if len(rowids) <= _POINT:
        for r in rowids:
            for (blob,) in conn.execute("SELECT embedding FROM memory_vec WHERE rowid = ?", (r,)):
                out[r] = bytes(blob)
        return out
    for start in range(0, len(rowids), _SCAN):
        part = rowids[start : start + _SCAN]
        out.update((int(r), bytes(b)) for r, b in conn.execute(
            f"SELECT rowid, embedding FROM memory_vec WHERE rowid IN ({','.join('?' * len(part))})", part))
    return out
