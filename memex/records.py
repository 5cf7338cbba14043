"""From a parsed memory file to the row the index stores, and the one shape
in which memex shows a memory (:data:`RECORD_FIELDS`, :class:`Memory`).

This is where frontmatter values are checked: a bad value is an error that
names the file and the key, and never stops other files from being indexed.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from memex import fields
from memex.errors import InvalidArgument, MemoryFileError
from memex.files.memory_file import MemoryFile
from memex.files.names import check_scope, scope_from_dir_parts
from memex.fields import Relation
from memex.text import body_hash, entity_key, normalize, strip_injected

DEFAULT_CONFIDENCE = 0.8
# The one shape of a memory wherever memex prints one: `show`, `list` and
# `search` (memex.fields). These are the index's values, so a hand-written
# file shows the scope, source and date memex derived for it, not a blank.
RECORD_FIELDS = fields.RECORD_FIELDS
# What a search hit adds to the record: its rank and the two signals behind it.
SCORE_FIELDS = fields.SCORE_FIELDS
# The source of a hand-written memory (a file with neither `id` nor `source`).
HAND_WRITTEN_SOURCE = "file"
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")


@dataclass
class Record:
    path: str  # relative to the vault, POSIX separators
    id: str
    scope: str
    source: str | None
    session: str | None
    source_ref: str | None
    category: str | None
    confidence: float
    created: str
    supersedes: str | None
    superseded_by: str | None
    body: str
    body_hash: str
    embed_text: str
    file_hash: str
    size: int
    mtime_ns: int
    entities: list[str] = field(default_factory=list)
    racy: bool = False  # read so soon after its mtime that a same-tick rewrite could hide (see indexer)
    relations: list[Relation] = field(default_factory=list)

    @property
    def status(self) -> str:
        return "superseded" if self.superseded_by else "active"


@dataclass
class Memory:
    """A memory as its file says, plus what the index knows of it."""

    id: str
    path: str
    meta: dict[str, Any]  # the frontmatter as written
    body: str  # the body as written
    status: str
    access_count: int
    last_access: str | None
    # The record shape (memex.records.RECORD_FIELDS) from the index, body aside.
    record: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """The record that `list` and `search` show, then any other
        frontmatter keys (entities, supersedes, your own), usage, the body."""
        shape = {**self.record, "id": self.id, "path": self.path, "status": self.status}
        return {
            **shape,
            **{k: v for k, v in self.meta.items() if k not in shape},
            "access_count": self.access_count,
            "last_access": self.last_access,
            "body": self.body,
        }


def record_view(item: Any, extra: Sequence[str] = ()) -> dict[str, Any]:
    """A search hit (or anything with the same attributes) as the record
    shape, plus the ``extra`` attributes asked for (``SCORE_FIELDS`` in search)."""
    return {key: getattr(item, key) for key in (*RECORD_FIELDS, *extra)}


def check_unicode(**values: str | Sequence[str] | None) -> None:
    """Refuse arguments that cannot be written as UTF-8 (lone surrogates, as
    Python makes from undecodable bytes), naming the argument."""
    for name, value in values.items():
        for item in [value] if isinstance(value, str) else value or []:
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise InvalidArgument(name, f"not valid Unicode text (character {exc.start})") from exc


def is_text_name(name: str) -> bool:
    """False for a file or folder name that is not valid UTF-8: Python gives
    its undecodable bytes as lone surrogates, which the index cannot store."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def shown_name(name: str) -> str:
    """A name as a person can read it, undecodable bytes as ``\\xNN`` escapes."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


BAD_NAME = "name is not valid UTF-8; not indexed (rename it to index it)"


def path_id(relpath: str) -> str:
    """The id of a hand-written file without one: stable while it is not renamed."""
    return "p" + hashlib.sha256(relpath.encode("utf-8")).hexdigest()[:25]


_PATH_ID = re.compile(r"\Ap[0-9a-f]{25}\Z")


def explicit_ids(ids: Iterable[str]) -> list[str]:
    """The ids that a file's frontmatter gives (not made from its path by :func:`path_id`,
    which the next file at that path would share)."""
    return [i for i in ids if not _PATH_ID.match(i)]


def now_iso() -> str:
    return dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def iso_from_ns(mtime_ns: int) -> str:
    moment = dt.datetime.fromtimestamp(mtime_ns / 1e9, tz=dt.timezone.utc).replace(microsecond=0)
    return moment.isoformat().replace("+00:00", "Z")


def _opt_str(meta: dict[str, Any], key: str, path: str) -> str | None:
    value = meta.get(key)
    if value is None or value == "":
        return None
    if isinstance(value, (dict, list)):
        raise MemoryFileError(path, f"frontmatter key {key!r} must be a single value")
    return str(value)


def build_record(
    relpath: str, mf: MemoryFile, raw: bytes, stat: os.stat_result, default_scope: str
) -> Record:
    """Check a parsed file's frontmatter and derive its index row."""
    meta = mf.meta
    memory_id = _opt_str(meta, "id", relpath) or path_id(relpath)
    if not _ID.match(memory_id):
        shown = repr(memory_id) if len(memory_id) <= 80 else f"{memory_id[:40]!r}... ({len(memory_id)} characters)"
        raise MemoryFileError(relpath, f"id {shown} must be letters, digits, '_' or '-' (at most 64)")
    parts = list(PurePosixPath(relpath).parts[1:-1])  # folders under memories/
    scope = _opt_str(meta, "scope", relpath) or scope_from_dir_parts(parts, default_scope)
    try:
        scope = check_scope(scope)
    except InvalidArgument as exc:
        raise MemoryFileError(relpath, exc.reason) from exc
    confidence_raw = meta.get("confidence", DEFAULT_CONFIDENCE)
    if isinstance(confidence_raw, bool) or not isinstance(confidence_raw, (int, float)):
        raise MemoryFileError(relpath, f"confidence must be a number from 0 to 1, got {confidence_raw!r}")
    confidence = float(confidence_raw)
    if not 0.0 <= confidence <= 1.0:
        raise MemoryFileError(relpath, f"confidence must be from 0 to 1, got {confidence}")
    embed_text = normalize(strip_injected(mf.body))
    if not embed_text:
        raise MemoryFileError(relpath, "empty memory (no body text)")
    return Record(
        path=relpath,
        id=memory_id,
        scope=scope,
        # No id and no source: nothing memex wrote, so a person did. (Not "no
        # frontmatter": a hand-written file keeps this source after memex
        # adds superseded_by to it, or after its author adds tags.)
        source=_opt_str(meta, "source", relpath) or (HAND_WRITTEN_SOURCE if "id" not in meta else None),
        session=_opt_str(meta, "session", relpath),
        source_ref=_opt_str(meta, "source_ref", relpath),
        category=_opt_str(meta, "category", relpath),
        confidence=confidence,
        created=_opt_str(meta, "created", relpath) or iso_from_ns(stat.st_mtime_ns),
        supersedes=_opt_str(meta, "supersedes", relpath),
        superseded_by=_opt_str(meta, "superseded_by", relpath),
        body=mf.body,
        body_hash=body_hash(mf.body),
        embed_text=embed_text,
        file_hash=hashlib.sha256(raw).hexdigest(),
        size=stat.st_size,
        mtime_ns=stat.st_mtime_ns,
        entities=extract_entities(meta, mf.body),
        relations=extract_relations(meta),
    )


# Entities and relations a memory names: frontmatter ``entities`` and
# ``[[wikilinks]]`` in the body; ``relations: [[subject, predicate, object]]``.
_WIKILINK = re.compile(r"\[\[([^\[\]|#\n]{1,200})(?:[#|][^\[\]\n]*)?\]\]")


def extract_entities(meta: dict[str, Any], body: str) -> list[str]:
    """Entity names from frontmatter and wikilinks, first spelling wins."""
    names: dict[str, str] = {}
    raw = meta.get("entities") or []
    if isinstance(raw, str):
        raw = [raw]
    if isinstance(raw, list):
        for item in raw:
            if isinstance(item, (str, int, float)) and normalize(str(item)):
                names.setdefault(entity_key(str(item)), normalize(str(item)))
    for match in _WIKILINK.finditer(body):
        name = normalize(match.group(1))
        if name:
            names.setdefault(entity_key(name), name)
    return list(names.values())


def extract_relations(meta: dict[str, Any]) -> list[Relation]:
    out: list[Relation] = []
    raw = meta.get("relations") or []
    if not isinstance(raw, list):
        return out
    for item in raw:
        if isinstance(item, list) and len(item) == 3 and all(isinstance(x, str) and x.strip() for x in item):
            out.append(Relation(normalize(item[0]), normalize(item[1]), normalize(item[2])))
    return out
