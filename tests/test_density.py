"""Each memory's neighbourhood density (memex/store/density.py) stays what
its definition says after every kind of write: add, edit, delete, reindex,
the watcher, erase, a rolled-back transaction, another process's write, an
index made before the table existed; and erase leaves no row of it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import apsw
import numpy as np
import pytest

from memex.embedding import embed
from memex.erase.steps import erase
from memex.store import density, nearest, refvectors
from memex.store.sqlite.schema import write_txn
from memex.store import SqliteStore
from memex.vault import Vault
from tests.fakes import HashEmbedder
from tests.watchkit import body_at, running_watcher, wait_for

TOPICS = ["deploy", "billing", "lunch", "backup", "kafka", "python", "holiday", "review", "cache", "docs"]


def _texts(n: int, salt: str = "") -> list[str]:
    return [f"{TOPICS[i % len(TOPICS)]} note {i} {salt} about {TOPICS[(i * 3) % len(TOPICS)]} and item{i % 7}"
            for i in range(n)]


@pytest.fixture(autouse=True, params=["S=2048", "S=7"])
def reference_size(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    """Every test runs with the shipped reference set (every memory is in it:
    the exact all-memories definition) and with one of 8, so that writes enter
    and leave it."""
    if request.param == "S=7":
        monkeypatch.setattr(density, "S", 7)
    return density.S


def _brute_force(conn: apsw.Connection) -> dict[int, float]:
    """The definition: mean cosine of each body vector to its K nearest among
    the S+1 memories of smallest key, itself left out."""
    ids = {int(r): str(i) for r, i in conn.execute("SELECT rowid, id FROM memories")}
    rows = sorted((int(r), embed.from_blob(b)) for r, b in conn.execute("SELECT rowid, embedding FROM memory_vec"))
    if len(rows) < 2:
        return {}
    ref = sorted(range(len(rows)), key=lambda i: density.key(ids[rows[i][0]]))[: density.S + 1]
    m = np.stack([v for _, v in rows]).astype(np.float64)
    sims = m @ m[ref].T
    for j, i in enumerate(ref):
        sims[i, j] = -np.inf
    top = -np.sort(-sims, axis=1)[:, : density.K]
    return {r: float(top[i][np.isfinite(top[i])].mean()) for i, (r, _) in enumerate(rows)}


def _stored(conn: apsw.Connection) -> dict[int, float]:
    rowids = [int(r) for (r,) in conn.execute("SELECT rowid FROM memory_density")]
    return density.densities(conn, rowids)


def _assert_exact(vault: Vault) -> None:
    want, got = _brute_force(vault.backend.conn), _stored(vault.backend.conn)
    assert set(got) == set(want)
    for rowid, value in want.items():
        assert got[rowid] == pytest.approx(value, abs=1e-5), rowid


def test_densities_follow_adds_edits_deletes_and_a_rebuild(vault: Vault) -> None:
    added = [vault.add(t) for t in _texts(40)]
    _assert_exact(vault)
    # Edit a few files by hand and delete others: the next reindex (a sync) follows.
    for result in added[:5]:
        path = vault.root / result.path
        path.write_text(path.read_text().replace("note", "changed text about zebra"), encoding="utf-8")
    for result in added[5:9]:
        (vault.root / result.path).unlink()
    report = vault.reindex()
    assert report.updated == 5 and report.removed == 4
    _assert_exact(vault)
    ids_before = {int(r): str(i) for r, i in vault.backend.conn.execute("SELECT rowid, id FROM memories")}
    before = {ids_before[r]: v for r, v in _stored(vault.backend.conn).items()}
    # A rebuilt index (new rowids) holds the same value for each memory.
    vault.close()
    for f in (vault.root / ".memex").glob("index.db*"):
        f.unlink()
    again = Vault(vault.root, embedder=HashEmbedder())
    again.reindex()
    _assert_exact(again)
    ids = {int(r): str(i) for r, i in again.backend.conn.execute("SELECT rowid, id FROM memories")}
    rebuilt = {ids[r]: v for r, v in _stored(again.backend.conn).items()}
    assert set(rebuilt) ^ set(before) == set(), (set(rebuilt) - set(before), set(before) - set(rebuilt))
    # Exactly: a rebuilt index must break ties between hubs as the old one did.
    assert rebuilt == before
    again.close()


def test_erase_purges_the_row_and_the_neighbours_lists_follow(vault: Vault) -> None:
    results = [vault.add(t) for t in _texts(30)]
    gone = results[3]
    rowid = int(vault.backend.conn.execute("SELECT rowid FROM memories WHERE id = ?", (gone.id,)).fetchone()[0])
    erase(vault, gone.id, reason="test")
    assert vault.backend.conn.execute("SELECT count(*) FROM memory_density WHERE rowid = ?", (rowid,)).fetchone()[0] == 0
    _assert_exact(vault)


def test_a_rolled_back_transaction_leaves_them_as_they_were(vault: Vault) -> None:
    for t in _texts(20):
        vault.add(t)
    before = _stored(vault.backend.conn)
    with pytest.raises(RuntimeError):
        with write_txn(vault.backend.conn):
            victim = int(vault.backend.conn.execute("SELECT rowid FROM memories LIMIT 1").fetchone()[0])
            vault.store.purge_memory(victim)
            raise RuntimeError("abandoned")
    assert _stored(vault.backend.conn) == before
    vault.add("one more note about deploy and billing item3")
    _assert_exact(vault)


@pytest.mark.parametrize("point", [64, 2], ids=["by-rowid", "one-scan"])
def test_another_connections_writes_are_seen(vault: Vault, point: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # R comes from the embedding cache; what it cannot give is read from memory_vec row by
    # row, or in one scan as in a large vault (tests/test_density_reads.py takes both paths).
    monkeypatch.setattr(refvectors, "_POINT", point)
    for t in _texts(15):
        vault.add(t)
    other = Vault(vault.root, embedder=HashEmbedder())
    for t in _texts(15, salt="from another process"):
        other.add(t)
    other.close()
    vault.add("a last note about kafka and lunch item2")  # this connection's cached vectors are stale now
    _assert_exact(vault)


def test_the_watcher_keeps_them_exact(vault: Vault) -> None:
    for t in _texts(20):
        vault.add(t)
    folder = vault.root / "memories" / "notes"
    with running_watcher(vault.root):
        folder.mkdir(parents=True, exist_ok=True)
        for i, text in enumerate(_texts(6, salt="watched")):
            (folder / f"w{i}.md").write_text(text + "\n", encoding="utf-8")
        wait_for(lambda: body_at(vault, "memories/notes/w5.md") is not None, what="new files indexed")
        (folder / "w0.md").unlink()
        wait_for(lambda: body_at(vault, "memories/notes/w0.md") is None, what="deleted file")
    _assert_exact(vault)


def test_an_index_from_before_the_table_gets_every_density(vault: Vault) -> None:
    for t in _texts(25):
        vault.add(t)
    root: Path = vault.root
    with write_txn(vault.backend.conn):
        vault.backend.conn.execute("DROP TABLE memory_density")
        vault.backend.conn.execute("PRAGMA user_version=3")
    vault.close()
    reopened = Vault(root, embedder=HashEmbedder())
    _assert_exact(reopened)
    reopened.close()


def test_an_index_with_the_reference_copy_loses_it_and_stays_exact(vault: Vault) -> None:
    """Schema step 6: an index of step 5 (R's vectors copied into
    density_reference, memories_hash) opens without them, nothing else moves."""
    for t in _texts(25):
        vault.add(t)
    before = _stored(vault.backend.conn)
    with write_txn(vault.backend.conn):
        vault.backend.conn.execute("CREATE TABLE density_reference (rowid INTEGER PRIMARY KEY, embedding BLOB NOT NULL)")
        vault.backend.conn.execute("INSERT INTO density_reference SELECT rowid, embedding FROM memory_vec")
        vault.backend.conn.execute("CREATE INDEX memories_hash ON memories(body_hash)")
        vault.backend.conn.execute("PRAGMA user_version=5")
    root = vault.root
    vault.close()
    reopened = Vault(root, embedder=HashEmbedder())
    names = {str(n) for (n,) in reopened.backend.conn.execute("SELECT name FROM sqlite_master")}
    assert "density_reference" not in names and "memories_hash" not in names
    assert _stored(reopened.backend.conn) == before
    reopened.add("a note after the upgrade about lunch and item2")
    _assert_exact(reopened)
    reopened.close()


def test_an_index_with_the_density_column_and_longer_lists_loses_them_and_stays_exact(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Schema step 7: an index of step 6 (a density column, 20 cosines kept
    per memory) opens with neither, and every density reads as before."""
    with monkeypatch.context() as patch:
        patch.setattr(nearest, "DEPTH", 20)
        for t in _texts(30):
            vault.add(t)
        before = _stored(vault.backend.conn)
        longest = max(len(b) for (b,) in vault.backend.conn.execute("SELECT neighbours FROM memory_density"))
        assert longest == 4 * min(20, density.S + 1, 29)
        with write_txn(vault.backend.conn):
            vault.backend.conn.execute("ALTER TABLE memory_density ADD COLUMN density REAL NOT NULL DEFAULT 0")
            vault.backend.conn.execute("PRAGMA user_version=6")
        root = vault.root
        vault.close()
    reopened = Vault(root, embedder=HashEmbedder())
    columns = {str(row[1]) for row in reopened.backend.conn.execute("PRAGMA table_info(memory_density)")}
    assert columns == {"rowid", "neighbours", "key", "digest"}
    longest = max(len(b) for (b,) in reopened.backend.conn.execute("SELECT neighbours FROM memory_density"))
    assert longest == 4 * min(nearest.DEPTH, density.S + 1, 29)
    assert _stored(reopened.backend.conn) == before
    _assert_exact(reopened)
    reopened.add("a note after the upgrade about billing and item4")
    _assert_exact(reopened)
    reopened.close()


def test_the_hub_prior_lowers_crowded_memories_only_above_the_floor() -> None:
    from memex.search.fusion import Fusion, rank
    from memex.store.facts import Facts

    rule = Fusion(0.5, density_penalty=0.5, density_floor=0.5)
    assert rule.density_factor(None) == 1.0 and rule.density_factor(0.4) == 1.0 and rule.density_factor(0.5) == 1.0
    assert rule.density_factor(0.75) == pytest.approx(0.75) and rule.density_factor(1.0) == pytest.approx(0.5)
    blend = {1: 0.9, 2: 0.8, 3: 0.1}
    facts = {1: Facts(False, None, None, 0.95), 2: Facts(False, None, None, 0.3), 3: Facts(False, None, None, None)}
    out = rank(blend, facts, rule)
    assert out[2] == 0.8 and out[1] == pytest.approx(0.9 * (1 - 0.5 * 0.9)) and out[1] < out[2]
    assert out[3] == 0.1  # no vector, no density: nothing to lower
    # MiniLM's rule has no hub prior (LoCoMo: no gain beyond noise); the multilingual model's has.
    from memex.embedding import profiles

    assert profiles.MINILM.fusion.density_factor(0.99) == 1.0
    assert profiles.MULTILINGUAL.fusion.density_factor(0.99) < 1.0


def test_search_ranks_a_statement_above_a_crowd_of_near_copies(vault: Vault) -> None:
    from memex.search.fusion import Fusion
    from memex.search.hybrid import search

    crowd = [f"deploy window sounds good to me {w}" for w in ("ok", "sure", "yes", "fine", "great", "agreed",
                                                            "right", "cool", "yep", "noted", "thanks", "nice")]
    for text in crowd:
        vault.add(text)
    answer = vault.add("the deploy window is Tuesday 14:00 UTC after the freeze")
    query = "is the deploy window good for everyone"
    plain = Fusion(0.7)
    hubs_lose = Fusion(0.7, density_penalty=0.5, density_floor=0.5)
    qvec = vault.embed_query(query)
    before = [h.id for h in search(vault.backend.conn, vault.embedder, query, 5, qvec=qvec, fusion=plain, floor=False)]
    after = [h.id for h in search(vault.backend.conn, vault.embedder, query, 5, qvec=qvec, fusion=hubs_lose, floor=False)]
    assert before[0] != answer.id  # one of the crowd wins on plain cosine + BM25
    assert after[0] == answer.id


def _reference(conn: apsw.Connection) -> list[int]:
    """R as the index holds it: the first S + 1 rows in key order."""
    return [int(r) for (r,) in conn.execute("SELECT rowid FROM memory_density ORDER BY key LIMIT ?", (density.S + 1,))]


def test_erasing_a_reference_member_brings_in_the_next_and_leaves_only_numbers(vault: Vault) -> None:
    results = [vault.add(t) for t in _texts(30)]
    member = min(results, key=lambda r: density.key(r.id))  # in R at any S
    rowid = int(vault.backend.conn.execute("SELECT rowid FROM memories WHERE id = ?", (member.id,)).fetchone()[0])
    blob = bytes(vault.backend.conn.execute("SELECT embedding FROM memory_vec WHERE rowid = ?", (rowid,)).fetchone()[0])
    assert rowid in _reference(vault.backend.conn)
    erase(vault, member.id, reason="test")
    _assert_exact(vault)
    assert rowid not in _reference(vault.backend.conn)
    assert len(_reference(vault.backend.conn)) == min(density.S + 1, len(results) - 1)
    # What stays of it in the others' rows is cosines: at most DEPTH float32 each, never its vector;
    # and no table keeps a copy of R's vectors.
    for (neighbours,) in vault.backend.conn.execute("SELECT neighbours FROM memory_density"):
        assert len(neighbours) <= 4 * density.DEPTH and blob not in bytes(neighbours)
    assert vault.backend.conn.execute("SELECT count(*) FROM sqlite_master WHERE name = 'density_reference'").fetchone()[0] == 0


def test_a_rolled_back_erase_of_a_member_and_an_add_leave_them_as_they_were(vault: Vault) -> None:
    results = [vault.add(t) for t in _texts(20)]
    member = min(results, key=lambda r: density.key(r.id))
    before = _stored(vault.backend.conn)
    reference = _reference(vault.backend.conn)
    with pytest.raises(RuntimeError):
        with write_txn(vault.backend.conn):
            victim = int(vault.backend.conn.execute("SELECT rowid FROM memories WHERE id = ?", (member.id,)).fetchone()[0])
            vault.store.purge_memory(victim)
            raise RuntimeError("abandoned")
    assert _stored(vault.backend.conn) == before
    assert _reference(vault.backend.conn) == reference
    for t in _texts(12, salt="after the rollback"):
        vault.add(t)
    _assert_exact(vault)


def rows_read(vault: Vault, write: Callable[[], object], counts: Callable[[apsw.Cursor, tuple[object, ...]], bool]) -> int:
    """How many rows ``write`` read back from the index that ``counts`` picks."""
    seen = []

    def trace(cursor: apsw.Cursor, row: tuple[object, ...]) -> tuple[object, ...]:
        seen.extend([1] if counts(cursor, row) else [])
        return row

    vault.backend.conn.row_trace = trace
    try:
        write()
    finally:
        vault.backend.conn.row_trace = None
    return len(seen)


def _vectors_read(vault: Vault, write: Callable[[], object]) -> int:
    """How many body vectors ``write`` read back from the index (rows holding one)."""
    size = len(bytes(vault.backend.conn.execute("SELECT embedding FROM memory_vec LIMIT 1").fetchone()[0]))
    return rows_read(vault, write, lambda _, row: any(isinstance(v, bytes) and len(v) == size for v in row))


def test_a_write_reads_the_reference_vectors_once_per_connection(vault: Vault) -> None:
    results = [vault.add(t) for t in _texts(40)]
    other = Vault(vault.root, embedder=HashEmbedder())
    # A new connection's first write that changes R (the erase of a member)
    # reads the vectors it needs, once ...
    erase(other, min(results, key=lambda r: density.key(r.id)).id, reason="test")
    # ... and keeps them: later writes read none of them again, whether they
    # change R or not (the one vector each add reads is its own text's,
    # looked up in the embedding cache).
    for i in range(8):
        assert _vectors_read(other, lambda: other.add(f"lunch note number {i} about billing and item{i}")) <= 1
    _assert_exact(other)
    # Another connection's write makes them stale: the next write reads R again and stays exact.
    vault.add("a note from the first connection about kafka item5")
    assert _vectors_read(other, lambda: other.add("a last note about backups and item6")) > 1
    _assert_exact(other)
    other.close()


def _write_files(vault: Vault, texts: list[str]) -> None:
    folder = vault.root / "memories" / "user"
    folder.mkdir(parents=True, exist_ok=True)
    for i, text in enumerate(texts):
        (folder / f"bulk-{i:04d}.md").write_text(f"---\nid: bulk-{i:04d}\nscope: user\n---\n{text}\n", encoding="utf-8")


def test_a_reindex_of_many_files_computes_every_density_once_at_its_end(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_files(vault, _texts(600, "bulk"))  # more than one indexing batch (256)
    full_settles = []
    real_full = density._full
    monkeypatch.setattr(density, "_full", lambda conn, version: full_settles.append(1) or real_full(conn, version))
    report = vault.reindex()
    assert report.added == 600
    assert len(full_settles) == 1  # not once per batch
    _assert_exact(vault)
    vault.add("one more note about deploy and item3, written after the bulk")
    _assert_exact(vault)


def test_a_bulk_write_that_never_ended_is_computed_by_the_next_write(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_files(vault, _texts(300, "crash"))

    @contextmanager
    def killed_before_its_end(store: SqliteStore) -> Iterator[None]:
        density.DEFERRED.add(store.conn)
        yield  # the process dies here: no end, and the flag dies with it

    monkeypatch.setattr(SqliteStore, "bulk_writes", killed_before_its_end)
    vault.reindex()
    density.DEFERRED.discard(vault.backend.conn)
    monkeypatch.undo()
    assert _stored(vault.backend.conn) == {}  # nothing half-computed is trusted meanwhile
    vault.add("a note written after the interrupted reindex, about billing")
    _assert_exact(vault)
