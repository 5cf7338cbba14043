"""BM25 top-k on PostgreSQL stops early (memex/store/postgres/bm25.py) and
still gives full scoring's answer, bit for bit, on random corpora, queries
and filters; the postings and term counts it reads stay exact through adds,
edits, supersedes and purges (a real server, tests/pgkit.py)."""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memex import text
from memex.embedding import embed
from memex.records import Record
from memex.store import Filters
from tests.hypokit import examples

WORDS = ["alpha", "beta", "gamma", "delta", "omega", "kappa", "sigma", "zeta", "theta", "lambda", "quokka"]
SCOPES = ["user", "project:a", "project:b"]


@pytest.fixture
def pg(pg_url: str) -> Iterator[object]:
    from memex.store.postgres.schema import connect, ensure_vectors

    conn = connect(pg_url)
    ensure_vectors(conn, "no-model", 4)  # the purge deletes vectors too
    yield conn
    conn.close()


def _record(i: int, body: str, scope: str, superseded: bool, session: str | None) -> Record:
    mid = f"m{i:05d}"
    return Record(
        path=f"memories/{mid}.md", id=mid, scope=scope, source="user" if i % 3 else "agent", session=session,
        source_ref=None, category=None, confidence=0.8, created="2026-01-01T00:00:00Z", supersedes=None,
        superseded_by="m99999" if superseded else None, body=body, body_hash=text.body_hash(body),
        embed_text=body, file_hash=embed.text_key(body), size=len(body), mtime_ns=i,
    )


def _body(rng: random.Random, weights: list[float]) -> str:
    # Few words, skewed, short bodies with repeats: many exact ties and tf > 1.
    return " ".join(rng.choices(WORDS, weights=weights, k=rng.randint(1, 9)))


def _reset(conn, ord_c: float | None) -> None:  # type: ignore[no-untyped-def]
    from memex.store.postgres import postings

    with conn.write_txn():
        conn.execute("DELETE FROM memories")
        conn.execute("UPDATE fts_totals SET docs = 0, tokens = 0")
        postings.rebuild(conn, ord_c)


def _assert_postings_exact(conn) -> None:  # type: ignore[no-untyped-def]
    """The postings and counts are what memories.fts says, row for row."""
    derived = conn.execute(
        "SELECT u.lexeme, (t.ord_c + m.fts_len)::float8 / coalesce(array_length(u.positions, 1), 1), m.rowid, "
        "coalesce(array_length(u.positions, 1), 1), m.fts_len FROM memories m, unnest(m.fts) u, fts_totals t "
        "ORDER BY 3, 1"
    ).fetchall()
    assert conn.execute("SELECT lexeme, ord, rowid, tf, len FROM fts_postings ORDER BY 3, 1").fetchall() == derived
    counts = conn.execute("SELECT u.lexeme, count(*) FROM memories m, unnest(m.fts) u GROUP BY 1 ORDER BY 1").fetchall()
    assert conn.execute("SELECT lexeme, docs FROM fts_terms ORDER BY 1").fetchall() == counts


def _fill(conn, rng: random.Random, n: int) -> None:  # type: ignore[no-untyped-def]
    """Add n memories, then edit, supersede and purge some of them."""
    from memex.store.postgres import rows

    weights = [1.0 / (i + 1) ** rng.choice([0.5, 1.0, 2.0]) for i in range(len(WORDS))]
    with conn.write_txn():
        for i in range(n):
            rec = _record(i, _body(rng, weights), rng.choice(SCOPES), rng.random() < 0.2, rng.choice([None, "s1"]))
            rows.upsert(conn, rec, None)
        for i in rng.sample(range(n), n // 4):  # edits: new text, or only a new status
            body = _body(rng, weights) if rng.random() < 0.7 else None
            old = conn.execute("SELECT body FROM memories WHERE id = %s", (f"m{i:05d}",)).fetchone()[0]
            rows.upsert(conn, _record(i, body or old, rng.choice(SCOPES), rng.random() < 0.3, None), None)
        for i in rng.sample(range(n), n // 6):  # erasures
            rowid = conn.execute("SELECT rowid FROM memories WHERE id = %s", (f"m{i:05d}",)).fetchone()[0]
            rows.purge_memory(conn, int(rowid))


def _filters(rng: random.Random) -> Filters:
    return rng.choice([
        Filters(),
        Filters(include_superseded=True),
        Filters(scopes=("project:a",)),
        Filters(scopes=("user", "project:b"), include_superseded=True),
        Filters(source="agent"),
        Filters(session="s1"),
    ])


@settings(max_examples=examples(50), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 90), ord_c=st.sampled_from([None, 0.05, 1.0, 30.0]))
def test_early_stop_equals_full_scoring(pg, seed: int, n: int, ord_c: float | None) -> None:  # type: ignore[no-untyped-def]
    from memex.store.postgres import bm25

    from memex.store.postgres import postings

    rng = random.Random(seed)
    _reset(pg, None)
    _fill(pg, rng, n)
    _assert_postings_exact(pg)
    if ord_c is not None:  # c far from avgdl/3 both ways: the bound loosens but must hold
        with pg.write_txn():
            postings.rebuild(pg, ord_c)
    for _ in range(16):
        query = " ".join(rng.sample(WORDS + ["nowhere"], rng.randint(1, 3)))
        filters, k = _filters(rng), rng.choice([1, 2, 5, 10, 40])
        expected = bm25.full(pg, bm25.stats(pg, query), filters, k)
        stats = bm25.stats(pg, query)
        fast = bm25.top(pg, query, filters, k, stats, full_below=0, narrow_full=False, batch=rng.choice([1, 2, 5]),
                        shared_max=rng.choice([0, 10_000]))
        assert stats.path.startswith("early stop") or not stats.terms
        assert list(fast.items()) == list(expected.items()), (query, filters, k, stats.path)


def test_a_common_word_query_reads_few_postings(pg) -> None:  # type: ignore[no-untyped-def]
    """One rare word and a word in every memory: the top 10 are found after
    reading a small share of the postings, and are full scoring's answer."""
    from memex.store.postgres import bm25, rows

    rng = random.Random(7)
    with pg.write_txn():
        for i in range(3000):
            words = ["alpha"] + rng.choices(WORDS[1:10], k=rng.randint(2, 12))
            if i % 97 == 0:
                words.append("quokka")
            rows.upsert(pg, _record(i, " ".join(words), "user", False, None), None)
    _assert_postings_exact(pg)
    for query in ("quokka alpha", "alpha beta", "alpha"):
        stats = bm25.stats(pg, query)
        postings = sum(t.docs for t in stats.terms)
        fast = bm25.top(pg, query, Filters(), 10, stats, full_below=0)
        assert stats.path.startswith("early stop"), query
        assert stats.read < postings / 4, (query, stats.read, postings)
        assert fast == bm25.full(pg, bm25.stats(pg, query), Filters(), 10)
        assert len(fast) == 10


def test_c_follows_the_average_length(pg) -> None:  # type: ignore[no-untyped-def]
    """An index that starts empty learns c from its memories (else the early
    stop's bound stays loose forever), and re-derives the postings with it."""
    from memex.store.postgres import rows

    with pg.write_txn():
        for i in range(60):
            rows.upsert(pg, _record(i, " ".join(WORDS[: 5 + i % 5]), "user", False, None), None)
    docs, tokens, ord_c = pg.execute("SELECT docs, tokens, ord_c FROM fts_totals").fetchone()
    assert ord_c == pytest.approx(tokens / docs / 3, rel=0.2)
    _assert_postings_exact(pg)


def test_a_bulk_load_derives_the_postings_once(pg) -> None:  # type: ignore[no-untyped-def]
    """A bulk load skips the trigger and derives every posting at the end:
    the same tables as row-by-row writes, and the same answers."""
    from memex.store.postgres import bm25, bulk

    rng = random.Random(3)
    weights = [1.0] * len(WORDS)
    bulk.start(pg)
    for start in (0, 300):
        # distinct bodies: the bulk load caches one vector per text
        batch = [(_record(i, f"{_body(rng, weights)} u{i}", "user", False, None), bytes(16)) for i in range(start, start + 300)]
        bulk.load(pg, batch, "no-model")
    assert pg.execute("SELECT count(*) FROM fts_postings").fetchone()[0] == 0  # the trigger stood aside
    bulk.finish(pg)
    _assert_postings_exact(pg)
    docs, tokens, ord_c = pg.execute("SELECT docs, tokens, ord_c FROM fts_totals").fetchone()
    assert docs == 600 and ord_c == pytest.approx(tokens / docs / 3)
    for query in ("alpha beta", "gamma", "quokka zeta theta"):
        stats = bm25.stats(pg, query)
        assert bm25.top(pg, query, Filters(), 10, stats, full_below=0) == bm25.full(pg, bm25.stats(pg, query), Filters(), 10)
        assert stats.path.startswith("early stop")


def test_a_write_between_two_rounds_does_not_change_the_answer(pg, pg_url: str, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The rounds of one top-k read one snapshot: a memory purged by another
    process after the first round (it was read there, not yet scored) is still
    scored as it was when the search began."""
    from memex.store.postgres import bm25, rows
    from memex.store.postgres.schema import connect

    rng = random.Random(5)
    with pg.write_txn():
        for i in range(400):
            rows.upsert(pg, _record(i, " ".join(["alpha"] + rng.choices(WORDS[1:6], k=rng.randint(1, 8))), "user",
                                    False, None), None)
    expected = bm25.full(pg, bm25.stats(pg, "alpha beta"), Filters(), 5)
    other = connect(pg_url)
    real = bm25.read_postings
    rounds = []

    def read_then_purge(conn, st, batch):  # type: ignore[no-untyped-def]
        real(conn, st, batch)
        if not rounds:
            with other.write_txn():
                for rowid in expected:
                    rows.purge_memory(other, rowid)
        rounds.append(batch)

    monkeypatch.setattr(bm25, "read_postings", read_then_purge)
    try:
        got = bm25.top(pg, "alpha beta", Filters(), 5, full_below=0, batch=3, shared_max=0)
    finally:
        other.close()
    assert rounds and got == expected
    assert bm25.full(pg, bm25.stats(pg, "alpha beta"), Filters(), 5).keys().isdisjoint(expected)  # they are gone now
