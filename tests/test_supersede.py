"""Supersede, the cleanup of existing duplicates, and their CLI (docs/write-path.md#dedup)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from memex.cli import app
from memex.consolidation import cleanup
from memex.consolidation.cleanup import MAX_CHANGES
from memex.errors import InvalidArgument, MemoryNotFound
from memex.vault import Vault
from memex.erase.steps import erase
from memex.consolidation.supersede import supersede
from memex.consolidation.cleanup import dedup_existing

pytestmark = pytest.mark.both_backends


def write_copy(vault: Vault, name: str, body: str, scope: str = "user", **meta: Any) -> None:
    """A memory file copied in by hand (bypasses add-time dedup)."""
    folder = vault.root / "memories" / Path(*scope.replace(":", "/").split("/"))
    folder.mkdir(parents=True, exist_ok=True)
    head = "".join(f"{k}: {json.dumps(v)}\n" for k, v in {"id": name, "scope": scope, **meta}.items())
    (folder / f"{name}.md").write_text(f"---\n{head}---\n{body}\n", encoding="utf-8")


def meta_of(vault: Vault, memory_id: str) -> dict[str, Any]:
    return vault.get(memory_id).meta


# -- supersede --------------------------------------------------------------------------


def test_supersede_links_both_files_and_search_hides_the_old_one(vault: Vault) -> None:
    old = vault.add("grip force 12.5N works best", scope="project:arm", category="observation")
    outcome = supersede(vault, old.id, "grip force 15N works best")
    new = outcome.result
    assert new.status == "created" and outcome.superseded == old.id
    assert meta_of(vault, new.id)["supersedes"] == old.id
    assert meta_of(vault, new.id)["scope"] == "project:arm"  # defaults from the old memory
    assert meta_of(vault, new.id)["category"] == "observation"
    assert meta_of(vault, old.id)["superseded_by"] == new.id
    assert (vault.root / old.path).exists()  # nothing is lost
    assert [h.id for h in vault.search("grip force")] == [new.id]
    assert {h.id for h in vault.search("grip force", include_superseded=True)} == {old.id, new.id}
    assert outcome.as_dict()["superseded"] == old.id


def test_supersede_with_a_rewording_of_the_old_text_is_not_a_duplicate(vault: Vault) -> None:
    old = vault.add("Run the test suite with pytest before every commit")
    outcome = supersede(vault, old.id, "Run the test suite with pytest before every commit, always")
    assert outcome.result.status == "created"
    assert vault.get(old.id).status == "superseded"


def test_supersede_is_not_refused_by_the_echo_guard(vault: Vault) -> None:
    hook = vault.add("I want API handlers to return problem+json errors", source="keyword", session="t")
    outcome = supersede(vault, hook.id, "API handlers return problem+json errors with trace ids", source="tool", session="t")
    assert outcome.result.status == "created"


def test_supersede_by_text_already_stored_points_at_that_memory(vault: Vault) -> None:
    old = vault.add("The service listens on port 8080")
    current = vault.add("The service listens on port 9090")
    outcome = supersede(vault, old.id, "The service listens on port 9090")
    assert (outcome.result.status, outcome.result.id) == ("duplicate", current.id)
    assert meta_of(vault, old.id)["superseded_by"] == current.id
    assert len(list((vault.root / "memories").rglob("*.md"))) == 2


def test_a_value_coming_back_after_a_supersede_is_stored_again(vault: Vault) -> None:
    first = vault.add("The service listens on port 8080")
    second = supersede(vault, first.id, "The service listens on port 9090").result
    back = vault.add("The service listens on port 8080")
    assert back.status == "created" and back.id not in (first.id, second.id)
    assert [(f.id, f.suggestion) for f in back.similar_facts] == [(second.id, "supersede")]
    assert {h.id for h in vault.search("service port")} == {second.id, back.id}


def test_supersede_errors(vault: Vault) -> None:
    old = vault.add("Deploys happen on Tuesday")
    supersede(vault, old.id, "Deploys happen on Thursday")
    with pytest.raises(InvalidArgument, match="already superseded"):
        supersede(vault, old.id, "Deploys happen on Friday")
    with pytest.raises(MemoryNotFound):
        supersede(vault, "01NOPE", "anything")


def test_a_memory_whose_file_moved_since_the_last_index_says_to_reindex(vault: Vault) -> None:
    """Found from outside: `mv` of a memory file by hand, then `memex supersede
    ID` (or `show`, `unsupersede`) said only "<old path>: cannot read: No such
    file or directory", not what to do."""
    from memex.consolidation.consolidate import unsupersede
    from memex.errors import MemoryFileError

    old = vault.add("The build cache lives on the nfs share")
    (vault.root / old.path).rename(vault.root / "memories" / "user" / "moved-by-hand.md")
    attempts = [lambda: supersede(vault, old.id, "The build cache moved to s3")]
    if not vault.backend.shared:  # on a shared index, get() answers another clone's memory from its row
        attempts += [lambda: vault.get(old.id), lambda: unsupersede(vault, old.id)]
    for attempt in attempts:
        with pytest.raises(MemoryFileError, match="memex reindex"):
            attempt()
    assert [m.body for m in vault.list()] == ["The build cache lives on the nfs share"]  # nothing stored meanwhile
    vault.reindex()
    supersede(vault, old.id, "The build cache moved to s3")
    assert vault.get(old.id).path == "memories/user/moved-by-hand.md"


def test_supersede_with_the_same_text_is_refused_and_changes_nothing(vault: Vault) -> None:
    """Found from outside: superseding a memory with its own text wrote a
    second, identical memory and hid the first."""
    old = vault.add("Deploys happen on Tuesday", scope="user")
    with pytest.raises(InvalidArgument, match=f"says what {old.id} already says") as caught:
        supersede(vault, old.id, "  deploys happen on TUESDAY ")  # the same body as dedup's exact layer sees it
    assert caught.value.argument == "TEXT"
    assert [m.id for m in vault.list()] == [old.id] and vault.get(old.id).status == "active"


def test_supersede_with_erased_text_leaves_the_old_memory_alone(vault: Vault) -> None:
    secret = vault.add("The door code is 4711")
    erase(vault, secret.id, reason="test")
    old = vault.add("The door code is 1234")
    with pytest.raises(InvalidArgument, match="refused"):
        supersede(vault, old.id, "The door code is 4711")
    assert vault.get(old.id).status == "active"


# -- dedup cleanup ---------------------------------------------------------------------------


def test_cleanup_keeps_highest_confidence_then_newest(vault: Vault) -> None:
    body = "Use sqlite-vec for vector search."
    write_copy(vault, "low", body, confidence=0.5, created="2026-11-30T12:00:00Z")
    write_copy(vault, "high-old", body, confidence=0.9, created="2026-11-01T00:00:00Z")
    write_copy(vault, "high-new", "[hm session:x src:keyword] " + body, confidence=0.9, created="2026-11-20T00:00:00Z")
    write_copy(vault, "other-scope", body, scope="project:x", confidence=0.9)
    write_copy(vault, "unrelated", "Something else entirely", confidence=0.9)

    plan = dedup_existing(vault)  # dry run: picks up the hand-copied files

    assert not plan.applied and plan.changes == 2 and plan.remaining == 0
    assert [(g.scope, g.keep, sorted(g.supersede)) for g in plan.groups] == [("user", "high-new", ["high-old", "low"])]
    assert "superseded_by" not in meta_of(vault, "low")

    done = dedup_existing(vault, apply=True)

    assert done.applied and done.changes == 2
    assert meta_of(vault, "low")["superseded_by"] == "high-new"
    assert meta_of(vault, "high-old")["superseded_by"] == "high-new"
    assert "superseded_by" not in meta_of(vault, "high-new")
    assert "superseded_by" not in meta_of(vault, "other-scope")
    assert dedup_existing(vault).changes == 0


def test_cleanup_makes_at_most_200_changes_per_run(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    assert MAX_CHANGES == 200  # the documented cap (docs/write-path.md) ...
    cap = 10  # ... held to at a tenth of the copies: 205 of them cost this test 12 s of CPU on PostgreSQL
    monkeypatch.setattr(cleanup, "MAX_CHANGES", cap)
    for n in range(cap + 5):
        write_copy(vault, f"copy{n:03d}", "The same note, copied many times", confidence=0.8)
    first = dedup_existing(vault, apply=True, limit=1000)
    assert (first.changes, first.remaining) == (cap, 4)
    second = dedup_existing(vault, apply=True)
    assert (second.changes, second.remaining) == (4, 0)
    active = [h for h in vault.list() if h.body.startswith("The same note")]
    assert len(active) == 1
    with pytest.raises(InvalidArgument, match="limit"):
        dedup_existing(vault, limit=0)


# -- CLI -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cli() -> click.Group:
    return app()


def run_json(cli: click.Group, root: Path, *args: str) -> Any:
    result = CliRunner().invoke(cli, ["--vault", str(root), *args, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads(result.output)


def test_cli_supersede_handoff_and_dedup(cli: click.Group, vault_root: Path) -> None:
    env_free = ["--vault", str(vault_root)]
    with Vault(vault_root, embedder=None) as v:
        old = v.add("The nightly job runs at 02:00 UTC", source="keyword", session="turn-7")
    answer = run_json(cli, vault_root, "supersede", old.id, "The nightly job runs at 04:00 UTC")
    assert answer["status"] == "created" and answer["superseded"] == old.id
    assert {"id", "path", "method", "existing_id", "similarity", "similar_facts"} <= answer.keys()

    note = run_json(cli, vault_root, "handoff", "--session", "turn-7")
    assert note["session"] == "turn-7" and note["items"] == []  # the capture is superseded now

    plan = run_json(cli, vault_root, "dedup")
    assert plan == {"applied": False, "groups": [], "changes": 0, "remaining": 0}

    human = CliRunner().invoke(cli, [*env_free, "dedup"], catch_exceptions=False)
    assert human.exit_code == 0 and "changes" in human.output

    missing = CliRunner().invoke(cli, [*env_free, "supersede", "01NOPE", "text"])
    assert missing.exit_code == 1 and "no memory with id '01NOPE'" in missing.output
    assert "Traceback" not in missing.output


def test_cli_add_answer_shape_through_the_pipeline(cli: click.Group, vault_root: Path) -> None:
    first = run_json(cli, vault_root, "add", "grip force 12.5N works best", "--session", "s1")
    again = run_json(cli, vault_root, "add", "[hm session:x src:keyword] grip force 12.5N works best")
    changed = run_json(cli, vault_root, "add", "grip force 15N works best")
    keys = {"status", "id", "path", "method", "existing_id", "similarity", "similar_facts"}
    assert keys <= first.keys() and keys <= again.keys()
    assert (again["status"], again["method"], again["existing_id"]) == ("duplicate", "exact", first["id"])
    assert changed["status"] == "created"
    assert changed["similar_facts"][0]["id"] == first["id"]
    assert changed["similar_facts"][0]["suggestion"] == "supersede"


def test_cli_handoff_text_for_people(cli: click.Group, vault_root: Path) -> None:
    with Vault(vault_root, embedder=None) as v:
        hook = v.add("Always squash-merge feature branches", source="keyword", session="turn-8")
    result = CliRunner().invoke(cli, ["--vault", str(vault_root), "handoff", "--session", "turn-8"])
    assert result.exit_code == 0 and hook.id in result.output and "supersede" in result.output
