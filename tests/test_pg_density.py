"""Densities on PostgreSQL (memex/store/postgres/density.py) hold the values
SQLite's hold (memex/store/density.py) after the same writes, moves, edits,
deletes, erasures, a rollback, another process's writes and a bulk load; and
search reads the same facts (densities among them) and answers alike on
both backends with the real model's ranking rule."""

from __future__ import annotations

from collections.abc import Iterator
import numpy as np
import pytest

from memex import text
from memex.embedding import embed
from memex.index.indexer import Indexer
from memex.store import IndexStore, SqliteStore
from memex.store import density as core
from memex.store.facts import Facts
from memex.store import Filters
from memex.store.postgres import bulk
from memex.store.postgres.schema import connect
from memex.store.postgres.store import PgStore
from memex.records import Record
from memex.vault import Vault
from tests.fakes import HashEmbedder

TOPICS = ["deploy", "billing", "lunch", "backup", "kafka", "python", "holiday", "review", "cache", "docs"]


def _texts(n: int, salt: str = "") -> list[str]:
    return [f"{TOPICS[i % len(TOPICS)]} note {i} {salt} about {TOPICS[(i * 3) % len(TOPICS)]} and item{i % 7}"
            for i in range(n)]


def _by_id(store: IndexStore) -> dict[str, float]:
    """Every stored density, keyed by memory id (rowids differ between backends)."""
    ids = {r.rowid: r.id for r in store.list_rows(Filters(include_superseded=True))}
    return {ids[r]: f.density for r, f in store.facts(list(ids)).items() if f.density is not None}


def _definition(store: IndexStore) -> dict[str, float]:
    """Mean cosine of each body vector to its K nearest others, computed here from the vectors
    (the definition while a vault holds at most S + 1 memories: every memory is in the reference set)."""
    ids = {r.rowid: r.id for r in store.list_rows(Filters(include_superseded=True))}
    rows = sorted((ids[r], embed.from_blob(b)) for r, _, b in store.all_memory_vectors())
    assert len(rows) <= core.S + 1
    m = np.stack([v for _, v in rows]).astype(np.float64)
    sims = m @ m.T
    np.fill_diagonal(sims, -np.inf)
    top = -np.sort(-sims, axis=1)[:, : core.K]
    return {i: float(top[n][np.isfinite(top[n])].mean()) for n, (i, _) in enumerate(rows)}


@pytest.fixture
def pair(vault: Vault, pg_url: str) -> Iterator[tuple[Vault, SqliteStore, PgStore, Indexer]]:
    pg = connect(pg_url)
    store = PgStore(pg)
    yield vault, vault.local_store, store, Indexer(vault.root, store, vault.config, vault.embedder)
    pg.close()


def _alike(s: IndexStore, p: IndexStore) -> None:
    got_s, got_p = _by_id(s), _by_id(p)
    assert got_s and got_s == got_p  # exactly: the same floats, so the same ties
    want = _definition(p)
    assert set(want) == set(got_p)
    for memory_id, value in want.items():
        assert got_p[memory_id] == pytest.approx(value, abs=1e-5), memory_id


def test_pg_densities_equal_sqlites_after_writes_moves_edits_and_erasures(
    pair: tuple[Vault, SqliteStore, PgStore, Indexer],
) -> None:
    vault, s, p, shared = pair
    added = [vault.add(t) for t in _texts(30)]
    shared.sync()
    _alike(s, p)
    for result in added[:4]:  # edits: new vectors
        path = vault.root / result.path
        path.write_text(path.read_text().replace("note", "changed text about zebra"), encoding="utf-8")
    for result in added[4:7]:  # deletes
        (vault.root / result.path).unlink()
    moved = vault.root / added[8].path
    moved.rename(moved.with_name("moved-" + moved.name))  # same vector, new path
    vault.reindex()
    report = shared.sync()
    assert (report.updated, report.removed, report.moved) == (4, 3, 1)
    _alike(s, p)
    gone = added[10].id
    rowid = p.rowids_by_ids([gone])[gone]
    with vault.store.write_txn():
        vault.store.purge_memory(vault.store.rowids_by_ids([gone])[gone])
    with p.write_txn():
        p.purge_memory(rowid)  # erasure's purge: its own row goes, its neighbours' lists follow
    assert p.conn.execute("SELECT count(*) FROM memory_density WHERE rowid = %s", (rowid,)).fetchone()[0] == 0
    _alike(s, p)


def test_a_rollback_leaves_them_and_another_processes_writes_are_seen(
    pair: tuple[Vault, SqliteStore, PgStore, Indexer], pg_url: str,
) -> None:
    vault, _, p, shared = pair
    for t in _texts(15):
        vault.add(t)
    shared.sync()
    before = _by_id(p)
    victim = p.rowids_by_ids([next(iter(before))])
    with pytest.raises(RuntimeError):
        with p.write_txn():
            p.purge_memory(next(iter(victim.values())))
            raise RuntimeError("abandoned")
    assert _by_id(p) == before
    other = connect(pg_url)  # another process: its settle bumps the epoch this one's copy was made at
    other_indexer = Indexer(vault.root, PgStore(other), vault.config, vault.embedder)
    for t in _texts(12, salt="from another process"):
        vault.add(t)
    other_indexer.sync()
    other.close()
    vault.add("a last note about kafka and lunch item2")
    shared.sync()
    _alike(vault.local_store, p)


def _record(i: int, body: str) -> Record:
    mid = f"b{i:04d}"
    return Record(
        path=f"memories/project/{mid}.md", id=mid, scope="project:x", source="user", session=None,
        source_ref=None, category=None, confidence=0.8, created="2026-01-01T00:00:00Z", supersedes=None,
        superseded_by=None, body=body, body_hash=text.body_hash(body), embed_text=body,
        file_hash=embed.text_key(f"file {body}"), size=len(body), mtime_ns=1_700_000_000_000_000_000 + i,
    )


def test_a_bulk_load_and_an_old_index_get_every_density(
    pair: tuple[Vault, SqliteStore, PgStore, Indexer],
) -> None:
    vault, s, p, _ = pair
    embedder = HashEmbedder()
    texts = _texts(25, salt="bulk")
    records = [(_record(i, t), embed.to_blob(v)) for i, (t, v) in enumerate(zip(texts, embedder.embed(texts)))]
    s.ensure_vectors(embedder.model_id, embedder.dim)
    with s.write_txn():  # the same rows, one by one, into SQLite
        for rec, blob in records:
            s.write_memory(None, rec, text.fts_document(rec.embed_text), (blob, []))
    p.ensure_vectors(embedder.model_id, embedder.dim)
    bulk.start(p.conn)
    assert bulk.load(p.conn, records[:10], embedder.model_id) == 10
    assert bulk.load(p.conn, records[10:], embedder.model_id) == 15
    bulk.finish(p.conn)
    _alike(s, p)
    with p.write_txn():  # an index from before the table: the migration computes them
        p.conn.execute("DROP TABLE memory_density")
        p.conn.execute("UPDATE meta SET value = '3' WHERE key = 'schema_version'")  # before the density step
    p.conn.close()
    again = PgStore(connect(p.conn.url))
    _alike(s, again)
    again.conn.close()


def test_an_older_index_loses_the_reference_copy_and_the_density_column_and_stays_alike(
    pair: tuple[Vault, SqliteStore, PgStore, Indexer], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The schema steps after the density one: R's vectors are no longer copied
    (``density_reference`` goes, with ``memories_hash``), the density column
    goes and lists keep ``nearest.DEPTH`` cosines; densities stay SQLite's."""
    from memex.store import nearest

    vault, s, p, shared = pair
    with monkeypatch.context() as patch:
        patch.setattr(nearest, "DEPTH", 20)
        for t in _texts(24):
            vault.add(t)
        shared.sync()
    core.forget(vault.backend.conn)  # lists held in memory at the old DEPTH (a process never changes it)
    with p.write_txn():
        p.conn.execute("CREATE TABLE density_reference (rowid BIGINT PRIMARY KEY, embedding BYTEA NOT NULL)")
        p.conn.execute("CREATE INDEX memories_hash ON memories(body_hash)")
        p.conn.execute("ALTER TABLE memory_density ADD COLUMN density DOUBLE PRECISION NOT NULL DEFAULT 0")
        p.conn.execute("UPDATE meta SET value = '5' WHERE key = 'schema_version'")
    assert p.conn.execute("SELECT max(length(neighbours)) FROM memory_density").fetchone()[0] == 4 * 20
    p.conn.close()
    again = PgStore(connect(p.conn.url))
    gone = again.conn.execute("SELECT to_regclass('density_reference'), to_regclass('memories_hash')").fetchone()
    assert gone == (None, None)
    columns = {r for (r,) in again.conn.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = 'memory_density'")}
    assert columns == {"rowid", "neighbours", "key"}
    assert again.conn.execute("SELECT max(length(neighbours)) FROM memory_density").fetchone()[0] == 4 * nearest.DEPTH
    _alike(s, again)
    vault.add("a note after the upgrade about lunch and item2")
    Indexer(vault.root, again, vault.config, vault.embedder).sync()
    _alike(s, again)
    again.conn.close()


@pytest.mark.model
def test_search_reads_the_same_facts_and_answers_alike(model_vault: Vault, pg_url: str) -> None:
    """Ranking's facts (densities among them, which the multilingual model's
    hub prior reads) are the same on both backends, and search answers alike."""
    from memex.search.hybrid import search

    crowd = [f"deploy window sounds good to me {w}" for w in ("ok", "sure", "yes", "fine", "great", "agreed",
                                                            "right", "cool", "yep", "noted", "thanks", "nice")]
    for text in crowd:
        model_vault.add(text, session="s1")
    model_vault.add("the deploy window is Tuesday 14:00 UTC after the freeze", session="s1")
    for text in ("Backups of the ledger run every night at two", "The cache layer is Redis with a 5 minute TTL",
                 "Do we deploy the api with blue green releases on Kubernetes?"):
        model_vault.add(text, session="s2")
    pg = connect(pg_url)
    store = PgStore(pg)
    Indexer(model_vault.root, store, model_vault.config, model_vault.embedder).sync()
    lite_store = model_vault.local_store
    assert _by_id(lite_store) == _by_id(store)
    ids = {r.id: r.rowid for r in lite_store.list_rows(Filters())}
    pg_ids = {r.id: r.rowid for r in store.list_rows(Filters())}
    lite_facts, pg_facts = lite_store.facts(list(ids.values())), store.facts(list(pg_ids.values()))
    lite_id = {v: k for k, v in ids.items()}
    pg_id = {v: k for k, v in pg_ids.items()}

    def named(facts: dict[int, Facts], name: dict[int, str]) -> dict[str, tuple[object, ...]]:
        return {name[r]: (f.asks, name.get(f.before) if f.before else None, name.get(f.after) if f.after else None,
                          f.density) for r, f in facts.items()}

    assert named(lite_facts, lite_id) == named(pg_facts, pg_id)
    assert any(f.asks for f in lite_facts.values()) and any(f.before for f in lite_facts.values())
    for query in ("is the deploy window good for everyone", "when is the deploy window", "ledger backups",
                  "redis ttl", "sounds good"):
        lite = model_vault.search(query, limit=5)
        post = search(store, model_vault.embedder, query, limit=5)
        assert [h.id for h in post] == [h.id for h in lite], query
        for a, b in zip(lite, post):
            assert b.score == pytest.approx(a.score, abs=1e-5), (query, a.id)
    pg.close()


def test_a_sync_of_many_files_computes_them_once_at_its_end(
    pair: tuple[Vault, SqliteStore, PgStore, Indexer], monkeypatch: pytest.MonkeyPatch,
) -> None:
    from memex.index import indexer as indexer_module
    from memex.store.postgres import density

    vault, s, p, shared = pair
    monkeypatch.setattr(indexer_module, "BATCH", 8)  # 30 files: four batches, so a bulk write
    for t in _texts(30, salt="many"):
        vault.add(t)
    full = []
    settle = density.recompute_all
    monkeypatch.setattr(density, "recompute_all", lambda conn: full.append(1) or settle(conn))
    shared.sync()
    assert full == [1]  # one full settle, at the end
    _alike(s, p)
