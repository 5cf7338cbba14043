"""How far the index is from the files (doctor, status) and what it holds (stats).

:func:`drift` never trusts a flag: it walks the files and compares them to
the rows, so a report of "clean" means the two agree right now.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memex.files import orphans
from memex.index.db import SCHEMA_VERSION, has_vector_tables, scalar, write_txn
from memex.index.guard import ERASED_REASON

if TYPE_CHECKING:
    from memex.vault import Vault


@dataclass
class Drift:
    missing: list[str] = field(default_factory=list)  # file on disk, no row
    stale: list[str] = field(default_factory=list)  # row older than its file
    orphaned: list[str] = field(default_factory=list)  # row, no file
    unembedded: list[str] = field(default_factory=list)  # row without its vector
    orphan_vectors: int = 0  # vector rows of no memory
    errors: list[dict[str, str]] = field(default_factory=list)
    # Temp files of a killed write (they hold a memory's whole text): --fix removes them.
    temp_files: list[str] = field(default_factory=list)

    @property
    def erased_restored(self) -> list[str]:
        """Files whose body was erased (restored from git or a backup): not indexed."""
        return [e["path"] for e in self.errors if e["reason"].startswith(ERASED_REASON)]

    @property
    def differing(self) -> int:
        """Files whose content the index does not reflect right now."""
        return len(self.missing) + len(self.stale) + len(self.orphaned)

    @property
    def clean(self) -> bool:
        return not (self.differing or self.unembedded or self.orphan_vectors or self.errors or self.temp_files)

    def as_dict(self) -> dict[str, Any]:
        return {
            "clean": self.clean,
            "differing": self.differing,
            "missing": self.missing,
            "stale": self.stale,
            "orphaned": self.orphaned,
            "unembedded": self.unembedded,
            "orphan_vectors": self.orphan_vectors,
            "errors": self.errors,
            "temp_files": self.temp_files,
            "erased_restored": self.erased_restored,
        }


def drift(vault: Vault) -> Drift:
    report = Drift()
    on_disk, link_errors = vault.indexer.walk()
    report.errors.extend(link_errors)
    conn = vault.conn
    errors = {p: (s, m, r) for p, r, s, m in conn.execute("SELECT path, reason, size, mtime_ns FROM index_errors")}
    rows = {
        p: (s, m, e)
        for p, s, m, e in conn.execute("SELECT path, size, mtime_ns, embedded FROM memories")
    }
    want_vectors = vault.embedder is not None
    for rel, st in on_disk.items():
        if rel in errors:
            size, mtime, reason = errors[rel]
            if size is None or (size == st.st_size and mtime == st.st_mtime_ns):
                report.errors.append({"path": rel, "reason": reason})
            else:
                report.stale.append(rel)
            continue
        row = rows.get(rel)
        if row is None:
            report.missing.append(rel)
        elif row[0] != st.st_size or row[1] != st.st_mtime_ns:
            report.stale.append(rel)
        elif want_vectors and not row[2]:
            report.unembedded.append(rel)
    report.orphaned = sorted(p for p in rows if p not in on_disk)
    report.temp_files = orphans.find_orphans(vault.root)
    if has_vector_tables(conn):
        report.orphan_vectors = int(
            scalar(conn, "SELECT count(*) FROM memory_vec WHERE rowid NOT IN (SELECT rowid FROM memories)")
            or 0
        ) + int(
            scalar(conn, "SELECT count(*) FROM chunk_vec WHERE rowid NOT IN (SELECT rowid FROM chunks)")
            or 0
        )
    return report


def repair(vault: Vault) -> dict[str, Any]:
    """Fix what :func:`drift` found: a sync (which removes orphaned temp files), then stray vector rows."""
    sync = vault.reindex()
    removed_vectors = 0
    if has_vector_tables(vault.conn):
        with write_txn(vault.conn):
            for table, owner in (("memory_vec", "memories"), ("chunk_vec", "chunks")):
                stray = [r[0] for r in vault.conn.execute(
                    f"SELECT rowid FROM {table} WHERE rowid NOT IN (SELECT rowid FROM {owner})"
                )]
                vault.conn.executemany(f"DELETE FROM {table} WHERE rowid = ?", [(r,) for r in stray])
                removed_vectors += len(stray)
    return {
        "sync": sync.as_dict(), "orphan_vectors_removed": removed_vectors,
        "temp_files_removed": list(vault.indexer.orphans_removed),
    }


def stats(vault: Vault) -> dict[str, Any]:
    conn = vault.conn
    by_status: dict[Any, Any] = {
        s: n for s, n in conn.execute("SELECT status, count(*) FROM memories GROUP BY status")
    }
    by_scope: dict[Any, Any] = {
        s: n for s, n in conn.execute("SELECT scope, count(*) FROM memories GROUP BY scope ORDER BY 2 DESC")
    }
    index_path = vault.memex_dir / "index.db"
    index_bytes = sum(
        os.path.getsize(p) for p in (index_path, index_path.with_name("index.db-wal")) if p.exists()
    )
    return {
        "vault": str(vault.root),
        "memories": sum(by_status.values()),
        "active": by_status.get("active", 0),
        "superseded": by_status.get("superseded", 0),
        "scopes": by_scope,
        "embedded": int(scalar(conn, "SELECT count(*) FROM memories WHERE embedded = 1") or 0),
        "chunks": int(scalar(conn, "SELECT count(*) FROM chunks") or 0),
        "entities": int(scalar(conn, "SELECT count(*) FROM entities") or 0),
        "cached_embeddings": int(scalar(conn, "SELECT count(*) FROM embedding_cache") or 0),
        "errors": int(scalar(conn, "SELECT count(*) FROM index_errors") or 0),
        "model": vault.embedder_status(),
        "lexical_only": vault.embedder is None,
        "schema_version": SCHEMA_VERSION,
        "index_bytes": index_bytes,
    }
