"""Reindex: incremental, moves, deletions, full rebuilds that reuse cached
embeddings, rebuild equivalence with the real model, and life without a model."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import pytest

from memex import health
from memex.files import memory_file
from memex.store import Filters
from memex.vault import Vault
from tests.fakes import HashEmbedder

# Run on the SQLite and on the PostgreSQL index (docs/postgres.md).
pytestmark = pytest.mark.both_backends


def _count(v: Vault, what: str) -> int:
    """How many rows of one kind the index the vault answers from holds (the shared one on PostgreSQL)."""
    store = v.store
    counts = {
        "memories": lambda: sum(store.stats().by_status.values()), "chunks": lambda: store.stats().chunks,
        "memory_vec": lambda: len(store.all_memory_vectors()), "chunk_vec": lambda: len(store.all_chunk_vectors()),
    }
    return counts[what]()


def _reads(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Record every memory file the indexer reads."""
    seen: list[Path] = []
    real = memory_file.read

    def spy(path: Path, *args: Any) -> Any:
        seen.append(path)
        return real(path, *args)

    monkeypatch.setattr(memory_file, "read", spy)
    return seen


def test_no_change_reindex_reads_no_file(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in range(5):
        vault.add(f"Memory number {i} about the {['red', 'green', 'blue', 'cyan', 'pink'][i]} team")
    # Files read within two seconds of their mtime are re-hashed once (see
    # the same-tick test below); these were written a while ago.
    old = time.time_ns() - 3_600_000_000_000
    for path in (vault.root / "memories").rglob("*.md"):
        os.utime(path, ns=(old, old))
    assert vault.reindex().unchanged == 5
    reads = _reads(monkeypatch)
    report = vault.reindex()
    assert report.unchanged == 5 and report.added == report.updated == report.embedded == 0
    assert reads == []


def test_touched_file_is_read_once_and_not_re_embedded(
    vault: Vault, fake_embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    added = vault.add("The nightly backup runs at 02:00 UTC")
    path = vault.root / added.path
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - 5_000_000_000))  # same bytes, older mtime
    reads = _reads(monkeypatch)
    before = fake_embedder.texts_embedded
    report = vault.reindex()
    # size+mtime differ, so it is read (once by each index); the hash says unchanged
    once = [path] * (2 if vault.backend.shared else 1)
    assert reads == once
    assert report.unchanged == 1 and report.updated == 0 and report.embedded == 0
    assert fake_embedder.texts_embedded == before
    assert vault.reindex().unchanged == 1 and reads == once  # the new mtime was recorded


def test_renamed_file_keeps_its_id_usage_and_vectors(vault: Vault, fake_embedder: HashEmbedder) -> None:
    added = vault.add("Feature flags live in flags.yaml", scope="project:web")
    vault.record_access([added.id])
    old = vault.root / added.path
    new = old.with_name("feature-flags.md")
    old.rename(new)
    before = fake_embedder.texts_embedded
    report = vault.reindex()
    assert (report.moved, report.added, report.removed, report.embedded) == (1, 0, 0, 0)
    assert fake_embedder.texts_embedded == before
    memory = vault.get(added.id)
    assert memory.path == "memories/project/web/feature-flags.md"
    assert memory.access_count == 1
    assert vault.search("feature flags")[0].path == memory.path
    assert health.drift(vault).clean


def test_renamed_hand_written_file_counts_as_moved(vault: Vault, fake_embedder: HashEmbedder) -> None:
    folder = vault.root / "memories" / "user"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "note.md").write_text("Standup is at 9:30 on weekdays.\n")
    vault.reindex()
    first = vault.search("standup weekdays")[0]
    vault.record_access([first.id])
    (folder / "note.md").rename(folder / "standup.md")
    before = fake_embedder.texts_embedded
    report = vault.reindex()
    assert (report.moved, report.added, report.removed, report.embedded) == (1, 0, 0, 0)
    assert fake_embedder.texts_embedded == before
    hit = vault.search("standup weekdays")[0]
    assert hit.path == "memories/user/standup.md"
    # Without an id in the file its id follows the path; usage follows the move.
    assert hit.id != first.id and vault.get(hit.id).access_count == 1
    assert _count(vault, "memories") == 1


def test_file_moved_to_another_scope_folder(vault: Vault) -> None:
    folder = vault.root / "memories" / "user"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "deploy.md").write_text("Deploys go through the release train.\n")
    vault.reindex()
    target = vault.root / "memories" / "project" / "shop"
    target.mkdir(parents=True)
    (folder / "deploy.md").rename(target / "deploy.md")
    vault.reindex()
    assert [h.scope for h in vault.search("release train")] == ["project:shop"]


def test_deleted_file_is_purged_everywhere(vault: Vault) -> None:
    long_body = " ".join(f"sentence {i} about the payment gateway retries." for i in range(120))
    keep = vault.add("The payment gateway is Stripe")
    gone = vault.add(long_body, entities=["PaymentGateway"])
    assert _count(vault, "chunks") > 0
    (vault.root / gone.path).unlink()
    report = vault.reindex()
    assert report.removed == 1
    assert [h.id for h in vault.search("payment gateway retries", limit=50)] == [keep.id]
    assert _count(vault, "memories") == 1
    assert _count(vault, "chunks") == 0 and _count(vault, "chunk_vec") == 0
    assert _count(vault, "memory_vec") == 1
    assert vault.store.find_entity("paymentgateway") is None
    assert health.drift(vault).clean


def test_full_reindex_re_reads_but_never_re_embeds(vault: Vault, fake_embedder: HashEmbedder) -> None:
    vault.add("Short memory about the build cache")
    vault.add(" ".join(f"Long memory line {i} about flaky integration tests." for i in range(150)))
    chunks = _count(vault, "chunks")
    assert chunks > 1
    before = fake_embedder.texts_embedded
    report = vault.reindex(full=True)
    assert report.embedded == 0 and fake_embedder.texts_embedded == before
    assert report.updated + report.unchanged == 2 and not report.errors
    assert _count(vault, "chunks") == chunks


def test_hand_edit_changes_vectors_too(vault: Vault, fake_embedder: HashEmbedder) -> None:
    added = vault.add("The office plant is a ficus")
    path = vault.root / added.path
    path.write_text(path.read_text().replace("a ficus", "a monstera deliciosa"))
    report = vault.reindex()
    assert report.updated == 1 and report.embedded == 1
    hit = vault.search("monstera deliciosa")[0]
    assert hit.id == added.id and hit.semantic is not None and hit.semantic > 0.5


QUERIES = [
    "which indentation does the user like",
    "how do processes share the database",
    "数据库 模式",
    "what are the git rules",
    "how fast must the tests be",
]
BODIES = [
    "The user prefers tabs over spaces and a line length of 100.",
    "SQLite runs in WAL mode so several processes can share one index.",
    "数据库使用 SQLite，开启 WAL 模式以便多个进程共享。",
    "Never push directly to main; open a pull request first.",
    "CI has 90 minutes and two cores, so the test suite must stay small.",
    "用户喜欢简洁的回答，不要长篇大论。",
    "The staging server is called kestrel and runs Debian.",
]


@pytest.mark.model
def test_rebuilt_index_gives_the_same_results_with_the_real_model(vault_root: Path, real_embedder: Any) -> None:
    with Vault(vault_root, embedder=real_embedder) as v:
        for body in BODIES:
            v.add(body)
        before = {q: [(h.id, round(h.score, 5)) for h in v.search(q, limit=5)] for q in QUERIES}
        assert "tabs" in v.search(QUERIES[0])[0].body  # sanity: the model ranks sensibly
    for f in (vault_root / ".memex").glob("index.db*"):
        f.unlink()
    with Vault(vault_root, embedder=real_embedder) as v:
        report = v.reindex()
        assert report.added == len(BODIES) and report.embedded >= len(BODIES) and not report.errors
        after = {q: [(h.id, round(h.score, 5)) for h in v.search(q, limit=5)] for q in QUERIES}
    assert after == before


@pytest.mark.model
def test_hand_edit_is_what_search_returns_with_the_real_model(model_vault: Vault) -> None:
    for body in BODIES:
        model_vault.add(body)
    target = model_vault.search("staging server name")[0]
    assert "kestrel" in target.body
    path = model_vault.root / target.path
    path.write_text(path.read_text().replace("kestrel and runs Debian", "osprey and runs Alpine Linux"))
    model_vault.reindex()
    hits = model_vault.search("which Linux distribution does the staging server run")
    assert hits[0].id == target.id and "osprey" in hits[0].body
    assert all("kestrel" not in h.body for h in model_vault.search("kestrel", limit=20))


def test_without_a_model_search_is_lexical_and_says_so(vault_root: Path) -> None:
    with Vault(vault_root, embedder=None) as v:
        added = v.add("Lexical search finds the word pangolin")
        v.add("Another memory about armadillos")
        hits = v.search("pangolin")
        assert [h.id for h in hits] == [added.id]
        assert hits[0].semantic is None
        stats = health.stats(v)
        assert stats["lexical_only"] is True and stats["embedded"] == 0
        assert health.drift(v).clean  # no vectors are expected without a model
    # The model comes back: the same rows get their vectors, nothing is re-added.
    embedder = HashEmbedder()
    with Vault(vault_root, embedder=embedder) as v:
        assert len(health.drift(v).unembedded) == 2
        report = v.reindex()
        assert report.added == 0 and report.embedded == 2
        assert health.stats(v)["embedded"] == 2 and health.drift(v).clean


def test_changing_the_model_re_embeds_everything(vault_root: Path) -> None:
    class Other(HashEmbedder):
        model_id = "test-hash-32"
        dim = 32

    with Vault(vault_root, embedder=HashEmbedder()) as v:
        v.add("First memory about kites")
        v.add("Second memory about boats")
    with Vault(vault_root, embedder=Other()) as v:
        report = v.reindex()
        assert report.embedded == 2 and report.added == 0
        assert v.search("kites")[0].body.startswith("First")


def test_copied_file_gets_its_own_id_once_the_id_line_is_removed(vault: Vault) -> None:
    added = vault.add("The coffee machine is on the third floor")
    original = vault.root / added.path
    copy = original.with_name("copy.md")
    copy.write_text(original.read_text().replace("third floor", "fourth floor"))
    report = vault.reindex()
    assert [e["path"] for e in report.errors] == ["memories/user/copy.md"]
    copy.write_text("\n".join(line for line in copy.read_text().splitlines() if not line.startswith("id:")) + "\n")
    report = vault.reindex()
    assert report.added == 1 and report.errors == []
    assert vault.get(added.id).path == added.path
    assert vault.search("fourth floor")[0].path == "memories/user/copy.md"


def test_reindex_reports_progress(vault: Vault) -> None:
    folder = vault.root / "memories" / "user"
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(5):
        (folder / f"n{i}.md").write_text(f"Progress note number {i}\n")
    calls: list[tuple[int, int]] = []
    vault.reindex(progress=lambda done, total: calls.append((done, total)))
    assert calls and calls[-1] == (5, 5)


def test_model_package_missing_means_lexical_and_says_why(vault_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from memex.embedding import embed

    monkeypatch.setattr(embed, "_bundled_model_dir", lambda: None)
    monkeypatch.setattr(embed, "_LOADED", {})
    monkeypatch.setattr(embed, "_WHY_NOT", {})
    with Vault(vault_root) as v:  # the config says "auto"
        assert v.embedder is None
        added = v.add("Without a model the word capybara is still found")
        assert v.search("capybara")[0].id == added.id
        stats = health.stats(v)
        assert stats["lexical_only"] is True and "pip install" in stats["model"]
        assert "pip install" in v.embedder_status()


def test_a_file_renamed_onto_a_path_whose_id_moves_away_is_indexed_in_one_sync(vault: Vault) -> None:
    """b.md (id X) is renamed to a.md while another memory is renamed to b.md:
    in one sync a.md first seems to clash with X at b.md, but b.md gives X up
    when it is read. A rebuild indexes both, so one sync must too."""
    user = vault.root / "memories" / "user"
    user.mkdir(parents=True, exist_ok=True)
    (user / "b.md").write_text("---\nid: handwritten-x\n---\nheron notes\n")
    vault.reindex()
    other = vault.add("The kestrel roosts on the north tower")
    (user / "b.md").rename(user / "a.md")
    (vault.root / other.path).rename(user / "b.md")
    first = vault.reindex()
    assert first.errors == []
    assert vault.reindex().as_dict()["added"] == 0
    paths = {row.id: row.path for row in vault.store.list_rows(Filters(include_superseded=True))}
    assert paths == {"handwritten-x": "memories/user/a.md", other.id: "memories/user/b.md"}


def test_a_same_size_rewrite_in_the_same_mtime_tick_is_not_missed(vault: Vault) -> None:
    """A file indexed just after it was written is re-hashed by the next sync:
    a rewrite of the same size within the same timestamp tick cannot hide."""
    added = vault.add("The cache TTL is 300 seconds")
    path = vault.root / added.path
    before = path.stat()
    path.write_text(path.read_text(encoding="utf-8").replace("300", "900"), encoding="utf-8")
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))  # same size, same mtime
    assert path.stat().st_size == before.st_size
    report = vault.reindex()
    assert report.updated == 1
    assert "900" in vault.get(added.id).body and [h.id for h in vault.search("TTL 900")] == [added.id]


def test_a_file_read_long_after_its_mtime_is_trusted_by_stat(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    added = vault.add("Logs are kept for 30 days")
    path = vault.root / added.path
    old = time.time_ns() - 3_600_000_000_000
    os.utime(path, ns=(old, old))
    assert vault.reindex().unchanged == 1  # re-read once: the mtime changed
    reads: list[str] = []
    real = memory_file.read

    def counting(*args: object, **kwargs: object) -> object:
        reads.append(str(args[0]))
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(memory_file, "read", counting)
    assert vault.reindex().unchanged == 1
    assert reads == []  # an hour-old mtime: stat is enough, no file is read
