"""A memory's fields, defined once: where each lives and who shows it.

A memory's values pass through four shapes: the frontmatter of its file,
the :class:`memex.records.Record` built from the file, the ``memories``
row of the index (:mod:`memex.store`), and the record memex shows (``show``,
``list``, ``search``: :class:`memex.search.hybrid.Hit`). :data:`FIELDS` says,
per field, in which of them it appears; the column lists, the insert
statement, the shown record and the frontmatter keys ``add`` writes are
derived from it. ``Record`` and ``Hit`` stay written-out dataclasses, so
mypy --strict checks every use of them exactly, and
``tests/test_fields.py`` checks that their fields agree with this table.
The layers and where this sits in them: docs/design.md.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Field:
    name: str
    type: str  # the Python type as written in Record/Hit: "str", "str | None", "float", "int", "bool"
    frontmatter: bool = False  # a frontmatter key of the same name that `add` writes
    column: bool = False  # a column of the `memories` table written from the Record
    shown: bool = False  # in the record memex shows (show, list, search)


FIELDS: tuple[Field, ...] = (
    Field("id", "str", frontmatter=True, column=True, shown=True),
    Field("path", "str", column=True, shown=True),
    Field("scope", "str", frontmatter=True, column=True, shown=True),
    Field("source", "str | None", frontmatter=True, column=True, shown=True),
    Field("session", "str | None", frontmatter=True, column=True, shown=True),
    Field("source_ref", "str | None", frontmatter=True, column=True, shown=True),
    Field("category", "str | None", frontmatter=True, column=True, shown=True),
    Field("confidence", "float", frontmatter=True, column=True, shown=True),
    Field("created", "str", frontmatter=True, column=True, shown=True),
    Field("supersedes", "str | None", frontmatter=True, column=True),
    # Derived from superseded_by (Record.status); a column so filters are indexed.
    Field("status", "str", column=True, shown=True),
    # Written into the old memory's file by `supersede`, never by `add`.
    Field("superseded_by", "str | None", column=True, shown=True),
    # Shown only: confidence x decay since the last recall (memex.decay).
    Field("effective_confidence", "float | None", shown=True),
    Field("body", "str", column=True, shown=True),
    Field("body_hash", "str", column=True),
    Field("file_hash", "str", column=True),
    Field("size", "int", column=True),
    Field("mtime_ns", "int", column=True),
    # The hash of the embedded text (memex.embedding.embed.text_key of Record.embed_text).
    Field("embed_key", "str", column=True),
    Field("racy", "bool", column=True),
    Field("entities", "list[str]", frontmatter=True),
)

BY_NAME = {f.name: f for f in FIELDS}

# The columns of `memories` an index write sets from a Record, in this order.
ROW_COLUMNS: tuple[str, ...] = tuple(f.name for f in FIELDS if f.column)
# The one shape in which memex shows a memory (show, list, search).
RECORD_FIELDS: tuple[str, ...] = tuple(f.name for f in FIELDS if f.shown)
# The frontmatter keys `add` writes (when they have a value), in file order.
FRONTMATTER_KEYS: tuple[str, ...] = tuple(f.name for f in FIELDS if f.frontmatter)
# The shown fields that are columns: what a Hit reads back from its row.
HIT_FIELDS: tuple[str, ...] = tuple(f.name for f in FIELDS if f.shown and f.column)
# What a search hit adds to the record: its rank and the two signals behind it.
SCORE_FIELDS = ("score", "lexical", "semantic")


def frontmatter(values: Mapping[str, Any]) -> dict[str, Any]:
    """The frontmatter ``add`` writes: :data:`FRONTMATTER_KEYS` in order, those with a value.

    ``values`` must name every frontmatter field and nothing else, so a field
    added to :data:`FIELDS` cannot be silently left out of new files.
    """
    if set(values) != set(FRONTMATTER_KEYS):
        raise ValueError(f"frontmatter values {sorted(values)} are not the fields {sorted(FRONTMATTER_KEYS)}")
    return {key: values[key] for key in FRONTMATTER_KEYS if values[key] is not None}


@dataclass(frozen=True)
class Relation:
    """One ``relations:`` entry of a memory's frontmatter: subject, predicate, object."""

    subject: str
    predicate: str
    object: str
