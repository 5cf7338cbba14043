"""End-to-end behaviour of the core: add, get, search, reindex, hand edits."""

from __future__ import annotations

from pathlib import Path

import pytest

from memex.vault import Vault

# Run on the SQLite and on the PostgreSQL index (docs/postgres.md).
pytestmark = pytest.mark.both_backends


def test_add_writes_a_file_and_search_finds_it(vault: Vault) -> None:
    result = vault.add("Use WAL mode for the SQLite index", scope="project:memex", category="decision")
    assert result.status == "created"
    path = vault.root / result.path
    assert path.is_file()
    assert path.parent == vault.root / "memories" / "project" / "memex"
    text = path.read_text()
    assert text.startswith("---\nid: " + result.id)
    hits = vault.search("sqlite wal")
    assert hits[0].id == result.id
    assert hits[0].scope == "project:memex"


def test_hand_edit_then_reindex_is_what_search_returns(vault: Vault) -> None:
    result = vault.add("The deploy target is staging-eu")
    path = vault.root / result.path
    path.write_text(path.read_text().replace("staging-eu", "production-us"))
    report = vault.reindex()
    assert report.updated == 1
    hits = vault.search("production-us")
    assert hits and hits[0].id == result.id
    assert "production-us" in hits[0].body
    assert not vault.search("staging-eu") or vault.search("staging-eu")[0].lexical == 0.0


def test_deleting_the_index_and_reindexing_gives_the_same_results(vault_root: Path, fake_embedder) -> None:  # type: ignore[no-untyped-def]
    bodies = [
        "Prefer tabs over spaces",
        "The CI runner has two cores",
        "Never commit secrets to the repository",
        "数据库使用 SQLite，开启 WAL 模式",
    ]
    with Vault(vault_root, embedder=fake_embedder) as v:
        for b in bodies:
            v.add(b)
        before = {q: [h.id for h in v.search(q)] for q in ("tabs", "cores", "数据库", "secrets")}
    for f in (vault_root / ".memex").glob("index.db*"):
        f.unlink()
    with Vault(vault_root, embedder=fake_embedder) as v:
        report = v.reindex()
        assert report.added == 4 and not report.errors
        after = {q: [h.id for h in v.search(q)] for q in before}
    assert after == before


def test_reindex_full_never_re_embeds_unchanged_text(vault: Vault, fake_embedder) -> None:  # type: ignore[no-untyped-def]
    vault.add("Alpha memory about rust")
    vault.add("Beta memory about go")
    embedded_before = fake_embedder.texts_embedded
    report = vault.reindex(full=True)
    assert report.embedded == 0
    assert fake_embedder.texts_embedded == embedded_before


def test_chinese_memory_found_by_chinese_query(vault: Vault) -> None:
    zh = vault.add("用户喜欢简洁的回答")
    vault.add("The user likes long detailed answers")
    hits = vault.search("简洁 回答")
    assert hits[0].id == zh.id


def test_hand_written_file_without_frontmatter_is_a_memory(vault: Vault) -> None:
    folder = vault.root / "memories" / "project" / "notes"
    folder.mkdir(parents=True)
    (folder / "handwritten.md").write_text("Remember to rotate the API keys every quarter.\n")
    report = vault.reindex()
    assert report.added == 1
    hit = vault.search("rotate API keys")[0]
    assert hit.scope == "project:notes"
    assert hit.path == "memories/project/notes/handwritten.md"
    assert vault.get(hit.id).body == "Remember to rotate the API keys every quarter.\n"
