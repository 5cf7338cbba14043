"""What search needs to know about a memory to rank it: :class:`Facts`.

Whether the memory asks a question (:func:`memex.text.asks_question`), and
which memories are just before and just after it in its session: the
memories of one ``session`` in the order of ``created`` (the id breaks a
tie). A memory without a session has no neighbours. Search lends a memory
a share of its neighbours' relevance (docs/search.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import apsw

from memex.text import asks_question

_BATCH = 500  # values per IN (...) list


class Facts(NamedTuple):
    """Ranking's facts about one memory: does it ask, which rowids are beside it."""

    asks: bool
    before: int | None
    after: int | None


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
        for rowid, body, before, after in conn.execute(_FACTS.format(marks=",".join("?" * len(part))), part):
            out[int(rowid)] = Facts(asks_question(str(body)), None if before is None else int(before),
                                    None if after is None else int(after))
    return out
