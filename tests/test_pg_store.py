"""The index on PostgreSQL + pgvector against a real server (tests/pgkit.py):
the same rows, answers, purge and erased-list rule as the SQLite index.

Each test reaches PostgreSQL as a vault does (memex/store/postgres/backend.py):
a second ``Vault`` on the same files with ``[index] backend = "postgres"``,
whose indexer indexes them into the shared index with the same code as the
SQLite index (``Indexer.follow``)."""

from __future__ import annotations

import multiprocessing
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from memex.search import hybrid as sqlite_search
from memex.config import load_config
from memex.erase.steps import erase
from memex.index.indexer import Indexer
from memex.search.hybrid import Filters
from memex.vault import Vault
from tests.conftest import use_postgres
from tests.fakes import HashEmbedder

FACTS = [
    ("project:memex", "We deploy the api with blue green releases on Kubernetes"),
    ("project:memex", "The database migrations run through alembic before each release"),
    ("project:memex", "Use pytest fixtures for the PostgreSQL integration tests"),
    ("user", "I prefer tabs over spaces in Go code"),
    ("user", "Dark mode in every editor, light mode never"),
    ("project:memex", "The cache layer is Redis with a 5 minute TTL"),
    ("project:memex", "Search uses hybrid ranking: BM25 plus cosine similarity"),
    ("user", "我喜欢用深色主题写代码"),
    ("project:memex", "数据库迁移在每次发布之前运行"),
    ("project:memex", "Erasure must remove every derived trace of a memory"),
    ("user", "Coffee at 9, no meetings before 10"),
    ("project:memex", "The release train leaves every Tuesday at noon"),
]
QUERIES = [
    "how do we deploy", "database migrations", "tabs or spaces", "dark mode", "redis ttl",
    "hybrid search ranking", "深色主题", "数据库迁移", "erasure trace", "release tuesday", "meetings",
    "the", "kubernetes blue green",
]


@pytest.fixture
def filled(vault: Vault) -> Vault:
    for scope, body in FACTS:
        vault.add(body, scope=scope, source="user")
    return vault


@contextmanager
def _pg(vault: Vault, url: str) -> Iterator[Vault]:
    """``vault``'s files as a clone on PostgreSQL sees them (``vault`` itself
    stays on SQLite: its settings were read when it opened)."""
    use_postgres(vault.root, url)
    with Vault(vault.root, embedder=vault.embedder) as pg:
        yield pg


def _conn(pg: Vault) -> Any:
    return pg.store.conn  # type: ignore[attr-defined]  # the PgStore's connection


def _follower_sync(pg: Vault) -> Any:
    """A whole sync of the shared index alone, as the vault's indexer runs it after its own."""
    return Indexer(pg.root, pg.store, pg.config, pg.embedder, borrow=pg.local_store).sync(lost=[])


def test_bm25_equals_fts5(filled: Vault, pg_url: str) -> None:
    """The lexical score is FTS5's BM25, so fusion and the floor see the same numbers."""
    from memex.store.postgres import query

    with _pg(filled, pg_url) as pg:
        pg.reindex()
        assert pg.store.memory_count() == len(FACTS)
        by_id = {str(i): int(r) for r, i in _conn(pg).execute("SELECT rowid, id FROM memories")}
        compared = 0
        for q in QUERIES:
            lite = sqlite_search.candidates(filled.store, None, q, 100).lexical
            lite_ids = {str(filled.backend.conn.execute("SELECT id FROM memories WHERE rowid = ?", (r,)).fetchone()[0]): s
                        for r, s in lite.items()}
            pg_scores = query.bm25_top(_conn(pg), q, Filters(), 100)
            pg_ids = {i: pg_scores[r] for i, r in by_id.items() if r in pg_scores}
            assert set(pg_ids) == set(lite_ids), q
            for memory_id, score in lite_ids.items():
                assert pg_ids[memory_id] == pytest.approx(score, rel=1e-6), (q, memory_id)
                compared += 1
        assert compared >= len(QUERIES)


def test_same_answers_as_sqlite(filled: Vault, pg_url: str) -> None:
    with _pg(filled, pg_url) as pg:
        pg.reindex()
        for q in QUERIES:
            for scope in (None, "project:memex"):
                lite = filled.search(q, limit=5, scope=scope)
                post = pg.search(q, limit=5, scope=scope)
                # The same memories with the same scores, rank by rank; cosines
                # differ in the last float32 bits, so exact ties may swap.
                assert len(post) == len(lite) and lite, (q, scope)
                assert {h.id for h in post} == {h.id for h in lite}, (q, scope)
                for a, b in zip(lite, post):
                    assert (b.score, b.lexical) == pytest.approx((a.score, a.lexical), abs=1e-5), (q, a.id, b.id)
                    if abs(a.score - b.score) < 1e-5 and a.id != b.id:
                        assert any(abs(h.score - a.score) < 1e-5 for h in post if h.id == a.id)


def test_sync_follows_edits_and_deletes(filled: Vault, pg_url: str) -> None:
    with _pg(filled, pg_url) as pg:
        pg.reindex()
        hit = filled.search("redis ttl", limit=1)[0]
        path = filled.root / hit.path
        path.write_text(path.read_text().replace("5 minute", "15 minute"))
        gone = filled.search("coffee meetings", limit=1)[0]
        (filled.root / gone.path).unlink()
        report = pg.reindex()
        assert (report.updated, report.removed, report.added) == (1, 1, 0)
        row = pg.store.row_by_id(hit.id)
        assert row is not None and "15 minute" in row.body
        assert pg.store.row_by_id(gone.id) is None
        assert pg.store.memory_count() == len(FACTS) - 1
        again = _follower_sync(pg)
        assert (again.unchanged, again.added, again.updated, again.removed) == (len(FACTS) - 1, 0, 0, 0)
        docs, tokens = _conn(pg).execute("SELECT docs, tokens FROM fts_totals").fetchone()
        assert (docs, tokens) == _conn(pg).execute("SELECT count(*), sum(fts_len) FROM memories").fetchone()


def test_purge_leaves_no_derived_row(filled: Vault, pg_url: str) -> None:
    body = "Decision about [[Kafka]] topics: partitions by tenant, long body " + " ".join(f"w{i}" for i in range(1500))
    added = filled.add(body, scope="project:memex", entities=["Kafka"])
    with _pg(filled, pg_url) as pg:
        pg.reindex()
        conn = _conn(pg)
        rowid = conn.execute("SELECT rowid FROM memories WHERE id = %s", (added.id,)).fetchone()[0]
        assert conn.execute("SELECT count(*) FROM chunks WHERE memory_rowid = %s", (rowid,)).fetchone()[0] > 1
        pg.record_access([added.id])
        assert pg.store.usage_of(added.id)[0] == 1
        result = pg.backend.purge([added.id])
        assert result.purged["memories"] == 1 and result.purged["chunks"] > 1 and result.purged["entities"] == 1
        assert result.purged["cache_entries"] >= 1 + result.purged["chunks"]
        for table, column in (("memory_vec", "rowid"), ("chunks", "memory_rowid"), ("entity_links", "memory_rowid"),
                              ("relations", "memory_rowid")):
            assert conn.execute(f"SELECT count(*) FROM {table} WHERE {column} = %s", (rowid,)).fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM entities WHERE key = 'kafka'").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM usage WHERE memory_id = %s", (added.id,)).fetchone()[0] == 0
        keys = conn.execute("SELECT count(*) FROM embedding_cache").fetchone()[0]
        used = conn.execute(
            "SELECT count(*) FROM embedding_cache c WHERE EXISTS (SELECT 1 FROM memories WHERE embed_key = c.text_hash) "
            "OR EXISTS (SELECT 1 FROM chunks WHERE text_hash = c.text_hash)"
        ).fetchone()[0]
        assert keys == used  # nothing cached for text no memory has
        assert added.id not in {h.id for h in pg.search("kafka partitions tenant")}
        assert result.vacuum["checkpoint"] is True


def test_erased_memory_is_never_indexed_again(filled: Vault, pg_url: str) -> None:
    hit = filled.search("redis ttl", limit=1)[0]
    copy = (filled.root / hit.path).read_bytes()
    with _pg(filled, pg_url) as pg:
        pg.reindex()
        erase(filled, hit.id, reason="test")  # on the SQLite vault: PostgreSQL not told
        assert pg.reindex().removed == 1
        (filled.root / hit.path).write_bytes(copy)  # restored from a backup
        report = pg.reindex()
        assert report.added == 0 and any("erased" in e["reason"] for e in report.errors)
        assert pg.store.row_by_id(hit.id) is None
        follower = _follower_sync(pg)
        assert follower.added == 0 and any("erased" in e["reason"] for e in follower.errors)
        assert pg.store.row_by_id(hit.id) is None


def _sync_clone(root: str, url: str) -> int:
    use_postgres(Path(root), url)
    with Vault(Path(root), embedder=HashEmbedder()) as clone:
        clone.reindex()
        return clone.store.memory_count()


def test_clones_share_one_index(filled: Vault, pg_url: str, tmp_path: Path) -> None:
    """Four processes, each with its own clone of the vault, sync into one database at once."""
    clones = []
    for n in range(4):
        clone = tmp_path / f"clone{n}"
        shutil.copytree(filled.root, clone)
        clones.append(str(clone))
    with multiprocessing.get_context("spawn").Pool(4) as pool:
        written = pool.starmap(_sync_clone, [(c, pg_url) for c in clones])
    assert written == [len(FACTS)] * 4  # each clone's sync left every memory in the shared index
    with _pg(filled, pg_url) as pg:
        assert pg.store.memory_count() == len(FACTS)
        conn = _conn(pg)
        docs, tokens = conn.execute("SELECT docs, tokens FROM fts_totals").fetchone()
        assert (docs, tokens) == conn.execute("SELECT count(*), sum(fts_len) FROM memories").fetchone()
        assert conn.execute("SELECT count(*) FROM memory_vec").fetchone()[0] == len(FACTS)


def test_config_names_backend_and_url(tmp_path: Path) -> None:
    from memex.errors import ConfigError

    (tmp_path / ".memex").mkdir()
    conf = tmp_path / ".memex" / "config.local.toml"  # this machine's own settings (memex/config_trust.py)
    assert load_config(tmp_path).index_backend == "sqlite"
    conf.write_text('[index]\nbackend = "postgres"\nurl = "postgresql:///memex"\n')
    assert (load_config(tmp_path).index_backend, load_config(tmp_path).index_url) == ("postgres", "postgresql:///memex")
    conf.write_text('[index]\nbackend = "postgres"\n')
    with pytest.raises(ConfigError, match="needs index.url"):
        load_config(tmp_path)
    conf.write_text('[index]\nbackend = "mysql"\n')
    with pytest.raises(ConfigError, match="index.backend must be one of sqlite, postgres, got 'mysql'"):
        load_config(tmp_path)


def test_unreachable_server_is_a_clear_error(tmp_path: Path) -> None:
    from memex.errors import IndexStoreError
    from memex.store.postgres import connect
    from tests import pgkit

    if pgkit.MISSING is not None:
        pytest.skip(pgkit.MISSING)

    with pytest.raises(IndexStoreError, match=r"\[index\] url: cannot connect to PostgreSQL"):
        connect(f"postgresql:///nope?host={tmp_path}&connect_timeout=2")


def test_a_row_left_by_a_failed_postgres_step_goes_at_the_next_sync(filled: Vault, pg_url: str) -> None:
    """The erasure's PostgreSQL step did not run (server down) and the file came
    back with its old bytes and mtime (cp -p from a backup): the next sync purges it."""
    import os

    hit = filled.search("redis ttl", limit=1)[0]
    path = filled.root / hit.path
    copy, st = path.read_bytes(), path.stat()
    with _pg(filled, pg_url) as pg:
        pg.reindex()
        erase(filled, hit.id, reason="test")  # this vault's backend is SQLite: PostgreSQL not told
        path.write_bytes(copy)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        report = pg.reindex()  # the shared index's indexer, or the sweep after it, purges the row
        assert any("erased" in e["reason"] for e in report.errors)
        assert pg.store.row_by_id(hit.id) is None
        assert hit.id not in {h.id for h in pg.search("redis ttl")}


def test_the_model_embeds_as_often_as_on_sqlite_alone(tmp_path: Path, pg_url: str) -> None:
    """The shared index is written after this clone's own with the vectors
    the clone just computed (its cache): adds, an edit and a reindex ask the
    model for the same texts on both backends, not twice as many."""
    from memex.vault import init_vault

    long_body = "Runbook for the ledger service. " + " ".join(f"step {i}: check shard {i % 7}." for i in range(400))
    embedded = {}
    for backend in ("sqlite", "postgres"):
        root = init_vault(tmp_path / backend, git=False)
        if backend == "postgres":
            use_postgres(root, pg_url)
        model = HashEmbedder()
        with Vault(root, embedder=model) as clone:
            added = clone.add("The nightly export runs at two and lands in the audit bucket", scope="user")
            clone.add(long_body, scope="user")  # long enough for chunk vectors
            path = clone.root / added.path
            path.write_text(path.read_text(encoding="utf-8").replace("at two", "at three"), encoding="utf-8")
            assert clone.reindex().updated == 1
            assert clone.store.memory_count() == 2 and clone.store.has_vectors()
            embedded[backend] = model.texts_embedded
    assert embedded["postgres"] == embedded["sqlite"] > 3, embedded
