"""The memory's fields are defined once (memex/fields.py); the shapes that
spell them out for mypy's sake must agree with that table."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import pytest

from memex import fields
from memex.consolidation.supersede import supersede
from memex.erase.steps import erase
from memex.files import memory_file
from memex.records import RECORD_FIELDS, Record
from memex.search.hybrid import Hit
from memex.store import MemoryRow
from memex.store.sqlite.memories import row_values
from memex.vault import Vault

# Record fields that are not columns of their own: the embedded text (its hash
# is `embed_key`) and the links, which live in the entity tables.
RECORD_ONLY = {"embed_text", "entities", "relations"}


def _types(cls: type) -> dict[str, str]:
    return {f.name: str(f.type) for f in dataclasses.fields(cls)}


def test_record_holds_every_column_with_the_table_s_type() -> None:
    record = _types(Record)
    derived = {"status", "embed_key"}  # a property, and the hash of embed_text
    assert set(record) - RECORD_ONLY == set(fields.ROW_COLUMNS) - derived
    for name in set(record) - RECORD_ONLY:
        assert record[name] == fields.BY_NAME[name].type, name
    assert isinstance(Record.status, property)


def test_hit_is_the_shown_record_plus_the_score_fields() -> None:
    hit = _types(Hit)
    assert set(hit) == set(fields.RECORD_FIELDS) | set(fields.SCORE_FIELDS)
    for name in fields.RECORD_FIELDS:
        assert hit[name] == fields.BY_NAME[name].type, name
    assert RECORD_FIELDS == fields.RECORD_FIELDS


def test_a_shown_row_is_the_rowid_and_the_shown_columns_in_order() -> None:
    assert MemoryRow._fields == ("rowid", *fields.HIT_FIELDS)
    for name in fields.HIT_FIELDS:
        hint = MemoryRow.__annotations__[name]  # a ForwardRef under `from __future__ import annotations`
        assert getattr(hint, "__forward_arg__", hint) == fields.BY_NAME[name].type, name


def test_the_index_table_has_every_row_column(vault: Vault) -> None:
    columns = {str(r[1]) for r in vault.backend.conn.execute("PRAGMA table_info(memories)")}
    assert set(fields.ROW_COLUMNS) <= columns
    # What the table has beyond them is the store's own bookkeeping and the
    # ranking facts kept at write time (memex.store.facts).
    assert columns - set(fields.ROW_COLUMNS) == {"rowid", "embedded", "asks", "before_rowid", "after_rowid"}


def test_an_added_memory_s_row_and_file_carry_the_fields_the_table_names(vault: Vault) -> None:
    added = vault.add("the staging database runs on port 5433", scope="project:a", source="agent",
                      session="s1", source_ref="ticket-9", category="fact", confidence=0.7,
                      entities=["Postgres"])
    mf, _ = memory_file.read(vault.root / added.path, 10**6)
    assert [k for k in mf.meta if k in fields.FRONTMATTER_KEYS] == [
        k for k in fields.FRONTMATTER_KEYS if k != "supersedes"
    ]
    shown = vault.get(added.id).as_dict()
    assert list(shown)[: len(fields.RECORD_FIELDS) - 1] == [f for f in fields.RECORD_FIELDS if f != "body"]
    row = {c: v for c, v in zip(fields.ROW_COLUMNS, _row(vault, added.id))}
    assert row["scope"] == "project:a" and row["source_ref"] == "ticket-9" and row["status"] == "active"


def _row(vault: Vault, memory_id: str) -> tuple[object, ...]:
    cols = ", ".join(fields.ROW_COLUMNS)
    found = vault.backend.conn.execute(f"SELECT {cols} FROM memories WHERE id = ?", (memory_id,)).fetchone()
    assert found is not None
    return tuple(found)


def test_row_values_follow_the_column_order(tmp_path: Path) -> None:
    rec = Record(
        path="memories/a.md", id="a1", scope="s", source=None, session=None, source_ref=None, category=None,
        confidence=0.5, created="2026-01-01T00:00:00Z", supersedes=None, superseded_by="b2", body="x",
        body_hash="h", embed_text="x", file_hash="f", size=1, mtime_ns=2, racy=True,
    )
    values = dict(zip(fields.ROW_COLUMNS, row_values(rec)))
    assert values["status"] == "superseded" and values["racy"] == 1 and values["superseded_by"] == "b2"
    assert values["embed_key"] != "x" and len(values["embed_key"]) == 64


def test_the_write_signatures_name_the_fields_a_caller_sets() -> None:
    """add and supersede take every frontmatter field a caller may set (id and
    created are memex's own), with the table's types; erase's subject is
    named by indexed columns."""
    settable = [f for f in fields.FRONTMATTER_KEYS if f not in ("id", "created")]
    add = inspect.signature(Vault.add).parameters
    for name in settable:
        assert name in add, name
        if name != "entities":  # a sequence in, a list in the file
            assert str(add[name].annotation).replace(" | None", "") == fields.BY_NAME[name].type.replace(
                " | None", ""), name
    succeed = inspect.signature(supersede).parameters
    assert {"source", "session", "source_ref", "category", "confidence"} <= set(succeed)
    for name in ("source", "source_ref", "session"):
        assert name in inspect.signature(erase).parameters and fields.BY_NAME[name].column


def test_frontmatter_refuses_values_that_are_not_the_fields() -> None:
    values = {k: None for k in fields.FRONTMATTER_KEYS}
    assert fields.frontmatter({**values, "id": "a1"}) == {"id": "a1"}
    with pytest.raises(ValueError):
        fields.frontmatter({**values, "colour": "red"})
    with pytest.raises(ValueError):
        fields.frontmatter({k: v for k, v in values.items() if k != "scope"})
