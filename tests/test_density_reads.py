"""A process's first write reads R's vectors from the embedding cache, by
index lookups, not from sqlite-vec (which scans every vector for them), and
stays exact whatever the cache holds: rows missing, rows with other bits, an
index from before digests, a model switch (memex/store/refvectors.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import hashlib
import shutil
import sys

import apsw
import numpy as np
import pytest

from memex import adding
from memex.store import density, refvectors
from memex.store.sqlite.schema import write_txn
from memex.vault import Vault, init_vault
from tests.fakes import HashEmbedder
from tests.test_density import _assert_exact, _texts, rows_read

TOPICS_OFF = ["zebra", "walrus", "octopus"]  # words no other memory holds
LONG = " ".join(f"the runbook step {i} restarts the billing worker on host{i % 5} after a kafka rebalance"
                for i in range(60))


@pytest.fixture(autouse=True)
def small_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(density, "S", 7)  # R: 8 of the vault's memories, so writes enter and leave it


class OtherHash(HashEmbedder):
    """Another model: other vectors under another id (and dimension)."""

    model_id = "test-hash-48"
    dim = 48


def _fill(root: Path, n: int = 200) -> None:
    with Vault(root, embedder=HashEmbedder()) as vault:
        for i, t in enumerate(_texts(n)):
            vault.add(f"{t} {LONG} part {i}" if i % 40 == 0 else t)  # some long bodies: chunked


@pytest.fixture(scope="module")
def filled_vault(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A vault of 200 memories added one by one, built once for this module
    (with the same small R as every test here) and copied into each test."""
    root = tmp_path_factory.mktemp("filled") / "vault"
    init_vault(root, git=False)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(density, "S", 7)
        _fill(root)
    return root


@pytest.fixture
def filled(vault_root: Path, filled_vault: Path) -> Path:
    """``vault_root`` holding the module's 200 memories (files and index alike)."""
    shutil.rmtree(vault_root)
    shutil.copytree(filled_vault, vault_root)
    return vault_root


def _from_memory_vec(vault: Vault, write: Callable[[], object]) -> int:
    """Body vectors the density code read from memory_vec (sqlite-vec)
    during ``write``: rows returned to memex/store/density.py or refvectors.py
    (dedup reads a few candidates' vectors of its own)."""

    def counts(cursor: apsw.Cursor, row: tuple[object, ...]) -> bool:
        if "memory_vec" not in cursor.expanded_sql or not any(isinstance(v, bytes) and len(v) > 64 for v in row):
            return False
        frame = sys._getframe(2)
        while frame is not None and not frame.f_code.co_filename.endswith(_DENSITY_CODE):
            frame = frame.f_back  # type: ignore[assignment]
        return frame is not None

    return rows_read(vault, write, counts)


_DENSITY_CODE = (str(Path("memex", "store", "density.py")), str(Path("memex", "store", "refvectors.py")))


def _add_past_r(vault: Vault, text: str, monkeypatch: pytest.MonkeyPatch) -> Callable[[], object]:
    """An add whose memory does not enter R (its key sorts after R's last):
    a write that changes R reads every vector (O(N)), by design."""
    last = max(k for (k,) in vault.backend.conn.execute(
        "SELECT key FROM memory_density ORDER BY key LIMIT ?", (density.S + 1,)))
    tag = hashlib.blake2b(text.encode(), digest_size=4).hexdigest().upper()
    memory_id = next(m for m in (f"01RREAD{tag}{i:011d}" for i in range(10_000)) if density.key(m) > last)
    monkeypatch.setattr(adding, "ulid", SimpleNamespace(ULID=lambda: memory_id))

    def add() -> None:
        assert vault.add(text).status == "created"

    return add


def _members(vault: Vault) -> list[int]:
    return [int(r) for (r,) in vault.backend.conn.execute(
        "SELECT rowid FROM memory_density ORDER BY key LIMIT ?", (density.S + 1,))]


def _held_as_stored(vault: Vault) -> None:
    """The R this connection keeps in memory is memory_vec's, bit for bit."""
    ref = density._state(vault.backend.conn).ref
    assert ref is not None
    stored = {int(r): bytes(b) for r, b in vault.backend.conn.execute("SELECT rowid, embedding FROM memory_vec")}
    for i, rowid in enumerate(ref.rowids):
        assert ref.matrix[i].astype(np.float32).tobytes() == stored[rowid], rowid


def _embed_keys(vault: Vault, rowids: list[int]) -> list[str]:
    return [str(vault.backend.conn.execute("SELECT embed_key FROM memories WHERE rowid = ?", (r,)).fetchone()[0])
            for r in rowids]


@pytest.mark.parametrize("point", [64, 2], ids=["by-rowid", "one-scan"])
def test_a_fresh_processs_first_add_reads_no_vector_from_memory_vec(
    filled: Path, point: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault_root = filled
    monkeypatch.setattr(refvectors, "_POINT", point)  # how memory_vec would be read (sqlite-vec scans for many)
    with Vault(vault_root, embedder=HashEmbedder()) as fresh:
        assert _from_memory_vec(fresh, _add_past_r(fresh, "zebra quartz violin one", monkeypatch)) == 0
        _held_as_stored(fresh)
        _assert_exact(fresh)


@pytest.mark.parametrize("point", [64, 2], ids=["by-rowid", "one-scan"])
def test_members_the_cache_lacks_are_read_from_memory_vec(
    filled: Path, point: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    vault_root = filled
    monkeypatch.setattr(refvectors, "_POINT", point)
    with Vault(vault_root, embedder=HashEmbedder()) as vault:
        purged = _members(vault)[2:5]
        with write_txn(vault.backend.conn):  # as a purge of unused rows, or a hand-cleared cache, would leave it
            vault.backend.conn.executemany("DELETE FROM embedding_cache WHERE text_hash = ?",
                                   [(k,) for k in _embed_keys(vault, purged)])
    with Vault(vault_root, embedder=HashEmbedder()) as fresh:
        assert _from_memory_vec(fresh, _add_past_r(fresh, "zebra quartz violin two", monkeypatch)) == len(purged)
        _held_as_stored(fresh)
        _assert_exact(fresh)
    with Vault(vault_root, embedder=HashEmbedder()) as cleared:
        with write_txn(cleared.backend.conn):
            cleared.backend.conn.execute("DELETE FROM embedding_cache")
    with Vault(vault_root, embedder=HashEmbedder()) as fresh:
        members = len(_members(fresh))
        assert _from_memory_vec(fresh, _add_past_r(fresh, "zebra quartz violin three", monkeypatch)) == members
        _held_as_stored(fresh)
        _assert_exact(fresh)


def test_a_cached_vector_other_than_memory_vecs_is_not_used(filled: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two processes embedding one new text at once can leave the cache with
    the other's bits (INSERT OR REPLACE): the digest tells, memory_vec answers."""
    vault_root = filled
    with Vault(vault_root, embedder=HashEmbedder()) as vault:
        members = _members(vault)
        flipped, swapped, donor = _embed_keys(vault, [members[1], members[4], members[6]])
        with write_txn(vault.backend.conn):
            blob = bytearray(vault.backend.conn.execute("SELECT vector FROM embedding_cache WHERE text_hash = ?",
                                                (flipped,)).fetchone()[0])
            blob[0] ^= 1  # the lowest bit of one float: a rounding difference
            vault.backend.conn.execute("UPDATE embedding_cache SET vector = ? WHERE text_hash = ?", (bytes(blob), flipped))
            vault.backend.conn.execute("UPDATE embedding_cache SET vector = (SELECT vector FROM embedding_cache "
                               "WHERE text_hash = ?) WHERE text_hash = ?", (donor, swapped))
    with Vault(vault_root, embedder=HashEmbedder()) as fresh:
        assert _from_memory_vec(fresh, _add_past_r(fresh, "zebra quartz violin four", monkeypatch)) == 2
        _held_as_stored(fresh)
        _assert_exact(fresh)


def test_an_index_from_before_digests_reads_memory_vec_once_then_the_cache(
    filled: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Schema step 8: rows of step 7 have no digest; the first read of R
    takes memory_vec's vectors and stores theirs, later processes the cache's."""
    vault_root = filled
    with Vault(vault_root, embedder=HashEmbedder()) as vault:
        before = {int(r): bytes(b) for r, b in vault.backend.conn.execute("SELECT rowid, neighbours FROM memory_density")}
        with write_txn(vault.backend.conn):
            vault.backend.conn.execute("ALTER TABLE memory_density DROP COLUMN digest")
            vault.backend.conn.execute("PRAGMA user_version=7")
    with Vault(vault_root, embedder=HashEmbedder()) as old:
        rows = old.backend.conn.execute("SELECT rowid, neighbours, digest FROM memory_density").fetchall()
        assert {int(r): bytes(b) for r, b, _ in rows} == before and {d for _, _, d in rows} == {None}
        members = len(_members(old))
        assert _from_memory_vec(old, _add_past_r(old, "zebra quartz violin five", monkeypatch)) == members
        _assert_exact(old)
    with Vault(vault_root, embedder=HashEmbedder()) as fresh:
        assert _from_memory_vec(fresh, _add_past_r(fresh, "zebra quartz violin six", monkeypatch)) == 0
        _held_as_stored(fresh)
        _assert_exact(fresh)


def test_edits_deletes_and_model_switches_keep_the_cache_path_exact(
    vault_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A vault indexed without a model, then with one, then another and back:
    the cache holds rows of both models (keyed by model), memory_vec the
    current one's; edits and deletes rewrite rows and their digests."""
    with Vault(vault_root, embedder=None) as lexical:
        added = [lexical.add(t) for t in _texts(60, "lexical")] + [lexical.add(f"a long one {LONG}")]
    for n, embedder in enumerate((HashEmbedder(), OtherHash(), HashEmbedder())):
        with Vault(vault_root, embedder=embedder) as vault:
            vault.reindex()
            _assert_exact(vault)
        with Vault(vault_root, embedder=embedder) as fresh:
            assert _from_memory_vec(fresh, _add_past_r(fresh, f"{TOPICS_OFF[n]} quartz violin", monkeypatch)) == 0
            _held_as_stored(fresh)
            _assert_exact(fresh)
    for result in added[:12]:
        path = vault_root / result.path
        path.write_text(path.read_text(encoding="utf-8").replace("note", "edited words about zebra"),
                        encoding="utf-8")
    for result in added[12:20]:
        (vault_root / result.path).unlink()
    with Vault(vault_root, embedder=HashEmbedder()) as vault:
        vault.reindex()
        _assert_exact(vault)
    with Vault(vault_root, embedder=HashEmbedder()) as fresh:
        assert _from_memory_vec(fresh, _add_past_r(fresh, "zebra quartz violin seven", monkeypatch)) == 0
        _held_as_stored(fresh)
        _assert_exact(fresh)
