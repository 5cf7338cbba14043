"""doctor's drift report and repair, and stats, on real index rows."""

from __future__ import annotations

import numpy as np
import pytest

from memex import health
from memex.embedding import embed
from memex.store import IndexStore, SqliteStore
from memex.vault import Vault
from memex.meta_edit import update_meta

pytestmark = pytest.mark.both_backends


def _stray_vectors(store: IndexStore, blob: bytes) -> None:
    """Vector rows of no memory or chunk, in the index reads answer from: a
    fault no operation of the store makes, so it is written in its own SQL."""
    with store.write_txn():
        if isinstance(store, SqliteStore):
            store.conn.execute("INSERT INTO memory_vec(rowid, embedding) VALUES (9999, ?)", (blob,))
            store.conn.execute("INSERT INTO chunk_vec(rowid, embedding) VALUES (8888, ?)", (blob,))
        else:
            from memex.store.postgres.connection import Vec
            from memex.store.postgres.store import PgStore

            assert isinstance(store, PgStore)
            store.conn.execute("INSERT INTO memory_vec(rowid, embedding) VALUES (9999, %s)", (Vec(blob),))
            store.conn.execute("INSERT INTO chunk_vec(rowid, embedding) VALUES (8888, %s)", (Vec(blob),))


def test_stray_vectors_are_found_and_removed(vault: Vault) -> None:
    vault.add("A memory with one vector")
    _stray_vectors(vault.store, embed.to_blob(np.ones(vault.embedder.dim, dtype=np.float32) / 8))  # type: ignore[union-attr]
    drift = health.drift(vault)
    assert drift.orphan_vectors == 2 and not drift.clean and drift.differing == 0
    result = health.repair(vault)
    assert result["orphan_vectors_removed"] == 2
    assert health.drift(vault).clean


def test_a_row_without_its_vector_is_unembedded_until_reindex(vault: Vault) -> None:
    # Added while no model was loaded (lexical only): its row, in every index, has no vector.
    with Vault(vault.root, embedder=None) as lexical:
        added = lexical.add("A memory whose vector goes missing")
    assert vault.store.embed_state([added.id])[added.id].embedded == 0
    assert health.drift(vault).unembedded == [added.path]
    report = health.repair(vault)["sync"]
    assert report["updated"] + report["unchanged"] == 1
    assert health.drift(vault).clean
    assert vault.search("vector goes missing")[0].semantic is not None


def test_stats_counts(vault: Vault) -> None:
    a = vault.add("Old deploy target is staging-eu", scope="project:ops")
    vault.add("The release is cut on Thursdays", scope="user", entities=["Release"])
    update_meta(vault, a.id, {"superseded_by": "someone"})
    data = health.stats(vault)
    assert (data["memories"], data["active"], data["superseded"]) == (2, 1, 1)
    assert data["scopes"] == {"project:ops": 1, "user": 1}
    assert data["entities"] == 1 and data["embedded"] == 2 and data["errors"] == 0
    assert data["lexical_only"] is False and data["index_bytes"] > 0
