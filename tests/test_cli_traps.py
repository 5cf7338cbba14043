"""No silent traps (docs/cli.md): what a command could leave a person to
discover on their own, it says: a search over a stale index, an import that
failed or was refused, the vault an install wired, how far an interrupted
command got, a file's path given as a memory's text, the command that acts on
a "similar" note, a folder inside a vault, a model server left running."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

from memex.agents import warm
from memex.cli import app
from memex.embedding import embed
from memex.vault import Vault
from tests.fakes import HashEmbedder

pytestmark = pytest.mark.usefixtures("no_warm_server")


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> click.Group:
    monkeypatch.setattr(embed, "load_embedder", lambda setting: HashEmbedder())
    return app()


def run(cli: click.Group, root: Path | None, *args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, [*(["--vault", str(root)] if root else []), *args], input=input)


def ok_json(cli: click.Group, root: Path, *args: str) -> Any:
    result = run(cli, root, *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def wait_for(check: Any, what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


# -- search over files changed since the last index ----------------------------------


def test_search_says_when_files_changed_since_the_last_index(cli: click.Group, vault_root: Path) -> None:
    made = ok_json(cli, vault_root, "add", "The staging database is on port 5433")
    quiet = run(cli, vault_root, "search", "staging database port")
    assert quiet.exit_code == 0 and "changed since the last index" not in quiet.stderr
    edited = vault_root / made["path"]
    edited.write_text(edited.read_text().replace("5433", "6543 since the move"))
    stale = run(cli, vault_root, "search", "staging database port")
    assert stale.exit_code == 0 and made["id"] in stale.stdout
    assert f"1 file(s) changed since the last index ({made['path']})" in stale.stderr
    assert "memex reindex" in stale.stderr and "memex watch" in stale.stderr
    assert "changed since" not in stale.stdout  # a note, not part of the answer
    (vault_root / "memories" / "user" / "new.md").write_text("Deploys go out on Fridays\n")
    assert "2 file(s) changed" in run(cli, vault_root, "search", "deploys").stderr
    ok_json(cli, vault_root, "reindex")
    assert "changed since" not in run(cli, vault_root, "search", "staging database port").stderr


# -- import -----------------------------------------------------------------------------


def test_import_checks_the_scope_before_reading(cli: click.Group, vault_root: Path, tmp_path: Path) -> None:
    notes = tmp_path / "CLAUDE.md"
    notes.write_text("".join(f"- Rule number {i} of the shop\n" for i in range(7)))
    bad = run(cli, vault_root, "import", str(notes), "--scope", "team:shop")  # no such kind configured
    assert bad.exit_code == 1
    assert bad.stderr.count("team:shop") == 1 and "import:" not in bad.stderr  # said once, nothing read
    assert ok_json(cli, vault_root, "list") == []


def test_import_exits_non_zero_when_an_item_failed(cli: click.Group, vault_root: Path, tmp_path: Path) -> None:
    export = tmp_path / "mem0.json"
    export.write_text(json.dumps([{"memory": "Deploys go out on Fridays"}, {"memory": "broken \u0000 text"}]))
    done = run(cli, vault_root, "import", str(export))
    assert done.exit_code == 1, done.output
    assert "created: 1" in done.stdout.splitlines() and "failed: 1" in done.stdout.splitlines()
    assert "1 item(s) failed" in done.stderr
    as_json = run(cli, vault_root, "import", str(export), "--json")
    assert as_json.exit_code == 1 and json.loads(as_json.stdout)["failed"] == 1


def test_a_refused_import_says_why_and_allow_erased_brings_it_back(cli: click.Group, vault_root: Path,
                                                                   tmp_path: Path) -> None:
    notes = tmp_path / "CLAUDE.md"
    notes.write_text("- Deploys go out on Fridays\n- The staging database is on port 5433\n")
    assert ok_json(cli, vault_root, "import", str(notes))["created"] == 2
    ok_json(cli, vault_root, "erase", "--source-ref", str(notes), "--reason", "re-importing")
    again = run(cli, vault_root, "import", str(notes))
    assert again.exit_code == 0 and "refused: 2" in again.stdout.splitlines()
    refused = [line for line in again.stdout.splitlines() if line.startswith("refused: ") and "erased before" in line]
    assert len(refused) == 2 and all("--allow-erased" in line for line in refused)
    back = ok_json(cli, vault_root, "import", str(notes), "--allow-erased")
    assert back["created"] == 2 and back["refused"] == 0


# -- install ----------------------------------------------------------------------------


def test_install_says_which_vault_it_wired(cli: click.Group, vault_root: Path, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    default = run(cli, None, "install", "mcp")
    assert default.exit_code == 0, default.output
    assert f"vault: {tmp_path / 'home' / '.memex-vault'} (the default" in default.stdout
    given = ok_json(cli, vault_root, "install", "claude-code")
    assert given["vault"] == str(vault_root.resolve())
    assert f"vault: {vault_root.resolve()}" in run(cli, vault_root, "install", "codex").stdout


# -- Ctrl-C -------------------------------------------------------------------------------


def test_ctrl_c_says_how_far_it_got_and_that_a_rerun_carries_on(cli: click.Group, vault_root: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(self: Vault, full: bool = False, progress: Any = None) -> Any:
        progress(40, 100)
        raise KeyboardInterrupt

    monkeypatch.setattr(Vault, "reindex", interrupted)
    result = run(cli, vault_root, "reindex")
    assert result.exit_code == 130
    assert "interrupted (Ctrl-C): 40 of 100 files were indexed" in result.stderr
    assert "`memex reindex` again carries on" in result.stderr
    as_json = run(cli, vault_root, "reindex", "--json")
    assert as_json.exit_code == 130 and json.loads(as_json.stdout)["exit_code"] == 130


def test_ctrl_c_during_an_import(cli: click.Group, vault_root: Path, tmp_path: Path,
                                 monkeypatch: pytest.MonkeyPatch) -> None:
    notes = tmp_path / "CLAUDE.md"
    notes.write_text("".join(f"- Rule number {i} of the shop is written here\n" for i in range(5)))
    real_add = Vault.add
    calls = []

    def add(self: Vault, text: str, **kwargs: Any) -> Any:
        calls.append(text)
        if len(calls) == 4:
            raise KeyboardInterrupt
        return real_add(self, text, **kwargs)

    monkeypatch.setattr(Vault, "add", add)
    result = run(cli, vault_root, "import", str(notes))
    assert result.exit_code == 130
    assert "interrupted (Ctrl-C): 3 of 5 items done (3 created)" in result.stderr
    assert "running the same import again carries on" in result.stderr


# -- add ----------------------------------------------------------------------------------


def test_add_with_a_files_path_asks_whether_import_was_meant(cli: click.Group, vault_root: Path,
                                                             tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "shop").mkdir()
    (tmp_path / "shop" / "CLAUDE.md").write_text("- Deploys go out on Fridays\n")
    monkeypatch.chdir(tmp_path)
    result = run(cli, vault_root, "add", "shop/CLAUDE.md")
    assert result.exit_code == 1
    assert "is a file" in result.stderr and "memex import shop/CLAUDE.md" in result.stderr
    assert ok_json(cli, vault_root, "list") == []
    # The path itself, on purpose: through standard input.
    piped = run(cli, vault_root, "add", "-", input="shop/CLAUDE.md")
    assert piped.exit_code == 0 and "created" in piped.stdout


def test_a_similar_note_prints_the_supersede_command(cli: click.Group, vault_root: Path) -> None:
    old = ok_json(cli, vault_root, "add", "The staging database runs on port 5433")["id"]
    added = run(cli, vault_root, "add", "The staging database runs on port 6543 now")
    assert added.exit_code == 0 and f"similar {old}" in added.stdout
    line = next(x for x in added.stdout.splitlines() if "memex supersede" in x)
    command = line.split(": ", 1)[1]
    assert command == f"memex supersede {old} 'The staging database runs on port 6543 now'"
    # The printed command does what it says.
    import shlex

    done = run(cli, vault_root, *shlex.split(command)[1:])
    assert done.exit_code == 0, done.output
    assert ok_json(cli, vault_root, "show", old)["status"] == "superseded"


def test_a_fact_kept_apart_is_listed_but_never_offered_for_supersede(cli: click.Group, vault_root: Path) -> None:
    # Another speaker's statement on the same subject is a distinct memory:
    # following the printed command would hide it (issue 28).
    emi = ok_json(cli, vault_root, "add", "Emi: I have been to the Grand Canyon twice by helicopter")["id"]
    added = run(cli, vault_root, "add", "Elise: The Grand Canyon by helicopter is the best way to go")
    assert added.exit_code == 0 and f"similar {emi}" in added.stdout
    assert "memex supersede" not in added.stdout and "memex erase" not in added.stdout
    answer = ok_json(cli, vault_root, "add", "Elise: The Grand Canyon by helicopter is the best way there")
    assert all(f["suggestion"] != "supersede" for f in answer["similar_facts"] if f["id"] == emi)


# -- a folder inside a vault ------------------------------------------------------------


def test_a_folder_inside_a_vault_is_pointed_at_the_vault(cli: click.Group, vault_root: Path) -> None:
    inner = vault_root / "memories"
    inner.mkdir(exist_ok=True)
    result = run(cli, inner, "list")
    assert result.exit_code == 1
    assert f"inside the vault {vault_root.resolve()}: use --vault {vault_root.resolve()}" in result.stderr
    assert "memex init" not in result.stderr


# -- the model server ---------------------------------------------------------------------


def test_status_lists_the_model_server_and_a_look_does_not_keep_it_alive(
    cli: click.Group, vault_root: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    (tmp_path / "run").mkdir()
    model = HashEmbedder()
    server = threading.Thread(target=warm.serve_model, args=(vault_root.resolve(), model, "auto"),
                              kwargs={"idle": 1.5}, daemon=True)
    server.start()
    wait_for(lambda: warm.server_status(vault_root) is not None, "the model server to answer")
    shown = run(cli, vault_root, "status")
    assert shown.exit_code == 0
    line = next(x for x in shown.stdout.splitlines() if x.startswith("model server: "))
    assert "exits by itself after" in line
    info = ok_json(cli, vault_root, "status")["model_server"]
    assert info["owner"] == "warm" and info["exits_after"] == 1.5
    # Looked at every 0.1 s, it still stops once idle (a look is not a use).
    deadline = time.monotonic() + 20
    while server.is_alive():
        assert time.monotonic() < deadline, "the model server kept running while only looked at"
        warm.server_status(vault_root)
        time.sleep(0.1)
    assert warm.server_status(vault_root) is None
    assert "none running" in run(cli, vault_root, "status").stdout


# -- the printed score and the relevance floor ---------------------------------------------

FLOOR_VAULT = [
    "The frontend uses pnpm, not npm; lockfiles are committed.",
    "Deploys go out on Fridays after the release checklist.",
    "The package registry mirror lives at registry.internal.",
    "Manager meetings happen on Mondays.",
    "The backend team prefers Go for new services.",
    "Use yarn for the legacy admin package only.",
    "The frontend package manager caches live in ~/.cache.",
    "Our manager approves every package upgrade.",
    "Package names follow the scope @shop/.",
    "The user likes tabs over spaces.",
]


@pytest.mark.model
def test_the_floor_and_the_printed_score_agree(model_vault: Vault) -> None:
    """Whatever the ranking rule: a hit left out while scoring above one shown
    is announced, and --no-floor marks exactly the hits the floor leaves out.
    ("which package manager for the frontend": the pnpm memory, the answer,
    scored above hits that were shown and was hidden without a word.)"""
    for body in FLOOR_VAULT:
        model_vault.add(body)
    root = str(model_vault.root)
    runner = CliRunner()
    for query in ("which package manager for the frontend", "package registry", "who approves upgrades"):
        shown = runner.invoke(app(), ["--vault", root, "search", query])
        every = runner.invoke(app(), ["--vault", root, "search", query, "--no-floor"])
        assert shown.exit_code == every.exit_code == 0, shown.output
        kept = {line.split("\t")[1]: float(line.split("\t")[0]) for line in shown.stdout.splitlines()}
        rows = [line.split("\t") for line in every.stdout.splitlines()]
        assert {r[2] for r in rows if r[1] == "passes"} == set(kept)  # the mark is the floor's verdict
        lowest = min(kept.values(), default=float("inf"))
        hidden_above = [r for r in rows if r[1] == "below floor" and float(r[0]) > lowest]
        if hidden_above:
            assert f"{len(hidden_above)} hit(s) scoring above {lowest:.3f} were left out" in shown.stderr
            assert "--no-floor" in shown.stderr
        else:
            assert "were left out" not in shown.stderr
