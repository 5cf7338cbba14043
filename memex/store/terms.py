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

``fts5vocab`` finds a term's count by walking its postings, about 20 µs a
term at 10k memories (a search asks for 100-300 words: 2-6 ms). So the
counts a connection has read are kept, per connection, until the full-text
index changes: FTS5 rewrites its *structure record* (row 10 of
``memory_fts_data``, a few dozen bytes) at every change of the index, by
this connection or another, so one read of it tells whether the kept
counts still hold. A long-lived process (the MCP server, the watcher)
then pays for a word once per change of the vault.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import apsw

# What memex/store/schema.py gives memory_fts (tokenize='porter unicode61 remove_diacritics 2').
TOKENIZER = ("porter", ["unicode61", "remove_diacritics", "2"])
_VOCAB = "temp.memory_fts_terms"
_BATCH = 500  # bound parameters per statement
# FTS5's structure record: the row of memory_fts_data it rewrites at every change.
_STRUCTURE = "SELECT block FROM memory_fts_data WHERE id = 10"


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


@dataclass
class _Known:
    """The counts one connection has read, and the structure record they hold for."""

    structure: bytes | None = None
    docs: dict[str, int] = field(default_factory=dict)
    total: int = 0
    made: bool = False  # the temp vocab table exists on this connection


_KNOWN: weakref.WeakKeyDictionary[apsw.Connection, _Known] = weakref.WeakKeyDictionary()


def _known(conn: apsw.Connection) -> _Known:
    known = _KNOWN.setdefault(conn, _Known())
    if not known.made:
        conn.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {_VOCAB} USING fts5vocab(main, memory_fts, row)")
        known.made = True
    structure = next((bytes(block) for (block,) in conn.execute(_STRUCTURE)), None)
    if structure is None or structure != known.structure:
        known.structure = structure
        known.docs = {}
        known.total = sum(int(n) for (n,) in conn.execute("SELECT count(*) FROM memories"))
    return known


def term_counts(conn: apsw.Connection, words: Sequence[str]) -> TermCounts:
    """How many memories hold each of ``words`` (0: none), and the number of memories."""
    terms = {w: fts_terms(w) for w in dict.fromkeys(words)}
    known = _known(conn)
    docs = known.docs
    wanted = sorted({t for ts in terms.values() for t in ts if t not in docs})
    for start in range(0, len(wanted), _BATCH):
        part = wanted[start : start + _BATCH]
        docs.update(dict.fromkeys(part, 0))
        docs.update(
            (str(t), int(n))
            for t, n in conn.execute(f"SELECT term, doc FROM {_VOCAB} WHERE term IN ({','.join('?' * len(part))})", part)
        )
    if known.structure is None:  # no structure record to tell a change by: keep nothing
        _KNOWN.pop(conn, None)
    return TermCounts({w: min((docs.get(t, 0) for t in ts), default=0) for w, ts in terms.items()}, known.total)
