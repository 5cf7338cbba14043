"""Every command on a vault whose index is on PostgreSQL: no traceback, and
``--json`` prints JSON (tests/test_cli_every_command.py walks the SQLite
vault with every option; here each command runs bare and with each option
once, against one shared database that the runs leave as they change it)."""

from __future__ import annotations

import shutil
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from memex.cli import app
from memex.embedding import embed
from memex.vault import Vault, init_vault
from tests.conftest import use_postgres
from tests.fakes import HashEmbedder
from tests.test_cli_every_command import CONTEXT_INPUT, LONG_RUNNING, SEED_MEMORIES, invocations, problems, walk


def test_no_command_prints_a_traceback_on_postgres(tmp_path: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    src = init_vault(tmp_path / "tpl", git=False)
    use_postgres(src, pg_url)
    ids: dict[str, str] = {}
    with Vault(src, embedder=HashEmbedder()) as vault:
        for key, body, scope, session in SEED_MEMORIES:
            ids[key] = vault.add(body, scope=scope, session=session).id
    monkeypatch.setattr(embed, "load_embedder", lambda setting: HashEmbedder())
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    monkeypatch.chdir(tmp_path)
    failures: list[str] = []
    ran = 0
    for path, command in walk(app()):
        if path in LONG_RUNNING or path in ("memex init", "memex demo"):
            continue  # init/demo make vaults of their own (SQLite); the walk covers them
        runs = invocations(path, command, ids, tmp_path, tmp_path / "vault")
        options = [p for p in command.params if isinstance(p, click.Option) and p.name != "as_json"]
        for args in runs[: 2 * (1 + len(options))]:  # bare, then each option alone (with and without --json)
            shutil.rmtree(tmp_path / "vault", ignore_errors=True)
            shutil.copytree(src, tmp_path / "vault")
            stdin = CONTEXT_INPUT if path.startswith("memex context") or path == "memex hook" else None
            result = CliRunner().invoke(app(), args, input=stdin)
            ran += 1
            failures.extend(problems(args, result))
    assert ran > 60
    assert not failures, "\n".join(failures)
