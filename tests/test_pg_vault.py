"""The Vault API and CLI with ``[index] backend = "postgres"``: writes follow
into the shared index, search and recall read it, erasure purges it and
says what PostgreSQL keeps."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from memex.cli import main
from memex.erase.steps import erase
from memex.store.postgres.store import PgStore
from memex.vault import Vault
from tests.conftest import use_postgres
from tests.fakes import HashEmbedder

pytestmark = pytest.mark.both_backends


def test_add_search_erase_through_the_vault(vault: Vault, vault_backend: str) -> None:
    kept = vault.add("The staging database is on port 5433", scope="user")
    gone = vault.add("The launch password is hunter2 for staging", scope="user")
    hits = vault.search("staging database port")
    assert hits[0].id == kept.id
    assert vault.search("launch password")[0].id == gone.id
    recalled = vault.recall("staging database port")
    assert kept.id in [h.id for h in recalled]
    result = erase(vault, gone.id, reason="test").as_dict()
    assert gone.id not in [h.id for h in vault.search("launch password hunter2")]
    if vault_backend == "postgres":
        assert vault.store.memory_count() == 1 and vault.store.usage_of(kept.id).access_count == 1
        assert result["postgres"]["purged"]["memories"] == 1 and result["postgres"]["full"] is False
        notes = result["postgres"]["retained"]
        assert any("pg_wal" in note for note in notes) and any("VACUUM FULL" in note for note in notes)
    else:
        assert "postgres" not in result


def test_reindex_fills_the_shared_index(vault: Vault, vault_backend: str) -> None:
    for i in range(5):
        vault.add(f"Fact number {i}: the build uses cache volume {i}", scope="user")
    (vault.root / vault.search("cache volume 3")[0].path).unlink()
    vault.reindex()
    assert {h.body for h in vault.search("cache volume", limit=10)} == {
        f"Fact number {i}: the build uses cache volume {i}" for i in (0, 1, 2, 4)
    }
    if vault_backend == "postgres":
        assert vault.store.memory_count() == 4


def test_a_second_clone_sees_the_first_clones_memories(vault: Vault, vault_backend: str, tmp_path: Path) -> None:
    if vault_backend != "postgres":
        pytest.skip("a shared index is a PostgreSQL feature")
    clone = tmp_path / "clone"
    shutil.copytree(vault.root, clone)
    added = vault.add("Only the first clone wrote this: deploys freeze on Fridays", scope="user")
    with Vault(clone, embedder=HashEmbedder()) as other:
        assert [h.id for h in other.search("deploys freeze fridays")] == [added.id]


def test_cli_erase_says_what_postgres_keeps(vault_root: Path, vault_backend: str) -> None:
    runner = CliRunner()
    env = {"MEMEX_VAULT": str(vault_root)}
    out = runner.invoke(main, ["add", "--json", "The vault key is on the blue usb stick"], env=env)
    assert out.exit_code == 0, out.output
    memory_id = json.loads(out.output)["id"]
    out = runner.invoke(main, ["erase", memory_id, "--reason", "test"], env=env)
    assert out.exit_code == 0, out.output
    if vault_backend == "postgres":
        assert "postgres index: 1 row(s) purged, VACUUM of" in out.output
        assert "postgres still holds:" in out.output and "pg_wal" in out.output
    else:
        assert "postgres" not in out.output


def test_erase_vacuum_full_is_a_setting(vault_root: Path, vault_backend: str) -> None:
    if vault_backend != "postgres":
        pytest.skip("a PostgreSQL setting")
    conf = vault_root / ".memex" / "config.local.toml"  # this machine's server: its own settings
    conf.write_text(conf.read_text().replace("[index]\n", '[index]\nerase_vacuum = "full"\n', 1))
    with Vault(vault_root, embedder=HashEmbedder()) as vault:
        added = vault.add("The pager rota lives in the ops wiki", scope="user")
        result = erase(vault, added.id, reason="test").as_dict()
        assert result["postgres"]["full"] is True and len(result["postgres"]["retained"]) == 1
    conf.write_text(conf.read_text().replace('erase_vacuum = "full"', 'erase_vacuum = "always"'))
    from memex.errors import ConfigError

    with Vault(vault_root, embedder=HashEmbedder()) as vault:
        with pytest.raises(ConfigError, match='erase_vacuum must be "plain" or "full", got \'always\''):
            vault.add("Another fact about the pager rota", scope="user")
        assert not list((vault_root / "memories").rglob("*pager*"))


def _add_from_clone(root: str, n: int, tag: str) -> list[str]:
    with Vault(Path(root), embedder=HashEmbedder()) as vault:
        return [vault.add(f"Clone {tag} learned fact {i}: service {tag}{i} listens on port {9000 + i}").id
                for i in range(n)]


def test_clones_adding_at_once_share_one_index(vault: Vault, vault_backend: str, tmp_path: Path) -> None:
    """Three processes, three clones, adding at the same moment: every memory
    lands once in the shared index, whose BM25 totals stay exact."""
    if vault_backend != "postgres":
        pytest.skip("a shared index is a PostgreSQL feature")
    import multiprocessing

    vault.add("The shared index starts with this one")
    clones = []
    for tag in "abc":
        shutil.copytree(vault.root, tmp_path / tag)
        clones.append((str(tmp_path / tag), 5, tag))
    with multiprocessing.get_context("spawn").Pool(3) as pool:
        added = [i for ids in pool.starmap(_add_from_clone, clones) for i in ids]
    assert len(set(added)) == 15
    shared = vault.store
    assert isinstance(shared, PgStore) and shared.memory_count() == 16
    docs, tokens = shared.conn.execute("SELECT docs, tokens FROM fts_totals").fetchone()
    assert (docs, tokens) == shared.conn.execute("SELECT count(*), sum(fts_len) FROM memories").fetchone()
    found = {h.id for h in vault.search("clone learned fact service port", limit=20)}
    assert set(added) <= found  # this clone finds what the other three wrote
