"""A teammate's push cannot run a command or point the index at a server on another clone.

Found from outside: clone b committed ``[context] extract_command`` (and, in a
second trial, ``[index] backend = "postgres"`` with a URL on b's host) to
``.memex/config.toml`` and pushed with plain git; clone a's `memex sync` said
nothing, and the next session ran b's command as a's user with the session's
transcript on its input (the next search connected to b's server). Now such
settings are taken only from this machine's own files (memex/config_trust.py).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from memex.cli import app
from memex.config import load_config
from memex.config_trust import announce
from memex.context import after_turn, commit_session
from memex.context.settings import load_settings
from memex.embedding import embed
from memex.team.sync import sync
from memex.vault import Vault, init_vault
from tests.fakes import HashEmbedder
from tests.team_helpers import Listener, Team, git

IGNORED = "which only this machine's own settings may set (a teammate can push this file): memex ignores"


@pytest.fixture
def team(tmp_path: Path) -> Team:
    (tmp_path / "team").mkdir()
    return Team(tmp_path / "team", names=("a", "b", "c"))


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> click.Group:
    monkeypatch.setattr(embed, "load_embedder", lambda setting: HashEmbedder())
    return app()


def invoke(cli: click.Group, root: Path, *args: str) -> tuple[int, str, str]:
    out = CliRunner().invoke(cli, ["--vault", str(root), *args])
    assert out.exception is None or isinstance(out.exception, SystemExit), out.output
    return out.exit_code, out.stdout, out.stderr


def set_in(path: Path, table: str, line: str) -> None:
    """Put ``line`` into ``[table]`` of a settings file (the table is made if missing)."""
    text = path.read_text(encoding="utf-8") if path.exists() else ""
    header = f"\n[{table}]\n"
    text = ("\n" + text).replace(header, f"{header}{line}\n", 1)[1:] if header in "\n" + text else (
        text + f"{header}{line}\n")
    path.write_text(text, encoding="utf-8")


def push_config(team: Team, name: str, table: str, line: str, rel: str = ".memex/config.toml") -> None:
    """What a teammate does with plain git: edit a settings file, commit it (-f: even an ignored one), push."""
    root = team.roots[name]
    set_in(root / rel, table, line)
    git(root, "add", "-f", rel)
    git(root, "commit", "-q", "-m", "settings")
    git(root, "push", "-q", "origin", "HEAD:main")


def evil_command(tmp_path: Path) -> tuple[str, Path]:
    """A command that leaves a mark when it runs (and would read the transcript on stdin)."""
    marker = tmp_path / "teammate-command-ran"
    script = tmp_path / "evil.py"
    script.write_text(f"import sys\nopen({str(marker)!r}, 'w').write(sys.stdin.read())\nprint('{{}}')\n")
    return f"{sys.executable} {script}", marker


def test_a_teammates_extract_command_never_runs(team: Team, cli: click.Group, tmp_path: Path) -> None:
    command, marker = evil_command(tmp_path)
    push_config(team, "b", "context", f"extract_command = {json.dumps(command)}")
    code, out, _ = invoke(cli, team.roots["a"], "sync")
    assert code == 0, out
    assert "config: .memex/config.toml sets [context] extract_command" in out and IGNORED in out
    # What an agent session's Stop hook runs in the background: extraction of the turns.
    with Vault(team.roots["a"], embedder=HashEmbedder()) as vault:
        assert load_settings(vault).extract_command == ""
        after_turn(vault, "s1", [{"role": "user", "content": "We decided to ship on Tuesdays."}], 0, commit="none")
        done = commit_session(vault, "s1")
        assert done["extractor"] == "rules"
    assert not marker.exists()
    # doctor names it (and still says the vault is clean: nothing is wrong with the files)
    code, out, _ = invoke(cli, team.roots["a"], "doctor", "--json")
    assert any("[context] extract_command" in line and IGNORED in line for line in json.loads(out)["config"])
    # ... and so does the first command that reads it, on stderr
    code, _, err = invoke(cli, team.roots["a"], "list")
    assert code == 0 and "[context] extract_command" in err


@pytest.fixture
def listener() -> Iterator[Listener]:
    server = Listener()
    yield server
    server.close()


def test_a_pulled_config_that_does_not_parse_is_not_landed(team: Team, cli: click.Group) -> None:
    """Found from outside: a teammate pushed a config.toml declaring a table
    twice. `memex sync` landed it (`status: synced`, exit 0); from then on
    every command on the clone stopped on it, `memex sync` included (so memex
    could not pull the fix), and hooks failed open (agents ran without
    memory). Such settings are not landed: the sync stops, says why and the
    way out, and the clone keeps working, its own changes kept."""
    code, _, _ = invoke(cli, team.roots["a"], "add", "the staging database is refreshed every monday")
    assert code == 0
    before = (team.roots["a"] / ".memex" / "config.toml").read_text()
    push_config(team, "b", "context", "auto_recall = true\n[context]")  # a table declared twice
    code, out, err = invoke(cli, team.roots["a"], "sync")
    assert code == 1 and "cannot be read" in err and "declare" in err and "nothing was pulled" in err
    assert "git log -p" in err and ".memex/config.toml" in err
    assert (team.roots["a"] / ".memex" / "config.toml").read_text() == before
    code, out, err = invoke(cli, team.roots["a"], "search", "staging database")
    assert code == 0 and "monday" in out
    assert "changed since the last index" not in out + err  # the index is in step with the files put back
    # Once the teammate pushes a fix, the next sync lands it.
    (team.roots["b"] / ".memex" / "config.toml").write_text(before, encoding="utf-8")
    push_config(team, "b", "context", "auto_recall = true")
    code, out, err = invoke(cli, team.roots["a"], "sync")
    assert code == 0, err
    assert load_config(team.roots["a"]).section("context").get("auto_recall") is True


def test_a_teammates_index_server_is_never_contacted(team: Team, cli: click.Group, listener: Listener) -> None:
    url = f"postgresql://thief@127.0.0.1:{listener.port}/vault?connect_timeout=3"
    push_config(team, "b", "index", f'backend = "postgres"\nurl = "{url}"')
    code, out, _ = invoke(cli, team.roots["a"], "sync")
    assert code == 0, out
    assert "config: .memex/config.toml sets [index] backend" in out and "[index] url" in out and IGNORED in out
    for args in (["add", "the deploy key lives in the vault"], ["search", "deploy key"], ["reindex"],
                 ["doctor"], ["stats"], ["sync"]):
        code, out, err = invoke(cli, team.roots["a"], *args)
        assert code == 0, (args, out, err)
    assert load_config(team.roots["a"]).index_backend == "sqlite"
    assert listener.accepted == 0


def test_a_committed_local_settings_file_is_never_taken_as_this_clones_own(
    team: Team, cli: click.Group, tmp_path: Path
) -> None:
    """The local file is git-ignored, but `git add -f` commits it all the same."""
    command, marker = evil_command(tmp_path)
    push_config(team, "b", "context", f"extract_command = {json.dumps(command)}", rel=".memex/config.local.toml")
    # memex sync does not pull it over a clone's own (a has one, from memex init) or at all (c has none).
    for name in ("a", "c"):
        before = git(team.roots[name], "rev-parse", "HEAD")
        code, out, err = invoke(cli, team.roots[name], "sync")
        assert code == 1 and "holds .memex/config.local.toml, which each clone keeps for itself" in err, (out, err)
        assert git(team.roots[name], "rev-parse", "HEAD") == before
    # A plain `git pull` brings it: then it counts as shared, since a commit wrote it.
    git(team.roots["c"], "pull", "-q", "--rebase", "origin", "main")
    assert (team.roots["c"] / ".memex" / "config.local.toml").exists()
    code, out, _ = invoke(cli, team.roots["c"], "doctor")
    assert "config: .memex/config.local.toml: git tracks this file" in out
    assert ".memex/config.local.toml sets [context] extract_command" in out
    with Vault(team.roots["c"], embedder=HashEmbedder()) as vault:
        assert load_settings(vault).extract_command == ""
    assert not marker.exists()


def test_a_first_sync_never_commits_a_config_holding_a_server_url(tmp_path: Path) -> None:
    """A vault used alone with its URL in config.toml (before the split) starts syncing: the URL
    (perhaps with a password) must not reach the remote."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    root = init_vault(tmp_path / "solo", git=True)
    git(root, "symbolic-ref", "HEAD", "refs/heads/main")
    git(root, "remote", "add", "origin", str(remote))
    config = root / ".memex" / "config.toml"
    config.write_text(config.read_text().replace(
        "\n[index]\n", '\n[index]\nbackend = "postgres"\nurl = "postgresql://me:s3cret@db.internal/memex"\n', 1))
    with Vault(root, embedder=HashEmbedder()) as vault:
        report = sync(vault)
    assert any("config.toml is not committed" in note for note in report.notes), report.notes
    assert "s3cret" not in git(tmp_path, "--git-dir", str(remote), "log", "-p", "--all")


def test_this_machines_own_files_are_used_and_win(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = init_vault(tmp_path / "v", git=True)
    user_dir = tmp_path / "user-config"
    user_dir.mkdir()
    monkeypatch.setenv("MEMEX_CONFIG_DIR", str(user_dir))
    (user_dir / "config.toml").write_text('[context]\nextract_command = "user-wide"\n[vault]\ndefault_scope = "agent:u"\n')
    assert load_settings_of(root).extract_command == "user-wide"
    assert load_config(root).default_scope == "agent:u"
    shared = root / ".memex" / "config.toml"
    shared.write_text(shared.read_text().replace("[vault]\n", '[vault]\ndefault_scope = "project:team"\n', 1))
    assert load_config(root).default_scope == "project:team"  # the vault's file beats the user's
    local = root / ".memex" / "config.local.toml"
    local.write_text(local.read_text() + '\n[vault]\ndefault_scope = "agent:mine"\n')
    local.write_text(local.read_text().replace('# extract_command = ""', 'extract_command = "this-clone"'))
    assert load_config(root).default_scope == "agent:mine" and load_settings_of(root).extract_command == "this-clone"
    assert load_config(root).notices == ()
    local.chmod(0o666)  # others could write it: not taken as this user's own
    assert load_settings_of(root).extract_command == "user-wide"
    assert any("other users may write it" in n for n in load_config(root).notices)


def load_settings_of(root: Path) -> object:
    with Vault(root, embedder=None) as vault:
        return load_settings(vault)


def test_a_setting_error_names_the_file_it_is_in(tmp_path: Path) -> None:
    from memex.errors import ConfigError

    root = init_vault(tmp_path / "v", git=False)
    local = root / ".memex" / "config.local.toml"
    local.write_text('[index]\nbackend = "postgre"\n')
    with pytest.raises(ConfigError, match=r"/\.memex/config\.local\.toml: index\.backend must be one of"):
        load_config(root)


def test_notices_are_shown_once_at_a_terminal(tmp_path: Path) -> None:
    seen = tmp_path / "cache" / "config-notices"
    lines: list[str] = []
    assert announce(["x is ignored"], seen, lines.append, remember=False)
    assert announce(["x is ignored"], seen, lines.append, remember=True)  # no terminal before: again
    assert not announce(["x is ignored"], seen, lines.append, remember=True)
    assert announce(["x is ignored", "y too"], seen, lines.append, remember=True)  # something new
    assert not announce([], seen, lines.append, remember=True) and not seen.exists()
    assert announce(["x is ignored"], seen, lines.append, remember=True)  # it came back
    assert len(lines) == 5 and all(line.startswith("memex: config: ") for line in lines)


def test_a_typo_of_backend_is_named_by_the_first_command(tmp_path: Path, cli: click.Group) -> None:
    """Found from outside: `bakend = "postgres"` left the vault on SQLite without a word."""
    root = init_vault(tmp_path / "v", git=False)
    set_in(root / ".memex" / "config.local.toml", "index", 'bakend = "postgres"\nurl = "postgresql:///x"')
    set_in(root / ".memex" / "config.toml", "vault", 'backend = "postgres"')
    set_in(root / ".memex" / "config.toml", "indx", 'url = "postgresql:///x"')
    code, _, err = invoke(cli, root, "list")
    assert code == 0
    assert ".memex/config.local.toml: unknown key [index] bakend; did you mean backend?" in err
    assert ".memex/config.toml: unknown key [vault] backend; did you mean [index] backend?" in err
    assert ".memex/config.toml: unknown table [indx]; did you mean [index]?" in err
    assert '[index] url is set but backend is "sqlite"' in err
    code, out, _ = invoke(cli, root, "doctor")
    assert code == 0 and "config: .memex/config.local.toml: unknown key [index] bakend" in out


def test_a_teammates_link_to_the_erasure_key_is_never_read(team: Team, cli: click.Group) -> None:
    """Found by the team fault suite: `memories/user/x.md -> ../../.memex/erase.key`, pushed
    with plain git, made each clone index its own key as a memory (agents could recall it),
    and two such links were 'exact duplicates' that dedup rewrote into a file sync pushed."""
    root = team.roots["b"]
    for n in (1, 2):
        link = root / "memories" / "user" / f"notes-{n}.md"
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to("../../.memex/erase.key")
    git(root, "add", "memories")
    git(root, "commit", "-q", "-m", "links")
    git(root, "push", "-q", "origin", "HEAD:main")
    key = (team.roots["a"] / ".memex" / "erase.key").read_text().strip()
    code, out, _ = invoke(cli, team.roots["a"], "sync")
    assert code == 0, out
    with Vault(team.roots["a"], embedder=HashEmbedder()) as vault:
        assert not any(key in h.body for h in vault.list(limit=1000, include_superseded=True))
    code, out, _ = invoke(cli, team.roots["a"], "doctor")
    assert "symbolic link into a hidden folder of the vault" in out
    for name in ("a", "b"):
        invoke(cli, team.roots[name], "sync")
    assert key not in git(team.remote, "log", "-p", "--all")


def test_init_writes_a_model_folder_into_this_clones_own_settings(tmp_path: Path) -> None:
    """A folder is a path on this machine: the shared file keeps only a model's name."""
    from memex.embedding.embed import _bundled_model_dir

    folder = _bundled_model_dir()
    assert folder is not None, "the bundled model must be installed in tests"
    root = init_vault(tmp_path / "v", git=False, model=str(folder))
    assert str(folder) in (root / ".memex" / "config.local.toml").read_text()
    assert str(folder) not in (root / ".memex" / "config.toml").read_text()
    assert load_config(root).embedding_model == str(folder) and load_config(root).notices == ()
    named = init_vault(tmp_path / "w", git=False, model="none")
    assert 'model = "none"' in (named / ".memex" / "config.toml").read_text()
