"""The erased list at index time (docs/forgetting.md).

The indexer refuses a file whose body is on the erased list (restored by
git or a backup, a sync tool's copy) and records it as an error that names
the way out; doctor shows it. Two moments need more than the check at
parse time, and live here:

* :func:`recheck`, inside each batch's write transaction: an erasure lists
  its bodies before it deletes any file, so a batch read before the erasure
  and committed after it drops the erased records (and a file deleted since
  is left to the purge of vanished files);
* :func:`drop_erased_rows`, at the end of a sync, when the list grew since
  the last check: a row whose file is unchanged is never read again, so an
  erase killed after listing the text but before deleting the file would
  otherwise leave it searchable;
* :func:`erased_rows` and :func:`hide_erased`, for doctor and for reads
  between syncs: an index.db restored from a backup older than the erasure
  holds the erased rows until the next sync drops them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Sequence
from pathlib import Path

from memex.embedding import embed
from memex.erased.erased_list import Guard
from memex.erased.pending import ShownT
from memex.records import Record
from memex.store import IndexStore

# The indexer's error row for one path (BatchWriter.record_error): passed in, so
# that this module needs nothing of the indexer's.
RecordError = Callable[[str, str, os.stat_result | None], None]

ERASED_REASON = "erased content restored in"
ERASED_ELSEWHERE = "erased on another clone; not indexed"
ERASED_SEEN_KEY = "erased_list_size"  # meta: the erased list's size at the last check of every row


def erased_reason(rel: str, memory_id: str) -> str:
    """The index error of a file whose body is on the erased list (doctor shows it)."""
    return (
        f"{ERASED_REASON} {rel}: not indexed; delete it with `memex erase {memory_id} --reason ...`, "
        f"or bring it back deliberately with `memex reindex --allow-erased {rel}`"
    )




def _all_rows_checked(store: IndexStore, erased: Guard) -> bool:
    """Whether the last sync checked every row against the erased list as it is now (its size is kept in meta)."""
    erased.refresh()
    return (store.get_meta(ERASED_SEEN_KEY) or "0") == str(erased.size)


def _rows_on_the_list(store: IndexStore, erased: Guard) -> list[tuple[int, str, str]]:
    """(rowid, id, path) of rows whose text or id is on the erased list; only
    looked for when the list changed since the last sync checked every row."""
    if _all_rows_checked(store, erased):
        return []
    return [(rowid, mid, path) for rowid, mid, path, body in store.bodies() if erased.holds(mid, body)]


def hide_erased(store: IndexStore, erased: Guard, shown: list[ShownT]) -> list[ShownT]:
    """``shown`` without what is on the erased list: rows the index kept past an
    erasure (an index.db restored from an older backup) until a sync drops them.
    Free once a sync has checked every row against the list as it is now."""
    if _all_rows_checked(store, erased):
        return shown
    return [s for s in shown if not erased.holds(s.id, s.body)]


def erased_rows(store: IndexStore, erased: Guard) -> list[tuple[str, str]]:
    """(id, path) of rows whose text or id is on the erased list (see :func:`_rows_on_the_list`)."""
    return [(mid, path) for _, mid, path in _rows_on_the_list(store, erased)]


def drop_erased_rows(
    store: IndexStore, root: Path, erased: Guard, record_error: RecordError
) -> tuple[int, list[dict[str, str]]]:
    """Rows whose text went on the erased list after they were indexed:
    how many went, and the errors to report (one per file still on disk).

    An erase killed after listing the text but before deleting the file
    leaves a file that looks unchanged to a sync; the erasure still holds:
    the row goes and the file is reported like a restored one. Runs only
    when the list grew since the last sync.
    """
    if _all_rows_checked(store, erased):
        return 0, []
    hits = _rows_on_the_list(store, erased)
    errors: list[dict[str, str]] = []
    with store.write_txn():
        for rowid, mid, path in hits:
            store.purge_memory(rowid)
            try:
                st: os.stat_result | None = os.stat(root / path)
            except OSError:
                st = None
            if st is not None:
                reason = erased_reason(path, mid)
                record_error(path, reason, st)
                errors.append({"path": path, "reason": reason})
        store.set_meta(ERASED_SEEN_KEY, str(erased.size))
    return len(hits), errors


def recheck(
    root: Path,
    erased: Guard,
    records: Sequence[Record],
    plan: Sequence[tuple[Record, list[str]]],
    cache_rows: list[embed.CacheRow],
    elsewhere: Collection[str] = (),
) -> tuple[list[Record], list[tuple[str, str, os.stat_result | None]], list[embed.CacheRow]]:
    """Inside the write transaction: what was read may not be written now.

    An erasure (which lists the body before it deletes the file) may have
    run since the batch was read: its text is refused, and a file deleted
    since is left to the purge of vanished files. ``elsewhere``: the ids an
    index other clones write too says were erased on one of them, whose
    erasure git has not brought here (``RecordStore.erased_ids``): refused
    as well. Returns the records to write, the refusals, and the cache rows
    of text still wanted.
    """
    erased.refresh()
    keep: list[Record] = []
    late: list[tuple[str, str, os.stat_result | None]] = []
    dropped: set[str] = set()
    for rec in records:
        if not os.path.lexists(root / rec.path):
            dropped.add(rec.path)  # even its error row would keep its name (the body's first words)
        elif erased.holds(rec.id, rec.body):
            late.append((rec.path, erased_reason(rec.path, rec.id), None))
            dropped.add(rec.path)
        elif rec.id in elsewhere:
            late.append((rec.path, ERASED_ELSEWHERE, None))
            dropped.add(rec.path)
        else:
            keep.append(rec)
    if not dropped:
        return keep, late, cache_rows
    wanted: set[str] = set()
    unwanted: set[str] = set()
    for rec, pieces in plan:
        keys = {embed.text_key(rec.embed_text), *(embed.text_key(p) for p in pieces)}
        (unwanted if rec.path in dropped else wanted).update(keys)
    gone = unwanted - wanted
    return keep, late, [row for row in cache_rows if row[1] not in gone]
