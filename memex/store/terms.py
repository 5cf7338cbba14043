"""How many memories hold a word: the vault's document counts, read from FTS5.

Search's rarity prior (:mod:`memex.search.rarity`, docs/search.md, "Rare
words") asks, for the words of a few dozen candidate memories, in how many
memories of the vault each one occurs. FTS5 already keeps that number per
term; an ``fts5vocab`` table (``row`` kind: one row per term, with its
document count) reads it, one indexed lookup per term. The table is a
``temp`` one, made once per connection: nothing is added to the index file.

A word is counted as FTS5 indexes it: cut and stemmed by the table's own
tokenizer (``porter unicode61 remove_diacritics 2``, memex/store/schema.py),
so "bouldering" is counted with "boulder". A word FTS5 cuts in two
("node.js") counts as its rarer part: every memory holding the word holds
both. The counts follow deletes (the table is ``contentless_delete``), so
an erased memory stops counting at once.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Sequence
from typing import NamedTuple

import apsw

# What memex/store/schema.py gives memory_fts (tokenize='porter unicode61 remove_diacritics 2').
TOKENIZER = ("porter", ["unicode61", "remove_diacritics", "2"])
_VOCAB = "temp.memory_fts_terms"
_MADE: weakref.WeakSet[apsw.Connection] = weakref.WeakSet()
_BATCH = 500  # bound parameters per statement


class TermCounts(NamedTuple):
    """Per word, the memories holding it; and how many memories there are."""

    counts: dict[str, int]
    total: int


@functools.lru_cache(maxsize=1)
def _tokenizer() -> apsw.FTS5Tokenizer:
    return apsw.Connection(":memory:").fts5_tokenizer(TOKENIZER[0], list(TOKENIZER[1]))


@functools.lru_cache(maxsize=65536)
def fts_terms(word: str) -> tuple[str, ...]:
    """The FTS5 terms of one word, as a query looks it up (stemmed)."""
    if not word:
        return ()
    out = _tokenizer()(word.encode("utf-8"), apsw.FTS5_TOKENIZE_QUERY, None,
                       include_offsets=False, include_colocated=False)
    return tuple(dict.fromkeys(str(t) for t in out))


def _vocab(conn: apsw.Connection) -> str:
    if conn not in _MADE:
        conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {_VOCAB} USING fts5vocab(main, memory_fts, row)")
        _MADE.add(conn)
    return _VOCAB


def term_counts(conn: apsw.Connection, words: Sequence[str]) -> TermCounts:
    """How many memories hold each of ``words`` (0: none), and the number of memories."""
    terms = {w: fts_terms(w) for w in dict.fromkeys(words)}
    wanted = sorted({t for ts in terms.values() for t in ts})
    docs: dict[str, int] = {}
    table = _vocab(conn)
    for start in range(0, len(wanted), _BATCH):
        part = wanted[start : start + _BATCH]
        docs.update(
            (str(t), int(n))
            for t, n in conn.execute(f"SELECT term, doc FROM {table} WHERE term IN ({','.join('?' * len(part))})", part)
        )
    total = sum(int(n) for (n,) in conn.execute("SELECT count(*) FROM memories"))
    return TermCounts({w: min((docs.get(t, 0) for t in ts), default=0) for w, ts in terms.items()}, total)
