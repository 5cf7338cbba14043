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
from collections.abc import Callable
from pathlib import Path

import pytest

from memex import health
from memex.errors import IndexStoreError
from memex.store.meta import scalar
from memex.vault import Vault, init_vault


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
