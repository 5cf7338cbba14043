"""Only real scopes are accepted, a near miss gets "did you mean", and
hand-written files in unknown folders are reported, not re-scoped
(docs/cli.md)."""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from memex import context
from memex.embedding import embed
from memex.agents import claude_code, mcp_server
from memex.cli import app
from memex.errors import ConfigError, InvalidArgument, ScopeError
from memex.vault import Vault
from memex.consolidation.consolidate import consolidate_all
from tests.fakes import HashEmbedder
from tests.hook_helpers import fixture, lexical_only, run_hook, set_config


def folders(root: Path) -> set[str]:
    return {p.relative_to(root / "memories").as_posix() for p in (root / "memories").rglob("*") if p.is_dir()}


@pytest.mark.parametrize(
    "typo, suggestion",
    [
        ("usr", "user"),
        ("projects:memex", "project:memex"),
        ("user:me", "user"),
        ("Agent:claude", "agent:claude"),
        ("project", None),
        ("bogus", None),
        ("project:", None),
    ],
)
def test_a_typo_is_refused_with_did_you_mean(vault: Vault, typo: str, suggestion: str | None) -> None:
    before = folders(vault.root)
    with pytest.raises(ScopeError) as caught:
        vault.add("The deploy runs on Fridays", scope=typo)
    assert isinstance(caught.value, InvalidArgument)  # callers catching the old class still do
    assert caught.value.suggestion == suggestion
    message = str(caught.value)
    if suggestion:
        assert f"did you mean {suggestion!r}?" in message
    else:
        assert "did you mean" not in message
    assert "user, resources, project:NAME, agent:NAME" in message
    assert folders(vault.root) == before and vault.list() == []


@pytest.mark.parametrize("scope", ["user", "project:memex", "agent:claude-code", "resources", " project:x "])
def test_the_real_scopes_are_accepted(vault: Vault, scope: str) -> None:
    made = vault.add(f"A memory in {scope.strip()}", scope=scope)
    assert made.status == "created"
    assert [h.scope for h in vault.list()] == [scope.strip()]


def test_configured_extra_kinds(vault_root: Path, fake_embedder: HashEmbedder) -> None:
    set_config(vault_root, "scopes", 'extra_kinds = ["team"]')
    with Vault(vault_root, embedder=fake_embedder) as vault:
        assert vault.add("Platform team owns the CI runners", scope="team:platform").status == "created"
        assert (vault_root / "memories" / "team" / "platform").is_dir()
        with pytest.raises(ScopeError, match="did you mean 'team:platform'"):
            vault.add("x", scope="teams:platform")
        with pytest.raises(ScopeError, match="'team' needs a name"):
            vault.add("x", scope="team")
    config = vault_root / ".memex" / "config.toml"
    config.write_text(config.read_text().replace('["team"]', '["Team Alpha"]'))
    with Vault(vault_root, embedder=fake_embedder) as vault, pytest.raises(ConfigError, match="extra_kinds"):
        vault.add("x", scope="user")


def test_a_bad_default_scope_names_the_config(vault_root: Path, fake_embedder: HashEmbedder) -> None:
    set_config(vault_root, "vault", 'default_scope = "usr"')
    with Vault(vault_root, embedder=fake_embedder) as vault, pytest.raises(ScopeError) as caught:
        vault.add("x")
    assert "default_scope" in str(caught.value) and "did you mean 'user'" in str(caught.value)


def test_filters_refuse_typos_but_accept_scopes_the_index_holds(vault: Vault) -> None:
    vault.add("Tabs, not spaces", scope="user")
    with pytest.raises(ScopeError, match="did you mean 'user'"):
        vault.search("tabs", scope="usr")
    with pytest.raises(ScopeError, match="did you mean 'project:memex'"):
        vault.list(scope="projects:memex")
    with pytest.raises(ScopeError):
        consolidate_all(vault, scope="usr")
    # A hand-written folder is a scope the index holds: it can be listed.
    (vault.root / "memories" / "notes").mkdir()
    (vault.root / "memories" / "notes" / "deploy.md").write_text("Deploys go out on Fridays.\n")
    vault.reindex()
    assert [h.path for h in vault.list(scope="notes")] == ["memories/notes/deploy.md"]
    assert [h.path for h in vault.search("deploys fridays", scope=["notes"])] == ["memories/notes/deploy.md"]


def test_hand_written_files_keep_their_folder_scope(vault: Vault) -> None:
    for rel, body in (
        ("usr/a.md", "Typo folder memory."),
        ("user/recipes/b.md", "Filed below the user folder."),
        ("project/memex/notes/c.md", "Filed below a project folder."),
    ):
        path = vault.root / "memories" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body + "\n")
    report = vault.reindex()
    assert report.errors == []
    assert {h.path: h.scope for h in vault.list()} == {
        "memories/usr/a.md": "usr",  # not moved to another scope behind the person's back
        "memories/user/recipes/b.md": "user",
        "memories/project/memex/notes/c.md": "project:memex",
    }


# -- where scopes come in: CLI, context engine, MCP, hooks --------------------


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> click.Group:
    monkeypatch.setattr(embed, "load_embedder", lambda setting: HashEmbedder())
    return app()


def run(cli: click.Group, root: Path, *args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, ["--vault", str(root), *args], input=input)


@pytest.mark.parametrize(
    "args",
    [
        ["add", "x", "--scope", "usr"],
        ["search", "x", "--scope", "usr"],
        ["list", "--scope", "usr"],
        ["consolidate", "--all", "--scope", "usr"],
        ["fading", "--scope", "usr"],
        ["context", "commit", "--session", "s1", "--scope", "usr"],
    ],
)
def test_cli_refuses_a_scope_typo(cli: click.Group, vault_root: Path, args: list[str]) -> None:
    result = run(cli, vault_root, *args)
    assert result.exit_code == 1, result.output
    assert "scope: 'usr' is not a scope; did you mean 'user'?" in result.output
    assert "Traceback" not in result.output
    assert not (vault_root / "memories" / "usr").exists()


def test_context_after_turn_refuses_a_typo_before_archiving(vault: Vault) -> None:
    messages = [{"role": "user", "content": "remember that the build uses make"}]
    with pytest.raises(ScopeError, match="did you mean 'user'"):
        context.after_turn(vault, "s1", messages, 0, scope="usr", commit="sync")
    assert context.archive_search(vault, context.session_id("s1"), "build make") == []
    # The same turn with a real scope is archived: the check above could fail.
    context.after_turn(vault, "s1", messages, 0, scope="user", commit="none")
    assert context.archive_search(vault, context.session_id("s1"), "build make")


def test_mcp_tools_refuse_a_typo(vault: Vault) -> None:
    tools = mcp_server.Tools(vault)
    with pytest.raises(ScopeError, match="did you mean 'user'"):
        tools.memory_add("The deploy runs on Fridays", scope="usr")
    with pytest.raises(ScopeError, match="did you mean 'project:x'"):
        tools.memory_search("deploy", scope=["projects:x"])


def test_a_hook_with_a_mistyped_capture_scope_says_so(vault_root: Path, tmp_path: Path) -> None:
    lexical_only(vault_root)
    set_config(vault_root, "agents", 'capture_scope = "usr"')
    (tmp_path / "proj" / ".git").mkdir(parents=True)
    event = fixture("claude-code", "UserPromptSubmit.json", cwd=str(tmp_path / "proj"),
                    transcript=str(tmp_path / "none.jsonl"))
    proc = run_hook("claude-code", json.dumps(event), vault_root)
    assert proc.returncode == 0  # hooks fail open ...
    assert "did you mean 'user'" in proc.stderr  # ... but say why nothing was kept
    assert not (vault_root / "memories" / "usr").exists()


def test_claude_code_settings_pass_the_scope_through(vault: Vault) -> None:
    # The hook path above, in-process: the typo reaches Vault.add and is refused there.
    set_config(vault.root, "agents", 'capture_scope = "usr"')
    fresh = Vault(vault.root, embedder=HashEmbedder())
    try:
        event = fixture("claude-code", "UserPromptSubmit.json", cwd=str(vault.root),
                        transcript=str(vault.root / "none.jsonl"))
        with pytest.raises(ScopeError):
            result = claude_code.handle(fresh, event)
            if result.deferred is not None:
                result.deferred()
    finally:
        fresh.close()


def test_a_scope_with_no_guess_reads_as_a_sentence(cli: click.Group, vault_root: Path) -> None:
    result = run(cli, vault_root, "search", "x", "--scope", "nope:")
    assert result.exit_code == 1, result.output
    assert "'nope:' is not a scope. Scopes are user, resources, project:NAME" in " ".join(result.output.split())


def test_a_misspelt_scope_gets_a_note_not_just_no_matches(vault_root: Path) -> None:
    """Found from outside: `memex search billing --scope project:shpo` (and
    `memex list --scope project:shpo`) answered "no matches" and nothing
    else: a well-formed scope passes the scope check, so a typo in its name
    looked like an empty answer."""
    from click.testing import CliRunner

    from memex.cli import app
    from tests.hook_helpers import lexical_only

    lexical_only(vault_root)  # plumbing: no model
    with Vault(vault_root) as vault:
        vault.add("The billing service is written in Go", scope="project:shop")
    runner = CliRunner()
    for args in (["search", "billing", "--scope", "project:shpo"], ["list", "--scope", "project:shpo"]):
        done = runner.invoke(app(), ["--vault", str(vault_root), *args])
        assert done.exit_code == 0
        assert "no memory is in scope 'project:shpo'; did you mean 'project:shop'?" in done.stderr
    # A scope that holds memories but none that match: no note.
    quiet = runner.invoke(app(), ["--vault", str(vault_root), "search", "banana bread", "--scope", "project:shop"])
    assert quiet.exit_code == 0 and "note:" not in quiet.stderr
