"""What search needs to know about a memory to rank it: :class:`Facts`.

Whether the memory asks a question (:func:`memex.text.asks_question`);
which memories are just before and just after it in its session (the
memories of one ``session`` in the order of ``created``, the id breaking a
tie; a memory without a session has none): search lends a memory a share of
its neighbours' relevance; and its density, the mean cosine to its nearest
memories (:mod:`memex.store.density`), for a rule with a hub prior
(docs/search.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import apsw

from memex.store import density
from memex.text import asks_question

_BATCH = 500  # values per IN (...) list


class Facts(NamedTuple):
    """Ranking's facts about one memory: does it ask, which rowids are beside
    it, its density (None: no vector)."""

    asks: bool
    before: int | None
    after: int | None
    density: float | None = None


_FACTS = (
    "SELECT m.rowid, m.body, "
    "(SELECT p.rowid FROM memories p WHERE p.session = m.session AND (p.created, p.id) < (m.created, m.id) "
    "ORDER BY p.created DESC, p.id DESC LIMIT 1), "
    "(SELECT n.rowid FROM memories n WHERE n.session = m.session AND (n.created, n.id) > (m.created, m.id) "
    "ORDER BY n.created, n.id LIMIT 1) "
    "FROM memories m WHERE m.rowid IN ({marks})"
)


def facts(conn: apsw.Connection, rowids: Sequence[int]) -> dict[int, Facts]:
    """The facts of each of ``rowids`` that is a memory."""
    out: dict[int, Facts] = {}
    wanted = list(dict.fromkeys(rowids))
    for start in range(0, len(wanted), _BATCH):
        part = wanted[start : start + _BATCH]
        marks = ",".join("?" * len(part))
        dense = density.densities(conn, part)
        for rowid, body, before, after in conn.execute(_FACTS.format(marks=marks), part):
            out[int(rowid)] = Facts(asks_question(str(body)), None if before is None else int(before),
                                    None if after is None else int(after), dense.get(int(rowid)))
    return out
