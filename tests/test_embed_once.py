"""The model runs once per distinct input it reads (docs/import.md, "Speed").

An add embeds a body and the whitespace-normalized text the index stores
(memex/adding.py); for a note ("# Title\\n\\ntext") those are two texts, two
cache keys, but the same word pieces: the model must not run twice on them.
Found from outside: ``memex import`` of 400 notes embedded 800 texts and
cost three times a reindex of the same files.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memex.importers import import_path
from memex.vault import Vault


def _count_model_inputs(embedder: Any, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The texts that reach the model itself (the real one, counted)."""
    seen: list[str] = []
    real = embedder._run

    def counted(texts: Sequence[str]) -> Any:
        seen.extend(texts)
        return real(texts)

    monkeypatch.setattr(embedder, "_run", counted)
    return seen


@pytest.mark.model
def _count_embed_calls(embedder: Any) -> list[list[str]]:
    """The texts of each call the vault makes to ``embedder.embed`` from now on."""
    calls: list[list[str]] = []
    real = embedder.embed

    def counting(texts: Sequence[str]) -> Any:
        calls.append(list(texts))
        return real(texts)

    embedder.embed = counting
    return calls


def test_texts_the_model_reads_alike_run_once(real_embedder: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    texts = [
        "# Deploys\n\nDeploys  happen on\tTuesdays.",
        "# Deploys Deploys happen on Tuesdays.",  # normalized: the same word pieces
        "Deploys happen on Fridays.",
    ]
    alone = [real_embedder.embed([t])[0] for t in texts]
    seen = _count_model_inputs(real_embedder, monkeypatch)
    vectors = real_embedder.embed(texts)
    assert sorted(seen) == sorted([texts[0], texts[2]])
    assert vectors.shape == (3, real_embedder.dim) and vectors.dtype == np.float32
    assert np.array_equal(vectors[0], vectors[1])
    for got, want in zip(vectors, alone):
        assert float(np.abs(got - want).max()) <= 1e-5
    assert float(np.dot(vectors[0], vectors[2])) < 0.999  # a different text keeps its own vector


@pytest.mark.model
def test_an_import_of_notes_runs_the_model_once_per_note(
    model_vault: Vault, real_embedder: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    folder = tmp_path / "notes"
    (folder / ".obsidian").mkdir(parents=True)
    topics = ["billing retries", "the staging host", "release notes", "on-call rota", "the search index"]
    for n, topic in enumerate(topics):
        (folder / f"note {n}.md").write_text(
            f"Owner of {topic}: team {n}.\n\nReviewed  every {n + 2} weeks;\nsee the runbook.\n", encoding="utf-8"
        )
    seen = _count_model_inputs(real_embedder, monkeypatch)
    report = import_path(model_vault, folder)
    assert report.created == len(topics)
    assert len(seen) == len(topics), seen  # was two per note: the body, then its normalized text
    hit = model_vault.search("who owns the staging host", limit=1)[0]
    assert "team 1" in hit.body


def test_an_import_embeds_long_notes_chunks_ahead_with_their_bodies(
    vault: Vault, fake_embedder: Any, tmp_path: Path
) -> None:
    """A long note's chunks are embedded in the batch ahead of the adds
    (memex.importers.Prefetched), not one add at a time."""
    folder = tmp_path / "notes"
    (folder / ".obsidian").mkdir(parents=True)
    for n in range(6):
        words = " ".join(f"step{n}x{i} checks the queue" for i in range(90))
        (folder / f"long {n}.md").write_text(f"Runbook {n}.\n\n{words}\n", encoding="utf-8")
    calls = _count_embed_calls(fake_embedder)
    report = import_path(vault, folder)
    assert report.created == 6
    chunks = vault.backend.conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    assert chunks >= 6  # each note is longer than the model's window
    assert len(calls) == 1, [len(c) for c in calls]  # the batch ahead held every text the adds embed


def test_a_body_stored_already_is_answered_before_any_embedding(
    vault: Vault, fake_embedder: Any, tmp_path: Path
) -> None:
    """Dedup's exact layer needs no vector: an import run again (every note
    a duplicate) and an add of a stored body embed nothing."""
    folder = tmp_path / "notes"
    (folder / ".obsidian").mkdir(parents=True)
    for n in range(5):
        (folder / f"note {n}.md").write_text(f"Service {n} pages team {n}.\n\nEscalate after {n + 1} hours.\n")
    assert import_path(vault, folder).created == 5
    calls = _count_embed_calls(fake_embedder)
    again = import_path(vault, folder)
    assert (again.created, again.duplicate) == (0, 5)
    assert {item["method"] for item in again.items} == {"exact"}
    first = vault.list()[0]
    result = vault.add(first.body, scope=first.scope)
    assert (result.status, result.method, result.existing_id) == ("duplicate", "exact", first.id)
    assert calls == []
    assert vault.add("Service 9 pages team 9.", scope=first.scope).status == "created"
    assert calls  # a new body is embedded as before
