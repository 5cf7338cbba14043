"""A full disk, a read-only mount, a damaged index: each is one line naming
the file and what to do, from the CLI, a hook and the MCP server alike, and
no memory is lost or left half written (docs/write-path.md).

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
from memex.store.sqlite.meta import scalar
from memex.vault import Vault, init_vault
from tests.fakes import HashEmbedder
from tests.hook_helpers import run_memex


def _fill_the_disk(vault: Vault) -> None:
    """SQLite's own "database or disk is full": no page may be added to the index
    (what a full disk or a full tmpfs gives, without needing a mount)."""
    pages = int(scalar(vault.backend.conn, "PRAGMA page_count") or 0)
    vault.backend.conn.execute(f"PRAGMA max_page_count={pages}")


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
    vault.backend.conn.execute("PRAGMA max_page_count=1073741823")
    report = vault.reindex()
    assert report.added == 1
    assert any(m.body.startswith("The disk filled up") for m in vault.list())
    assert health.drift(vault).clean


def test_a_full_disk_met_by_the_vector_table_is_one_line_too(vault: Vault) -> None:
    """Found from outside: on a full 1.4 MB tmpfs `memex add` of a short memory
    printed a traceback ending `apsw.SQLError: Internal sqlite-vec error: Could
    not insert a new vector chunk`: the vector table, not SQLite, met the full
    disk first, and its error is a plain SQLError."""
    vault.add("A first memory, so that the index has its tables")
    _fill_the_disk(vault)
    letters = "qwertzuiopasdfghjklyxcvbnm"
    # Many word pieces: the memory is cut into chunks, whose vectors need a new chunk of vec0's.
    words = " ".join("".join(letters[(i * 7 + j * 3) % 26] for j in range(8)) for i in range(60))
    with pytest.raises(IndexStoreError) as caught:
        vault.add("Stored while the disk was full: " + words)
    message = str(caught.value)
    assert str(vault.root / ".memex" / "index.db") in message and "memex reindex" in message
    assert len(vault.list()) == 1
    vault.backend.conn.execute("PRAGMA max_page_count=1073741823")
    assert vault.reindex().added == 1
    assert health.drift(vault).clean


class _FullDisk:
    """A file handle on a full disk: writes are buffered, the flush fails (ENOSPC)."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle

    def __enter__(self) -> _FullDisk:
        return self

    def __exit__(self, *exc: object) -> None:
        self.handle.close()

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    def fileno(self) -> int:
        return int(self.handle.fileno())


def test_an_erasure_the_disk_cannot_take_leaves_no_empty_key(vault: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    """Found from outside: the first `memex erase` on a full disk created
    .memex/erase.key and could not write it. The empty key stopped every
    later erasure, once there was room again, with "the erasure key is not at
    least 16 bytes of hex; restore it from a backup" (there was none)."""
    from memex.erase.steps import erase

    secret = vault.add("The zorblax door code is 4711")
    real = os.fdopen
    with monkeypatch.context() as patched:
        patched.setattr(os, "fdopen", lambda fd, *a, **k: _FullDisk(real(fd, *a, **k)))
        with pytest.raises((OSError, IndexStoreError)):
            erase(vault, secret.id, reason="disk full")
    key = vault.root / ".memex" / "erase.key"
    assert not key.exists() or len(key.read_text().strip()) >= 32
    result = erase(vault, secret.id, reason="room again")  # once there is room
    assert result.erased == [secret.id]
    assert vault.list() == []


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
    done = run_memex("--vault", str(view), "search", "kotlin", "--json")
    assert done.returncode == 1
    error = json.loads(done.stdout)["error"]
    assert str(view / ".memex") in error and "read-only" in error
    assert "delete" not in error and "Traceback" not in done.stderr
    assert (root / ".memex" / "index.db").exists()


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
        v.backend.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    _damage(root / ".memex" / "index.db")
    return root


@pytest.mark.parametrize("args", [["list"], ["reindex"], ["doctor"], ["doctor", "--fix"], ["stats"]])
def test_a_damaged_index_is_one_line_saying_how_to_rebuild_it(damaged_vault: Path, args: list[str]) -> None:
    """Found from outside: with a few pages of index.db overwritten (a bad
    sector, a half-copied vault), `memex list`, `reindex`, `doctor` and
    `doctor --fix` printed apsw's traceback (`apsw.CorruptError: database
    disk image is malformed`); the index is derived, so the way out is to
    rebuild it, and the error says so."""
    done = run_memex("--vault", str(damaged_vault), *args, "--json")
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
