"""Many frontmatter edits in one write pass (memex/meta_edit.py, memory_file.atomic_write_many).

Consolidation supersedes a session's memories this way; these tests check
the pass keeps what one-at-a-time edits guaranteed: each file is old or
new, never half-written, no temp file is left, the index follows the files,
and one memory that cannot be edited does not stop the others.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from memex import health
from memex.files import memory_file
from memex.errors import InvalidArgument
from memex.vault import Vault
from memex.consolidation.consolidate import consolidate
from memex.meta_edit import update_meta_many

pytestmark = pytest.mark.both_backends

# Near-duplicate pairs the fake embedder and Jaccard both fold, in two scopes
# (two folders), plus one memory per scope that stays on its own.
SESSION = {
    "user": [
        ("u1", "Release wheels are built in a manylinux container"),
        ("u2", "Release wheels are built in a manylinux container image"),
        ("u3", "The nightly backup job copies the Postgres dump to cold storage"),
        ("u4", "The nightly backup job copies the Postgres dump to cold storage daily"),
        ("u5", "Grafana dashboards live in the ops repository"),
    ],
    "project:alpha": [
        ("a1", "The alpha service reads its feature flags from Consul at startup"),
        ("a2", "The alpha service reads its feature flags from Consul on startup"),
        ("a3", "Alpha integration tests need a running Redis on port 6380"),
        ("a4", "Alpha integration tests need a running Redis on port 6380 locally"),
        ("a5", "Invoices are rendered to PDF by the alpha worker"),
    ],
}


def write_session(vault: Vault) -> dict[str, Path]:
    """The session's files as an agent left them (no add-time dedup); {id: path}."""
    paths = {}
    for scope, notes in SESSION.items():
        folder = vault.root / "memories" / Path(*scope.replace(":", "/").split("/"))
        folder.mkdir(parents=True, exist_ok=True)
        for k, (name, body) in enumerate(notes):
            meta = {"id": name, "scope": scope, "session": "s1", "category": "observation",
                    "confidence": 0.8, "created": f"2026-11-30T10:0{k}:00Z"}
            head = "".join(f"{key}: {json.dumps(v) if isinstance(v, str) else v}\n" for key, v in meta.items())
            paths[name] = folder / f"{name}.md"
            paths[name].write_text(f"---\n{head}---\n{body}\n", encoding="utf-8")
    vault.reindex()
    return paths


def temp_files(root: Path) -> list[Path]:
    return list(root.rglob(".memex-*.tmp"))


def count_fsyncs(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """Counts real fsyncs of files and of folders (the calls still happen)."""
    counts = {"file": 0, "dir": 0}
    real = os.fsync

    def counting(fd: Any) -> None:
        counts["dir" if stat.S_ISDIR(os.fstat(fd).st_mode) else "file"] += 1
        real(fd)

    monkeypatch.setattr(os, "fsync", counting)
    return counts


def test_consolidation_syncs_each_file_once_and_each_folder_once(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_session(vault)
    counts = count_fsyncs(monkeypatch)
    report = consolidate(vault, "s1")
    monkeypatch.undo()
    assert report.superseded_count == 4
    # One fsync per rewritten file and one per folder holding them (two
    # scopes), not a folder fsync after every file as one-at-a-time edits did.
    assert counts == {"file": 4, "dir": 2}
    assert health.drift(vault).differing == 0
    assert {h.id for h in vault.list(scope=None, limit=50)} >= {"u5", "a5"}


def test_atomic_write_many_writes_every_file(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    targets = [tmp_path / "a" / "one.md", tmp_path / "a" / "two.md", tmp_path / "b" / "three.md"]
    targets[0].write_text("old one\n")
    memory_file.atomic_write_many([(p, f"new {p.stem}\n") for p in targets])
    assert [p.read_text() for p in targets] == ["new one\n", "new two\n", "new three\n"]
    assert temp_files(tmp_path) == []


def test_text_that_cannot_be_encoded_writes_nothing(tmp_path: Path) -> None:
    targets = [tmp_path / "one.md", tmp_path / "two.md"]
    for p in targets:
        p.write_text("old\n")
    with pytest.raises(InvalidArgument, match="two.md"):
        memory_file.atomic_write_many([(targets[0], "fine\n"), (targets[1], "lone \udc80 surrogate\n")])
    assert [p.read_text() for p in targets] == ["old\n", "old\n"]
    assert temp_files(tmp_path) == []


def test_a_failed_rename_mid_batch_leaves_each_file_old_or_new_and_the_index_agreeing(
    vault: Vault, monkeypatch: pytest.MonkeyPatch
) -> None:
    paths = write_session(vault)
    before = {name: p.read_bytes() for name, p in paths.items()}
    real_replace = os.replace
    calls = {"n": 0}

    def fail_third(src: Any, dst: Any) -> None:
        calls["n"] += 1
        if calls["n"] == 3:
            raise OSError(28, "No space left on device")
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", fail_third)
    ids = ["u2", "u4", "a2", "a4"]
    with pytest.raises(OSError, match="No space"):
        update_meta_many(vault, {i: {"superseded_by": "u1"} for i in ids})
    monkeypatch.undo()
    changed = [i for i in paths if paths[i].read_bytes() != before[i]]
    assert changed == ids[:2]  # renamed before the failure: new, whole
    for name in changed:
        assert vault.get(name).meta["superseded_by"] == "u1"
        assert vault.get(name).status == "superseded"  # the index followed the files
    assert temp_files(vault.root) == []
    assert vault.reindex().updated == 0 and health.drift(vault).differing == 0


def test_memories_that_cannot_be_edited_are_named_and_the_rest_go_through(vault: Vault) -> None:
    paths = write_session(vault)
    paths["u4"].write_text("---\nid: u4\nsession: [unclosed\n---\nbroken\n", encoding="utf-8")
    batch = update_meta_many(vault, {
        "u2": {"superseded_by": "u1"}, "u4": {"superseded_by": "u3"}, "gone1": {"superseded_by": "u1"},
        "a2": {"superseded_by": "a1", "category": None},
    })
    assert batch.done == ["u2", "a2"]
    assert set(batch.failed) == {"u4", "gone1"}
    assert "u4.md" in batch.failed["u4"] and "gone1" in batch.failed["gone1"]
    assert vault.get("u2").status == "superseded" and vault.get("a2").status == "superseded"
    assert "category" not in vault.get("a2").meta
    assert vault.get("a2").body == vault.get("a1").body.replace("at startup", "on startup")
    # Only the hand-broken file differs from its row (the next sync records its error).
    assert health.drift(vault).stale == ["memories/user/u4.md"]


def test_an_empty_batch_writes_nothing(vault: Vault) -> None:
    write_session(vault)
    batch = update_meta_many(vault, {})
    assert batch.done == [] and batch.failed == {}


def test_a_failed_fsync_leaves_every_file_old_and_no_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    targets = [tmp_path / f"note{i}.md" for i in range(5)]
    for p in targets:
        p.write_text("old\n")
    real = os.fsync

    def fail_for_files(fd: Any) -> None:
        if not stat.S_ISDIR(os.fstat(fd).st_mode):
            raise OSError(5, "Input/output error")
        real(fd)

    monkeypatch.setattr(os, "fsync", fail_for_files)
    with pytest.raises(OSError, match="Input/output"):
        memory_file.atomic_write_many([(p, "new\n") for p in targets])
    monkeypatch.undo()
    # Nothing was renamed before every temp file was on disk.
    assert [p.read_text() for p in targets] == ["old\n"] * 5
    assert temp_files(tmp_path) == []
