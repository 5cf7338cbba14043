"""The core CLI: each command, its --json shape, its tables, vault discovery,
and one-line errors for bad arguments (docs/cli.md)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

from memex.cli import _common, app
from memex.vault import ENV_VAR

MEMEX_SCRIPT = Path(sys.executable).parent / "memex"


def _memex_cmd() -> list[str]:
    if MEMEX_SCRIPT.exists():
        return [str(MEMEX_SCRIPT)]
    return [sys.executable, "-c", "from memex.cli import run; run()"]


@pytest.fixture(scope="module")
def cli() -> click.Group:
    return app()


def invoke(cli: click.Group, root: Path | None, *args: str, input: str | bytes | None = None) -> Result:
    full = (["--vault", str(root)] if root is not None else []) + list(args)
    return CliRunner().invoke(cli, full, input=input, catch_exceptions=False)


def ok_json(cli: click.Group, root: Path | None, *args: str, input: str | bytes | None = None) -> Any:
    result = invoke(cli, root, *args, "--json", input=input)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


# -- init and discovery -------------------------------------------------------


def test_init_creates_a_vault_from_the_template(cli: click.Group, tmp_path: Path) -> None:
    result = invoke(cli, None, "init", str(tmp_path / "v"))
    assert result.exit_code == 0, result.output
    root = tmp_path / "v"
    assert (root / ".memex" / "config.toml").read_text().startswith("# memex vault settings")
    assert ".memex/*.db" in (root / ".gitignore").read_text()
    assert (root / "README.md").is_file()
    assert (root / "memories").is_dir()
    assert (root / ".git").is_dir() == (shutil.which("git") is not None)
    assert f"export {ENV_VAR}={root}" in result.output
    again = invoke(cli, None, "init", str(root))
    assert again.exit_code == 1 and "already a vault" in again.output


def test_init_refuses_a_vault_inside_another_vaults_memories(cli: click.Group, tmp_path: Path) -> None:
    """Found from outside: `memex init outer/memories/notes` worked, and the
    outer vault then indexed the inner one's README as a memory."""
    assert invoke(cli, None, "init", "--no-git", str(tmp_path / "outer")).exit_code == 0
    inner = tmp_path / "outer" / "memories" / "notes"
    result = invoke(cli, None, "init", "--no-git", str(inner))
    assert result.exit_code == 1 and f"inside the memories of the vault at {tmp_path / 'outer'}" in result.output
    assert not inner.exists()
    # Beside the memories (or in a folder of its own) is fine.
    assert invoke(cli, None, "init", "--no-git", str(tmp_path / "outer" / "elsewhere")).exit_code == 0


def test_init_refuses_the_home_folder_itself(cli: click.Group, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found from outside: `memex init ~` (the vault's name forgotten) made the
    home folder a vault and a git repository: every folder below it then found
    that vault by walking up, git saw every file of the home folder, and the
    hooks took the home folder for every unversioned project. (`memex init /`
    did the same to the whole file system; not run here.)"""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    monkeypatch.setenv("HOME", str(home))
    result = invoke(cli, None, "init", str(home))
    assert result.exit_code == 1 and "home folder" in result.output and "memex init ~/agent-vault" in result.output
    assert sorted(p.name for p in home.iterdir()) == [".ssh"]  # nothing made
    assert invoke(cli, None, "init", "--no-git", str(home / "agent-vault")).exit_code == 0


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_init_makes_a_git_repo_that_ignores_the_index(cli: click.Group, tmp_path: Path) -> None:
    root = tmp_path / "v"
    invoke(cli, None, "init", str(root))
    invoke(cli, root, "add", "Git keeps the memories, not the index")
    status = subprocess.run(
        ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=all"],
        capture_output=True, text=True, check=True,
    ).stdout
    assert "memories/user/" in status
    assert "index.db" not in status


def test_init_in_an_existing_folder_keeps_its_files(cli: click.Group, tmp_path: Path) -> None:
    root = tmp_path / "notes"
    (root / "memories" / "user").mkdir(parents=True)
    (root / "README.md").write_text("My own notes\n")
    (root / ".gitignore").write_text("*.tmp\n")
    (root / "memories" / "user" / "old.md").write_text("I already wrote this about herons.\n")
    assert invoke(cli, None, "init", "--no-git", str(root)).exit_code == 0
    assert (root / "README.md").read_text() == "My own notes\n"
    ignore = (root / ".gitignore").read_text()
    assert ignore.startswith("*.tmp\n") and ".memex/*.db" in ignore
    assert ok_json(cli, root, "search", "herons")[0]["path"] == "memories/user/old.md"


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_init_inside_a_repository_makes_no_nested_repo(cli: click.Group, tmp_path: Path) -> None:
    subprocess.run(["git", "init", "-q", str(tmp_path / "project")], check=True)
    root = tmp_path / "project" / "vault"
    assert invoke(cli, None, "init", str(root)).exit_code == 0
    assert not (root / ".git").exists() and (root / ".memex").is_dir()


def test_init_no_git(cli: click.Group, tmp_path: Path) -> None:
    assert invoke(cli, None, "init", "--no-git", str(tmp_path / "v")).exit_code == 0
    assert not (tmp_path / "v" / ".git").exists()


def test_vault_from_option_env_and_parent_folders(
    cli: click.Group, vault_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    created = ok_json(cli, vault_root, "add", "Discovery works from the option")
    assert created["status"] == "created"
    # $MEMEX_VAULT
    monkeypatch.setenv(ENV_VAR, str(vault_root))
    assert len(ok_json(cli, None, "list")) == 1
    # Walking up from a folder inside the vault.
    monkeypatch.delenv(ENV_VAR)
    monkeypatch.chdir(vault_root / "memories" / "user")
    assert [m["id"] for m in ok_json(cli, None, "list")] == [created["id"]]
    # --vault wins over $MEMEX_VAULT.
    other = tmp_path / "other"
    invoke(cli, None, "init", "--no-git", str(other))
    monkeypatch.setenv(ENV_VAR, str(vault_root))
    assert ok_json(cli, other, "list") == []


def test_no_vault_says_how_to_create_one(cli: click.Group, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    result = invoke(cli, None, "list")
    assert result.exit_code == 1
    assert "no vault found" in result.output and "memex init" in result.output
    monkeypatch.setenv(ENV_VAR, str(tmp_path))
    result = invoke(cli, None, "list")
    assert result.exit_code == 1 and f"{ENV_VAR}: {tmp_path} is not a memex vault" in result.output


# -- add ----------------------------------------------------------------------


def test_add_with_every_option(cli: click.Group, vault_root: Path) -> None:
    data = ok_json(
        cli, vault_root, "add", "Use FTS5 external-content tables",
        "--scope", "project:memex", "--source", "claude-code", "--session", "s-42",
        "--source-ref", "transcript.jsonl#L40", "--category", "decision", "--confidence", "0.85",
        "--entity", "SQLite", "--entity", "FTS5",
    )
    assert data["status"] == "created"
    assert data["path"].startswith("memories/project/memex/") and data["path"].endswith(".md")
    text = (vault_root / data["path"]).read_text()
    for line in (f"id: {data['id']}", "scope: project:memex", "source: claude-code", "session: s-42",
                 "source_ref: transcript.jsonl#L40", "category: decision", "confidence: 0.85",
                 "entities:\n- SQLite\n- FTS5"):
        assert line in text
    shown = ok_json(cli, vault_root, "show", data["id"])
    assert shown["scope"] == "project:memex" and shown["confidence"] == 0.85
    assert shown["entities"] == ["SQLite", "FTS5"]
    assert shown["body"] == "Use FTS5 external-content tables\n"


def test_add_human_output_and_duplicate(cli: click.Group, vault_root: Path) -> None:
    first = invoke(cli, vault_root, "add", "The staging database is on port 5433")
    assert first.exit_code == 0 and first.output.startswith("created ")
    again = ok_json(cli, vault_root, "add", "The staging database is on port 5433", "--source", "codex")
    assert again["status"] == "duplicate" and again["existing_id"]
    assert len(ok_json(cli, vault_root, "list")) == 1


def test_add_from_stdin_in_english_and_chinese(cli: click.Group, vault_root: Path) -> None:
    en = ok_json(cli, vault_root, "add", "-", input="Release notes go in CHANGES.md\n")
    zh = ok_json(cli, vault_root, "add", "-", "--scope", "project:memex", input="数据库使用 SQLite，开启 WAL 模式\n")
    assert en["status"] == zh["status"] == "created"
    assert (vault_root / zh["path"]).read_text().endswith("数据库使用 SQLite，开启 WAL 模式\n")
    hits = ok_json(cli, vault_root, "search", "数据库 模式")
    assert hits[0]["id"] == zh["id"]


# -- search, show, list ---------------------------------------------------------


@pytest.fixture
def filled(cli: click.Group, vault_root: Path) -> dict[str, str]:
    ids = {}
    for key, body, scope, session in (
        ("tabs", "The user prefers tabs over spaces", "user", "s1"),
        ("wal", "SQLite runs in WAL mode so several processes can share the index", "project:memex", "s1"),
        ("ci", "CI has two cores and ninety minutes", "project:memex", "s2"),
        ("zh", "用户喜欢简洁的回答", "user", "s2"),
    ):
        ids[key] = ok_json(cli, vault_root, "add", body, "--scope", scope, "--session", session)["id"]
    return ids


def test_search_json(cli: click.Group, vault_root: Path, filled: dict[str, str]) -> None:
    hits = ok_json(cli, vault_root, "search", "which indentation does the user like")
    assert hits[0]["id"] == filled["tabs"]
    for hit in hits:
        assert {"id", "score", "body", "path", "scope", "source"} <= set(hit)
        assert (vault_root / hit["path"]).is_file()
    scores = [h["score"] for h in hits]
    assert scores == sorted(scores, reverse=True)
    scoped = ok_json(cli, vault_root, "search", "database processes cores", "--scope", "project:memex")
    assert {h["scope"] for h in scoped} == {"project:memex"}
    assert len(ok_json(cli, vault_root, "search", "the", "--limit", "1")) <= 1


def test_search_human_output_is_a_table(cli: click.Group, vault_root: Path, filled: dict[str, str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    piped = invoke(cli, vault_root, "search", "tabs spaces")
    assert piped.exit_code == 0
    first = piped.output.splitlines()[0].split("\t")  # a pipe: tab-separated rows, no header
    assert first[1] == filled["tabs"] and len(first) == 6
    monkeypatch.setattr(_common, "is_tty", lambda: True)
    result = invoke(cli, vault_root, "search", "tabs spaces")
    assert result.exit_code == 0
    header = result.output.splitlines()[1]
    for col in ("score", "id", "scope", "body"):
        assert col in header
    assert filled["tabs"] in result.output and "{" not in result.output
    assert invoke(cli, vault_root, "search", "xylophone-quartz-nothing").exit_code == 0


def test_show(cli: click.Group, vault_root: Path, filled: dict[str, str]) -> None:
    result = invoke(cli, vault_root, "show", filled["wal"])
    assert result.exit_code == 0
    assert "project:memex" in result.output and "WAL mode" in result.output
    data = ok_json(cli, vault_root, "show", filled["zh"])
    assert data["body"] == "用户喜欢简洁的回答\n" and data["session"] == "s2" and data["status"] == "active"


def test_list_filters(cli: click.Group, vault_root: Path, filled: dict[str, str]) -> None:
    assert len(ok_json(cli, vault_root, "list")) == 4
    assert {m["id"] for m in ok_json(cli, vault_root, "list", "--scope", "user")} == {filled["tabs"], filled["zh"]}
    assert {m["id"] for m in ok_json(cli, vault_root, "list", "--session", "s2")} == {filled["ci"], filled["zh"]}
    both = ok_json(cli, vault_root, "list", "--scope", "project:memex", "--session", "s1")
    assert [m["id"] for m in both] == [filled["wal"]]
    table_out = invoke(cli, vault_root, "list", "--scope", "user").output
    assert sorted(line.split("\t")[0] for line in table_out.splitlines()) == sorted([filled["tabs"], filled["zh"]])


# -- reindex, stats, doctor -------------------------------------------------------


def test_reindex_json(cli: click.Group, vault_root: Path, filled: dict[str, str]) -> None:
    report = ok_json(cli, vault_root, "reindex")
    assert set(report) >= {"added", "updated", "removed", "moved", "unchanged", "embedded", "errors", "seconds"}
    assert report["unchanged"] == 4 and report["errors"] == []
    shown = ok_json(cli, vault_root, "show", filled["ci"])
    path = vault_root / shown["path"]
    path.write_text(path.read_text().replace("two cores", "four cores"))
    (vault_root / "memories" / "user" / "broken.md").write_bytes(b"\xff\xfe\x00")
    report = ok_json(cli, vault_root, "reindex")
    assert report["updated"] == 1 and report["unchanged"] == 3 and report["embedded"] == 1
    assert report["errors"] == [{"path": "memories/user/broken.md", "reason": "binary file (NUL bytes), not a Markdown memory"}]
    full = ok_json(cli, vault_root, "reindex", "--full")
    assert full["embedded"] == 0 and full["added"] == 0
    human = invoke(cli, vault_root, "reindex")
    assert human.exit_code == 0 and "memories/user/broken.md" in human.output and "not indexed" in human.output


def test_stats(cli: click.Group, vault_root: Path, filled: dict[str, str]) -> None:
    data = ok_json(cli, vault_root, "stats")
    assert data["memories"] == data["active"] == data["embedded"] == 4
    assert data["scopes"] == {"project:memex": 2, "user": 2}
    assert data["lexical_only"] is False and "384" in data["model"]
    human = invoke(cli, vault_root, "stats").output
    assert "project:memex (2), user (2)" in human and "{" not in human


def test_doctor_reports_and_fixes_drift(cli: click.Group, vault_root: Path, filled: dict[str, str]) -> None:
    assert ok_json(cli, vault_root, "doctor")["drift"]["clean"] is True
    tabs = vault_root / ok_json(cli, vault_root, "show", filled["tabs"])["path"]
    wal = vault_root / ok_json(cli, vault_root, "show", filled["wal"])["path"]
    tabs.unlink()  # orphaned row
    wal.write_text(wal.read_text() + "Checkpoints run every 1000 pages.\n")  # stale row
    (vault_root / "memories" / "user" / "hand.md").write_text("Hand-written: lunch is at noon.\n")  # missing row
    found = invoke(cli, vault_root, "doctor", "--json")
    assert found.exit_code == 1  # not clean: scripts can tell (docs/cli.md)
    drift = json.loads(found.stdout)["drift"]
    assert drift["orphaned"] == [tabs.relative_to(vault_root).as_posix()]
    assert drift["stale"] == [wal.relative_to(vault_root).as_posix()]
    assert drift["missing"] == ["memories/user/hand.md"]
    assert drift["differing"] == 3 and drift["clean"] is False
    human = invoke(cli, vault_root, "doctor").output
    assert "orphaned: " in human and "stale: " in human and "missing: memories/user/hand.md" in human
    fixed = ok_json(cli, vault_root, "doctor", "--fix")
    assert fixed["repair"]["sync"]["removed"] == 1 and fixed["repair"]["sync"]["added"] == 1
    assert fixed["after"]["clean"] is True
    assert ok_json(cli, vault_root, "search", "when is lunch")[0]["path"] == "memories/user/hand.md"
    assert invoke(cli, vault_root, "doctor", "--fix").output.strip().endswith("repaired; index is clean")


def test_lexical_only_vault_says_so(cli: click.Group, vault_root: Path) -> None:
    config = vault_root / ".memex" / "config.toml"
    config.write_text(config.read_text().replace('# model = "auto"', 'model = "none"'))
    ok_json(cli, vault_root, "add", "Lexical search still finds the word aardvark")
    assert ok_json(cli, vault_root, "search", "aardvark")[0]["body"].endswith("aardvark")
    stats = ok_json(cli, vault_root, "stats")
    assert stats["lexical_only"] is True and "turned off" in stats["model"]
    assert "turned off" in ok_json(cli, vault_root, "doctor")["model"]
    assert "turned off" in invoke(cli, vault_root, "reindex").stderr


# -- bad arguments ------------------------------------------------------------------


@pytest.mark.parametrize(
    "args, message",
    [
        (["search", ""], "query: must not be empty"),
        # Found from outside: a query of punctuation answered with weak hits.
        (["search", "?!"], "query: has no words to search for"),
        (["search", "...", "--json"], "query: has no words to search for"),
        (["add", "   "], "TEXT: is empty"),
        # Found from outside: an empty filter listed every memory.
        (["list", "--session", ""], "Invalid value for '--session': must not be empty"),
        (["list", "--source", " "], "Invalid value for '--source': must not be empty"),
        (["search", "deploy", "--session", ""], "Invalid value for '--session': must not be empty"),
        (["add", "x", "--scope", "../etc"], "scope: '../etc'"),
        (["add", "x", "--confidence", "2"], "Invalid value for '--confidence'"),
        (["show", "NOPE"], "no memory with id 'NOPE'"),
        (["list", "--limit", "0"], "Invalid value for '--limit'"),
        (["search", "x", "--limit", "many"], "Invalid value for '--limit'"),
        (["bogus"], "No such command 'bogus'"),
        (["add"], "Missing argument 'TEXT'"),
        # Found from outside: an option without its value pointed at 'memex --help'.
        (["add", "x", "--scope"], "Option '--scope' requires an argument. (see 'memex add --help')"),
        (["reindex", "--allow-erased"], "requires an argument. (see 'memex reindex --help')"),
        (["context", "search", "x", "--session"], "requires an argument. (see 'memex context search --help')"),
    ],
)
def test_bad_arguments_give_one_line_errors(cli: click.Group, vault_root: Path, args: list[str], message: str) -> None:
    result = invoke(cli, vault_root, *args)
    assert result.exit_code != 0
    assert message in result.output
    assert "Traceback" not in result.output


def _run(args: list[str], env_vault: Path | None, cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    env = {k: v for k, v in os.environ.items() if k != ENV_VAR}
    if env_vault is not None:
        env[ENV_VAR] = str(env_vault)
    return subprocess.run(_memex_cmd() + args, cwd=cwd, env=env, input=stdin, capture_output=True, timeout=120)


@pytest.mark.parametrize(
    "args, code, message",
    [
        (["search", ""], 1, "Error: query: must not be empty"),
        (["add", "x", "--confidence", "2"], 2, "Error: Invalid value for '--confidence'"),
        (["bogus"], 2, "Error: No such command 'bogus'. (see 'memex --help')"),
        (["add", "caf\udce9"], 2, "Error: argument b'caf\\xe9' is not valid UTF-8 text"),
        (["add", "-"], 1, "Error: TEXT: standard input is not UTF-8 text (byte 3)"),
        (["init", "/proc/no/such/place"], 1, "Error: /proc/no: No such file or directory"),
    ],
)
def test_real_program_prints_one_line_and_exits_non_zero(
    vault_root: Path, tmp_path: Path, args: list[str], code: int, message: str
) -> None:
    args = [os.fsencode(a).decode("utf-8", "surrogateescape") for a in args]
    proc = _run(args, vault_root, tmp_path, stdin=b"caf\xe9")
    err = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode == code, err
    assert err.startswith(message), err
    assert len(err.strip().splitlines()) == 1
    assert proc.stdout == b""


def test_real_program_without_a_vault(tmp_path: Path) -> None:
    proc = _run(["list"], None, tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.decode().strip() == (
        "Error: no vault found: pass --vault PATH, set MEMEX_VAULT, or run inside a vault; "
        "create one with `memex init PATH`"
    )


def test_tables_print_brackets_literally(cli: click.Group, vault_root: Path) -> None:
    ok_json(cli, vault_root, "add", "Use [bold]x[/bold] and [red] literally")
    out = invoke(cli, vault_root, "list").output
    assert "[bold]x[/bold]" in out and "[red]" in out


def test_list_with_a_limit_beyond_sqlite_integers_lists_everything(cli: click.Group, vault_root: Path) -> None:
    """`memex list --limit 99999999999999999999` once crashed with OverflowError."""
    ok_json(cli, vault_root, "add", "The staging cluster runs in eu-west-1")
    listed = ok_json(cli, vault_root, "list", "--limit", "99999999999999999999")
    assert [m["body"] for m in listed] == ["The staging cluster runs in eu-west-1"]


def test_a_scope_filter_reaches_what_add_stored_under_the_same_words(cli: click.Group, vault_root: Path) -> None:
    """`add --scope "project:web "` stores project:web; `list`/`search` with the
    same (pasted) value must find it instead of answering nothing."""
    ok_json(cli, vault_root, "add", "The web app builds with Vite", "--scope", "project:web ")
    assert [m["scope"] for m in ok_json(cli, vault_root, "list", "--scope", "project:web ")] == ["project:web"]
    assert [m["scope"] for m in ok_json(cli, vault_root, "list", "--scope", " project:web")] == ["project:web"]
    hits = ok_json(cli, vault_root, "search", "Vite", "--scope", "project:web ")
    assert [h["scope"] for h in hits] == ["project:web"]


def test_consolidate_and_fading_take_a_scope_with_spaces_as_add_does(cli: click.Group, vault_root: Path) -> None:
    ok_json(cli, vault_root, "add", "The web app builds with Vite", "--scope", "project:web", "--session", "s1")
    report = ok_json(cli, vault_root, "consolidate", "--all", "--scope", "project:web ", "--dry-run")
    assert report["sessions_seen"] == 1
    fading = ok_json(cli, vault_root, "fading", "--scope", " project:web", "--within", "1e9")
    assert [m["scope"] for m in fading["memories"]] == ["project:web"], fading


def test_an_empty_answer_from_a_deleted_index_says_to_reindex(cli: click.Group, vault_root: Path) -> None:
    """`.memex/index.db` may be deleted any time (and a git clone has none):
    search and list then answered a bare "no matches" over a vault full of
    memories."""
    ok_json(cli, vault_root, "add", "Otters hold hands while they sleep")
    for name in os.listdir(vault_root / ".memex"):
        if name.startswith("index.db"):
            os.unlink(vault_root / ".memex" / name)
    for args in (("search", "otters"), ("list",)):
        result = invoke(cli, vault_root, *args)
        assert result.exit_code == 0
        assert "memex reindex" in result.stderr, result.output
    ok_json(cli, vault_root, "reindex")
    assert "memex reindex" not in invoke(cli, vault_root, "search", "zebras").stderr


@pytest.mark.parametrize("value", ["nan", "inf", "-nan", "1e400"])
@pytest.mark.parametrize(("args", "option"), [
    (("fading", "--within"), "--within"),
    (("add", "The deploy window is Friday", "--confidence"), "--confidence"),
    (("supersede", "01NOSUCHMEMORY", "The deploy window is Monday", "--confidence"), "--confidence"),
])
def test_a_number_option_refuses_what_is_not_a_finite_number(
    cli: click.Group, vault_root: Path, args: tuple[str, ...], option: str, value: str
) -> None:
    result = invoke(cli, vault_root, *args, value)
    assert result.exit_code == 2, result.output
    assert f"Invalid value for '{option}'" in result.output
    assert "not a finite number" in result.output or "not in the range" in result.output
    assert ok_json(cli, vault_root, "list") == []  # nothing was stored
