"""No trace on disk: raw bytes of every file under the vault, before and after erase.

Each test has a positive control (the same scan finds the text and the
vector bytes before erasure), so a scan that could never find anything would
fail here.
"""

from __future__ import annotations

import pytest

from memex.store.sqlite import scrub
from memex.store.sqlite.schema import write_txn
from memex.embedding.embed import from_blob
from memex.vault import Vault
from memex.erase.steps import erase
from memex.index.graph import list_entities
from tests.erasekit import files_with_bytes, files_with_text, settle

# Words found nowhere else; distinct first two letters so that FTS5's
# prefix compression of neighbouring terms cannot hide them from a scan, and
# endings the Porter stemmer leaves alone. Mixed case in the body.
SECRET_WORDS = ["Zqorblax", "Xjuimbrelk", "Vkwhistmo", "Yprodigalq"]
SECRET_BODY = (
    "Zqorblax Labs stores the payroll export under Xjuimbrelk, and the recovery phrase "
    "for the vault is VKWHISTMO yprodigalq. "
    + "\n\n".join(
        f"Paragraph {i}: the zqorblax migration moves xjuimbrelk records nightly, "
        f"vkwhistmo keeps the audit trail, Yprodigalq signs it."
        for i in range(20)
    )
)
FILLERS = [
    f"Note {i}: the build uses cache layer {i} for module alpha with SQLite and careful retries"
    for i in range(40)
]


def _seed(vault: Vault) -> str:
    for text in FILLERS:
        vault.add(text, entities=["SQLite"])
    result = vault.add(SECRET_BODY, entities=["Zqorblax Labs", "SQLite"])
    assert result.status == "created"
    assert len(vault.indexer.chunker(SECRET_BODY)) >= 2  # so chunks and chunk vectors exist
    return result.id


def _vectors(vault: Vault, memory_id: str) -> list[bytes]:
    rowid = vault.backend.conn.execute("SELECT rowid FROM memories WHERE id = ?", (memory_id,)).fetchone()[0]
    blobs = [vault.backend.conn.execute("SELECT embedding FROM memory_vec WHERE rowid = ?", (rowid,)).fetchone()[0]]
    blobs += [
        r[0] for r in vault.backend.conn.execute(
            "SELECT v.embedding FROM chunk_vec v JOIN chunks c ON c.rowid = v.rowid WHERE c.memory_rowid = ?",
            (rowid,),
        )
    ]
    return [bytes(b) for b in blobs]


@pytest.mark.model
@pytest.mark.parametrize("pre_optimized", [False, True], ids=["many-segments", "one-segment"])
def test_erase_leaves_no_text_and_no_vector_bytes(model_vault: Vault, pre_optimized: bool) -> None:
    vault = model_vault
    secret_id = _seed(vault)
    assert vault.recall("zqorblax payroll export")[0].id == secret_id  # usage row exists
    vectors = _vectors(vault, secret_id)
    assert len(vectors) >= 3  # the memory's vector and at least two chunk vectors
    assert all(float(abs(from_blob(v)).max()) > 0 for v in vectors)
    if pre_optimized:
        # All terms in one segment: deleting then only adds a tombstone.
        with write_txn(vault.backend.conn):
            vault.backend.conn.execute("INSERT INTO memory_fts(memory_fts) VALUES ('optimize')")
    settle(vault)

    # Positive control: the scan finds every word and every vector, in the index too.
    before = files_with_text(vault.root, SECRET_WORDS)
    assert any(rel.endswith(".md") for rel in before)
    assert set(before[".memex/index.db"]) == set(SECRET_WORDS)
    for blob in vectors:
        assert ".memex/index.db" in files_with_bytes(vault.root, blob)

    result = erase(vault, secret_id, reason="user asked")
    assert result.wal_truncated

    assert files_with_text(vault.root, SECRET_WORDS) == {}
    for blob in vectors:
        assert files_with_bytes(vault.root, blob) == {}
    # ... and nothing is searchable, recallable or listed as an entity.
    assert secret_id not in [h.id for h in vault.search("zqorblax xjuimbrelk payroll", limit=100)]
    assert all(h.id != secret_id for h in vault.recall("payroll export recovery phrase"))
    names = {e.name for e in list_entities(vault.store)}
    assert "Zqorblax Labs" not in names and "SQLite" in names
    assert len(vault.list()) == len(FILLERS)


def test_fts_delete_alone_keeps_terms_until_segments_are_rewritten(vault: Vault) -> None:
    """Why erase rewrites the FTS5 segments: a plain purge leaves the terms on disk."""
    secret_id = _seed(vault)
    settle(vault)
    # Suffixes: a term may be stored after a shared prefix with its neighbour.
    suffixes = [w[2:] for w in SECRET_WORDS]
    rowid = vault.backend.conn.execute("SELECT rowid FROM memories WHERE id = ?", (secret_id,)).fetchone()[0]
    (vault.root / vault.get(secret_id).path).unlink()
    with write_txn(vault.backend.conn):
        vault.indexer.purge_row(rowid)
    settle(vault)
    left = files_with_text(vault.root, suffixes)
    # secure_delete zeroed the row, the vectors and the cache; the FTS segments still hold the terms.
    assert set(left) == {".memex/index.db"} and set(left[".memex/index.db"]) == set(suffixes)
    assert vault.backend.conn.execute("SELECT value FROM meta WHERE key = 'scrub_pending'").fetchone() is not None
    assert scrub.scrub(vault.backend.conn) is True
    assert files_with_text(vault.root, suffixes) == {}
    assert scrub.scrub_if_pending(vault.backend.conn) is None  # nothing pending any more


def test_cached_embedding_shared_with_another_memory_is_kept(vault: Vault) -> None:
    """A cache entry goes with its last user: the same text in another scope keeps it
    when one file is deleted by hand (erasing takes every copy of the text: test_erase_copies)."""
    first = vault.add("Deploy keys rotate every ninety days", scope="user")
    second = vault.add("Deploy keys rotate every ninety days", scope="project:ops")
    assert first.status == second.status == "created"
    cached = vault.backend.conn.execute("SELECT count(*) FROM embedding_cache").fetchone()[0]
    (vault.root / vault.get(first.id).path).unlink()
    assert vault.reindex().removed == 1
    assert vault.backend.conn.execute("SELECT count(*) FROM embedding_cache").fetchone()[0] == cached
    assert [h.id for h in vault.search("deploy keys rotate")] == [second.id]
