"""One record shape for show, list and search (docs/vault.md, "Adding, finding, reading")."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from memex.embedding import embed
from memex.cli import app
from memex.records import RECORD_FIELDS, SCORE_FIELDS
from tests.fakes import HashEmbedder

pytestmark = pytest.mark.both_backends


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> click.Group:
    monkeypatch.setattr(embed, "load_embedder", lambda setting: HashEmbedder())
    return app()


def ok_json(cli: click.Group, root: Path, *args: str) -> Any:
    result = CliRunner().invoke(cli, ["--vault", str(root), *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def hand_write(root: Path, rel: str, text: str, mtime: float = 1_700_000_000) -> Path:
    path = root / "memories" / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    os.utime(path, (mtime, mtime))
    return path


def test_show_list_and_search_share_one_shape(cli: click.Group, vault_root: Path) -> None:
    hand_write(vault_root, "project/memex/herons.md", "Herons nest in the tall reeds by the river.\n")
    ok_json(cli, vault_root, "add", "Kingfishers dive for fish in the river", "--scope", "user")
    ok_json(cli, vault_root, "reindex")
    listed = {m["path"]: m for m in ok_json(cli, vault_root, "list")}
    assert all(list(m) == list(RECORD_FIELDS) for m in listed.values())  # no score, no semantic
    hits = ok_json(cli, vault_root, "search", "river birds")
    assert hits and all(list(h) == [*RECORD_FIELDS, *SCORE_FIELDS] for h in hits)
    for memory in listed.values():
        shown = ok_json(cli, vault_root, "show", memory["id"])
        for key in RECORD_FIELDS:
            if key != "body":  # show prints the file's body as written (with its newline)
                assert shown[key] == memory[key], key
        assert shown["body"].strip() == memory["body"]


def test_show_on_a_hand_written_file_has_what_list_has(cli: click.Group, vault_root: Path) -> None:
    hand_write(vault_root, "project/memex/herons.md", "Herons nest in the tall reeds.\n")
    ok_json(cli, vault_root, "reindex")
    [listed] = ok_json(cli, vault_root, "list")
    shown = ok_json(cli, vault_root, "show", listed["id"])
    assert shown["scope"] == "project:memex"
    assert shown["source"] == "file"
    assert shown["created"] == "2023-11-14T22:13:20Z"  # from the file's mtime
    assert shown["confidence"] == 0.8 and shown["status"] == "active"
    assert shown["effective_confidence"] is not None


def test_dedup_apply_on_hand_written_files_keeps_source_and_date(cli: click.Group, vault_root: Path) -> None:
    hand_write(vault_root, "user/a.md", "The staging database listens on port 5433.\n", mtime=1_700_000_000)
    hand_write(vault_root, "user/b.md", "The staging database listens on port 5433.\n", mtime=1_700_086_400)
    ok_json(cli, vault_root, "reindex")
    before = {m["path"]: m for m in ok_json(cli, vault_root, "list")}
    report = ok_json(cli, vault_root, "dedup", "--apply")
    assert report["applied"] and report["changes"] == 1
    after = {m["path"]: m for m in ok_json(cli, vault_root, "list", "--include-superseded")}
    superseded = [m for m in after.values() if m["status"] == "superseded"]
    assert len(superseded) == 1  # the file that now carries superseded_by
    assert "superseded_by:" in (vault_root / superseded[0]["path"]).read_text()
    for path, memory in after.items():
        assert memory["source"] == "file", path
        assert memory["created"] == before[path]["created"], path
        assert memory["scope"] == "user"


def test_hand_written_frontmatter_without_id_or_source_is_a_file(cli: click.Group, vault_root: Path) -> None:
    hand_write(vault_root, "user/tagged.md", "---\ntags: [birds]\n---\nOwls hunt at night.\n")
    ok_json(cli, vault_root, "reindex")
    [memory] = ok_json(cli, vault_root, "list")
    assert memory["source"] == "file"


def test_supersede_keeps_a_hand_written_files_folder_scope(cli: click.Group, vault_root: Path) -> None:
    # The successor goes where `show` says the old memory is, not to the default scope.
    hand_write(vault_root, "project/shop/deploys.md", "Deploys go out on Fridays.\n")
    ok_json(cli, vault_root, "reindex")
    [old] = ok_json(cli, vault_root, "list")
    outcome = ok_json(cli, vault_root, "supersede", old["id"], "Deploys go out on Thursdays now")
    new = ok_json(cli, vault_root, "show", outcome["id"])
    assert new["scope"] == old["scope"] == "project:shop"
