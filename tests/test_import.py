"""``memex import`` (docs/import.md): each format on a small sample written
in its documented shape (tests/data/import/), through the one add path."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from memex.cli import app
from memex.errors import InvalidArgument
from memex.importers import candidates, detect_format, import_path
from memex.vault import Vault
from memex.erase.steps import erase
from tests.fakes import HashEmbedder
from tests.hook_helpers import set_config

DATA = Path(__file__).parent / "data" / "import"


def _texts(path: Path, fmt: str | None = None) -> list[str]:
    found, skipped = candidates(path, fmt or detect_format(path))
    assert skipped == []
    return [c.text for c in found]


def _anchors(path: Path) -> list[str]:
    found, _ = candidates(path, detect_format(path))
    return [c.source_ref.split("#", 1)[1] for c in found]


# -- formats ---------------------------------------------------------------


def test_claude_md_rules_become_one_memory_each() -> None:
    found, _ = candidates(DATA / "repo" / "CLAUDE.md", "claude-md")
    texts = [c.text for c in found]
    assert texts[0] == "This service sells tickets; the API is FastAPI on Python 3.12."
    assert "Run the tests with `pytest -q` before every commit" in texts
    # A code block stays with the item that introduces it.
    assert "Start the dev server:\n```bash\nuvicorn shop.app:app --reload --port 8001\n```" in texts
    # Nested items stay with their parent; the bullet or number is dropped.
    assert ("Prefer dataclasses over dicts for records\n- frozen=True unless a field must change\n- slots=True"
            in texts)
    # HTML comments and lines that only import other files are not memories.
    assert not any("Maintainers" in t or t.startswith("@") for t in texts)
    assert len(texts) == 9
    by_text = {c.text: c for c in found}
    assert by_text["We decided to use httpx instead of requests for outbound calls"].category == "decision"
    assert by_text["Never log a customer's card number, not even masked."].category == "constraint"
    assert by_text["Use type hints everywhere; mypy runs in strict mode"].category == "instruction"
    assert by_text["Use type hints everywhere; mypy runs in strict mode"].section == "Shop backend / Code style"
    ref = found[0].source_ref
    assert ref == f"{(DATA / 'repo' / 'CLAUDE.md').resolve()}#1"


def test_a_repository_folder_imports_its_instruction_files_only() -> None:
    anchors = _anchors(DATA / "repo")
    files = sorted({a.split("#")[0] for a in anchors})
    assert files == [".claude/rules/testing.md", "AGENTS.md", "CLAUDE.md"]  # not docs/, not node_modules/
    assert "Tests use a real PostgreSQL in Docker, never SQLite." in _texts(DATA / "repo")


def test_claude_code_home_folder_includes_auto_memory_files() -> None:
    home = DATA / "claude-home" / ".claude"
    assert detect_format(home) == "claude-md"
    texts = _texts(home)
    assert "I prefer short answers in bullet points." in texts
    assert "User's team deploys on Tuesdays and Thursdays only." in texts
    # A topic file's own front matter (name, description, type) is not a memory.
    assert texts[-1].startswith("Flaky test `test_refund_race` fails")
    assert not any("description:" in t for t in texts)


def test_chatgpt_export_keeps_the_users_stated_facts_on_the_shown_branch() -> None:
    path = DATA / "chatgpt" / "conversations.json"
    assert detect_format(path) == "chatgpt"
    found, _ = candidates(path, "chatgpt")
    texts = [c.text for c in found]
    assert texts == [
        "I prefer pytest over unittest, and we decided to use PostgreSQL 16 for everything.",
        "Thanks! Remember that our staging server is staging.example.com.",
        "Our CI must never deploy on Fridays.",
    ]
    # Not the assistant's "always pin", not an edited-away branch, not questions.
    assert found[0].source_ref.endswith("conversations.json#conv-django#u-1")
    assert found[0].section == "Django setup"
    assert found[2].category == "constraint"


def test_claude_ai_export_reads_human_messages_and_their_content_blocks() -> None:
    path = DATA / "claude-ai" / "conversations.json"
    assert detect_format(path) == "claude-ai"
    found, _ = candidates(path, "claude-ai")
    assert [(c.text, c.category) for c in found] == [
        ("We have decided to keep amounts as integer cents, never floats.", "decision"),
        ("My favourite testing library is hypothesis.", "preference"),  # from "content" when "text" is empty
    ]
    assert found[1].source_ref.endswith("#c0a1b2c3-0000-4000-8000-000000000001#m-3")


def test_mem0_list_each_memory_is_one(tmp_path: Path) -> None:
    path = DATA / "mem0.json"
    assert detect_format(path) == "mem0"
    found, _ = candidates(path, "mem0")
    assert [c.text for c in found] == [
        "Prefers dark mode in every editor", "Is allergic to peanuts", "Works on the atlas project as its tech lead",
    ]
    assert found[0].category == "user_preferences" and found[1].category is None
    assert found[0].source_ref.endswith("mem0.json#6f0c6d5e-1b2a-4c3d-8e9f-000000000001")
    plain = tmp_path / "memories.json"  # a bare list, as mem0's get_all returned in older versions
    plain.write_text(json.dumps([{"memory": "Likes Rust"}, {"id": "x", "memory": "Lives in Oslo"}]))
    assert [c.source_ref.rsplit("#", 1)[1] for c in candidates(plain, detect_format(plain))[0]] == ["1", "x"]


def test_obsidian_notes_skip_app_folders_and_split_long_notes_at_headings() -> None:
    root = DATA / "obsidian"
    assert detect_format(root) == "obsidian"
    found, _ = candidates(root, "obsidian")
    files = {c.source_ref.split("#")[1] for c in found}
    assert files == {"Release checklist.md", "Daily/2026-11-30.md", "Projects/Atlas.md"}  # not .trash/, not the .png
    atlas = next(c for c in found if "Atlas.md" in c.source_ref)
    assert atlas.text.startswith("# Atlas\n\nAtlas is our geocoding service.")  # the title heads a note without one
    assert atlas.entities == ["atlas", "backend"]
    sections = [c for c in found if "Release checklist.md" in c.source_ref]
    assert [c.section for c in sections] == ["Release checklist", "1. Freeze", "2. Build", "3. Verify", "4. Announce"]
    assert sections[-1].text.endswith("stage: verify\n```")  # a "#" line in code is not a heading
    assert all(c.entities == ["runbook"] for c in sections)


def test_basic_memory_observations_are_memories_relations_are_not() -> None:
    root = DATA / "basic-memory"
    assert detect_format(root) == "basic-memory"
    found, _ = candidates(root, "basic-memory")
    obs = [(c.category, c.text, c.entities) for c in found if "#obs-" in c.source_ref]
    assert obs[:3] == [
        ("method", "Pour over provides more flavor clarity than French press", ["Coffee Brewing Methods"]),
        ("technique", "Water temperature at 205°F extracts optimal compounds #brewing",
         ["Coffee Brewing Methods", "brewing"]),
        ("preference", "Ethiopian beans work well with lighter roasts (personal experience)",
         ["Coffee Brewing Methods"]),
    ]
    assert not any("[[" in c.text for c in found)  # relations are links, not facts
    prose = [c for c in found if c.source_ref.endswith("dana.md#note")]
    assert len(prose) == 1 and "leads the platform team" in prose[0].text and prose[0].entities == ["Dana"]


# -- through the vault -----------------------------------------------------


def test_import_adds_through_dedup_with_provenance_and_erases_as_a_subject(vault: Vault) -> None:
    repo = DATA / "repo"
    dry = import_path(vault, repo, scope="project:shop", dry_run=True)
    assert dry.found == 15 and dry.created == 0 and vault.list() == []
    report = import_path(vault, repo, scope="project:shop")
    assert (report.created, report.duplicate, report.failed) == (15, 0, 0)
    hits = vault.list(limit=100)
    assert len(hits) == 15
    assert {h.source for h in hits} == {"import:claude-md"} and {h.scope for h in hits} == {"project:shop"}
    one = vault.get(report.items[0]["id"])
    assert one.meta["source_ref"] == f"{repo.resolve()}#AGENTS.md#1"
    assert one.meta["section"] == "AGENTS.md / Dev environment tips"
    # Run twice, nothing new.
    again = import_path(vault, repo, scope="project:shop")
    assert (again.created, again.duplicate) == (0, 15)
    # One file of the import is a subject of its own; so is the whole import.
    erase(vault, None, "wrong file", source_ref=f"{repo.resolve()}#AGENTS.md")
    assert len(vault.list(limit=100)) == 11
    erase(vault, None, "undo the import", source_ref=str(repo.resolve()))
    assert vault.list(limit=100) == []
    # What was erased is not brought back by importing it again.
    after = import_path(vault, repo, scope="project:shop")
    assert (after.created, after.refused) == (0, 15)


def test_one_file_of_a_folder_import_is_erased_by_its_own_path(
    vault: Vault, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found from outside: after `memex import /repo`, both `memex erase
    --source-ref /repo/CLAUDE.md` and `--source-ref CLAUDE.md` (run in
    /repo) answered "nothing to erase": the import records
    `/repo#CLAUDE.md#N`."""
    repo = tmp_path / "repo"
    shutil.copytree(DATA / "repo", repo)
    import_path(vault, repo, scope="project:shop")
    refs = {m.id: str(vault.get(m.id).meta["source_ref"]) for m in vault.list(limit=100)}
    files = {ref.split("#")[1] for ref in refs.values()}
    assert {"AGENTS.md", "CLAUDE.md"} <= files
    erase(vault, None, "outdated", source_ref=str(repo / "AGENTS.md"))
    left = {str(vault.get(m.id).meta["source_ref"]).split("#")[1] for m in vault.list(limit=100)}
    assert left == files - {"AGENTS.md"}
    monkeypatch.chdir(repo)
    erase(vault, None, "outdated", source_ref="CLAUDE.md")
    left = {str(vault.get(m.id).meta["source_ref"]).split("#")[1] for m in vault.list(limit=100)}
    assert left == files - {"AGENTS.md", "CLAUDE.md"}
    # A file the import never read is still "nothing to erase".
    (repo / "notes.txt").write_text("x", encoding="utf-8")
    with pytest.raises(InvalidArgument, match="nothing to erase"):
        erase(vault, None, "never imported", source_ref=str(repo / "notes.txt"))


def test_chat_import_uses_scope_and_rule_confidence(vault: Vault) -> None:
    report = import_path(vault, DATA / "claude-ai" / "conversations.json", scope="user")
    assert report.format == "claude-ai" and report.created == 2
    memory = vault.get(report.items[0]["id"])
    assert memory.meta["source"] == "import:claude-ai"
    assert memory.meta["category"] == "decision" and memory.meta["confidence"] == 0.7


def test_texts_are_embedded_in_batches_and_nothing_refused_reaches_the_cache(
    vault: Vault, fake_embedder: HashEmbedder, tmp_path: Path
) -> None:
    """The import embeds ahead in batches (memex.importers.Prefetched), in
    memory only: an erased text it meets is refused and leaves no vector in
    the index's embedding cache, as with `memex add`."""
    from memex.embedding import embed

    vault.add("Deploys happen on Tuesdays", scope="user")
    erased_id = vault.list()[0].id
    erase(vault, erased_id, "wrong")
    calls: list[int] = []
    real = fake_embedder.embed

    def counting(texts):  # type: ignore[no-untyped-def]
        calls.append(len(texts))
        return real(texts)

    fake_embedder.embed = counting  # type: ignore[method-assign]
    items = [{"id": f"m{i}", "memory": f"Service {i} owns queue number {i * 7} in region {i % 3}"} for i in range(20)]
    items.append({"id": "again", "memory": "Deploys happen on Tuesdays"})
    source = tmp_path / "mem0.json"
    source.write_text(json.dumps(items), encoding="utf-8")
    report = import_path(vault, source, scope="user")
    assert (report.created, report.refused) == (20, 1)
    assert len(calls) < 10, calls  # not once per memory
    keys = {embed.text_key("Deploys happen on Tuesdays")}
    cached = {row[0] for row in vault.backend.conn.execute("SELECT text_hash FROM embedding_cache")}
    assert not keys & cached
    hit = vault.search("which service owns queue number 35", limit=1)[0]
    assert hit.body.startswith("Service 5 owns queue number 35")


def test_a_bad_scope_is_refused_before_anything_is_written(vault: Vault) -> None:
    with pytest.raises(InvalidArgument):
        import_path(vault, DATA / "mem0.json", scope="Project:")
    assert vault.list() == []


def test_the_vault_itself_is_not_imported_into_itself(vault: Vault) -> None:
    vault.add("Deploys happen on Tuesdays", scope="user")
    for path in (vault.root, vault.root / "memories"):
        with pytest.raises(InvalidArgument, match="inside the vault"):
            import_path(vault, path)
    assert len(vault.list()) == 1


def test_unreadable_files_in_a_folder_are_reported_and_skipped(vault: Vault, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "good.md").write_text("Deploy from the main branch only.", encoding="utf-8")
    (notes / "latin1.md").write_bytes("Caf\xe9 notes".encode("latin-1"))
    report = import_path(vault, notes, fmt="obsidian")
    assert report.created == 1
    assert report.skipped_files == [{"path": str(notes / "latin1.md"), "reason": "is not UTF-8 text (byte 3)"}]


# -- the command -----------------------------------------------------------


@pytest.fixture
def lexical_root(vault_root: Path) -> Path:
    set_config(vault_root, "embedding", 'model = "none"')  # plumbing: no model needed
    return vault_root


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from memex.cli import run; run()", "--vault", str(root), *args],
        capture_output=True, text=True, timeout=120,
    )


def test_cli_import_json_dry_run_and_progress_on_stderr(lexical_root: Path) -> None:
    done = _cli(lexical_root, "import", str(DATA / "mem0.json"), "--dry-run", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["dry_run"] is True and data["found"] == 3 and data["format"] == "mem0"
    assert "import: read 3/3" in done.stderr
    assert not list((lexical_root / "memories").rglob("*.md"))
    done = _cli(lexical_root, "import", str(DATA / "mem0.json"), "--scope", "user")
    assert done.returncode == 0, done.stderr
    assert "import: imported 3/3 (3 created, 0 duplicate, 0 refused, 0 failed)" in done.stderr
    assert "created" in done.stdout and len(list((lexical_root / "memories").rglob("*.md"))) == 3
    shown = _cli(lexical_root, "list", "--source", "import:mem0", "--json")
    assert len(json.loads(shown.stdout)) == 3


@pytest.mark.parametrize("content, message", [
    (b"{not json", "is not valid JSON"),
    (b'[{"title": "x"}]', "is JSON but not an export memex knows; pass --format"),
    (b"\xff\xfe[]", "is not UTF-8 text"),
])
def test_cli_bad_export_is_one_line_naming_the_file(lexical_root: Path, tmp_path: Path,
                                                     content: bytes, message: str) -> None:
    bad = tmp_path / "conversations.json"
    bad.write_bytes(content)
    done = _cli(lexical_root, "import", str(bad))
    assert done.returncode == 1
    assert done.stderr.startswith(f"Error: {bad}: ") and message in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


@pytest.mark.parametrize("content, message", [
    (b"- a rule\n" * 600_000, "is larger than 4 MiB"),
    (b"\xff\xfe- a rule in UTF-16\n", "is not UTF-8 text"),
])
def test_cli_one_named_file_that_cannot_be_read_is_an_error(lexical_root: Path, tmp_path: Path,
                                                            content: bytes, message: str) -> None:
    """Found from outside: `memex import CLAUDE.md` of a file over 4 MiB (or not
    UTF-8) printed `skipped: ...`, then "nothing to import found", and exited 0,
    as if the file had no rules: a script could not tell it was never read. In a
    folder such a file is skipped and the others imported; named alone, it is
    the import's error."""
    bad = tmp_path / "CLAUDE.md"
    bad.write_bytes(content)
    done = _cli(lexical_root, "import", str(bad))
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("Error: ") and message in done.stderr and "CLAUDE.md" in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_cli_wrong_format_for_the_path_and_missing_path(lexical_root: Path) -> None:
    done = _cli(lexical_root, "import", str(DATA / "obsidian"), "--format", "chatgpt")
    assert done.returncode == 1 and "is a folder; chatgpt imports read one JSON file" in done.stderr
    done = _cli(lexical_root, "import", str(DATA / "mem0.json"), "--format", "chatgpt")
    assert done.returncode == 1 and "holds no conversations" in done.stderr
    done = _cli(lexical_root, "import", str(DATA / "nope.json"))
    assert done.returncode == 2 and "does not exist" in done.stderr and "Traceback" not in done.stderr


def test_cli_reads_the_conversations_file_inside_an_export_zip(lexical_root: Path, tmp_path: Path) -> None:
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.write(DATA / "chatgpt" / "conversations.json", "conversations.json")
        out.writestr("user.json", "{}")
    result = CliRunner().invoke(app(), ["--vault", str(lexical_root), "import", str(archive), "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["format"] == "chatgpt" and data["created"] == 3
    assert data["items"][0]["source_ref"] == f"{archive.resolve()}#conv-django#u-1"


def test_cli_table_output_for_people(lexical_root: Path, tmp_path: Path) -> None:
    notes = tmp_path / "vault-notes"
    shutil.copytree(DATA / "obsidian", notes)
    done = _cli(lexical_root, "import", str(notes), "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "dry run: nothing written" in done.stdout and "Projects/Atlas.md#note" in done.stdout
    done = _cli(lexical_root, "import", str(notes))
    assert "created: 7" in done.stdout.splitlines()  # not a terminal: key: value lines


def test_the_command_offers_exactly_the_library_formats() -> None:
    from memex.cli.importer import import_cmd
    from memex.importers import known_formats

    [option] = [p for p in import_cmd.params if p.name == "fmt"]
    assert isinstance(option.type, click.Choice)
    assert list(option.type.choices) == ["auto", *known_formats()]
    assert set(known_formats()) >= {"claude-md", "chatgpt", "claude-ai", "obsidian", "basic-memory", "mem0"}


def test_odd_shapes_inside_an_export_are_skipped_not_fatal(tmp_path: Path) -> None:
    """A hand-edited or truncated export: strings where objects belong, lists
    where strings belong. What is well formed is read; the rest is skipped."""
    user = {"role": "user"}
    good = {"author": user, "content": {"content_type": "text", "parts": ["We decided to use Go for the CLI."]}}
    chatgpt = [{"conversation_id": "c", "current_node": "d", "mapping": {
        "a": {"message": {"author": "user", "content": {"parts": ["I always use tabs."]}}, "parent": None},
        "b": {"message": ["not", "a", "message"], "parent": "a"},
        "c": {"message": {"author": user, "content": {"parts": "I never use spaces."}}, "parent": "b"},
        "d": {"message": {**good, "id": "d"}, "parent": "c"},
    }}, {"conversation_id": "e", "mapping": {"x": {"message": 7}, "y": {"message": {**good, "id": "y"}}}}]
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(chatgpt), encoding="utf-8")
    assert [c.source_ref.split("#", 1)[1] for c in candidates(path, "chatgpt")[0]] == ["c#d", "e#y"]
    claude = [{"uuid": "u", "chat_messages": [
        "not a message", {"sender": "human", "text": None, "content": "nor blocks"},
        {"sender": "human", "text": ["a", "list"], "content": [{"type": "text", "text": "We decided to use Go."}]},
    ]}, {"uuid": "v", "chat_messages": {"not": "a list"}}]
    path.write_text(json.dumps(claude), encoding="utf-8")
    assert [c.text for c in candidates(path, "claude-ai")[0]] == ["We decided to use Go."]


def test_underlined_headings_and_thematic_breaks_are_structure_not_memories(tmp_path: Path) -> None:
    path = tmp_path / "AGENTS.md"
    path.write_text(
        "Shop rules\n==========\n\nUse uv, not pip.\n\n---\n\nDeploys\n-------\n- Only on Tuesdays.\n\n* * *\n\n"
        "- Never on Fridays.\n",
        encoding="utf-8",
    )
    found, _ = candidates(path, "claude-md")
    assert [(c.text, c.section) for c in found] == [
        ("Use uv, not pip.", "Shop rules"),
        ("Only on Tuesdays.", "Shop rules / Deploys"),
        ("Never on Fridays.", "Shop rules / Deploys"),
    ]


def test_task_lists_are_not_basic_memory_observations(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "today.md").write_text("- [x] Reviewed the export PR\n- [ ] Write the release notes\n", encoding="utf-8")
    assert detect_format(notes) == "obsidian"
    (notes / "coffee.md").write_text("- [method] Pour over is clearer than French press\n", encoding="utf-8")
    assert detect_format(notes) == "basic-memory"
    found, _ = candidates(notes, "basic-memory")
    assert [(c.category, c.text) for c in found if "#obs-" in c.source_ref] == [
        ("method", "Pour over is clearer than French press"),
    ]


def test_claude_code_plugins_are_not_your_rules(tmp_path: Path) -> None:
    home = tmp_path / ".claude"
    shutil.copytree(DATA / "claude-home" / ".claude", home)
    plugin = home / "plugins" / "marketplaces" / "someone" / "tool"
    (plugin / "rules").mkdir(parents=True)
    (plugin / "CLAUDE.md").write_text("- Always answer in French.\n", encoding="utf-8")
    (plugin / "rules" / "style.md").write_text("- Never use type hints.\n", encoding="utf-8")
    texts = _texts(home)
    assert "I prefer short answers in bullet points." in texts
    assert not any("French" in t or "type hints" in t for t in texts)


def test_cursor_windsurf_and_gemini_rules_come_in_with_the_repository(vault: Vault, tmp_path: Path) -> None:
    """Found from outside: `memex import ~/code/shop` took CLAUDE.md and
    AGENTS.md but silently left out the repository's .cursorrules (not even
    listed as skipped), and `memex import .cursorrules` stopped with "cannot
    tell its format". Other agents' rule files are the same shape."""
    from memex.importers import import_path

    repo = tmp_path / "shop"
    (repo / ".cursor" / "rules").mkdir(parents=True)
    (repo / "docs").mkdir()
    (repo / "AGENTS.md").write_text("- Use pnpm in web/.\n", encoding="utf-8")
    (repo / ".cursorrules").write_text("Always use TypeScript strict mode.\n\nNo default exports.\n", encoding="utf-8")
    (repo / ".windsurfrules").write_text("Write commit messages in English.\n", encoding="utf-8")
    (repo / "GEMINI.md").write_text("- Prefer table-driven tests in Go.\n", encoding="utf-8")
    (repo / ".cursor" / "rules" / "react.mdc").write_text(
        "---\ndescription: React rules\nglobs: web/**/*.tsx\nalwaysApply: false\n---\n"
        "- Use React Query for server state.\n- Never use class components.\n", encoding="utf-8")
    (repo / "docs" / "diagram.mdc").write_text("not a rules file\n", encoding="utf-8")

    report = import_path(vault, repo, scope="project:shop")
    texts = {item["text"] for item in report.items}
    assert texts == {
        "Use pnpm in web/.", "Always use TypeScript strict mode.", "No default exports.",
        "Write commit messages in English.", "Prefer table-driven tests in Go.",
        "Use React Query for server state.", "Never use class components.",
    }
    assert report.created == 7 and report.format == "claude-md"
    cursor = [i for i in report.items if i["text"] == "No default exports."][0]
    assert cursor["source_ref"] == f"{repo.resolve()}#.cursorrules#2"
    # The file alone, without --format; importing it again adds nothing.
    again = import_path(vault, repo / ".cursorrules", scope="project:shop")
    assert again.format == "claude-md" and again.found == 2 and again.duplicate == 2
