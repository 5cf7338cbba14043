"""The lexemes of the PostgreSQL index: FTS5's own tokens, stemmed by FTS5's porter.

PostgreSQL's parser and Snowball stemmers do not cut and stem words as
SQLite's FTS5 (``porter unicode61 remove_diacritics 2``) does: Snowball
``english`` stems ``nightly`` to ``night`` (FTS5: ``nightli``), Snowball
``porter`` stems ``assembly`` to ``assembli`` (FTS5: ``assembl``) and two-letter
words (``is`` to ``i``), the parser keeps ``bench.py`` and ``0.008`` whole
(FTS5: two tokens each) and splits ``53e808b`` (FTS5: one). So both backends
would find and score different memories for the same words
(docs/postgres.md, "Words").

Instead memex asks FTS5 itself: an in-memory SQLite connection's
``porter`` tokenizer (:func:`stems`) cuts and stems the text handed to full
text (:func:`memex.text.fts_document`), and PostgreSQL stores those tokens
as they are (:func:`tsvector`: a ``tsvector`` literal, no parser, no
dictionary). Queries are stemmed the same way (:func:`query_lexemes`).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import apsw

from memex import text
from memex.store.postgres.connection import PgConnection

# What memex/store/sqlite/schema.py gives the FTS5 table (tokenize='porter unicode61 remove_diacritics 2').
TOKENIZER = ("porter", ["unicode61", "remove_diacritics", "2"])
# PostgreSQL keeps at most 256 positions of a lexeme and none above 16383;
# BM25 reads only their count, so positions are numbered 1..tf per lexeme.
MAX_POSITIONS = 256
MAX_LEXEME_BYTES = 2046  # longer words cannot be stored in a tsvector


@functools.lru_cache(maxsize=1)
def _tokenizer() -> apsw.FTS5Tokenizer:
    conn = apsw.Connection(":memory:")
    name, args = TOKENIZER
    return conn.fts5_tokenizer(name, list(args))


def stems(text: str, query: bool = False) -> list[str]:
    """The tokens FTS5 indexes for ``text`` (or looks up, for a query), in order."""
    if not text:
        return []
    flags = apsw.FTS5_TOKENIZE_QUERY if query else apsw.FTS5_TOKENIZE_DOCUMENT
    out = _tokenizer()(text.encode("utf-8"), flags, None, include_offsets=False, include_colocated=False)
    return [str(t) for t in out]


def _quoted(lexeme: str) -> str:
    return "'" + lexeme.replace("\\", "\\\\").replace("'", "''") + "'"


def tsvector(document: str) -> tuple[str, int]:
    """A ``tsvector`` literal of ``document``'s FTS5 tokens, and their count
    (the document length BM25 divides by, as FTS5 counts it)."""
    tokens = stems(document)
    counts: dict[str, int] = {}
    for tok in tokens:
        counts[tok] = counts.get(tok, 0) + 1
    parts = []
    for lexeme, tf in sorted(counts.items()):
        if len(lexeme.encode("utf-8")) > MAX_LEXEME_BYTES:
            continue
        positions = ",".join(str(p) for p in range(1, min(tf, MAX_POSITIONS) + 1))
        parts.append(f"{_quoted(lexeme)}:{positions}")
    return " ".join(parts), len(tokens)


def query_lexemes(terms: Sequence[str]) -> list[str]:
    """The distinct lexemes of a query's terms (:func:`memex.store.postgres.query.query_terms`), in order."""
    out: dict[str, None] = {}
    for term in terms:
        for lexeme in stems(term, query=True):
            out.setdefault(lexeme)
    return list(out)


_BATCH = 5000


def document_of(body: str) -> str:
    """The text full text indexes for a stored body, as the indexer makes it
    (:func:`memex.records.build_record`: ``embed_text``, then
    :func:`memex.text.fts_document`)."""
    return text.fts_document(text.normalize(text.strip_injected(body)))


def rebuild(conn: PgConnection) -> None:
    """Every memory's ``fts`` and ``fts_len`` made again from its body, and the
    BM25 totals recounted (a schema step: an index whose words PostgreSQL cut
    and stemmed). Inside the caller's write transaction."""
    conn.execute(
        "CREATE TEMP TABLE memex_words (rowid BIGINT PRIMARY KEY, fts TSVECTOR NOT NULL, fts_len INTEGER NOT NULL) "
        "ON COMMIT DROP"
    )
    after = 0
    while True:
        rows = conn.execute(
            "SELECT rowid, body FROM memories WHERE rowid > %s ORDER BY rowid LIMIT %s", (after, _BATCH)
        ).fetchall()
        if not rows:
            break
        with conn.raw.cursor() as cur:
            with cur.copy("COPY memex_words (rowid, fts, fts_len) FROM STDIN") as out:
                for rowid, body in rows:
                    out.write_row((int(rowid), *tsvector(document_of(str(body)))))
        after = int(rows[-1][0])
    conn.execute(
        "UPDATE memories m SET fts = w.fts, fts_len = w.fts_len FROM memex_words w "
        "WHERE m.rowid = w.rowid AND (m.fts <> w.fts OR m.fts_len <> w.fts_len)"
    )
    conn.execute("UPDATE fts_totals SET docs = s.docs, tokens = s.tokens FROM "
                 "(SELECT count(*) AS docs, coalesce(sum(fts_len), 0) AS tokens FROM memories) s")
    conn.execute("DROP TABLE memex_words")
