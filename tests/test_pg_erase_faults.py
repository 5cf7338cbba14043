"""An erasure finishes on PostgreSQL however the server dies (tests/pgkit.py: a real server).

Found from outside: an erase while the server was down deleted the file, and
the audit log said the next reindex would purge the row; after the server was
back `doctor` said clean, `reindex`, `reindex --full` and `doctor --fix` left
the row, and `memex search` returned the erased body on both clones. Now the
purge is journaled before any file goes (memex/erased/pending.py), the next
command that reaches the server finishes it, `doctor` names it meanwhile, and
every clone's reads hide what its erased list holds.

Each case kills the server (``pg_ctl stop -m immediate``) at one step of an
erase, starts it again, and checks the clones at each moment.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner

from memex.cli import app
from memex.embedding import embed
from memex.erased import pending
from memex.erase import steps
from memex.errors import IndexStoreError
from memex.store.postgres import erasure
from tests.conftest import use_postgres
from tests.fakes import HashEmbedder
from tests.team_helpers import Team, git

SECRET = "the launch code is 7781 zebra"
KEPT = "the staging database listens on port 5433"
# Where the server dies: before the erase, then at each step (memex/faults.py).
STEPS = ["down_before", "erase.listed", "erase.deleted", "erase.purged", "erase.shared", "erase.shared_txn",
         "erase.shared_purged", "erase.shared_done"]


@pytest.fixture(scope="module")
def server() -> Iterator[Any]:
    """A server of this module's own: the session's must not die under other tests."""
    from tests import pgkit

    if pgkit.MISSING is not None:
        pytest.skip(pgkit.MISSING)
    base = Path(tempfile.mkdtemp(prefix="memex-pg-crash-"))
    base.chmod(0o755)
    running = pgkit.PgServer(base / "data")
    yield running
    running.stop()
    shutil.rmtree(base, ignore_errors=True)


@pytest.fixture(scope="module")
def shared(server: Any, tmp_path_factory: pytest.TempPathFactory) -> tuple[Team, str]:
    """Two clones of one team vault on one database, kept for every case (each erases its own memory)."""
    url = server.new_database()
    team = Team(tmp_path_factory.mktemp("team"), names=("a", "b"))
    for name in ("a", "b"):
        use_postgres(team.roots[name], url)
    team.add("a", KEPT)
    return team, url


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> click.Group:
    monkeypatch.setattr(embed, "load_embedder", lambda setting: HashEmbedder())
    return app()


def invoke(cli: click.Group, root: Path, *args: str) -> tuple[int, str]:
    out = CliRunner().invoke(cli, ["--vault", str(root), *args])
    assert out.exception is None or isinstance(out.exception, SystemExit), out.output  # never a traceback
    return out.exit_code, out.output


def rows_with(server: Any, url: str, memory_id: str) -> int:
    return int(server.sql(url, f"SELECT count(*) FROM memories WHERE id = '{memory_id}'")[0][0])


@pytest.mark.parametrize("step", STEPS)
def test_an_erase_finishes_wherever_the_server_died(
    step: str, server: Any, shared: tuple[Team, str], cli: click.Group, monkeypatch: pytest.MonkeyPatch
) -> None:
    team, url = shared
    secret = team.add("a", f"{SECRET} ({step})")  # into the shared index at once; b need not have its file
    assert rows_with(server, url, secret) == 1

    armed = [step]

    def die_at(name: str) -> None:
        if name in armed:
            armed.clear()
            server.crash()

    monkeypatch.setattr(steps, "point", die_at)
    monkeypatch.setattr(erasure, "point", die_at)
    if step == "down_before":
        server.crash()
    with team.vault("a") as vault:
        if step != "down_before":
            assert secret in [h.id for h in vault.search("launch code zebra")]  # the connection is open
        try:
            steps.erase(vault, secret, reason="fault test")
            finished = True
        except IndexStoreError as exc:
            assert "journaled" in str(exc) and "erased here" in str(exc), exc
            finished = False
    armed.clear()
    assert finished == (step == "erase.shared_done")
    # The file went, whatever happened after.
    assert not [p for p in (team.roots["a"] / "memories").rglob("*.md") if "7781" in p.read_text()]

    if not finished:
        # The server is down: doctor says the erasure is not finished, and what is left.
        assert pending.outstanding(team.roots["a"] / ".memex")
        code, out = invoke(cli, team.roots["a"], "doctor", "--json")
        report = json.loads(out)
        assert code == 1 and report["clean"] is False
        assert any(secret in line for line in report["drift"]["unfinished_erasures"]), report["drift"]
        code, out = invoke(cli, team.roots["a"], "doctor")
        assert code == 1 and "unfinished erasure: erasure of" in out and secret in out
        # A teammate's clone pulls the erasure with plain git meanwhile.
        git(team.roots["a"], "add", "-A", "memories", ".memex/erased.txt")
        git(team.roots["a"], "commit", "-q", "-m", "erase")
        git(team.roots["a"], "push", "-q", "origin", "HEAD:main")
        git(team.roots["b"], "pull", "-q", "--rebase", "origin", "main")

    server.restart()
    left = rows_with(server, url, secret)
    assert left == (0 if step in ("erase.shared_purged", "erase.shared_done") else 1)
    # Before clone a reaches the server again, clone b (which pulled the erasure) never shows it.
    with team.vault("b") as vault:
        assert secret not in [h.id for h in vault.search("launch code zebra")]
        assert secret not in [h.id for h in vault.list(limit=100)]
        assert [h.body for h in vault.search("staging database port")] == [KEPT]
    # The next command on clone a that reaches the server finishes the purge.
    code, out = invoke(cli, team.roots["a"], "search", "launch code zebra", "--json")
    assert code == 0, out
    assert rows_with(server, url, secret) == 0
    assert pending.outstanding(team.roots["a"] / ".memex") == []
    assert server.sql(url, f"SELECT count(*) FROM erased_ids WHERE id = '{secret}'")[0][0] == 1
    code, out = invoke(cli, team.roots["a"], "doctor", "--json")
    assert code == 0 and json.loads(out)["clean"] is True, out
    log = [json.loads(line) for line in (team.roots["a"] / ".memex" / "erasure.log").read_text().splitlines()]
    assert log[-1]["phase"] in ("complete", "partial")


def test_a_row_erased_while_the_vault_was_on_sqlite_goes_at_the_next_reindex(
    server: Any, cli: click.Group, tmp_path: Path
) -> None:
    """The server's settings were off (a machine-only setting found in the shared file is
    ignored, say) while a memory was erased: nothing was journaled for the server, and no
    file of it is left to sync. The erased list decides at the next reindex."""
    url = server.new_database()
    team = Team(tmp_path, names=("a",))
    root = team.roots["a"]
    use_postgres(root, url)
    secret = team.add("a", SECRET)
    team.add("a", KEPT)
    assert rows_with(server, url, secret) == 1
    local = root / ".memex" / "config.local.toml"
    settings = local.read_text()
    local.write_text("")  # on SQLite for a while
    with team.vault("a") as vault:
        steps.erase(vault, secret, reason="erased while on sqlite")
    local.write_text(settings)
    code, out = invoke(cli, root, "doctor", "--json")
    assert code == 1 and any(secret in line for line in json.loads(out)["drift"]["unfinished_erasures"]), out
    with team.vault("a") as vault:
        assert secret not in [h.id for h in vault.search("launch code zebra")]  # hidden meanwhile
    code, out = invoke(cli, root, "reindex")
    assert code == 0, out
    assert rows_with(server, url, secret) == 0
    code, out = invoke(cli, root, "doctor", "--json")
    assert code == 0 and json.loads(out)["clean"] is True, out
