"""The in-process vector copy stays true to the index (fake embedder)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from memex.embedding import embed
from memex.store.sqlite import vecmatrix
from memex.vault import Vault
from tests.fakes import HashEmbedder


def _stored(vault: Vault, memory_id: str) -> np.ndarray:
    rowid = vault.backend.conn.execute("SELECT rowid FROM memories WHERE id = ?", (memory_id,)).fetchone()[0]
    blob = vault.backend.conn.execute("SELECT embedding FROM memory_vec WHERE rowid = ?", (rowid,)).fetchone()[0]
    return embed.from_blob(blob)


def _matrix(vault: Vault) -> vecmatrix.VectorMatrix:
    """The copy, loaded: the first look on a connection only notes the index's state."""
    matrix = vecmatrix.for_connection(vault.backend.conn) or vecmatrix.for_connection(vault.backend.conn)
    assert matrix is not None
    return matrix


def _nearest_ids(vault: Vault, text: str, k: int = 5) -> list[str]:
    matrix = _matrix(vault)
    qvec = vault.embedder.embed([text])[0]  # type: ignore[union-attr]
    near = matrix.nearest(qvec, k)
    ids = dict(vault.backend.conn.execute("SELECT rowid, id FROM memories").fetchall())
    return [ids[r] for r in sorted(near, key=lambda r: -near[r])]


def test_matches_the_sqlite_knn(vault: Vault) -> None:
    for i in range(30):
        vault.add(f"Service number {i} talks to queue {i % 7} and cache {i % 5}")
    matrix = _matrix(vault)
    qvec = vault.embedder.embed(["service queue 3 cache 2"])[0]  # type: ignore[union-attr]
    mine = matrix.nearest(qvec, 10)
    theirs = {
        int(r): 1.0 - float(d)
        for r, d in vault.backend.conn.execute(
            "SELECT rowid, distance FROM memory_vec WHERE embedding MATCH ? AND k = 10", (embed.to_blob(qvec),)
        )
    }
    # Same similarities best-first (ties may pick different rows at the cut).
    assert np.allclose(sorted(mine.values()), sorted(theirs.values()), atol=1e-5)
    both = set(mine) & set(theirs)
    assert len(both) >= 8
    for rowid in both:
        assert abs(mine[rowid] - theirs[rowid]) < 1e-5


def test_sees_adds_edits_and_deletes_through_the_same_connection(vault: Vault) -> None:
    first = vault.add("Redis is the Celery broker")
    assert _nearest_ids(vault, "Redis is the Celery broker")[0] == first.id  # matrix now exists
    second = vault.add("Postgres holds the invoices")
    assert _nearest_ids(vault, "Postgres holds the invoices")[0] == second.id
    path = vault.root / second.path
    path.write_text(path.read_text().replace("Postgres holds the invoices", "Kafka carries the events"))
    vault.reindex()
    matrix = _matrix(vault)
    rowid = vault.backend.conn.execute("SELECT rowid FROM memories WHERE id = ?", (second.id,)).fetchone()[0]
    slot = matrix.memories.where[rowid]
    assert np.allclose(matrix.memories.matrix[slot], _stored(vault, second.id))
    assert _nearest_ids(vault, "Kafka carries the events")[0] == second.id
    path.unlink()
    vault.reindex()
    assert second.id not in _nearest_ids(vault, "Kafka carries the events")
    assert second.id not in {h.id for h in vault.search("kafka events")}


def test_sees_changes_made_by_another_connection(vault_root: Path) -> None:
    fake = HashEmbedder()
    with Vault(vault_root, embedder=fake) as reader, Vault(vault_root, embedder=fake) as writer:
        writer.add("The API runs on uvicorn")
        assert [h.body for h in reader.search("uvicorn api")] == ["The API runs on uvicorn"]
        added = writer.add("Grafana shows the dashboards for production")
        hits = reader.search("grafana dashboards production")
        assert hits[0].id == added.id and hits[0].semantic is not None


def test_chunks_speak_for_their_memory(vault: Vault) -> None:
    filler = " ".join(f"word{i}" for i in range(400))
    long_one = vault.add(f"{filler} the rare zebra finch nests in the server room {filler}")
    vault.add("Short note about tea")
    matrix = _matrix(vault)
    assert matrix.chunks.size > 0
    qvec = vault.embedder.embed(["rare zebra finch nests in the server room"])[0]  # type: ignore[union-attr]
    rowid = vault.backend.conn.execute("SELECT rowid FROM memories WHERE id = ?", (long_one.id,)).fetchone()[0]
    body_only = float(np.dot(_stored(vault, long_one.id), qvec))
    assert matrix.cosines(qvec, [rowid])[rowid] > body_only  # the best chunk beats the diluted body


def test_a_deleted_memory_leaves_the_copy_at_once(vault: Vault) -> None:
    secret = vault.add("The vault password is hunter2")
    vault.add("Tea is served at four")
    vault.search("password")  # builds the copy
    matrix = _matrix(vault)
    rowid = vault.backend.conn.execute("SELECT rowid FROM memories WHERE id = ?", (secret.id,)).fetchone()[0]
    slot = matrix.memories.where[rowid]
    (vault.root / secret.path).unlink()
    vault.reindex()
    # No search in between: the row is gone from the copy and its floats zeroed.
    assert rowid not in matrix.memories.where
    assert not matrix.memories.matrix[slot].any()


def test_nearest_among_allowed_rows_is_exact(vault: Vault) -> None:
    ids = [vault.add(f"Worker pool {i} drains queue {i % 3}").id for i in range(20)]
    rowid = dict(vault.backend.conn.execute("SELECT id, rowid FROM memories").fetchall())
    matrix = _matrix(vault)
    qvec = vault.embedder.embed(["worker pool drains queue 2"])[0]  # type: ignore[union-attr]
    allowed = np.array([rowid[i] for i in ids[::2]], dtype=np.int64)
    near = matrix.nearest(qvec, 3, allowed)
    assert set(near) <= set(allowed.tolist()) and len(near) == 3
    every = matrix.cosines(qvec, allowed.tolist())
    assert sorted(near.values(), reverse=True) == sorted(every.values(), reverse=True)[:3]


def test_loaded_only_once_the_index_held_still(vault_root: Path) -> None:
    """A one-shot process never pays for the load; a long-running one loads on its second search."""
    fake = HashEmbedder()
    with Vault(vault_root, embedder=fake) as v:
        for i in range(12):
            v.add(f"Host {i} runs the nginx proxy for region {i % 4}")
        first = [(h.id, h.score) for h in v.search("nginx proxy region 2")]  # through sqlite-vec
        assert vecmatrix._MATRICES[v.backend.conn]._model is None  # noted, not loaded
        second = [(h.id, h.score) for h in v.search("nginx proxy region 2")]  # loads the copy
        assert vecmatrix._MATRICES[v.backend.conn]._model == fake.model_id
        assert [i for i, _ in first] == [i for i, _ in second]
        assert all(abs(a - b) < 1e-5 for (_, a), (_, b) in zip(first, second))
        narrow_sql = None
        with Vault(vault_root, embedder=fake) as other:
            narrow_sql = [h.id for h in other.search("nginx region 3", scope="user")]
        # Another connection wrote nothing, so the copy stays; results agree with SQLite's.
        assert [h.id for h in v.search("nginx region 3", scope="user")] == narrow_sql


def test_busy_writers_elsewhere_keep_search_on_sqlite(vault_root: Path) -> None:
    fake = HashEmbedder()
    with Vault(vault_root, embedder=fake) as reader, Vault(vault_root, embedder=fake) as writer:
        writer.add("Seed memory about queues")
        reader.search("queues")
        reader.search("queues")
        assert vecmatrix._MATRICES[reader.backend.conn]._model == fake.model_id  # loaded
        for i in range(3):
            added = writer.add(f"Queue {i} is drained by worker {i}")
            hits = reader.search(f"queue {i} drained worker")
            assert hits[0].id == added.id  # found although the copy is stale
