"""Output for people and for pipes (docs/cli.md, "Output"): at a terminal,
tables; into a pipe, tab-separated rows and ``key: value`` lines; ``--json``
as it was. ``list`` shows a screenful and says how to see more; ``--scope``
repeats wherever it filters and is refused twice where one scope is meant;
superseded rows are marked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

from memex.cli import _common, app
from memex.cli.core import LIST_DEFAULT
from memex.embedding import embed
from tests.fakes import HashEmbedder


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> click.Group:
    monkeypatch.setattr(embed, "load_embedder", lambda setting: HashEmbedder())
    return app()


def run(cli: click.Group, root: Path, *args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, ["--vault", str(root), *args], input=input)


def ok_json(cli: click.Group, root: Path, *args: str) -> Any:
    result = run(cli, root, *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _fill(cli: click.Group, root: Path) -> dict[str, str]:
    made = {}
    for key, text, scope in (("tabs", "The user prefers tabs over spaces", "user"),
                             ("wal", "The index runs SQLite in WAL mode", "project:memex"),
                             ("ci", "CI has two cores", "agent:ci")):
        made[key] = ok_json(cli, root, "add", text, "--scope", scope)["id"]
    return made


def test_tables_into_a_pipe_are_tab_separated_rows(cli: click.Group, vault_root: Path) -> None:
    made = _fill(cli, vault_root)
    listed = run(cli, vault_root, "list")
    assert listed.exit_code == 0
    rows = [line.split("\t") for line in listed.stdout.splitlines()]
    assert sorted(r[0] for r in rows) == sorted(made.values())  # `cut -f1`: the ids, no header, no box
    assert all(len(r) == 5 for r in rows) and "│" not in listed.stdout
    assert ["user", "user"] == [r[1:3] for r in rows if r[0] == made["tabs"]][0]
    hits = run(cli, vault_root, "search", "tabs over spaces")
    first = hits.stdout.splitlines()[0].split("\t")
    assert first[1] == made["tabs"] and float(first[0]) > 0 and first[-1] == "The user prefers tabs over spaces"


def test_one_record_outputs_into_a_pipe_are_key_value_lines(cli: click.Group, vault_root: Path,
                                                           tmp_path: Path) -> None:
    made = _fill(cli, vault_root)
    for command in (["stats"], ["reindex"], ["doctor"], ["status"], ["show", made["ci"]]):
        out = run(cli, vault_root, *command).stdout
        assert "│" not in out and "┃" not in out, command
        assert any(line.startswith(("memories: ", "added: ", "clean: ", "watcher: ", "id: "))
                   for line in out.splitlines()), (command, out)
    assert f"id: {made['ci']}" in run(cli, vault_root, "show", made["ci"]).stdout.splitlines()
    notes = tmp_path / "CLAUDE.md"
    notes.write_text("- Deploys go out on Fridays\n- The staging database is on port 5433\n")
    imported = run(cli, vault_root, "import", str(notes), "--scope", "project:shop")
    assert "created: 2" in imported.stdout.splitlines()
    erased = run(cli, vault_root, "erase", made["ci"], "--reason", "test")
    assert "│" not in erased.stdout and "erased: 1 memory" in erased.stdout.splitlines()


def test_at_a_terminal_people_get_tables(cli: click.Group, vault_root: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    _fill(cli, vault_root)
    monkeypatch.setattr(_common, "is_tty", lambda: True)
    assert "│" in run(cli, vault_root, "list").stdout
    assert "│" in run(cli, vault_root, "stats").stdout


def test_json_is_unchanged(cli: click.Group, vault_root: Path) -> None:
    made = _fill(cli, vault_root)
    listed = ok_json(cli, vault_root, "list")
    assert {m["id"] for m in listed} == set(made.values()) and "score" not in listed[0]
    assert ok_json(cli, vault_root, "stats")["memories"] == 3


def test_list_shows_a_screenful_and_says_how_to_see_more(cli: click.Group, vault_root: Path) -> None:
    folder = vault_root / "memories" / "user"
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(LIST_DEFAULT + 5):
        (folder / f"note-{i}.md").write_text(f"Bulk note number {i}\n")
    assert run(cli, vault_root, "reindex").exit_code == 0
    shown = run(cli, vault_root, "list")
    assert len(shown.stdout.splitlines()) == LIST_DEFAULT
    assert "--limit N" in shown.stderr and "--all" in shown.stderr
    assert len(run(cli, vault_root, "list", "--all").stdout.splitlines()) == LIST_DEFAULT + 5
    every = run(cli, vault_root, "list", "--limit", "1000")
    assert len(every.stdout.splitlines()) == LIST_DEFAULT + 5 and every.stderr == ""
    assert len(ok_json(cli, vault_root, "list")) == LIST_DEFAULT + 5  # programs get everything, as before
    assert run(cli, vault_root, "list", "--limit", "3", "--all").exit_code == 2


def test_repeated_scope_filters_by_each(cli: click.Group, vault_root: Path) -> None:
    made = _fill(cli, vault_root)
    both = ok_json(cli, vault_root, "list", "--scope", "user", "--scope", "project:memex")
    assert {m["id"] for m in both} == {made["tabs"], made["wal"]}
    faded = ok_json(cli, vault_root, "fading", "--within", "100000", "--scope", "user", "--scope", "agent:ci")
    assert {m["id"] for m in faded["memories"]} == {made["tabs"], made["ci"]}


@pytest.mark.parametrize("command", [
    ["add", "Deploys go out on Fridays"],
    ["consolidate", "--all"],
    ["import", "CLAUDE.md"],
])
def test_repeated_scope_where_one_is_meant_is_refused(cli: click.Group, vault_root: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch, command: list[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "CLAUDE.md").write_text("- Deploys go out on Fridays\n")
    result = run(cli, vault_root, *command, "--scope", "user", "--scope", "project:shop")
    assert result.exit_code == 2
    assert "'user', 'project:shop'" in result.stderr
    assert ok_json(cli, vault_root, "list") == []  # nothing was written under either scope


def test_superseded_rows_are_marked(cli: click.Group, vault_root: Path) -> None:
    made = _fill(cli, vault_root)
    new = ok_json(cli, vault_root, "supersede", made["ci"], "CI has four cores")["id"]
    rows = {r.split("\t")[0]: r.split("\t") for r in
            run(cli, vault_root, "list", "--include-superseded").stdout.splitlines()}
    assert rows[made["ci"]][1] == "superseded" and rows[new][1] == "active"
    hits = run(cli, vault_root, "search", "CI cores", "--include-superseded", "--no-floor").stdout.splitlines()
    statuses = {r.split("\t")[2]: r.split("\t")[3] for r in hits}  # score, floor, id, status
    assert statuses[made["ci"]] == "superseded"
    assert "superseded" not in run(cli, vault_root, "list").stdout  # without the flag: no status column
