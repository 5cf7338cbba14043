"""Reindex of many batches: embedding overlaps parsing and writing, results do not change."""

from __future__ import annotations

from pathlib import Path

import pytest

from memex.index import indexer
from memex.vault import Vault
from tests.fakes import HashEmbedder


def _write(root: Path, n: int) -> None:
    folder = root / "memories" / "user"
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        body = f"Service {i} talks to queue {i % 7}"
        if i % 9 == 0:
            body = " ".join(f"long{i}-{k}" for k in range(300))  # chunked
        (folder / f"m{i:03d}.md").write_text(f"---\nid: M{i:04d}\n---\n{body}\n")
    (folder / "broken.md").write_text("---\nid: [unclosed\n---\nbody\n")


def test_many_batches_index_every_file_once(vault_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(indexer, "BATCH", 8)
    _write(vault_root, 45)
    fake = HashEmbedder()
    seen: list[tuple[int, int]] = []
    with Vault(vault_root, embedder=fake) as v:
        report = v.reindex(progress=lambda done, total: seen.append((done, total)))
        assert report.added == 45
        assert [e["path"] for e in report.errors] == ["memories/user/broken.md"]
        assert [d for d, _ in seen] == sorted(d for d, _ in seen) and seen[-1] == (46, 46)
        assert v.backend.conn.execute("SELECT count(*) FROM memories WHERE embedded = 1").fetchone()[0] == 45
        assert v.backend.conn.execute("SELECT count(*) FROM chunks").fetchone()[0] > 5
        before = [h.id for h in v.search("service queue 3", limit=10)]
        assert before and before[0].startswith("M")
        assert [h.id for h in v.search("long18-150")] [:1] == ["M0018"]
        texts = fake.texts_embedded
        again = v.reindex(full=True)
        assert again.embedded == 0 and fake.texts_embedded == texts  # all from the cache
        assert [h.id for h in v.search("service queue 3", limit=10)] == before


def test_an_embedding_failure_surfaces(vault_root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(indexer, "BATCH", 4)
    _write(vault_root, 12)

    class Failing(HashEmbedder):
        def embed(self, texts):  # type: ignore[no-untyped-def]
            if self.calls >= 1:
                raise RuntimeError("model crashed")
            return super().embed(texts)

    with Vault(vault_root, embedder=Failing()) as v, pytest.raises(RuntimeError, match="model crashed"):
        v.reindex()
