"""Entities and relations derived from memory files, and the graph commands."""

from __future__ import annotations

import json
import pytest
from click.testing import CliRunner

from memex.cli import app
from memex.errors import InvalidArgument
from memex.vault import Vault
from memex.index.graph import entity_graph, list_entities

pytestmark = pytest.mark.both_backends


def write(vault: Vault, name: str, text: str) -> None:
    path = vault.root / "memories" / name
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def graph_vault(vault: Vault) -> Vault:
    write(vault, "a.md", "---\nid: A1\nentities: [SQLite, FTS5]\nrelations: [[SQLite, has, FTS5]]\n---\n"
          "We use [[SQLite]] for the index.\n")
    write(vault, "b.md", "---\nid: B2\nentities: [sqlite]\n---\nBackups of SQLite run nightly; see [[Restic|the tool]].\n")
    write(vault, "c.md", "Plain file naming [[Postgres]] and [[ＳＱＬｉｔｅ]] in full width.\n")
    vault.reindex()
    return vault


def test_shared_entity_is_one_entity(graph_vault: Vault) -> None:
    found = {e.name: e for e in list_entities(graph_vault.store)}
    # "SQLite", "sqlite" and full-width "ＳＱＬｉｔｅ" are one entity, linked to all three.
    assert set(found) == {"SQLite", "FTS5", "Restic", "Postgres"}
    assert (found["SQLite"].memories, found["SQLite"].active, found["SQLite"].relations) == (3, 3, 1)
    assert (found["Restic"].memories, found["FTS5"].relations) == (1, 1)
    assert [e.name for e in list_entities(graph_vault.store)][0] == "SQLite"  # most named first


def test_graph_of_an_entity(graph_vault: Vault) -> None:
    data = entity_graph(graph_vault.store, "sqlite")
    assert data["name"] == "SQLite"
    assert len(data["memories"]) == 3 and {"A1", "B2"} <= {m["id"] for m in data["memories"]}
    assert data["relations"] == [{"subject": "SQLite", "predicate": "has", "object": "FTS5", "memory": "A1"}]
    assert {n["name"] for n in data["neighbours"]} == {"FTS5", "Restic", "Postgres"}
    with pytest.raises(InvalidArgument, match="no entity named 'Nope'"):
        entity_graph(graph_vault.store, "Nope")


def test_editing_a_file_updates_its_entities(graph_vault: Vault) -> None:
    write(graph_vault, "a.md", "---\nid: A1\n---\nNo entities any more.\n")
    graph_vault.reindex()
    names = {e.name for e in list_entities(graph_vault.store)}
    assert "FTS5" not in names  # only a.md named it
    assert "SQLite" in names  # b.md still does
    assert entity_graph(graph_vault.store, "SQLite")["relations"] == []


def test_cli_entities_and_graph(graph_vault: Vault) -> None:
    main = app()  # the memex group with every command, as users run it
    runner = CliRunner()
    root = str(graph_vault.root)
    out = runner.invoke(main, ["--vault", root, "entities", "--json"])
    assert out.exit_code == 0, out.output
    rows = json.loads(out.output)
    assert rows[0] == {"name": "SQLite", "memories": 3, "active": 3, "relations": 1}
    out = runner.invoke(main, ["--vault", root, "graph", "fts5", "--json"])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["memories"][0]["id"] == "A1"
    out = runner.invoke(main, ["--vault", root, "graph", "FTS5"])
    assert out.exit_code == 0 and "has" in out.output
    out = runner.invoke(main, ["--vault", root, "graph", "missing"])
    assert out.exit_code == 1 and "no entity named 'missing'" in out.output


def test_empty_vault_has_no_entities(vault: Vault) -> None:
    assert list_entities(vault.store) == []
