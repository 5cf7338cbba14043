"""Full text on PostgreSQL cuts and stems words as FTS5 does
(memex/store/postgres/lexemes.py): the words where PostgreSQL's own parser
and Snowball stemmers differ from FTS5's porter find the same memories with
the same BM25 scores on both backends, and an index whose words PostgreSQL
stemmed gets them again at its schema step."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memex.index.indexer import Indexer
from memex.store import SqliteStore
from memex.store import Filters
from memex.store.postgres import lexemes
from memex.store.postgres.schema import connect
from memex.store.postgres.store import PgStore
from memex.vault import Vault

BODIES = [
    "The nightly build runs at two and reports to the night shift.",  # english: nightly -> night
    "Assembly of the release notes is manual; the assembler script is not.",  # porter: assembly -> assembli
    "It is what it is, as far as we can tell, vs the other option.",  # two-letter words: is -> i
    "The threshold is 0.008 for the 0.01 step; bench.py measures it.",  # dotted tokens: FTS5 splits them
    "Commit 53e808b moved the 30s timeout into the e5embedder module.",  # hex and digit-letter words
    "Tomás reviewed the café menu with Zoë.",  # diacritics removed by FTS5
    "Backups of the ledger run every night at two, nightly reports follow.",
    "We assemble the parts nightly and ship them in the morning.",
]
# Not "0.008" or "bench.py" as a query: FTS5 looks those up as phrases of two
# tokens, PostgreSQL as either token (docs/postgres.md, "Words").
QUERIES = ["nightly", "night", "assembly", "assembler", "is", "as", "vs", "008", "bench", "py", "53e808b",
           "30s", "timeout", "e5embedder", "tomas", "café", "zoe", "two", "the nightly assembly"]


@pytest.fixture
def pair(vault: Vault, pg_url: str) -> Iterator[tuple[SqliteStore, PgStore, Indexer]]:
    for body in BODIES:
        vault.add(body)
    pg = connect(pg_url)
    store = PgStore(pg)
    indexer = Indexer(vault.root, store, vault.config, vault.embedder)
    indexer.sync()
    yield vault.local_store, store, indexer
    pg.close()


def _top(store: SqliteStore | PgStore, query: str) -> dict[str, float]:
    ids = {r.rowid: r.id for r in store.list_rows(Filters(include_superseded=True))}
    return {ids[r]: round(s, 6) for r, s in store.fts_top(query, 20)}


def _assert_alike(s: SqliteStore, p: PgStore) -> None:
    found = 0
    for query in QUERIES:
        want = _top(s, query)
        assert _top(p, query) == want, query
        found += bool(want)
    assert found >= len(QUERIES) - 1  # the queries do find memories: the comparison means something


def test_words_postgresql_would_cut_or_stem_otherwise_answer_alike(
    pair: tuple[SqliteStore, PgStore, Indexer],
) -> None:
    s, p, _ = pair
    _assert_alike(s, p)
    # Document lengths are FTS5's token counts (bench.py is two tokens), as BM25 divides by them.
    lengths = {str(i).strip(): int(n) for i, n in p.conn.execute("SELECT body, fts_len FROM memories")}
    assert lengths[BODIES[3]] == len(lexemes.stems(BODIES[3])) > len(BODIES[3].split())


def test_an_index_stemmed_by_postgresql_gets_fts5s_words_at_its_schema_step(
    pair: tuple[SqliteStore, PgStore, Indexer],
) -> None:
    s, p, _ = pair
    with p.write_txn():  # as the earlier schema left them: PostgreSQL's parser and Snowball English
        p.conn.execute("UPDATE memories SET fts = to_tsvector('memex', body), fts_len = 1")
        p.conn.execute("UPDATE meta SET value = '4' WHERE key = 'schema_version'")  # before the words step
    assert _top(p, "nightly") != _top(s, "nightly")
    p.conn.close()
    again = PgStore(connect(p.conn.url))
    _assert_alike(s, again)
    docs, tokens = again.conn.execute("SELECT docs, tokens FROM fts_totals").fetchone()
    assert (docs, tokens) == again.conn.execute("SELECT count(*), sum(fts_len) FROM memories").fetchone()
    again.conn.close()


def test_the_stored_counts_are_fts5s_up_to_what_a_tsvector_holds(pg_url: str) -> None:
    document = "word again " * 300 + "nightly is 0.008 tomás"
    literal, length = lexemes.tsvector(document)
    tokens = lexemes.stems(document)
    assert length == len(tokens) == 605  # 0.008: two tokens
    pg = connect(pg_url)
    stored = {str(x): int(n) for x, n in pg.execute(
        "SELECT lexeme, array_length(positions, 1) FROM unnest(%s::tsvector)", (literal,))}
    pg.close()
    assert stored == {t: min(tokens.count(t), lexemes.MAX_POSITIONS) for t in set(tokens)}
    assert stored["nightli"] == 1 and stored["again"] == lexemes.MAX_POSITIONS and "tomá" not in stored
    assert lexemes.tsvector("") == ("", 0)
