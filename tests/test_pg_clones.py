"""Two vault clones on one PostgreSQL index: what one adds, the other's
get, list, dedup, consolidation, fading and entities answer at once (before
git brings the file); what one erases, the other can no longer read.
(docs/postgres.md, "What is shared and what stays local".)"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from memex import decay
from memex.cli import main
from memex.consolidation.consolidate import consolidate
from memex.erase.steps import allow_files, erase
from memex.errors import MemoryNotFound
from memex.health import drift
from memex.index.graph import entity_graph, list_entities
from memex.vault import Vault, init_vault
from tests.conftest import use_postgres
from tests.fakes import HashEmbedder


@pytest.fixture
def clones(tmp_path: Path, pg_url: str) -> Iterator[tuple[Vault, Vault]]:
    """Clone A and clone B of one vault, one shared index, nothing pulled between them."""
    root = init_vault(tmp_path / "a", git=False)
    use_postgres(root, pg_url)
    shutil.copytree(root, tmp_path / "b")
    with Vault(root, embedder=HashEmbedder()) as a, Vault(tmp_path / "b", embedder=HashEmbedder()) as b:
        yield a, b


def test_a_memory_added_on_one_clone_is_read_by_the_other(clones: tuple[Vault, Vault]) -> None:
    a, b = clones
    fact = "The billing service retries webhooks three times with backoff"
    added = a.add(fact, scope="project:billing", session="s1", entities=["Billing Service"])
    a.add("Invoices are stored for seven years in the archive bucket", scope="project:billing", session="s1")
    a.add("The tax module rounds half to even on every line item", scope="project:billing", session="s1")
    assert not (b.root / added.path).exists()  # git has not brought the file to B

    got = b.get(added.id)
    assert (got.body.strip(), got.path, got.status) == (fact, added.path, "active")
    assert got.meta["scope"] == "project:billing" and got.meta["session"] == "s1"
    assert added.id in [h.id for h in b.list(scope="project:billing")]
    assert [h.id for h in b.search("billing webhooks retries")][:1] == [added.id]

    again = b.add(fact, scope="project:billing")
    assert (again.status, again.method, again.existing_id) == ("duplicate", "exact", added.id)
    assert not list((b.root / "memories").rglob("*.md"))  # nothing written on B

    plan = consolidate(b, "s1", dry_run=True)
    assert plan.candidates == 3
    assert added.id in {f.id for f in decay.schedule(b.store, decay.load_policy(b.config))}
    assert "Billing Service" in [e.name for e in list_entities(b.store)]
    assert [m["id"] for m in entity_graph(b.store, "billing service")["memories"]] == [added.id]


def test_an_erase_on_one_clone_leaves_nothing_the_other_can_read(clones: tuple[Vault, Vault]) -> None:
    a, b = clones
    secret = "The staging root password is tangerine-42"
    gone = a.add(secret, scope="user", session="s2", entities=["Staging"])
    kept = a.add("Staging deploys run from the release branch", scope="user", session="s2", entities=["Staging"])
    assert b.get(gone.id).body.strip() == secret

    erase(a, gone.id, reason="leaked credential")

    with pytest.raises(MemoryNotFound):
        b.get(gone.id)
    assert gone.id not in [h.id for h in b.list(include_superseded=True)]
    assert gone.id not in [h.id for h in b.search("staging root password tangerine")]
    assert all(gone.id != f.id for f in decay.schedule(b.store, decay.load_policy(b.config)))
    assert b.store.targets_containing("tangerine") == []
    assert [m["id"] for m in entity_graph(b.store, "staging")["memories"]] == [kept.id]
    # Adding it again on B is not refused by B's (unsynced) erased list, but
    # it no longer counts as a duplicate of anything: the shared index forgot it.
    assert b.add(secret, scope="user").status == "created"


def test_the_cli_of_one_clone_shows_the_other_clones_memory(clones: tuple[Vault, Vault]) -> None:
    a, b = clones
    added = a.add("The on-call rota changes every Monday at nine", scope="user", entities=["On-call"])
    runner = CliRunner()
    env = {"MEMEX_VAULT": str(b.root)}
    out = runner.invoke(main, ["show", "--json", added.id], env=env)
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["body"].strip() == "The on-call rota changes every Monday at nine"
    out = runner.invoke(main, ["list", "--json"], env=env)
    assert out.exit_code == 0, out.output
    assert added.id in out.output
    out = runner.invoke(main, ["entities", "--json"], env=env)
    assert out.exit_code == 0, out.output
    assert "On-call" in out.output
    out = runner.invoke(main, ["fading", "--json", "--within", "100000"], env=env)
    assert out.exit_code == 0, out.output
    assert added.id in out.output
    out = runner.invoke(main, ["stats", "--json"], env=env)
    assert out.exit_code == 0, out.output
    data = json.loads(out.output)
    assert (data["memories"], data["backend"]) == (1, "postgres")
    assert data["schema_version"] == b.store.schema_version() >= 2  # the shared index's schema, not SQLite's


def test_a_reindex_on_a_clone_that_is_behind_keeps_the_others_memories(clones: tuple[Vault, Vault]) -> None:
    """A whole sync of clone B purges from the shared index only what B's own
    files lost, not every row whose file git has not brought to B yet."""
    a, b = clones
    mine = b.add("Clone B wrote this: the VPN config lives in the ops repo", scope="user")
    theirs = a.add("Clone A wrote this: the CDN purge takes ten minutes", scope="user")
    b.reindex()
    b.reindex(full=True)
    assert b.get(theirs.id).body.strip() == "Clone A wrote this: the CDN purge takes ten minutes"
    assert [h.id for h in a.search("CDN purge ten minutes")][:1] == [theirs.id]
    # What B's own files lose still leaves the shared index.
    (b.root / mine.path).unlink()
    b.reindex()
    with pytest.raises(MemoryNotFound):
        a.get(mine.id)
    assert a.get(theirs.id).id == theirs.id


def test_a_clone_erases_a_memory_only_the_shared_index_has_brought_it(clones: tuple[Vault, Vault]) -> None:
    """B shows A's memory before git brings the file; B can erase it too."""
    a, b = clones
    secret = "The payroll export key is plum-seven-seven"
    added = a.add(secret, scope="user")
    result = erase(b, added.id, reason="wrong place for a key")
    assert result.erased == [added.id] and result.files_deleted == 0
    assert result.shared_index is not None and result.shared_index["purged"]["memories"] == 1
    for clone in (a, b):
        with pytest.raises(MemoryNotFound):
            clone.get(added.id)
        assert clone.search("payroll export key plum") == []
    assert b.add(secret, scope="user").status == "refused"  # B's erased list holds it now


def test_a_clone_that_has_not_pulled_the_erasure_does_not_bring_it_back(clones: tuple[Vault, Vault]) -> None:
    """B holds A's file (pulled before), A erases it, B reindexes before it
    pulls the tombstone: the shared index must not take the memory back."""
    a, b = clones
    added = a.add("The break-glass token is kiwi-nine-one", scope="user")
    pulled = b.root / added.path
    pulled.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(a.root / added.path, pulled)  # what a git pull would bring
    b.reindex()
    erase(a, added.id, reason="rotated")
    b.reindex(full=True)
    for clone in (a, b):
        with pytest.raises(MemoryNotFound):
            clone.get(added.id)
        assert clone.search("break-glass token kiwi") == []
    # B's doctor names the file it still holds, whose text another clone erased.
    assert drift(b).erased_restored == [added.path]
    # The deliberate way back on B: the shared index takes it back at once, and B shows it.
    # A's own erased list still says erased (B's holds no allowance of A's line: a sync
    # would bring A's erasure to B, not undo it), so A's reads still hide it.
    allow_files(b, [str(pulled)])
    assert b.get(added.id).body.strip() == "The break-glass token is kiwi-nine-one"
    with pytest.raises(MemoryNotFound):
        a.get(added.id)
    assert added.id not in [h.id for h in a.search("break-glass token kiwi")]


def test_two_clones_adding_the_same_text_at_once_store_it_once(
    clones: tuple[Vault, Vault], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A's add has checked the exact layer and is about to write; B's add
    reaches the same step. The shared index's write lock, held by each
    commit, makes B wait and then find A's memory, instead of both storing it."""
    import threading

    a, b = clones
    text = "The release freeze starts on the twentieth"
    a_checked, b_checked = threading.Event(), threading.Event()
    a_new_path, b_new_path = a.new_path, b.new_path

    def a_path(scope: str, body: str, memory_id: str) -> Path:
        a_checked.set()
        b_checked.wait(3.0)  # B checks in the meantime, unless the shared lock holds it back
        return a_new_path(scope, body, memory_id)

    def b_path(scope: str, body: str, memory_id: str) -> Path:
        b_checked.set()
        return b_new_path(scope, body, memory_id)

    monkeypatch.setattr(a, "new_path", a_path)
    monkeypatch.setattr(b, "new_path", b_path)
    a.indexer, b.indexer  # the models' vector tables, before the threads
    results: dict[str, str] = {}

    def add(name: str, clone: Vault) -> None:
        results[name] = clone.add(text, scope="user").status

    first = threading.Thread(target=add, args=("a", a))
    first.start()
    assert a_checked.wait(30)  # A has checked and holds its commit
    second = threading.Thread(target=add, args=("b", b))
    second.start()
    first.join(30)
    second.join(30)
    assert sorted(results.values()) == ["created", "duplicate"], results
    assert len(a.list()) == 1
