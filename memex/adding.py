"""``Vault.add``: check, compute outside the write lock, commit under it.

Everything slow happens before ``write.lock`` is taken: loading the model,
embedding the body and its chunks, and the dedup pipeline. The lock then
covers only a short commit: the erased-list and exact-duplicate checks again
(another process may have stored the same body meanwhile: two processes
adding one body still produce one file), the file write and its index rows
(docs/write-path.md). Eight concurrent adds beside a watcher and a reindex
loop used to queue behind each other's model loading and time out after
30 s; now an add waits for the lock as long as it takes (``Vault.lock_wait``;
a flock dies with its holder), and the lock is never held while waiting for
SQLite (``Backend.commit``).

A body the index would refuse is refused here, before anything is written:
over ``[index] max_file_bytes`` or holding a NUL byte (item 9). Answering
``created`` for a file that is never indexed would lose the memory silently.
"""

from __future__ import annotations

from collections.abc import Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol

import ulid

from memex import fields
from memex.dedup import pipeline
from memex.embedding import embed
from memex.files import memory_file
from memex.erased.erased_list import Guard, allow
from memex.config import Config
from memex.errors import InvalidArgument, MemoryFileError
from memex.index.indexer import Indexer
from memex.index import scan
from memex.files.memory_file import MemoryFile
from memex.layout import CONFIG_RELPATH
from memex.store import Backend, IndexStore, MemoryRow
from memex.records import DEFAULT_CONFIDENCE, build_record, check_unicode, now_iso
from memex.text import body_hash, normalize, strip_injected


class VaultLike(Protocol):
    """What an add needs of the vault. :class:`memex.vault.Vault` is one; it
    is named here, not imported, because vault.py imports this module
    (``Vault.add``) and an import back would make a cycle
    (tests/test_architecture.py)."""

    @property
    def root(self) -> Path: ...
    @property
    def memex_dir(self) -> Path: ...
    @property
    def config(self) -> Config: ...
    @property
    def store(self) -> IndexStore: ...
    @property
    def local_store(self) -> IndexStore: ...
    @property
    def backend(self) -> Backend: ...
    @property
    def embedder(self) -> embed.Embedder | None: ...
    @property
    def indexer(self) -> Indexer: ...
    def commit(self, timeout: float | None = None) -> AbstractContextManager[None]: ...
    def check_scope(self, scope: str | None) -> str: ...
    def new_path(self, scope: str, body: str, memory_id: str) -> Path: ...
    def record_access(self, ids: Sequence[str]) -> None: ...
    def row_by_id(self, memory_id: str) -> MemoryRow: ...


def check_storable(text: str, max_bytes: int, what: str = "text") -> None:
    """Refuse text the index could never hold, naming why (cheap: no model)."""
    if "\x00" in text:
        raise InvalidArgument(
            what, f"holds a NUL byte (character {text.index(chr(0))}): binary data is not a memory; nothing was stored"
        )
    size = len(text.encode("utf-8", "surrogatepass"))
    if size > max_bytes:
        raise InvalidArgument(
            what,
            f"is {size} bytes, over the vault's [index] max_file_bytes ({max_bytes}) in {CONFIG_RELPATH}; "
            "a file that big is never indexed, so nothing was stored",
        )


def _vectors(vault: VaultLike, body: str, content: str) -> tuple[Any, list[embed.CacheRow]]:
    """The dedup query vector of ``body`` and the cache rows the index will
    need for this file (body and chunk vectors), computed without any lock."""
    embedder = vault.embedder
    if embedder is None:
        return None, []
    indexer = vault.indexer  # vector tables must match this model first
    mf = memory_file.parse(content, Path("new memory"))
    embed_text = normalize(strip_injected(mf.body))
    pieces = indexer.chunker(embed_text)
    texts = [body, embed_text, *pieces]
    blobs, rows = embed.cached_vectors(vault.local_store, embedder, texts)
    # Only what the new memory's rows use goes into the cache; the query
    # vector of the raw body is kept out (one derived copy fewer to erase).
    keep = {embed.text_key(t) for t in texts[1:]}
    return embed.from_blob(blobs[0]), [r for r in rows if r[1] in keep]


def add(
    vault: VaultLike,
    text: str,
    scope: str | None = None,
    source: str | None = "user",
    session: str | None = None,
    source_ref: str | None = None,
    category: str | None = None,
    confidence: float | None = None,
    entities: Sequence[str] | None = None,
    extra: dict[str, Any] | None = None,
    supersedes: str | None = None,
    allow_erased: bool = False,
) -> pipeline.AddResult:
    """See :meth:`memex.vault.Vault.add`."""
    check_unicode(
        text=text, scope=scope, source=source, session=session, source_ref=source_ref,
        category=category, entities=entities,
    )
    max_bytes = vault.config.max_file_bytes
    if not normalize(text):
        raise InvalidArgument("text", "is empty: give the memory's text")
    body = strip_injected(text).strip()
    check_storable(body, max_bytes)  # before any other work: a 5 MB body must not reach the model
    if not normalize(body):
        raise InvalidArgument(
            "text", "holds only what memex injected (a <relevant-memories> block or an [hm ...] prefix), "
            "nothing of its own to store"
        )
    scope = vault.check_scope(scope)
    if confidence is None:
        confidence = DEFAULT_CONFIDENCE
    if not 0.0 <= confidence <= 1.0:
        raise InvalidArgument("confidence", f"must be from 0 to 1, got {confidence}")
    # Read once here; under the lock it is read again only if it grew (Guard).
    guard = Guard(vault.memex_dir)
    guard.refresh()
    if not allow_erased and guard.erased(body):
        return pipeline.AddResult("refused", "", "", "erased")

    memory_id = str(ulid.ULID())
    meta = fields.frontmatter({
        "id": memory_id, "scope": scope, "source": source, "session": session, "source_ref": source_ref,
        "category": category, "confidence": confidence, "created": now_iso(), "supersedes": supersedes,
        "entities": list(entities) if entities else None,
    })
    for key, value in (extra or {}).items():
        meta.setdefault(key, value)
    content = memory_file.serialize(MemoryFile(meta, body + "\n"))
    _check_file(content, max_bytes)

    # The pipeline's first layer, asked before any embedding: a body stored
    # already needs no vector (an import run again is all exact duplicates).
    existing = vault.store.exact_duplicate(scope, body_hash(body), supersedes)
    if existing is not None:
        return _known(vault, pipeline.Decision("duplicate", "exact", existing, 1.0))

    qvec, cache_rows = _vectors(vault, body, content)
    cand = pipeline.Candidate(body=body, scope=scope, source=source, session=session, supersedes=supersedes, qvec=qvec)
    decision = pipeline.check(vault.backend.lookup, vault.config, vault.embedder, cand, cache=vault.local_store)
    if decision.status != "created":
        return _known(vault, decision)

    with vault.commit():
        # Again under the lock: an erase or an add of the same body by another
        # process may have committed since the checks above.
        guard.refresh()
        if not allow_erased and guard.erased(body):
            return pipeline.AddResult("refused", "", "", "erased")
        existing = vault.store.exact_duplicate(scope, body_hash(body), supersedes)
        if existing is not None:
            return _known(vault, pipeline.Decision("duplicate", "exact", existing, 1.0, decision.similar_facts))
        path = vault.new_path(scope, body, memory_id)
        if not scan.is_inside(vault.root, path.parent):
            # A folder linked out of the vault (memories/ kept in a synced folder):
            # the index never follows such a link, so a file written there would
            # be reported stored and found by no search.
            shown = path.parent.relative_to(vault.root).as_posix()
            raise InvalidArgument(
                "scope", f"{shown} leads outside the vault (a symbolic link), where memex neither indexes nor "
                f"writes memories; nothing was stored (move that folder into the vault)"
            )
        refused = scan.refusal(vault.root, path.relative_to(vault.root).as_posix())
        if refused is not None:
            # A folder linked to one the walk finds by another path, or into a hidden folder: the
            # file would be reported stored under a path no reindex keeps.
            raise InvalidArgument("scope", f"{path.parent.relative_to(vault.root).as_posix()}: {refused}; nothing was stored")
        if allow_erased:  # the deliberate way back; the indexer would refuse it otherwise
            allow(vault.memex_dir, [body])
        memory_file.atomic_write(path, content)
        rel = path.relative_to(vault.root).as_posix()
        # With the query-side vectors dedup computed (memex/dedup/symmetric.py):
        # the next add that meets these memories finds them cached.
        rows = cache_rows + decision.cache_rows
        vault.local_store.cache_put(rows)
        vault.indexer.index_paths([rel])
        # Vectors stored for a file the indexer then refused go again.
        vault.local_store.cache_drop_unused({r[1] for r in rows})
    return pipeline.AddResult("created", memory_id, rel, None, None, None, decision.similar_facts)


def _check_file(content: str, max_bytes: int) -> None:
    """The file as written must read back as a memory (the indexer's own checks)."""
    data = content.encode("utf-8")
    if len(data) > max_bytes:
        raise InvalidArgument(
            "text",
            f"makes a {len(data)}-byte file with its frontmatter, over the vault's [index] max_file_bytes "
            f"({max_bytes}); nothing was stored",
        )
    try:
        memory_file.parse(memory_file.decode(data, Path("new memory")), Path("new memory"))
    except MemoryFileError as exc:
        raise InvalidArgument("text", f"would not read back as a memory file ({exc.reason}); nothing was stored") from exc


def _known(vault: VaultLike, decision: pipeline.Decision) -> pipeline.AddResult:
    """The answer for a body the pipeline found already stored (or refused)."""
    existing = decision.existing_id or ""
    if decision.status == "duplicate" and existing:
        vault.record_access([existing])
    path = vault.row_by_id(existing).path if existing else ""
    return pipeline.AddResult(
        decision.status, existing, path, decision.method, decision.existing_id,
        decision.similarity, decision.similar_facts,
    )


def vectors_for_files(vault: VaultLike, relpaths: Sequence[str]) -> list[embed.CacheRow]:
    """Embed, without any lock, what indexing these files will need and the
    cache lacks; the caller stores the rows in its commit (the watcher). A
    file that cannot be read is skipped: the indexer reports it then."""
    embedder = vault.embedder
    if embedder is None:
        return []
    indexer = vault.indexer
    texts: list[str] = []
    for rel in relpaths:
        full = vault.root / rel
        try:
            mf, raw = memory_file.read(full, vault.config.max_file_bytes, vault.root)
            rec = build_record(rel, mf, raw, full.stat(), vault.config.default_scope)
        except (MemoryFileError, OSError, ValueError):
            continue
        texts.append(rec.embed_text)
        texts.extend(indexer.chunker(rec.embed_text))
    if not texts:
        return []
    return embed.cached_vectors(vault.local_store, embedder, texts)[1]
