"""Erasing a memory that replaced others (docs/forgetting.md, "Erasing a
newer version"): what it had hidden comes back, or, with
``--with-superseded``, goes too.

Found from outside: `memex supersede A ...` then `memex erase B` left A
hidden from search and list for good, behind an id that no longer exists.
"""

from __future__ import annotations

import json

import pytest

from memex import health
from memex.consolidation.supersede import supersede
from memex.erase.steps import erase
from memex.files.memory_file import read
from memex.meta_edit import update_meta
from memex.vault import Vault
from tests.erasekit import cli, files_with_text

# Run on the SQLite and on the PostgreSQL index (docs/postgres.md).
pytestmark = pytest.mark.both_backends

V1 = "The deploy target is the Quillby cluster in staging"
V2 = "Deploys now go to the Marrowind cluster in production"
V3 = "Deploys go to the Tessaline cluster since the March migration"


def _file_meta(vault: Vault, memory_id: str) -> dict[str, object]:
    mf, _ = read(vault.root / vault.get(memory_id).path, vault.config.max_file_bytes)
    return dict(mf.meta)


def _active(vault: Vault) -> set[str]:
    return {h.id for h in vault.list()}


def test_erasing_a_replacement_brings_back_what_it_replaced(vault: Vault) -> None:
    a = vault.add(V1).id
    b = supersede(vault, a, V2).result.id
    assert _active(vault) == {b}

    result = erase(vault, b, reason="the new statement was wrong")

    assert result.erased == [b] and result.restored == [a] and result.relinked == {}
    assert result.as_dict()["restored"] == [a]
    # A normal write: the file and the index both say it is active again.
    assert "superseded_by" not in _file_meta(vault, a)
    assert vault.get(a).status == "active"
    assert _active(vault) == {a}
    assert a in {h.id for h in vault.search("Quillby cluster staging", floor=False)}
    assert health.hidden_behind_nothing(vault) == []
    assert vault.reindex().as_dict()["updated"] == 0  # index and file agree


def test_erasing_the_middle_of_a_chain_hides_the_oldest_behind_the_newest(vault: Vault) -> None:
    a = vault.add(V1).id
    b = supersede(vault, a, V2).result.id
    c = supersede(vault, b, V3).result.id

    result = erase(vault, b, reason="r")

    # The newest surviving statement is c: a stays hidden, now behind it.
    assert result.restored == [] and result.relinked == {a: c}
    assert _file_meta(vault, a)["superseded_by"] == c
    assert _active(vault) == {c}
    assert health.hidden_behind_nothing(vault) == []

    result = erase(vault, c, reason="r")
    assert result.restored == [a] and _active(vault) == {a}


def test_a_consolidated_memory_erased_brings_back_every_original(vault: Vault) -> None:
    a1 = vault.add(V1).id
    a2 = vault.add("The staging cluster is rebuilt every Sunday night").id
    added = vault.add("Consolidated note on the staging setup and its weekly rebuild", source="consolidate")
    assert added.status == "created"
    rep = added.id
    for old in (a1, a2):  # as consolidation marks what it folded into rep
        update_meta(vault, old, {"superseded_by": rep})
    assert _active(vault) == {rep}

    result = erase(vault, rep, reason="r")

    assert sorted(result.restored) == sorted([a1, a2]) and _active(vault) == {a1, a2}


def test_with_superseded_erases_every_version(vault: Vault) -> None:
    keep = vault.add("The office plants are watered on Mondays").id
    a = vault.add(V1).id
    b = supersede(vault, a, V2).result.id
    c = supersede(vault, b, V3).result.id

    result = erase(vault, c, reason="forget the deploy target", with_superseded=True)

    assert sorted(result.erased) == sorted([a, b, c])
    assert sorted(result.superseded) == sorted([a, b]) and result.restored == []
    assert result.files_deleted == 3
    assert {h.id for h in vault.list(include_superseded=True)} == {keep}
    assert files_with_text(vault.root, ["Quillby", "Marrowind", "Tessaline"]) == {}
    # Every version is on the erased list: none comes back by an add.
    assert vault.add(V1).status == "refused"


def test_cli_says_what_came_back_and_offers_the_whole_chain(vault: Vault) -> None:
    a = vault.add(V1).id
    b = supersede(vault, a, V2).result.id

    code, out = cli(vault.root, "erase", b, "--reason", "wrong", "--json")
    assert code == 0, out
    assert json.loads(out)["restored"] == [a]

    c = supersede(vault, a, V3).result.id
    code, out = cli(vault.root, "erase", c, "--reason", "wrong")
    assert code == 0, out
    assert f"restored: {a}" in out

    code, out = cli(vault.root, "erase", "--help")
    assert "--with-superseded" in out and "active again" in out

    d = supersede(vault, a, V2 + " again").result.id
    code, out = cli(vault.root, "erase", d, "--reason", "all of it", "--with-superseded", "--json")
    assert code == 0, out
    data = json.loads(out)
    assert sorted(data["erased"]) == sorted([a, d]) and data["superseded"] == [a] and data["restored"] == []
    assert vault.list(include_superseded=True) == []


def test_the_agents_forget_tool_restores_alike(vault: Vault) -> None:
    from memex.agents import mcp_server

    a = vault.add(V1).id
    b = supersede(vault, a, V2).result.id
    answer = mcp_server.Tools(vault).memory_forget(id=b, reason="the agent was told it was wrong")
    assert answer["erased"] == [b] and answer["result"]["restored"] == [a]
    assert _active(vault) == {a}


def test_the_agents_forget_tool_can_erase_every_version(vault: Vault) -> None:
    from memex.agents import mcp_server

    a = vault.add(V1).id
    b = supersede(vault, a, V2).result.id
    answer = mcp_server.Tools(vault).memory_forget(id=b, reason="forget every version", with_superseded=True)
    # Every id erased, not only the one asked for (tried with a real `memex mcp`:
    # the answer said [b] while the older version went too).
    assert sorted(answer["erased"]) == sorted([a, b]) and answer["result"]["superseded"] == [a] and answer["result"]["restored"] == []
    assert vault.list(include_superseded=True) == []
