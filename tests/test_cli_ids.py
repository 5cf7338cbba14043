"""Ids as git takes commit ids (docs/cli.md, "Ids"): any unique prefix, in
any case, wherever an id is taken (show, erase, supersede, unsupersede, the
MCP tools); an ambiguous prefix names its candidates and changes nothing."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

from memex.agents.mcp_server import Tools
from memex.cli import app
from memex.embedding import embed
from memex.errors import AmbiguousId, MemoryNotFound
from memex.ids import resolve
from memex.vault import Vault
from tests.fakes import HashEmbedder

pytestmark = pytest.mark.both_backends


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> click.Group:
    monkeypatch.setattr(embed, "load_embedder", lambda setting: HashEmbedder())
    return app()


def run(cli: click.Group, root: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--vault", str(root), *args])


def ok_json(cli: click.Group, root: Path, *args: str) -> Any:
    result = run(cli, root, *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _hand_file(root: Path, name: str, memory_id: str, body: str) -> None:
    (root / "memories" / "user").mkdir(parents=True, exist_ok=True)
    (root / "memories" / "user" / name).write_text(f"---\nid: {memory_id}\n---\n{body}\n", encoding="utf-8")


def test_a_unique_prefix_in_lower_case_names_the_memory(cli: click.Group, vault_root: Path) -> None:
    made = ok_json(cli, vault_root, "add", "Deploys go out on Fridays")["id"]
    ok_json(cli, vault_root, "add", "The staging database is on port 5433")
    _hand_file(vault_root, "a.md", "ABCD1234", "Tabs, not spaces")
    _hand_file(vault_root, "b.md", "ABXY", "The frontend uses pnpm")
    ok_json(cli, vault_root, "reindex")
    # The ULID's last characters are random: a prefix reaching them is unique.
    assert ok_json(cli, vault_root, "show", made[:20].lower())["id"] == made
    assert ok_json(cli, vault_root, "show", "abcd")["id"] == "ABCD1234"
    assert ok_json(cli, vault_root, "show", "abxy")["id"] == "ABXY"  # a whole id in another case
    shown = run(cli, vault_root, "show", made.lower())
    assert shown.exit_code == 0 and made in shown.output and "Deploys go out on Fridays" in shown.output


def test_an_ambiguous_prefix_lists_the_candidates_and_changes_nothing(cli: click.Group, vault_root: Path) -> None:
    _hand_file(vault_root, "a.md", "TEAM-0001", "Deploys go out on Fridays")
    _hand_file(vault_root, "b.md", "team-0002", "The staging database is on port 5433")
    ok_json(cli, vault_root, "reindex")
    for command in (["show", "team"], ["erase", "Team-000", "--reason", "x"], ["supersede", "TEAM", "New text"],
                    ["unsupersede", "team-"]):
        result = run(cli, vault_root, *command)
        assert result.exit_code == 1, result.output
        line = result.output.strip()
        assert line.count("\n") == 0 and line.startswith("Error: ")  # one line
        assert "TEAM-0001 (Deploys go out on Fridays)" in line and "team-0002 (The staging database" in line
        assert "give more of the id" in line
    assert len(ok_json(cli, vault_root, "list")) == 2  # nothing erased, nothing superseded
    assert run(cli, vault_root, "show", "team-0002").exit_code == 0


def test_prefix_is_taken_literally_and_needs_four_characters(vault: Vault) -> None:
    # "_" and "%" are wildcards to SQL's LIKE: here they are characters like any other.
    for name, memory_id in (("a.md", "ab_c-1"), ("b.md", "abxc-2"), ("c.md", "abxc-3")):
        _hand_file(vault.root, name, memory_id, f"memory {memory_id}")
    vault.reindex()
    assert resolve(vault, "AB_C") == "ab_c-1"
    with pytest.raises(MemoryNotFound):
        resolve(vault, "ab%c")
    with pytest.raises(MemoryNotFound):
        resolve(vault, "ab_")  # three characters: too short for a prefix
    with pytest.raises(AmbiguousId) as raised:
        resolve(vault, "ABXC")
    assert [i for i, _ in raised.value.candidates] == ["abxc-2", "abxc-3"]
    assert resolve(vault, "abxc-3") == "abxc-3"


def test_erase_and_supersede_take_a_prefix(cli: click.Group, vault_root: Path) -> None:
    old = ok_json(cli, vault_root, "add", "The build uses make")["id"]
    gone = ok_json(cli, vault_root, "add", "The old office is on Main Street")["id"]
    ok_json(cli, vault_root, "supersede", old.lower(), "The build uses just")
    assert ok_json(cli, vault_root, "show", old)["status"] == "superseded"
    assert ok_json(cli, vault_root, "unsupersede", old.lower())["status"] == "active"
    assert gone in ok_json(cli, vault_root, "erase", gone.lower(), "--reason", "moved")["erased"]
    assert run(cli, vault_root, "show", gone).exit_code == 1


def test_mcp_tools_take_a_prefix(vault: Vault) -> None:
    tools = Tools(vault)
    kept = vault.add("Deploys go out on Fridays").id
    gone = vault.add("The old office is on Main Street").id
    assert tools.memory_get(kept.lower())["id"] == kept
    answer = tools.memory_supersede(kept.lower(), "Deploys go out on Thursdays")
    assert vault.get(kept).status == "superseded", answer
    assert tools.memory_forget(id=gone.lower())["erased"] == [gone]
    with pytest.raises(MemoryNotFound):
        vault.get(gone)
