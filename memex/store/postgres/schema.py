"""The PostgreSQL index's tables, text search configuration and indexes.

The rows are those of the SQLite index (``memex/store/sqlite/schema.py``), with two changes
that PostgreSQL makes natural:

* full text lives in ``memories.fts`` (a ``tsvector`` with a GIN index)
  instead of an FTS5 table. memex tokenizes first, as for FTS5
  (:func:`memex.text.fts_document`: English words, CJK character bigrams),
  and the lexemes stored are FTS5's own tokens of that text, cut and
  stemmed by FTS5's porter tokenizer (:mod:`.lexemes`; the ``memex``
  configuration of step 1 is no longer used to write). ``fts_len`` is the
  token count BM25 needs;
* vectors are pgvector columns (``memory_vec``, ``chunks.embedding``) with
  HNSW indexes (cosine), created once the model, and so the dimension, is
  known (:func:`ensure_vectors`).

The schema grows in numbered steps recorded in ``meta.schema_version``,
applied under the write lock so that many processes can open a new
database at once.
"""

from __future__ import annotations

from collections.abc import Callable

from memex.errors import IndexStoreError, SchemaTooNew
from memex.store import facts, nearest
from memex.store.postgres import density, lexemes
from memex.store.postgres.connection import PgConnection, open_connection

TS_CONFIG = "memex"


def _step1(conn: PgConnection) -> None:
    conn.execute(
        f"""
        CREATE TEXT SEARCH DICTIONARY memex_stem (TEMPLATE = snowball, Language = english);
        CREATE TEXT SEARCH CONFIGURATION {TS_CONFIG} (COPY = simple);
        ALTER TEXT SEARCH CONFIGURATION {TS_CONFIG}
            ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part
            WITH memex_stem;
        CREATE TABLE memories (
            rowid BIGSERIAL PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            path TEXT NOT NULL UNIQUE,
            scope TEXT NOT NULL,
            source TEXT,
            session TEXT,
            source_ref TEXT,
            category TEXT,
            confidence DOUBLE PRECISION NOT NULL,
            created TEXT NOT NULL,
            supersedes TEXT,
            superseded_by TEXT,
            status TEXT NOT NULL,
            body TEXT NOT NULL,
            body_hash TEXT NOT NULL,
            file_hash TEXT NOT NULL,
            size BIGINT NOT NULL,
            mtime_ns BIGINT NOT NULL,
            embed_key TEXT,
            embedded INTEGER NOT NULL DEFAULT 0,
            racy INTEGER NOT NULL DEFAULT 0,
            fts TSVECTOR NOT NULL,
            fts_len INTEGER NOT NULL
        );
        CREATE INDEX memories_scope_hash ON memories(scope, body_hash);
        CREATE INDEX memories_hash ON memories(body_hash);
        CREATE INDEX memories_session ON memories(session);
        CREATE INDEX memories_source ON memories(source, source_ref);
        CREATE INDEX memories_fts ON memories USING gin(fts) WITH (fastupdate = off);
        -- Totals BM25 needs (documents, tokens), kept by every write under the write lock.
        CREATE TABLE fts_totals (one INTEGER PRIMARY KEY CHECK (one = 1), docs BIGINT NOT NULL, tokens BIGINT NOT NULL);
        INSERT INTO fts_totals VALUES (1, 0, 0);
        CREATE TABLE chunks (
            rowid BIGSERIAL PRIMARY KEY,
            memory_rowid BIGINT NOT NULL,
            seq INTEGER NOT NULL,
            text_hash TEXT NOT NULL
        );
        CREATE INDEX chunks_memory ON chunks(memory_rowid);
        CREATE INDEX chunks_hash ON chunks(text_hash);
        CREATE INDEX memories_embed_key ON memories(embed_key);
        CREATE TABLE embedding_cache (
            model TEXT NOT NULL,
            text_hash TEXT NOT NULL,
            vector BYTEA NOT NULL,
            PRIMARY KEY (text_hash, model)
        );
        CREATE TABLE usage (
            memory_id TEXT PRIMARY KEY,
            access_count INTEGER NOT NULL DEFAULT 0,
            last_access TEXT
        );
        CREATE TABLE index_errors (
            path TEXT PRIMARY KEY,
            reason TEXT NOT NULL,
            size BIGINT,
            mtime_ns BIGINT
        );
        CREATE TABLE entities (
            rowid BIGSERIAL PRIMARY KEY,
            key TEXT NOT NULL UNIQUE,
            name TEXT NOT NULL
        );
        CREATE TABLE entity_links (
            entity_rowid BIGINT NOT NULL,
            memory_rowid BIGINT NOT NULL,
            PRIMARY KEY (entity_rowid, memory_rowid)
        );
        CREATE INDEX entity_links_memory ON entity_links(memory_rowid);
        CREATE TABLE relations (
            rowid BIGSERIAL PRIMARY KEY,
            subject_rowid BIGINT NOT NULL,
            predicate TEXT NOT NULL,
            object_rowid BIGINT NOT NULL,
            memory_rowid BIGINT NOT NULL
        );
        CREATE INDEX relations_memory ON relations(memory_rowid);
        """
    )
    # ANALYZE (autovacuum runs it unasked) copies sample values of each
    # column into pg_statistic: most common values and histograms of the
    # body, its lexemes, paths... An erased memory's text would live on
    # there, outside every table memex purges. Columns that hold a memory's
    # text or names get no statistics (docs/postgres.md, erasure).
    for table, columns in _NO_STATISTICS.items():
        for column in columns:
            conn.execute(f"ALTER TABLE {table} ALTER COLUMN {column} SET STATISTICS 0")


_NO_STATISTICS = {
    "memories": ("id", "path", "session", "source_ref", "supersedes", "superseded_by", "body", "body_hash",
                 "file_hash", "embed_key", "fts"),
    "chunks": ("text_hash",),
    "embedding_cache": ("text_hash", "vector"),
    "usage": ("memory_id",),
    "index_errors": ("path", "reason"),
    "entities": ("key", "name"),
    "relations": ("predicate",),
}


def _step_erased_ids(conn: PgConnection) -> None:
    """The ids of erased memories, shared by every clone: a clone that has not
    pulled an erasure yet (its erased list is git's) must not index the
    memory back from its old copy of the file (docs/postgres.md). Ids only,
    as the audit log keeps them: no text."""
    conn.execute("CREATE TABLE erased_ids (id TEXT PRIMARY KEY)")
    conn.execute("ALTER TABLE erased_ids ALTER COLUMN id SET STATISTICS 0")


def _step_postings(conn: PgConnection) -> None:
    """Per-term document counts and impact-ordered postings, so BM25 top-k
    stops early (memex/store/postgres/postings.py, docs/postgres.md)."""
    from memex.store.postgres import postings

    postings.create(conn)


def _step_density(conn: PgConnection) -> None:
    """Each memory's neighbourhood density, kept by every vector write as
    SQLite's is (:mod:`.density`): computed here for the vectors already stored."""
    density.rebuild(conn)


def _step_words(conn: PgConnection) -> None:
    """Full text cut and stemmed by FTS5's own tokenizer, as SQLite's index is
    (:mod:`.lexemes`, docs/postgres.md "Words"): every memory's words again,
    and the postings derived from them once at the end (not row by row by
    their trigger)."""
    from memex.store.postgres import postings

    postings.bulk_mode(conn)
    lexemes.rebuild(conn)
    postings.rebuild(conn)


def _step_no_reference_copy(conn: PgConnection) -> None:
    """As SQLite's step 6: R's vectors are read from ``memory_vec`` by rowid
    and kept in memory (:mod:`memex.store.density`), not copied into
    ``density_reference``; and ``memories_hash`` goes (every lookup by body
    hash also names the scope: ``memories_scope_hash`` serves it)."""
    conn.execute("DROP TABLE IF EXISTS density_reference")
    conn.execute("DROP INDEX IF EXISTS memories_hash")


def _step_shorter_lists(conn: PgConnection) -> None:
    """As SQLite's step 7: no density column (computed from the list when
    read) and lists cut to ``nearest.DEPTH`` cosines (a sorted list's
    first DEPTH are what computing it afresh gives)."""
    conn.execute("ALTER TABLE memory_density DROP COLUMN IF EXISTS density")
    conn.execute("UPDATE memory_density SET neighbours = substring(neighbours from 1 for %s) "
                 "WHERE length(neighbours) > %s", (4 * nearest.DEPTH, 4 * nearest.DEPTH))


def _step_facts(conn: PgConnection) -> None:
    """As SQLite's step 9: what search's rule needs about a memory, kept at
    write time (memex/store/facts.py): whether it asks, its neighbours in its
    session (ordered as SQLite orders them: bytes, ``COLLATE "C"``)."""
    conn.execute("ALTER TABLE memories ADD COLUMN IF NOT EXISTS asks INTEGER NOT NULL DEFAULT 0")
    conn.execute("ALTER TABLE memories ADD COLUMN IF NOT EXISTS before_rowid BIGINT")
    conn.execute("ALTER TABLE memories ADD COLUMN IF NOT EXISTS after_rowid BIGINT")
    conn.execute('CREATE INDEX IF NOT EXISTS memories_session_order '
                 'ON memories(session, created COLLATE "C", id COLLATE "C")')
    conn.execute("DROP INDEX IF EXISTS memories_session")
    asking = facts.asking(conn.execute("SELECT rowid, body FROM memories WHERE body ~ '[?？]\\s*$'").fetchall())
    with conn.raw.cursor() as cur:
        cur.executemany(facts.POSTGRES.set_asks, asking)
    facts.relink_all(conn.execute, facts.POSTGRES)


# Each step moves the schema from version N-1 to N. Append, never edit.
MIGRATIONS: list[Callable[[PgConnection], None]] = [
    _step1, _step_erased_ids, _step_postings, _step_density, _step_words, _step_no_reference_copy,
    _step_shorter_lists, _step_facts,
]
SCHEMA_VERSION = len(MIGRATIONS)

# Every table that holds a memory's text or a trace of it: what a purge VACUUMs.
TABLES = (
    "memories", "memory_vec", "chunks", "chunk_vec", "embedding_cache", "usage", "index_errors",
    "entities", "entity_links", "relations", "fts_totals", "fts_postings", "fts_terms",
    "memory_density",
)


def connect(url: str) -> PgConnection:
    """Open the index at ``url`` and bring its schema up to date."""
    import psycopg

    conn = open_connection(url)
    try:
        migrate(conn)
    except psycopg.Error as exc:
        conn.close()
        raise IndexStoreError(f"[index] url: cannot set up the PostgreSQL index: {str(exc).strip()}") from exc
    except BaseException:
        conn.close()
        raise
    return conn


def migrate(conn: PgConnection) -> None:
    with conn.write_txn():
        conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)")
        version = int(get_meta(conn, "schema_version") or 0)
        if version > SCHEMA_VERSION:
            raise SchemaTooNew(
                f"{conn.raw.info.dbname}: schema version {version} is newer than this memex "
                f"({SCHEMA_VERSION}); upgrade memex"
            )
        for step in MIGRATIONS[version:]:
            step(conn)
        if version != SCHEMA_VERSION:
            set_meta(conn, "schema_version", str(SCHEMA_VERSION))


def get_meta(conn: PgConnection, key: str) -> str | None:
    row = conn.execute("SELECT value FROM meta WHERE key = %s", (key,)).fetchone()
    return None if row is None or row[0] is None else str(row[0])


def set_meta(conn: PgConnection, key: str, value: str) -> None:
    conn.execute(
        "INSERT INTO meta(key, value) VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        (key, value),
    )


def ensure_vectors(conn: PgConnection, model: str, dim: int) -> bool:
    """Create the vector tables for ``model``; drop old ones if the model changed.

    Returns True when existing vectors were discarded (memories must be
    embedded again), as :func:`memex.store.sqlite.schema.ensure_vector_tables` does.
    """
    if get_meta(conn, "vector_model") == model and get_meta(conn, "vector_dim") == str(dim):
        return False
    with conn.write_txn():
        have_model, have_dim = get_meta(conn, "vector_model"), get_meta(conn, "vector_dim")
        if have_model == model and have_dim == str(dim):
            return False
        conn.execute("DROP TABLE IF EXISTS memory_vec")
        conn.execute("DROP TABLE IF EXISTS chunk_vec")
        conn.execute(f"CREATE TABLE memory_vec (rowid BIGINT PRIMARY KEY, embedding vector({int(dim)}) NOT NULL)")
        conn.execute(f"CREATE TABLE chunk_vec (rowid BIGINT PRIMARY KEY, embedding vector({int(dim)}) NOT NULL)")
        for table in ("memory_vec", "chunk_vec"):  # no sampled vectors in pg_statistic either (see _step1)
            conn.execute(f"ALTER TABLE {table} ALTER COLUMN embedding SET STATISTICS 0")
        create_vector_indexes(conn)
        density.clear(conn)  # derived from the vectors just dropped
        conn.execute("UPDATE memories SET embedded = 0")
        set_meta(conn, "vector_model", model)
        set_meta(conn, "vector_dim", str(dim))
    return have_model is not None


def create_vector_indexes(conn: PgConnection) -> None:
    """The HNSW indexes (cosine). A bulk load drops them and builds them
    once at the end (:func:`drop_vector_indexes`), which is much faster than
    inserting into the graph row by row."""
    conn.execute("CREATE INDEX IF NOT EXISTS memory_vec_hnsw ON memory_vec USING hnsw (embedding vector_cosine_ops)")
    conn.execute("CREATE INDEX IF NOT EXISTS chunk_vec_hnsw ON chunk_vec USING hnsw (embedding vector_cosine_ops)")


def drop_vector_indexes(conn: PgConnection) -> None:
    conn.execute("DROP INDEX IF EXISTS memory_vec_hnsw")
    conn.execute("DROP INDEX IF EXISTS chunk_vec_hnsw")
