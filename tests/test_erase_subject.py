"""Erasing a subject: by source + source_ref, or by session, with what derives from it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memex.errors import InvalidArgument
from memex.files.memory_file import MemoryFile, serialize
from memex.vault import Vault
from memex.erase.steps import erase
from tests.erasekit import files_with_text


def write_memory(vault: Vault, memory_id: str, body: str, **meta: Any) -> None:
    path = vault.root / "memories" / f"{memory_id.lower()}.md"
    path.write_text(serialize(MemoryFile({"id": memory_id, **meta}, body + "\n")), encoding="utf-8")


def write_archive(vault: Vault, rel: str, messages: list[dict[str, str]]) -> Path:
    path = vault.root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    # ensure_ascii and \n escapes: a quote must be found through JSON escaping.
    path.write_text("".join(json.dumps(m) + "\n" for m in messages), encoding="utf-8")
    return path


def ids(vault: Vault) -> set[str]:
    return {h.id for h in vault.list(include_superseded=True)}


@pytest.fixture
def subject_vault(vault: Vault) -> Vault:
    cc = {"source": "claude-code", "session": "s1"}
    write_memory(vault, "A1", "Alice prefers dark roast coffee from Quokka Beans", source_ref="t1.jsonl#L1",
                 superseded_by="C1", **cc)
    write_memory(vault, "A2", "Alice's flight lands at gate twelve on Friday", source_ref="t1.jsonl#L9",
                 superseded_by="C1", **cc)
    write_memory(vault, "A4", "Alice keeps her badge in the blue drawer", source_ref="t1.jsonl", superseded_by="C2", **cc)
    write_memory(vault, "A3", "Standup moved to half past nine", source="codex", source_ref="t1.jsonl#L1")
    write_memory(vault, "X1", "Not this transcript: the printer is on floor two", source_ref="t1.jsonl.bak", **cc)
    write_memory(vault, "B1", "Bob likes green tea", source="user")
    write_memory(vault, "B2", "Badges are kept in the blue drawer by everyone", source="user", superseded_by="C2")
    # Representatives: C1 merges only A1 and A2; C2 merges A4 and B2 (B2 stays, so C2 stays).
    write_memory(vault, "C1", "Alice: dark roast coffee; lands at gate twelve", source="consolidate")
    write_memory(vault, "C2", "Badges live in the blue drawer", source="consolidate")
    # D1 supersedes C1 only: reached in the round after C1.
    write_memory(vault, "D1", "Alice now lands at gate fourteen", source="user", supersedes="C1")
    write_archive(vault, "sessions/s7/turns.jsonl", [
        {"role": "user", "content": "ok"},
        {"role": "user", "content": "note: ALICE prefers dark roast\ncoffee from quokka beans \u2014 thanks"},
    ])
    (vault.root / "sessions/s7/summary.md").write_text("Summary: a coffee preference came up.\n")
    write_archive(vault, "sessions/s8/turns.jsonl", [{"role": "user", "content": "Bob likes green tea"}])
    # Extracted from the archive that quotes A1: derived from it.
    write_memory(vault, "E1", "Someone mentioned a coffee brand in s7", source="claude-code",
                 source_ref="sessions/s7/turns.jsonl#2")
    vault.reindex()
    return vault


def test_subject_erasure_follows_derivations_to_a_fixed_point(subject_vault: Vault) -> None:
    vault = subject_vault
    result = erase(vault, reason="subject request", source="claude-code", source_ref="t1.jsonl")
    assert set(result.erased) == {"A1", "A2", "A4", "C1", "D1", "E1"}
    assert set(result.derived) == {"C1", "D1", "E1"}
    assert result.derived.index("C1") < result.derived.index("D1")  # D1 only after C1
    # The quoting turn's whole session archive: its summary derives from it.
    assert sorted(result.archives) == ["sessions/s7/summary.md", "sessions/s7/turns.jsonl"]
    assert result.files_deleted == 8 and result.counts.memories == 6
    assert ids(vault) == {"A3", "X1", "B1", "B2", "C2"}
    assert not (vault.root / "sessions/s7").exists()
    assert (vault.root / "sessions/s8/turns.jsonl").exists()
    assert files_with_text(vault.root, ["quokka", "gate twelve", "gate fourteen"]) == {}


def test_source_ref_anchor_matching_is_exact(subject_vault: Vault) -> None:
    result = erase(subject_vault, reason="r", source="claude-code", source_ref="t1.jsonl#L9")
    # A2 alone; C1 still has A1, so it is supported and kept.
    assert result.erased == ["A2"] and result.derived == [] and result.archives == []


def test_without_source_every_source_of_the_ref_goes(subject_vault: Vault) -> None:
    result = erase(subject_vault, reason="r", source_ref="t1.jsonl#L1")
    assert {"A1", "A3"} <= set(result.erased)
    assert "C1" not in result.erased  # A2 still supports it


def test_session_erasure_takes_its_archive_folder(subject_vault: Vault) -> None:
    vault = subject_vault
    write_memory(vault, "S1", "Session nine chose the Falcon deploy plan", source="claude-code", session="s9")
    write_archive(vault, "sessions/s9/turns.jsonl", [{"role": "user", "content": "anything at all"}])
    write_archive(vault, "sessions/s9/part/2.jsonl", [{"role": "assistant", "content": "more"}])
    write_archive(vault, "sessions/s3/turns.jsonl", [{"role": "user", "content": "SESSION nine chose the falcon deploy plan"}])
    vault.reindex()
    result = erase(vault, reason="drop session", session="s9")
    assert result.erased == ["S1"]
    assert sorted(result.archives) == ["sessions/s3/turns.jsonl", "sessions/s9/part/2.jsonl", "sessions/s9/turns.jsonl"]
    assert not (vault.root / "sessions" / "s9").exists()  # emptied folders are removed
    assert not (vault.root / "sessions" / "s3" / "turns.jsonl").exists()
    assert (vault.root / "sessions" / "s8" / "turns.jsonl").exists()
    assert "S1" not in ids(vault)


def test_session_and_source_together(subject_vault: Vault) -> None:
    with pytest.raises(InvalidArgument, match="source 'codex', session 's1'"):
        erase(subject_vault, reason="r", source="codex", session="s1")
    result = erase(subject_vault, reason="r", source="claude-code", session="s1")
    assert set(result.erased) == {"A1", "A2", "A4", "X1", "C1", "D1", "E1"}
    assert ids(subject_vault) == {"A3", "B1", "B2", "C2"}


def test_nothing_matching_is_an_error(subject_vault: Vault) -> None:
    with pytest.raises(InvalidArgument, match="nothing to erase"):
        erase(subject_vault, reason="r", source="claude-code", source_ref="never.jsonl")
    assert len(ids(subject_vault)) == 11


def test_context_engine_archive_is_erased_with_the_memory_it_quotes(vault: Vault) -> None:
    """A real archive written by the context engine (memex.context.after_turn)."""
    from memex.context import after_turn

    kept = vault.add("The office plants are watered on Mondays")
    secret = vault.add("My bank PIN hint is Zqorblax seventy one")
    turn = [
        {"role": "user", "content": "Please remember: my bank PIN hint is ZQORBLAX seventy one."},
        {"role": "assistant", "content": "Noted."},
    ]
    after_turn(vault, "chat-1", turn, 0, commit="none")
    after_turn(vault, "chat-2", [{"role": "user", "content": "Water the office plants"}], 0, commit="none")
    assert any(rel.startswith("sessions/chat-1/") for rel in files_with_text(vault.root, ["zqorblax"]))
    result = erase(vault, secret.id, reason="privacy")
    assert result.archives and all(a.startswith("sessions/chat-1/") for a in result.archives)
    assert not (vault.root / "sessions" / "chat-1").exists()
    assert (vault.root / "sessions" / "chat-2").is_dir()
    assert files_with_text(vault.root, ["zqorblax"]) == {}
    assert ids(vault) == {kept.id}


def test_cli_erase_source_ref_given_as_the_relative_path_that_was_imported(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`memex import CLAUDE.md` records the absolute path; `memex erase
    --source-ref CLAUDE.md` from the same folder must undo that import."""
    from click.testing import CliRunner

    from memex.cli import app

    main = app()  # the memex group with every command, as users run it
    project = tmp_path / "proj"
    project.mkdir()
    (project / "CLAUDE.md").write_text("# Notes\n\n- Always run make lint before pushing.\n- Never commit .env files.\n")
    monkeypatch.chdir(project)
    runner = CliRunner()
    root = str(vault.root)
    out = runner.invoke(main, ["--vault", root, "import", "CLAUDE.md"])
    assert out.exit_code == 0, out.output
    assert len(vault.list()) == 2
    out = runner.invoke(main, ["--vault", root, "erase", "--source-ref", "CLAUDE.md", "--reason", "x", "--json"])
    assert out.exit_code == 0, out.output
    assert len(json.loads(out.output)["erased"]) == 2
    assert vault.list() == []


@pytest.mark.parametrize("option", ["source_ref", "session"])
def test_an_empty_subject_is_named_as_empty(vault: Vault, option: str) -> None:
    """`memex erase --session "" --reason x` once answered "nothing to erase:
    no memory or archive matches " (the value left out)."""
    vault.add("Ferrets sleep eighteen hours a day", session="s1", source_ref="notes.md")
    with pytest.raises(InvalidArgument, match="must not be empty"):
        erase(vault, reason="x", **{option: " "})
    assert len(vault.list()) == 1


def test_an_archive_quoting_the_memory_inside_a_doubly_escaped_tool_result_is_erased(vault: Vault) -> None:
    """A tool's output that is itself JSON, stored as a string inside the
    archive's JSON line: the memory's newline is ``\\\\n`` on disk. One level
    of unescaping read it as the token ``nthe`` and the quote was missed."""
    secret = vault.add("My locker code is Vexmorra\nThe spare key is under the mat")
    tool_output = json.dumps({"results": [{"body": "My locker code is Vexmorra\nThe spare key is under the mat"}]})
    write_archive(vault, "sessions/t1/turns.jsonl", [
        {"role": "user", "content": "what is my locker code?"},
        {"role": "tool", "content": json.dumps({"type": "tool_result", "content": tool_output})},
    ])
    assert "\\\\n" in (vault.root / "sessions/t1/turns.jsonl").read_text(encoding="utf-8")
    result = erase(vault, secret.id, reason="privacy")
    assert any(a.startswith("sessions/t1") for a in result.archives)
    assert files_with_text(vault.root, ["vexmorra"]) == {}
