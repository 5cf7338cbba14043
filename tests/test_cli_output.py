"""Output that says what the data shows (docs/cli.md): reindex counts,
repeated installs, sizes, help texts, whole paths in tables, progress lines."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

from memex.embedding import embed
from memex.cli import _common, app
from tests.fakes import HashEmbedder
from tests.test_cli_every_command import walk
from tests.hook_helpers import run_memex


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


def test_reindex_full_reports_what_changed(cli: click.Group, vault_root: Path) -> None:
    made = [ok_json(cli, vault_root, "add", text)["path"] for text in (
        "Deploys go out on Fridays", "The staging database is on port 5433", "CI has two cores")]
    report = ok_json(cli, vault_root, "reindex", "--full")
    assert (report["added"], report["updated"], report["removed"], report["unchanged"]) == (0, 0, 0, 3)
    assert report["embedded"] == 0  # every vector came from the cache
    edited = vault_root / made[1]
    edited.write_text(edited.read_text().replace("5433", "6543"))
    report = ok_json(cli, vault_root, "reindex", "--full")
    assert (report["updated"], report["unchanged"]) == (1, 2)
    # The rebuilt rows are the edited text: a search finds the new port.
    assert ok_json(cli, vault_root, "search", "6543")[0]["path"] == made[1]


def test_a_repeated_install_says_unchanged(cli: click.Group, vault_root: Path, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    first = ok_json(cli, vault_root, "install", "claude-code")
    assert first["status"] == "installed" and first["changed"] is True
    again = ok_json(cli, vault_root, "install", "claude-code")
    assert again["status"] == "unchanged" and again["changed"] is False
    human = run(cli, vault_root, "install", "claude-code").output
    assert "unchanged" in human and "replaced" not in human
    assert ok_json(cli, vault_root, "install", "mcp")["status"] == "installed"
    assert ok_json(cli, vault_root, "install", "mcp")["status"] == "unchanged"
    assert ok_json(cli, vault_root, "uninstall", "claude-code")["status"] == "removed"
    assert ok_json(cli, vault_root, "uninstall", "claude-code")["status"] == "unchanged"


def test_stats_sizes_are_human_in_tables_and_bytes_in_json(cli: click.Group, vault_root: Path) -> None:
    ok_json(cli, vault_root, "add", "Deploys go out on Fridays")
    data = ok_json(cli, vault_root, "stats")
    index = vault_root / ".memex" / "index.db"
    on_disk = sum(p.stat().st_size for p in (index, index.with_name("index.db-wal")) if p.exists())
    assert data["index_bytes"] == on_disk
    human = run(cli, vault_root, "stats").output
    assert _common.human_bytes(on_disk) in human and str(on_disk) not in human
    assert "index size" in human


@pytest.mark.parametrize("size, text", [
    (0, "0 bytes"), (999, "999 bytes"), (1_000, "1.0 kB"), (1_835_008, "1.8 MB"), (5 * 10**9, "5.0 GB"),
])
def test_human_bytes(size: int, text: str) -> None:
    assert _common.human_bytes(size) == text


def test_every_option_has_help_and_shows_its_default() -> None:
    missing = []
    for path, command in walk(app()):
        for param in command.params:
            if not isinstance(param, click.Option):
                continue
            if not param.help:
                missing.append(f"{path} {param.opts[0]}: no help")
            default = param.default
            real_default = not param.is_flag and default is not None and default != () and repr(default) != "Sentinel.UNSET"
            if real_default and not param.show_default and "default" not in (param.help or ""):
                missing.append(f"{path} {param.opts[0]}: default {default!r} not shown")
    assert not missing, "\n".join(missing)


def test_list_limit_shows_its_default_in_help(cli: click.Group) -> None:
    out = CliRunner().invoke(cli, ["list", "--help"]).output
    assert "[default: 50; with --json:" in out and "--all" in out
    assert "Also list superseded memories" in out


def test_tables_keep_paths_whole_when_the_terminal_has_room(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(_common, "is_tty", lambda: True)
    monkeypatch.setenv("COLUMNS", "100")
    path = "memories/project/some-long-project/a-really-long-file-name-for-a-memory-ab12.md"
    _common.table(("path", "reason"), [(path, "frontmatter key confidence must be a number from 0 to 1, got 2")])
    settings = "/home/somebody/projects/very-long-project-name/.claude/settings.json"
    _common.key_values({"file": settings, "changed": False})
    out = capsys.readouterr().out
    assert path in out and settings in out  # each on one line, not folded mid-name
    assert all(len(line) <= 100 for line in out.splitlines())
    assert "got 2" in out  # the other column wrapped instead of being cut off


def _hand_written(root: Path, count: int) -> None:
    folder = root / "memories" / "user" / "bulk"
    folder.mkdir(parents=True)
    for i in range(count):
        (folder / f"note-{i}.md").write_text(f"Bulk note number {i} about topic {i % 17}.\n")


def test_reindex_prints_progress_on_stderr_when_not_a_terminal(
    cli: click.Group, vault_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _hand_written(vault_root, 600)
    monkeypatch.setattr(_common, "PROGRESS_EVERY", 0.0)  # a line per batch instead of every few seconds
    result = run(cli, vault_root, "reindex", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["added"] == 600  # stdout is the result alone
    lines = [line for line in result.stderr.splitlines() if line.startswith("reindex: ")]
    assert lines and lines[0].startswith("reindex: 256/600 files")


def test_a_short_reindex_prints_no_progress(cli: click.Group, vault_root: Path) -> None:
    _hand_written(vault_root, 20)
    result = run(cli, vault_root, "reindex")
    assert result.exit_code == 0 and "reindex: " not in result.stderr


# -- --json when a command fails ------------------------------------------------------


@pytest.mark.parametrize(("args", "code"), [
    (["show", "01NOPE", "--json"], 1),                      # a library error
    (["search", "tabs", "--scope", "usr", "--json"], 1),    # a bad scope
    (["add", "x", "--confidence", "nan", "--json"], 2),     # a usage error
    (["--json", "list"], 2),                                 # --json where no command takes it
])
def test_json_is_json_even_when_the_command_fails(vault_root: Path, args: list[str], code: int) -> None:
    """Found from outside: `memex show nope --json` (and every other failing
    --json run) printed nothing on stdout, so a script's `json.load` failed
    on an empty string. stdout now holds {"error", "exit_code"}, and stderr
    keeps the one line people read."""
    done = run_memex("--vault", str(vault_root), *args)
    assert done.returncode == code
    document = json.loads(done.stdout)
    assert document["exit_code"] == code
    assert document["error"] and document["error"] in done.stderr
    assert done.stderr.startswith("Error: ") and "Traceback" not in done.stderr


def test_text_after_a_double_dash_is_not_the_json_option(vault_root: Path) -> None:
    done = run_memex("--vault", str(vault_root), "add", "--scope", "nope", "--", "--json")
    assert done.returncode == 1 and done.stdout == ""
