"""Impact-ordered postings and per-term document counts beside the ``tsvector``.

BM25 top-k over the GIN index must score every document holding a query
term: a query made only of common words scores a large share of the index
(docs/postgres.md, benchmark). These two tables let
:mod:`memex.store.postgres.bm25` stop early instead:

* ``fts_terms(lexeme, docs)``: how many memories hold each lexeme (BM25's n),
  read in one index probe per term instead of counted over every match;
* ``fts_postings(lexeme, ord, rowid, tf, len)``: one row per (lexeme,
  memory), read through the index ``(lexeme, ord, rowid)`` best first.
  ``ord = (c + len) / tf``, with ``c`` = a third of the average document
  length when the postings were last rebuilt (``fts_totals.ord_c``): BM25's
  term weight ``tf / (tf + 1.2 * (0.25 + 0.75 * len / avgdl))`` falls as
  ``(avgdl / 3 + len) / tf`` grows, so while ``c`` is close to
  ``avgdl / 3`` the index order is the score order, and when the average
  drifts the bound in :func:`memex.store.postgres.bm25.term_bound` stays
  an upper bound (it only loosens). A second index ``(rowid, lexeme)``
  gives a memory's postings of the query terms when it is rescored.

Both tables are derived from ``memories.fts`` and kept exact by a trigger on
``memories`` (insert, delete, a change of ``fts`` or ``fts_len``), so every
write path, including ones that do not know about them, keeps them right,
and a purge of a memory deletes its postings and the count rows of lexemes
no other memory holds in the same transaction. A bulk load into an empty
index switches the trigger off for its own transactions
(``SET LOCAL memex.bulk_load = on``) and calls :func:`rebuild` at the end.
Row triggers do not fire on ``TRUNCATE``: code that empties ``memories``
that way must call :func:`rebuild` too.
"""

from __future__ import annotations

from memex.store.postgres.connection import PgConnection

# The term frequency of a lexeme in a memory: its stored positions, as the
# BM25 queries read it (a stripped tsvector would have none: count 1).
TF = "coalesce(array_length({u}.positions, 1), 1)"
ORD = "({c} + {length})::float8 / " + TF

_TRIGGER = f"""
CREATE FUNCTION memex_fts_postings() RETURNS trigger LANGUAGE plpgsql AS $fn$
BEGIN
    IF current_setting('memex.bulk_load', true) = 'on' THEN
        RETURN NULL;
    END IF;
    IF TG_OP = 'UPDATE' AND NEW.fts = OLD.fts AND NEW.fts_len = OLD.fts_len AND NEW.rowid = OLD.rowid THEN
        RETURN NULL;
    END IF;
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        DELETE FROM fts_postings p USING unnest(OLD.fts) u, fts_totals t
        WHERE p.lexeme = u.lexeme AND p.rowid = OLD.rowid
          AND p.ord = {ORD.format(c="t.ord_c", length="OLD.fts_len", u="u")};
        UPDATE fts_terms f SET docs = f.docs - 1 FROM unnest(OLD.fts) u WHERE f.lexeme = u.lexeme;
        DELETE FROM fts_terms WHERE docs <= 0 AND lexeme = ANY(tsvector_to_array(OLD.fts));
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') THEN
        INSERT INTO fts_postings(lexeme, ord, rowid, tf, len)
        SELECT u.lexeme, {ORD.format(c="t.ord_c", length="NEW.fts_len", u="u")}, NEW.rowid,
               {TF.format(u="u")}, NEW.fts_len
        FROM unnest(NEW.fts) u, fts_totals t;
        INSERT INTO fts_terms(lexeme, docs) SELECT u.lexeme, 1 FROM unnest(NEW.fts) u
        ON CONFLICT (lexeme) DO UPDATE SET docs = fts_terms.docs + 1;
    END IF;
    RETURN NULL;
END
$fn$;
CREATE TRIGGER memories_fts_postings AFTER INSERT OR DELETE OR UPDATE OF fts, fts_len, rowid ON memories
    FOR EACH ROW EXECUTE FUNCTION memex_fts_postings();
"""

_INDEXES = (
    # Each term's postings best first: what the early stop reads.
    "CREATE INDEX IF NOT EXISTS fts_postings_order ON fts_postings(lexeme, ord, rowid) INCLUDE (tf, len)",
    # A memory's postings: what rescoring a candidate reads (an index-only
    # probe instead of the memory's row and whole tsvector).
    "CREATE INDEX IF NOT EXISTS fts_postings_doc ON fts_postings(rowid, lexeme) INCLUDE (tf, len)",
)


def create_indexes(conn: PgConnection) -> None:
    for sql in _INDEXES:
        conn.execute(sql)


def create(conn: PgConnection) -> None:
    """The tables, their index and the trigger (a schema step; then :func:`rebuild`)."""
    conn.execute("ALTER TABLE fts_totals ADD COLUMN ord_c DOUBLE PRECISION NOT NULL DEFAULT 4")
    conn.execute("CREATE TABLE fts_terms (lexeme TEXT PRIMARY KEY, docs BIGINT NOT NULL)")
    conn.execute(
        "CREATE TABLE fts_postings (lexeme TEXT NOT NULL, ord DOUBLE PRECISION NOT NULL, rowid BIGINT NOT NULL, "
        "tf INTEGER NOT NULL, len INTEGER NOT NULL)"
    )
    # The lexemes are a memory's words: no sampled copies in pg_statistic (see schema._step1).
    conn.execute("ALTER TABLE fts_terms ALTER COLUMN lexeme SET STATISTICS 0")
    conn.execute("ALTER TABLE fts_postings ALTER COLUMN lexeme SET STATISTICS 0")
    conn.execute(_TRIGGER)
    rebuild(conn)


def rebuild(conn: PgConnection, ord_c: float | None = None) -> None:
    """Derive both tables anew from ``memories.fts`` (inside the caller's write
    transaction), with ``c`` set from today's average length (or ``ord_c``).
    The index is built once after the rows, much faster than row by row."""
    drop_indexes(conn)
    conn.execute("TRUNCATE fts_postings, fts_terms")
    if ord_c is None:
        conn.execute("UPDATE fts_totals SET ord_c = greatest(tokens::float8 / greatest(docs, 1), 1) / 3")
    else:
        conn.execute("UPDATE fts_totals SET ord_c = %s", (float(ord_c),))
    conn.execute(
        "INSERT INTO fts_postings(lexeme, ord, rowid, tf, len) "
        f"SELECT u.lexeme, {ORD.format(c='t.ord_c', length='m.fts_len', u='u')}, m.rowid, {TF.format(u='u')}, "
        "m.fts_len FROM memories m, unnest(m.fts) u, fts_totals t"
    )
    conn.execute("INSERT INTO fts_terms(lexeme, docs) SELECT lexeme, count(*) FROM fts_postings GROUP BY lexeme")
    create_indexes(conn)


# Re-derive the postings when the average length has drifted this far from 3c,
# once there are enough memories for the average to mean something: a stale
# c keeps answers exact but loosens the early stop's bound. Not beyond
# RETUNE_UPTO memories, where one write would pay for rewriting millions of
# postings (a bulk load or `rebuild` sets c there; the average moves slowly).
RETUNE_DRIFT = 0.2
RETUNE_FROM = 50
RETUNE_UPTO = 50_000


def retune(conn: PgConnection, docs: int, tokens: int, ord_c: float) -> bool:
    """After a write (inside its transaction): :func:`rebuild` if ``c`` no
    longer fits the average length. Returns True when it did."""
    target = max(tokens / max(docs, 1), 1.0) / 3
    if not RETUNE_FROM <= docs <= RETUNE_UPTO or abs(ord_c - target) <= RETUNE_DRIFT * target:
        return False
    rebuild(conn)
    return True


def bulk_mode(conn: PgConnection) -> None:
    """Skip the trigger for the rest of the caller's transaction (a bulk load, which ends with :func:`rebuild`)."""
    conn.execute("SET LOCAL memex.bulk_load = 'on'")


def drop_indexes(conn: PgConnection) -> None:
    conn.execute("DROP INDEX IF EXISTS fts_postings_order")
    conn.execute("DROP INDEX IF EXISTS fts_postings_doc")
