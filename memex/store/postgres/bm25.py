"""BM25 top-k on PostgreSQL that stops early, with the answer of full scoring.

Scoring every memory that holds a query term costs as much as the commonest
term's document count: at 1M memories a query of common words scored
hundreds of thousands of rows (docs/postgres.md, benchmark). This module
runs the threshold algorithm over the impact-ordered postings of
:mod:`memex.store.postgres.postings`:

1. read the next ``batch`` postings of every query term, best first (one
   index range scan per term, all in one statement), with each one's exact
   BM25 contribution;
2. score exactly every memory seen so far that could still reach the k-th
   best score (its postings of every query term, by rowid), and ask the
   filters (scope, source, session, superseded: the memory's row) of the
   best ones only, until k pass;
3. stop when k memories passing the filters are known and the k-th best
   score is above the sum of the terms' bounds, which no memory not yet seen
   can exceed; else double the batch. When there are few postings, or a
   filter narrows to a scope, source or session, score every match instead
   (:func:`full`).

Before the rounds, when few memories are expected to hold two or more of
the query's terms (:data:`SHARED_MAX`), those are found through the GIN
index and scored (:func:`shared_words`); an unseen memory then holds one
term and scores at most the largest bound, not the sum. All statements of
one top-k read one snapshot (:func:`snapshot`).

Why the answer is exact and not an approximation: a memory never seen
scores at most the sum of the bounds (each unread posting of a term weighs
at most its bound, :func:`term_bound`), or the largest one after the shared
step, which is below the k-th score; a memory seen but not scored was below
the k-th score by the same reasoning. Ties need no care: both stay strictly
below.

**Scores are the same bits on both paths.** Each term's contribution is
FTS5's formula (k1 = 1.2, b = 0.75, idf = ln((N - n + 0.5) / (n + 0.5)), at
least 1e-6) computed by one SQL expression (:data:`CONTRIB`) from the same
parameters, and rounded to a multiple of 2^-32 (well inside the 1e-6 within
which it equals SQLite's). Sums of such numbers are exact in float64, so a
memory's score does not depend on the order its terms are added in: the
early stop, its rescoring and full scoring give equal scores, and equal
scores break by rowid the same way everywhere.
"""

from __future__ import annotations

import contextlib
import heapq
import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from memex.store.rows import Filters
from memex.store.postgres import lexemes
from memex.store.postgres.connection import PgConnection
from memex.store.postgres.filters import PgFilters
from memex.store.postgres.postings import TF

GRID = 2.0**32
CONTRIB = (
    "round({idf} * {tf}::float8 * 2.2 / ({tf}::float8 + 1.2 * (0.25 + 0.75 * {length}::float8 / {avgdl})) "
    f"* {GRID:.0f}) / {GRID:.0f}"
)
# Few postings to read: scoring every match is one statement and cheaper than rounds.
FULL_BELOW = 4000
# Memories holding two or more of the query's words, if the words were
# independent at most this many: found and scored first (see :func:`top`).
SHARED_MAX = 3000


@dataclass
class Term:
    lexeme: str
    docs: int  # memories holding it
    idf: float
    after: tuple[float, int] = (-math.inf, -1)  # (ord, rowid) of the last posting read
    done: bool = False  # every posting read


@dataclass
class Stats:
    terms: list[Term]
    avgdl: float
    ord_c: float
    total: int = 0  # memories in the index (BM25's N)
    read: int = 0
    rounds: int = 0
    path: str = ""
    seen: dict[int, dict[str, float]] = field(default_factory=dict)


def stats(conn: PgConnection, query_text: str) -> Stats:
    """The query's lexemes with their document counts and idf; the average length."""
    rows = conn.execute(
        "SELECT u.lexeme, coalesce(f.docs, 0), t.docs, t.tokens, t.ord_c "
        "FROM unnest(%s::text[]) AS u(lexeme) LEFT JOIN fts_terms f USING (lexeme), fts_totals t",
        # Each word stemmed as FTS5 stems it (memex/store/postgres/lexemes.py).
        (sorted(lexemes.query_lexemes(query_text.split())),),
    ).fetchall()
    if not rows:
        return Stats([], 1.0, 1.0)
    total, tokens, ord_c = float(rows[0][2]), float(rows[0][3]), float(rows[0][4])
    avgdl = max(tokens / max(total, 1.0), 1.0)
    terms = [
        Term(str(lx), int(n), max(math.log((total - n + 0.5) / (n + 0.5)), 1e-6))
        for lx, n, *_ in rows if int(n) > 0
    ]
    return Stats(terms, avgdl, ord_c, int(total))


def term_bound(term: Term, st: Stats) -> float:
    """The most any posting of ``term`` not read yet can add to a score.

    Unread postings have ``ord = (c + len) / tf`` at least that of the last
    one read. The weight falls with ``(avgdl / 3 + len) / tf``, which is
    ``ord + (avgdl / 3 - c) / tf`` and so at least ``ord - max(0, c - avgdl / 3)``
    (tf >= 1). Raised by a hair so float rounding cannot put a contribution
    computed by PostgreSQL above it.
    """
    if term.done:
        return 0.0
    slack = max(0.0, st.ord_c - st.avgdl / 3)
    h = 0.9 * max(term.after[0] - slack, 0.0) / st.avgdl
    return term.idf * 2.2 / (1.0 + h) * (1 + 1e-9) + 2.0 / GRID


def _params(st: Stats) -> tuple[list[str], list[float]]:
    return [t.lexeme for t in st.terms], [t.idf for t in st.terms]


def full(conn: PgConnection, st: Stats, filters: Filters, k: int) -> dict[int, float]:
    """Score every memory holding a query term (the GIN index finds them) and keep the best ``k``."""
    where, wparams = _filter_sql(filters)
    lexemes, idfs = _params(st)
    contrib = CONTRIB.format(idf="q.idf", tf=TF.format(u="u"), length="m.fts_len", avgdl="%s::float8")
    rows = conn.execute(
        f"SELECT m.rowid, sum({contrib}) AS score "
        "FROM memories m CROSS JOIN LATERAL unnest(m.fts) u "
        "JOIN unnest(%s::text[], %s::float8[]) AS q(lexeme, idf) ON q.lexeme = u.lexeme "
        "WHERE m.fts @@ array_to_string(ARRAY(SELECT quote_literal(l) FROM unnest(%s::text[]) l), ' | ')::tsquery "
        f"AND {where} GROUP BY m.rowid ORDER BY score DESC, m.rowid LIMIT %s",
        (st.avgdl, lexemes, idfs, lexemes, *wparams, k),
    ).fetchall()
    st.path = st.path or "full"
    return {int(r): float(s) for r, s in rows}


def score_postings(conn: PgConnection, st: Stats, rowids: list[int]) -> dict[int, float]:
    """Exact scores of these memories, filters not asked: the sum of their
    postings of the query terms (index-only probes by rowid; the same values
    :func:`full` computes from the ``tsvector``)."""
    lexemes, idfs = _params(st)
    contrib = CONTRIB.format(idf="q.idf", tf="p.tf", length="p.len", avgdl="%s::float8")
    rows = conn.execute(
        f"SELECT p.rowid, sum({contrib}) FROM fts_postings p "
        "JOIN unnest(%s::text[], %s::float8[]) AS q(lexeme, idf) ON q.lexeme = p.lexeme "
        "WHERE p.rowid = ANY(%s) AND p.lexeme = ANY(%s) GROUP BY p.rowid",
        (st.avgdl, lexemes, idfs, sorted(rowids), lexemes),
    ).fetchall()
    return {int(r): float(s) for r, s in rows}


class _Verdicts:
    """Which candidates pass the filters, asked lazily: only those that rank
    near the top are looked up (the filters need each memory's row)."""

    def __init__(self, conn: PgConnection, filters: Filters) -> None:
        self.conn = conn
        self.where, self.params = _filter_sql(filters)
        self.known: dict[int, bool] = {}

    def ask(self, rowids: list[int]) -> None:
        wanted = [r for r in rowids if r not in self.known]
        if not wanted:
            return
        if self.where == "TRUE":
            ok = set(wanted)
        else:
            ok = {int(r[0]) for r in self.conn.execute(
                f"SELECT m.rowid FROM memories m WHERE m.rowid = ANY(%s) AND {self.where}", (wanted, *self.params)
            )}
        self.known.update((r, r in ok) for r in wanted)

    def _passing(self, order: list[int]) -> list[int]:
        """Those of ``order`` that pass the filters, in order."""
        self.ask(order)
        return [r for r in order if self.known[r]]

    def best(self, scores: dict[int, float], k: int) -> list[int]:
        """The best ``k`` candidates passing the filters, by score then rowid (fewer if there are not k)."""
        # Nearly every candidate passes the status filter: the best few
        # usually suffice, and sorting them is cheaper than sorting all.
        few = heapq.nsmallest(2 * k + 16, scores, key=lambda r: (-scores[r], r))
        found = self._passing(few)
        if len(found) >= k or len(few) == len(scores):
            return found[:k]
        order = sorted(scores, key=lambda r: (-scores[r], r))
        out: list[int] = []
        for i, rowid in enumerate(order):
            if rowid not in self.known:
                self.ask(order[i:i + 2 * (k - len(out)) + 16])
            if self.known[rowid]:
                out.append(rowid)
                if len(out) == k:
                    break
        return out


def shared_estimate(st: Stats, total: int) -> float:
    """How many memories hold two or more query words, were the words independent."""
    dfs = [t.docs for t in st.terms]
    return sum(a * b for i, a in enumerate(dfs) for b in dfs[i + 1:]) / max(total, 1)


def shared_words(conn: PgConnection, st: Stats, limit: int) -> list[int] | None:
    """The memories holding at least two of the query's words (the GIN index,
    an AND per pair); None when there are more than ``limit``."""
    a = [x.lexeme for i, x in enumerate(st.terms) for _ in st.terms[i + 1:]]
    b = [y.lexeme for i, _ in enumerate(st.terms) for y in st.terms[i + 1:]]
    rows = conn.execute(
        "SELECT m.rowid FROM memories m WHERE m.fts @@ (SELECT string_agg(quote_literal(a) || ' & ' || "
        "quote_literal(b), ' | ')::tsquery FROM unnest(%s::text[], %s::text[]) AS p(a, b)) LIMIT %s",
        (a, b, limit + 1),
    ).fetchall()
    return None if len(rows) > limit else [int(r[0]) for r in rows]


def read_postings(conn: PgConnection, st: Stats, batch: int) -> None:
    """The next ``batch`` postings of every term not yet read to the end, with their contributions."""
    live = [t for t in st.terms if not t.done]
    contrib = CONTRIB.format(idf="q.idf", tf="p.tf", length="p.len", avgdl="%s::float8")
    rows = conn.execute(
        f"SELECT q.i, p.rowid, p.ord, {contrib} FROM unnest(%s::text[], %s::float8[], %s::float8[], %s::int8[]) "
        "WITH ORDINALITY AS q(lexeme, idf, after_ord, after_row, i) CROSS JOIN LATERAL ("
        "  SELECT rowid, ord, tf, len FROM fts_postings p WHERE p.lexeme = q.lexeme "
        "  AND (p.ord, p.rowid) > (q.after_ord, q.after_row) ORDER BY p.ord, p.rowid LIMIT %s) p",
        (st.avgdl, [t.lexeme for t in live], [t.idf for t in live], [t.after[0] for t in live],
         [t.after[1] for t in live], batch),
    ).fetchall()
    counts = [0] * len(live)
    for i, rowid, ord_, score in rows:
        term = live[int(i) - 1]
        counts[int(i) - 1] += 1
        st.seen.setdefault(int(rowid), {})[term.lexeme] = float(score)
        if (float(ord_), int(rowid)) > term.after:
            term.after = (float(ord_), int(rowid))
    for term, n in zip(live, counts):
        term.done = n < batch
    st.read += len(rows)
    st.rounds += 1


@contextlib.contextmanager
def snapshot(conn: PgConnection) -> Iterator[None]:
    """One snapshot for the several statements of a top-k: a memory written
    between two rounds must not land in a stretch of postings already read.
    Inside the caller's transaction nothing is started (a writer there holds
    the write lock, so no other write runs)."""
    if conn.raw.info.transaction_status != 0:
        yield
        return
    with conn.raw.transaction():
        conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY")
        yield


def top(
    conn: PgConnection,
    query_text: str,
    filters: Filters,
    k: int,
    st: Stats | None = None,
    full_below: int = FULL_BELOW,
    narrow_full: bool = True,
    batch: int | None = None,
    shared_max: int = SHARED_MAX,
) -> dict[int, float]:
    """Top ``k`` memories by BM25 passing the filters: exactly :func:`full`'s answer.
    ``st`` (from :func:`stats`) records which path answered and what it read.

    Full scoring answers when there are few postings, and for a narrowing
    filter (scope, source, session; ``narrow_full``): there PostgreSQL can
    combine the filter's index with the text index, while the postings are
    read in score order and most of what they yield would fail the filter.
    Otherwise (the status filter passes nearly every memory) the early stop
    costs at most about what full scoring does: reading a posting and
    scoring a candidate by its postings are index probes, full scoring
    reads every matching row.

    When few memories hold two or more of the query's words (``shared_max``),
    they are found through the text index and scored first. Every other
    memory then holds one query word, so one not seen yet scores at most the
    largest of the words' bounds instead of their sum: two words of similar
    frequency no longer have to be read to the end of one of them."""
    with snapshot(conn):
        return _top(conn, query_text, filters, k, st, full_below, narrow_full, batch, shared_max)


def _top(
    conn: PgConnection,
    query_text: str,
    filters: Filters,
    k: int,
    st: Stats | None,
    full_below: int,
    narrow_full: bool,
    batch: int | None,
    shared_max: int,
) -> dict[int, float]:
    st = st or stats(conn, query_text)
    if not st.terms or k <= 0:
        return {}
    postings = sum(t.docs for t in st.terms)
    if postings <= full_below or (narrow_full and filters.narrowing):
        return full(conn, st, filters, k)
    scores: dict[int, float] = {}  # exact, filters not asked
    verdicts = _Verdicts(conn, filters)
    kth = -math.inf  # the k-th best score passing the filters (-inf: not k of them yet)
    batch = batch or max(2 * k, 128)  # the first read of each term's postings; doubled each round
    shared = False  # every memory holding two or more query words is in scores
    if len(st.terms) > 1 and shared_estimate(st, st.total) <= shared_max:
        found = shared_words(conn, st, 4 * shared_max)
        if found is not None:
            scores.update(score_postings(conn, st, found) if found else {})
            shared = True
    while True:
        read_postings(conn, st, batch)
        bounds = {t.lexeme: term_bound(t, st) for t in st.terms}
        # A memory seen but not scored yet: with the shared ones all scored,
        # the one word it was seen under is all it holds.
        hope = {
            r: sum(known.values()) + (0.0 if shared else sum(b for lx, b in bounds.items() if lx not in known))
            for r, known in st.seen.items() if r not in scores
        }
        todo = sorted((r for r, h in hope.items() if h >= kth), key=lambda r: -hope[r])
        best = verdicts.best(scores, k)
        # Most hopeful first, a chunk at a time: once k are known, the rest
        # of this round's candidates that cannot reach the k-th are not scored.
        size = 2 * k
        while todo:
            chunk, todo = todo[:size], todo[size:]
            size *= 2  # few statements (and sorts) however many candidates a round has
            scores.update(score_postings(conn, st, chunk))
            best = verdicts.best(scores, k)
            kth = scores[best[-1]] if len(best) == k else -math.inf
            todo = [r for r in todo if hope[r] >= kth]
        unseen = max(bounds.values()) if shared else sum(bounds.values())
        if all(t.done for t in st.terms) or kth > unseen:
            st.path = "early stop, shared words first" if shared else "early stop"
            return {r: scores[r] for r in best}
        batch *= 2


def _filter_sql(filters: Filters) -> tuple[str, list[Any]]:
    return PgFilters(filters).sql()
