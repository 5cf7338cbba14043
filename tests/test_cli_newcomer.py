"""What a newcomer types on day one: empty text, text that begins with '-',
--vault after the command (docs/cli.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

from memex.embedding import embed
from memex.cli import app
from memex.errors import InvalidArgument
from memex.vault import Vault
from tests.fakes import HashEmbedder
from tests.hook_helpers import run_memex


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> click.Group:
    monkeypatch.setattr(embed, "load_embedder", lambda setting: HashEmbedder())
    return app()


def run(cli: click.Group, *args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=input, prog_name="memex")


def ok_json(cli: click.Group, *args: str, input: str | None = None) -> Any:
    args = args if "--json" in args else (*args, "--json")
    result = run(cli, *args, input=input)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_empty_text_is_an_error_that_says_so(cli: click.Group, vault_root: Path) -> None:
    for text in ("", "   \n"):
        result = run(cli, "--vault", str(vault_root), "add", text)
        assert result.exit_code == 1
        assert "TEXT: is empty" in result.output and "- to read it from standard input" in result.output
        assert "injected" not in result.output
    assert ok_json(cli, "--vault", str(vault_root), "list") == []


def test_the_library_tells_empty_text_from_injected_blocks_only(vault: Vault) -> None:
    with pytest.raises(InvalidArgument, match=r"^text: is empty"):
        vault.add(" \t")
    with pytest.raises(InvalidArgument, match="holds only what memex injected"):
        vault.add("<relevant-memories>\n- old fact\n</relevant-memories>")


@pytest.mark.parametrize("text", ["-v is verbose", "---", "--force pushes are forbidden"])
def test_text_that_begins_with_a_dash_gets_a_hint_that_works(
    cli: click.Group, vault_root: Path, text: str
) -> None:
    refused = run(cli, "--vault", str(vault_root), "add", text, "--scope", "user")
    assert refused.exit_code == 2
    assert "put -- before it" in refused.output and "standard input" in refused.output
    # The command the hint spells out stores the text as it was typed.
    suggested = f"memex add --scope user -- "
    assert suggested in refused.output
    created = ok_json(cli, "--vault", str(vault_root), "add", "--json", "--scope", "user", "--", text)
    assert created["status"] == "created"
    assert (vault_root / created["path"]).read_text(encoding="utf-8").endswith(f"\n{text}\n")
    # The other way the hint names: the same text on standard input is that memory.
    piped = ok_json(cli, "--vault", str(vault_root), "add", "-", input=text + "\n")
    assert piped["status"] == "duplicate" and piped["existing_id"] == created["id"]


def test_a_near_miss_of_an_option_gets_did_you_mean_not_the_text_hint(cli: click.Group, vault_root: Path) -> None:
    result = run(cli, "--vault", str(vault_root), "add", "--scpoe", "user", "hello")
    assert result.exit_code == 2
    assert "--scope" in result.output and "put -- before it" not in result.output


def test_search_and_supersede_hint_too(cli: click.Group, vault_root: Path) -> None:
    old = ok_json(cli, "--vault", str(vault_root), "add", "Deploys go out on Tuesdays")["id"]
    result = run(cli, "--vault", str(vault_root), "supersede", old, "-- deploys moved to Thursdays")
    assert result.exit_code == 2 and f"memex supersede {old} -- " in result.output
    result = run(cli, "--vault", str(vault_root), "search", "-v flag")
    assert result.exit_code == 2 and "memex search -- '-v flag'" in result.output


def test_vault_option_after_the_command(cli: click.Group, vault_root: Path, tmp_path: Path) -> None:
    made = ok_json(cli, "add", "Herons nest by the river", "--vault", str(vault_root))
    assert made["status"] == "created"
    hits = ok_json(cli, "search", "herons", "--vault", str(vault_root))
    assert [h["id"] for h in hits] == [made["id"]]
    # Both places, same folder: fine. Different folders: an error naming both.
    assert ok_json(cli, "--vault", str(vault_root), "list", "--vault", str(vault_root))
    clash = run(cli, "--vault", str(vault_root), "list", "--vault", str(tmp_path))
    assert clash.exit_code == 2 and "given twice" in clash.output and str(tmp_path) in clash.output
    # Nested commands take it too.
    # (the vault is found: the answer is about its sessions, of which s1 is none)
    nested = run(cli, "context", "search", "--session", "s1", "herons", "--vault", str(vault_root))
    assert nested.exit_code == 1 and "'s1' has no archive in this vault" in nested.output, nested.output


def test_an_unknown_option_with_a_dash_value_gets_no_hint_that_fails_again(
    cli: click.Group, vault_root: Path
) -> None:
    """`memex search CI --offset -5` once suggested `memex search CI -5 -- --offset`,
    which fails on -5 in turn."""
    result = run(cli, "--vault", str(vault_root), "search", "CI", "--offset", "-5")
    assert result.exit_code == 2
    assert "--offset" in result.output and "CI -5 --" not in result.output


def test_unquoted_text_after_a_dash_word_gets_a_hint_that_works(cli: click.Group, vault_root: Path) -> None:
    """`memex add -v is verbose` (no quotes) once suggested
    `memex add is verbose -- -v`, which fails on the extra arguments."""
    refused = run(cli, "--vault", str(vault_root), "add", "-v", "is", "verbose", "--scope", "user")
    assert refused.exit_code == 2
    assert "memex add --scope user -- '-v is verbose'" in refused.output, refused.output


@pytest.mark.parametrize("args", [[], ["context"], ["install"]])
def test_memex_alone_prints_its_help_not_an_error(args: list[str]) -> None:
    """Found from outside: the first thing a new user types, `memex` alone,
    printed "Error: Usage: memex [OPTIONS] COMMAND ..." with the whole help
    inside the error line and "(see 'memex --help')" glued to its last
    command. A group run without a command prints its help, as --help does
    (exit status 2, click's for a missing command)."""
    done = run_memex(*args)
    assert done.returncode == 2
    assert done.stdout.startswith(f"Usage: memex {' '.join(args)}".rstrip() + " [OPTIONS] COMMAND")
    assert "Commands:" in done.stdout and "Error" not in done.stdout + done.stderr
    assert "see 'memex" not in done.stdout
