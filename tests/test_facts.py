"""What the index keeps for search's rule (memex/store/facts.py): whether a memory
asks a question, and which memories are before and after it in its session.

Kept at write time, so after any history of adds, edits (a body, a session, a
creation time), renames that change an id, deletions, erasures and reindexes
they must equal the definition computed from the rows; on both backends, and
after the schema step that adds them to an older index.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memex.erase.steps import erase
from memex.files import memory_file
from memex.meta_edit import update_meta
from memex.store import Filters
from memex.store.sqlite.meta import scalar
from memex.vault import Vault
from tests.hypokit import examples

pytestmark = pytest.mark.both_backends

Facts = dict[str, tuple[bool, str | None, str | None]]
_ALL = Filters(include_superseded=True)


def definition(vault: Vault) -> Facts:
    """A session's memories in (created, id) order, computed here from the rows."""
    rows = [(r.id, r.session, r.created, r.body) for r in vault.store.list_rows(_ALL)]
    order = sorted((r for r in rows if r[1] is not None), key=lambda r: (r[1], r[2].encode(), r[0].encode()))
    beside: dict[str, list[str | None]] = {r[0]: [None, None] for r in rows}
    for a, b in zip(order, order[1:]):
        if a[1] == b[1]:
            beside[a[0]][1], beside[b[0]][0] = b[0], a[0]
    return {i: (body.rstrip().endswith(("?", "？")), beside[i][0], beside[i][1]) for i, _, _, body in rows}


def kept(vault: Vault) -> Facts:
    """The facts as the index keeps them, by id; a dangling rowid shows as such."""
    ids = {r.rowid: r.id for r in vault.store.list_rows(_ALL)}

    def named(rowid: int | None) -> str | None:
        return None if rowid is None else ids.get(rowid, f"gone:{rowid}")

    return {ids[r]: (f.asks, named(f.before), named(f.after)) for r, f in vault.store.facts(list(ids), False).items()}


SESSIONS = st.sampled_from([None, "s1", "s2"])
MINUTE = st.integers(0, 5)  # few values: ties on created, broken by the id
ADD = st.tuples(st.just("add"), SESSIONS, MINUTE, st.booleans())
op = st.one_of(
    ADD, ADD, ADD,  # a history needs memories to move
    st.tuples(st.just("session"), st.integers(0, 40), SESSIONS),
    st.tuples(st.just("created"), st.integers(0, 40), MINUTE),
    st.tuples(st.just("body"), st.integers(0, 40), st.booleans()),
    st.tuples(st.just("delete"), st.integers(0, 40)),
    st.tuples(st.just("erase"), st.integers(0, 40)),
    st.tuples(st.just("reindex"), st.booleans()),
    # Files written by hand: an id from the path, created from the mtime.
    st.tuples(st.just("hand"), SESSIONS, MINUTE), st.tuples(st.just("hand"), SESSIONS, MINUTE),
    st.tuples(st.just("touch"), st.integers(0, 40), MINUTE),
    st.tuples(st.just("rename"), st.integers(0, 40)),
)
BASE_NS = 1_767_261_600_000_000_000  # 2026-01-01T10:00:00Z


def _hand_files(vault: Vault) -> list[Path]:
    return sorted((vault.root / "memories" / "user").glob("hand*.md"))


def _apply(vault: Vault, serial: int, step: tuple[Any, ...]) -> None:
    ids = sorted(r.id for r in vault.store.list_rows(_ALL))
    kind = step[0]
    if kind == "add":
        _, session, minute, asks = step
        # Unique words: an earlier example's erased text would be refused, a near-copy merged.
        added = vault.add(f"{uuid.uuid4().hex} otters {serial}" + ("?" if asks else "."), scope="user",
                          session=session)
        assert added.status == "created"
        update_meta(vault, added.id, {"created": f"2026-01-01T10:{minute:02d}:00Z"})
    elif not ids or kind == "reindex":
        if kind == "reindex":
            vault.reindex(full=step[1])
    elif kind == "session":
        update_meta(vault, ids[step[1] % len(ids)], {"session": step[2]})
    elif kind == "created":
        update_meta(vault, ids[step[1] % len(ids)], {"created": f"2026-01-01T10:{step[2]:02d}:00Z"})
    elif kind == "body":
        memory = vault.get(ids[step[1] % len(ids)])
        path = vault.root / memory.path
        parsed = memory_file.parse(path.read_text(encoding="utf-8"), path)
        body = f"{uuid.uuid4().hex} changed {serial}" + ("?" if step[2] else ".")
        memory_file.atomic_write(path, memory_file.serialize(memory_file.MemoryFile(parsed.meta, body + "\n")))
        vault.reindex()
    elif kind == "delete":
        (vault.root / vault.get(ids[step[1] % len(ids)]).path).unlink()
        vault.reindex()
    elif kind == "erase":
        erase(vault, ids[step[1] % len(ids)], reason="test")
    elif kind == "hand":
        path = vault.root / "memories" / "user" / f"hand{serial}-{uuid.uuid4().hex[:8]}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        head = f"---\nsession: {step[1]}\n---\n" if step[1] else ""
        path.write_text(f"{head}{uuid.uuid4().hex} by hand {serial}\n", encoding="utf-8")
        os.utime(path, ns=(BASE_NS + step[2] * 60 * 10**9,) * 2)
        vault.reindex()
    elif kind in ("touch", "rename") and (hand := _hand_files(vault)):
        path = hand[step[1] % len(hand)]
        if kind == "touch":  # created moves with the mtime: the memory moves in its session
            os.utime(path, ns=(BASE_NS + step[2] * 60 * 10**9 + 7,) * 2)
        else:  # the same bytes under another name: another id, which breaks ties in the order
            path.rename(path.with_name(f"hand{serial}-{uuid.uuid4().hex[:8]}.md"))
        vault.reindex()


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(op, min_size=3, max_size=20))
# Histories every run goes through: a memory moving out of the middle of its
# session, its created moving past a neighbour (by hand, then by its mtime),
# the middle one purged, then erased.
@example([("add", "s1", 1, True), ("add", "s1", 2, False), ("add", "s1", 3, False), ("session", 1, "s2"),
          ("session", 1, "s1"), ("created", 0, 5), ("delete", 1), ("add", "s1", 2, False), ("erase", 1)])
@example([("add", "s1", 0, False), ("hand", "s1", 1), ("hand", "s1", 2), ("touch", 0, 5), ("rename", 1),
          ("body", 0, True), ("reindex", True)])
def test_the_kept_facts_are_the_definition_after_any_history(vault: Vault, steps: list[tuple[Any, ...]]) -> None:
    for memory in vault.list():  # hypothesis reuses the fixture's vault: start each history empty
        erase(vault, memory.id, reason="test")
    for serial, step in enumerate(steps):
        _apply(vault, serial, step)
        assert kept(vault) == definition(vault), step


def test_an_index_from_before_the_facts_gets_them(vault: Vault, vault_backend: str) -> None:
    """Schema step 9 (SQLite) adds the columns to an older index and fills them."""
    if vault_backend != "sqlite":
        pytest.skip("the PostgreSQL step: tests/test_pg_density.py's older index")
    for n, (session, body) in enumerate([("s1", "Which port?"), ("s1", "Port 8080."), ("s2", "Deploy on Friday?"),
                                         (None, "No session here?")]):
        added = vault.add(body, scope="user", session=session)
        update_meta(vault, added.id, {"created": f"2026-01-01T10:{n:02d}:00Z"})
    want = definition(vault)
    conn = vault.backend.conn
    conn.execute("UPDATE memories SET asks = 0, before_rowid = NULL, after_rowid = NULL")
    conn.execute("DROP INDEX memories_session_order")
    conn.execute("ALTER TABLE memories DROP COLUMN asks")
    conn.execute("ALTER TABLE memories DROP COLUMN before_rowid")
    conn.execute("ALTER TABLE memories DROP COLUMN after_rowid")
    conn.execute("CREATE INDEX memories_session ON memories(session)")
    conn.execute("PRAGMA user_version = 8")
    root = vault.root
    vault.close()
    with Vault(root, embedder=None) as again:
        assert int(scalar(again.backend.conn, "PRAGMA user_version") or 0) >= 9
        assert kept(again) == want
        assert sum(f[0] for f in want.values()) == 3 and want[next(i for i, f in want.items() if f[2])][2]


def test_search_reads_no_body_to_rank(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    """The facts come from the index; the only bodies a search reads are its shortlist's rows
    (on either backend: one search reads both)."""
    for n in range(40):
        vault.add(f"otter fact number {n}" + ("?" if n % 3 == 0 else "."), scope="user", session=f"s{n % 4}")
    read: list[int] = []
    store = vault.store
    real = store.rows_by_rowids

    def counting(rowids: Any) -> Any:
        read.extend(rowids)
        return real(rowids)

    monkeypatch.setattr(type(store), "rows_by_rowids", lambda self, rowids: counting(rowids))
    monkeypatch.setattr(type(store), "text_column", lambda self, column, rowids: pytest.fail("a body was read"))
    assert vault.search("otter fact", limit=5, floor=False)
    assert 0 < len(read) <= 5
