"""A new user's trial from outside (round 7): what they saw, as tests.

Each test here failed on the code before its fix.
"""

from __future__ import annotations

import errno
import json
import os
import resource
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memex import health
from memex.errors import IndexStoreError
from memex.store.meta import scalar
from memex.vault import Vault, init_vault
from tests.fakes import HashEmbedder


def _fill_the_disk(vault: Vault) -> None:
    """SQLite's own "database or disk is full": no page may be added to the index
    (what a full disk or a full tmpfs gives, without needing a mount)."""
    pages = int(scalar(vault.conn, "PRAGMA page_count") or 0)
    vault.conn.execute(f"PRAGMA max_page_count={pages}")


def test_a_full_disk_is_one_line_naming_the_index_and_loses_no_memory(vault: Vault) -> None:
    """Found from outside: `memex add` on a vault in a full 3 MB tmpfs printed
    apsw's traceback (`apsw.FullError: database or disk is full`), and so did
    `memex reindex`. It is an IndexStoreError naming the index file and saying
    what to do, and the memory's file is kept for the next reindex."""
    vault.add("A first memory, so that the index has its tables")
    _fill_the_disk(vault)
    big = "The disk filled up while this was being stored. " + "x" * 60_000
    with pytest.raises(IndexStoreError) as caught:
        vault.add(big)
    message = str(caught.value)
    assert str(vault.root / ".memex" / "index.db") in message
    assert "full" in message and "memex reindex" in message
    # The transaction was rolled back cleanly: the connection still works.
    assert len(vault.list()) == 1
    vault.conn.execute("PRAGMA max_page_count=1073741823")
    report = vault.reindex()
    assert report.added == 1
    assert any(m.body.startswith("The disk filled up") for m in vault.list())
    assert health.drift(vault).clean


def _no_bigger_files_than(limit: int) -> Callable[[], None]:
    def apply() -> None:  # in the child: writes past `limit` bytes fail with EFBIG
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return apply


def test_a_memory_the_disk_cannot_take_is_named_in_the_error(tmp_path: Path) -> None:
    """Found from outside: on a full disk `memex add` said only `Error: No space
    left on device` (os.write names no file). The error names the memory's
    file, and no temp file or half a memory is left behind."""
    root = init_vault(tmp_path / "vault", git=False)
    env = {**os.environ, "MEMEX_VAULT": str(root), "MEMEX_WARM": "0"}
    text = "A runbook line that is long. " * 8000  # about 230 kB, under max_file_bytes
    done = subprocess.run(
        [sys.executable, "-c", "from memex.cli import run; run()", "add", "-"], input=text, capture_output=True, text=True,
        env=env, preexec_fn=_no_bigger_files_than(100_000), timeout=120,
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr
    line = done.stderr.strip()
    assert line.startswith("Error: ") and "memories/user/a-runbook-line" in line, line
    assert not [p for p in (root / "memories").rglob("*") if p.is_file()]


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_a_full_disk_while_noting_the_writer_names_the_note(vault: Vault) -> None:
    """The first write of a process notes its temp-file folder in
    .memex/writers/<pid>; on a full disk that append failed at the flush and
    the error named no file."""
    note = vault.root / ".memex" / "writers" / str(os.getpid())
    note.parent.mkdir(parents=True, exist_ok=True)
    note.unlink(missing_ok=True)
    note.symlink_to("/dev/full")  # every write to it: ENOSPC
    try:
        with pytest.raises(OSError) as caught:
            vault.add("Written while the disk was full")
    finally:
        note.unlink()
    assert caught.value.filename == str(note)
    assert caught.value.errno == errno.ENOSPC


def _memex(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", "from memex.cli import run; run()", *args],
        capture_output=True, text=True, env={**os.environ, "MEMEX_WARM": "0", **(env or {})}, timeout=120,
    )


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
    done = _memex("--vault", str(vault_root), *args)
    assert done.returncode == code
    document = json.loads(done.stdout)
    assert document["exit_code"] == code
    assert document["error"] and document["error"] in done.stderr
    assert done.stderr.startswith("Error: ") and "Traceback" not in done.stderr


def test_text_after_a_double_dash_is_not_the_json_option(vault_root: Path) -> None:
    done = _memex("--vault", str(vault_root), "add", "--scope", "nope", "--", "--json")
    assert done.returncode == 1 and done.stdout == ""


def _turn(path: Path, said: str, reply: str) -> None:
    with path.open("a", encoding="utf-8") as out:
        for role, kind, text in (("user", "user", said), ("assistant", "assistant", reply)):
            content: object = text if role == "user" else [{"type": "text", "text": text}]
            out.write(json.dumps({"type": kind, "isSidechain": False, "message": {"role": role, "content": content}}) + "\n")


@pytest.mark.usefixtures("no_warm_server")
def test_a_decision_said_in_a_short_session_is_a_memory_when_it_ends(vault: Vault, tmp_path: Path) -> None:
    """Found from outside: in a four-turn Claude Code session the user said
    "We decided to store invoices as PDF in the S3 bucket shop-invoices and
    keep them seven years". SessionEnd archived the turn but never extracted
    it (a commit waits for 20,000 pending tokens, which a short session never
    reaches, and the next session is another session), so the next session's
    "How long do we keep invoices?" found nothing. SessionEnd now commits
    what is pending before consolidating."""
    from memex.agents import claude_code

    project = tmp_path / "shop"
    (project / ".git").mkdir(parents=True)
    transcript = tmp_path / "session.jsonl"
    transcript.write_text("", encoding="utf-8")
    decision = "We decided to store invoices as PDF in the S3 bucket shop-invoices and keep them seven years."
    base = {"session_id": "11111111-1111-4111-8111-111111111111", "transcript_path": str(transcript),
            "cwd": str(project), "permission_mode": "default"}

    def send(name: str, **fields: object) -> None:
        result = claude_code.handle(vault, {**base, "hook_event_name": name, **fields})
        if result.deferred is not None:
            result.deferred()

    send("SessionStart", source="startup")
    for said, reply in (("Please add a retry to the Stripe webhook handler.", "Added, five attempts."),
                        (decision, "Understood, s3://shop-invoices with a seven year rule.")):
        send("UserPromptSubmit", prompt=said)
        _turn(transcript, said, reply)
        send("Stop", stop_hook_active=False, last_assistant_message=reply)
    assert not [m for m in vault.list() if "shop-invoices" in m.body], "a short session commits nothing before it ends"
    send("SessionEnd", reason="other")
    kept = [m for m in vault.list() if "shop-invoices" in m.body]
    assert len(kept) == 1 and kept[0].category == "decision"
    assert kept[0].session == base["session_id"]
    # Ending it again (a resumed session that ends twice) stores nothing twice.
    send("SessionEnd", reason="other")
    assert len([m for m in vault.list() if "shop-invoices" in m.body]) == 1


@pytest.fixture
def read_only_view(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """A vault and a read-only bind mount of it (a vault on a read-only disk);
    skipped where mounting is not allowed. The owner (root here) could write
    through file modes, so only a read-only mount shows what a user sees."""
    root = init_vault(tmp_path / "vault", git=False)
    with Vault(root, embedder=HashEmbedder()) as v:
        v.add("The café menu service is written in Kotlin")
    view = tmp_path / "ro"
    view.mkdir()
    if subprocess.run(["mount", "--bind", str(root), str(view)], capture_output=True).returncode != 0:
        pytest.skip("mount --bind is not allowed here")
    try:
        if subprocess.run(["mount", "-o", "remount,bind,ro", str(view)], capture_output=True).returncode != 0:
            pytest.skip("a read-only remount is not allowed here")
        yield root, view
    finally:
        subprocess.run(["umount", str(view)], capture_output=True)


def test_a_read_only_vault_is_named_as_such_not_as_a_broken_index(read_only_view: tuple[Path, Path]) -> None:
    """Found from outside: on a read-only mount every command, `memex search`
    included, said "cannot open the index: unable to open database file; it
    is derived from the files, so delete index.db* and run `memex reindex`":
    advice that cannot work there and would throw the index away elsewhere."""
    root, view = read_only_view
    done = _memex("--vault", str(view), "search", "kotlin", "--json")
    assert done.returncode == 1
    error = json.loads(done.stdout)["error"]
    assert str(view / ".memex") in error and "read-only" in error
    assert "delete" not in error and "Traceback" not in done.stderr
    assert (root / ".memex" / "index.db").exists()


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


async def _mcp_in_project(vault_root: Path, home: Path, scope: str) -> dict[str, Any]:
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters

    from tests.hook_helpers import MEMEX

    env = {"HOME": str(home), "MEMEX_CACHE_DIR": os.environ["MEMEX_CACHE_DIR"], "MEMEX_WARM": "0"}
    params = StdioServerParameters(command=MEMEX, args=["--vault", str(vault_root), "mcp"], env=env)
    seen: dict[str, Any] = {}
    async with Client(params, read_timeout_seconds=120) as client:
        added = await client.call_tool("memory_add", {"text": "Invoices are kept seven years", "scope": scope})
        seen["add"] = (added.is_error, added.content[0].text)  # type: ignore[union-attr]
        found = await client.call_tool("memory_search", {"query": "invoices kept", "scope": [scope]})
        seen["search"] = (found.is_error, found.content[0].text)  # type: ignore[union-attr]
        bad = await client.call_tool("memory_add", {"text": "x", "scope": "project:two\nlines"})
        seen["newline"] = bad.is_error
    return seen


def test_mcp_tools_take_the_project_scope_the_hooks_use(vault_root: Path, tmp_path: Path) -> None:
    """Found from outside: in a repository folder named "My Shop (2024)" the
    hooks recall and show memories of scope `project:My Shop (2024)` (the git
    root folder's name), and `memex add --scope` takes it, but the MCP tools'
    scope pattern refused any space: the agent could neither search nor add
    in its own project's scope."""
    import anyio

    from memex.agents import hook_io
    from tests.hook_helpers import lexical_only

    project = tmp_path / "My Shop (2024)"
    (project / ".git").mkdir(parents=True)
    scope = hook_io.project_scope(str(project))
    assert scope == "project:My Shop (2024)"
    lexical_only(vault_root)
    home = tmp_path / "home"
    home.mkdir()
    seen = anyio.run(_mcp_in_project, vault_root, home, scope)
    assert seen["add"][0] is False, seen["add"][1]
    assert json.loads(seen["add"][1])["status"] == "created"
    assert seen["search"][0] is False and "Invoices are kept seven years" in seen["search"][1]
    assert seen["newline"] is True


def _damage(index: Path) -> None:
    """Overwrite every page of the index but the first in place, so that it
    still opens (what a bad disk or a half-copied file does)."""
    with index.open("r+b") as db:
        size = int.from_bytes(db.read(18)[16:18], "big") or 65536
        pages = index.stat().st_size // size
        db.seek(size)
        db.write(bytes(range(256)) * (size * (pages - 1) // 256))


@pytest.fixture
def damaged_vault(tmp_path: Path) -> Path:
    root = init_vault(tmp_path / "vault", git=False)
    from tests.hook_helpers import lexical_only

    lexical_only(root)
    with Vault(root) as v:
        for i in range(60):
            v.add(f"Service {i} is deployed by team {i % 7} on {'Tuesdays' if i % 2 else 'Thursdays'}")
        v.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    _damage(root / ".memex" / "index.db")
    return root


@pytest.mark.parametrize("args", [["list"], ["reindex"], ["doctor"], ["doctor", "--fix"], ["stats"]])
def test_a_damaged_index_is_one_line_saying_how_to_rebuild_it(damaged_vault: Path, args: list[str]) -> None:
    """Found from outside: with a few pages of index.db overwritten (a bad
    sector, a half-copied vault), `memex list`, `reindex`, `doctor` and
    `doctor --fix` printed apsw's traceback (`apsw.CorruptError: database
    disk image is malformed`); the index is derived, so the way out is to
    rebuild it, and the error says so."""
    done = _memex("--vault", str(damaged_vault), *args, "--json")
    assert "Traceback" not in done.stderr, done.stderr[-800:]
    assert done.returncode == 1
    error = json.loads(done.stdout)["error"]
    assert str(damaged_vault / ".memex" / "index.db") in error and "memex reindex" in error


def test_a_hook_on_a_damaged_index_names_it_and_fails_open(damaged_vault: Path) -> None:
    """Found from outside: the hook's line read only "database disk image is
    malformed", naming no file and no way out."""
    event = {"session_id": "s1", "transcript_path": "/nonexistent.jsonl", "cwd": str(damaged_vault),
             "hook_event_name": "UserPromptSubmit", "prompt": "which team deploys service 3"}
    done = subprocess.run(
        [sys.executable, "-c", "from memex.cli import run; run()", "hook", "claude-code"],
        input=json.dumps(event), capture_output=True, text=True, timeout=120,
        env={**os.environ, "MEMEX_WARM": "0", "MEMEX_VAULT": str(damaged_vault)},
    )
    assert done.returncode == 0 and done.stdout == ""  # fail open: the agent goes on
    assert "Traceback" not in done.stderr
    assert str(damaged_vault / ".memex" / "index.db") in done.stderr and "memex reindex" in done.stderr


async def _mcp_get(vault_root: Path, home: Path) -> tuple[bool, str]:
    from mcp.client import Client
    from mcp.client.stdio import StdioServerParameters

    from tests.hook_helpers import MEMEX

    env = {"HOME": str(home), "MEMEX_CACHE_DIR": os.environ["MEMEX_CACHE_DIR"], "MEMEX_WARM": "0"}
    params = StdioServerParameters(command=MEMEX, args=["--vault", str(vault_root), "mcp"], env=env)
    async with Client(params, read_timeout_seconds=120) as client:
        got = await client.call_tool("memory_get", {"id": "01NOSUCHMEMORYATALL0000000"})
        return got.is_error, " ".join(getattr(c, "text", "") for c in got.content)


def test_the_mcp_server_names_a_damaged_index_too(damaged_vault: Path, tmp_path: Path) -> None:
    """The same index through MCP: memory_get answered only "Error executing
    tool memory_get" and logged a traceback."""
    import anyio

    home = tmp_path / "home"
    home.mkdir()
    is_error, text = anyio.run(_mcp_get, damaged_vault, home)
    assert is_error and "damaged" in text and "memex reindex" in text, text


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


def test_memory_add_resource_says_what_is_wrong_with_a_file_in_words(vault: Vault, tmp_path: Path) -> None:
    """Found from outside: memory_add_resource on a folder holding a file that
    is not UTF-8 answered Python's codec message ("'utf-8' codec can't decode
    byte 0xff in position 0: invalid start byte"), and a binary file that
    happened to decode reached the write path section by section. The reasons
    now read as memex's own for a vault file."""
    from memex.agents.resources import import_markdown

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "runbook.md").write_text("# Runbook\n\nRestart billing with kubectl rollout restart.\n", encoding="utf-8")
    (docs / "latin.md").write_bytes(b"caf\xe9 au lait\n")
    (docs / "blob.md").write_bytes(b"PK\x03\x04\x00\x00binary")
    answer = import_markdown(vault, str(docs), cwd=tmp_path)
    reasons = {Path(e["file"]).name: e["reason"] for e in answer["errors"]}
    assert reasons == {
        "latin.md": "not UTF-8 text (byte 3); not imported",
        "blob.md": "path: binary file (NUL bytes), not Markdown; not imported",
    }
    assert len(answer["created"]) == 1


@pytest.mark.parametrize("args", [[], ["context"], ["install"]])
def test_memex_alone_prints_its_help_not_an_error(args: list[str]) -> None:
    """Found from outside: the first thing a new user types, `memex` alone,
    printed "Error: Usage: memex [OPTIONS] COMMAND ..." with the whole help
    inside the error line and "(see 'memex --help')" glued to its last
    command. A group run without a command prints its help, as --help does
    (exit status 2, click's for a missing command)."""
    done = _memex(*args)
    assert done.returncode == 2
    assert done.stdout.startswith(f"Usage: memex {' '.join(args)}".rstrip() + " [OPTIONS] COMMAND")
    assert "Commands:" in done.stdout and "Error" not in done.stdout + done.stderr
    assert "see 'memex" not in done.stdout
