"""A vault is private to its user: 0700 folders, 0600 files, whatever the
umask; doctor names looser modes and --fix tightens them (docs/write-path.md)."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from memex import context
from memex.files import permissions
from memex.agents import hook_io
from memex.cli import app
from memex.vault import Vault, init_vault
from tests.fakes import HashEmbedder

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX modes")


@pytest.fixture
def open_umask() -> Iterator[None]:
    """The common default umask: files 0644, folders 0755 unless memex says otherwise."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def _used_vault(tmp_path: Path) -> Path:
    root = init_vault(tmp_path / "vault", git=False)
    with Vault(root, embedder=HashEmbedder()) as vault:
        vault.add("The staging database password rotates every month.", scope="project:ops")
        context.after_turn(vault, "sess-1", [{"role": "user", "content": "the full transcript"}], 0, commit="none")
        hook_io.log_line(vault, "a hook line")
        hook_io.remember_session(vault, "claude-code", "sess-1", None)
    return root


def test_everything_memex_creates_in_a_vault_is_private(tmp_path: Path, open_umask: None) -> None:
    root = _used_vault(tmp_path)
    memex_dir = root / ".memex"
    reader = Vault(root, embedder=None)
    reader.list()  # an open connection keeps the -wal and -shm files in place
    for folder in (root, memex_dir, root / "memories", root / "memories" / "project" / "ops",
                   root / "sessions", memex_dir / "cache"):
        assert _mode(folder) == 0o700, folder
    index = memex_dir / "index.db"
    assert index.with_name("index.db-wal").exists()
    for file in (
        index, index.with_name("index.db-wal"), index.with_name("index.db-shm"), memex_dir / "write.lock",
        memex_dir / "config.toml", root / ".gitignore", hook_io.log_path(Vault(root, embedder=None)),
        *root.glob("sessions/*/turns.jsonl"), *root.glob("memories/**/*.md"),
    ):
        assert _mode(file) == 0o600, file
    assert list(root.glob("sessions/*/turns.jsonl"))
    assert permissions.loose_modes(root) == []
    reader.close()


def test_doctor_names_loose_modes_and_fix_tightens_them(tmp_path: Path, open_umask: None) -> None:
    root = _used_vault(tmp_path)
    (root / ".memex" / "config.toml").write_text('[embedding]\nmodel = "none"\n', encoding="utf-8")
    os.chmod(root / ".memex" / "index.db", 0o644)
    os.chmod(root / "sessions", 0o755)
    script = root / "memories" / "run.md"
    script.write_text("A hand-written note.\n", encoding="utf-8")
    os.chmod(script, 0o775)
    cli = app()
    found = json.loads(CliRunner().invoke(cli, ["--vault", str(root), "doctor", "--json"]).output)
    # SQLite gives -wal and -shm the database file's mode.
    assert sorted((m["path"], m["mode"]) for m in found["loose_modes"] if "index.db-" not in m["path"]) == [
        (".memex/index.db", "0644"), ("memories/run.md", "0775"), ("sessions", "0755"),
    ]
    text = CliRunner().invoke(cli, ["--vault", str(root), "doctor"]).output
    assert "loose mode: .memex/index.db: file mode 0644" in text
    assert "memex doctor --fix" in text

    fixed = json.loads(CliRunner().invoke(cli, ["--vault", str(root), "doctor", "--fix", "--json"]).output)
    assert {m["path"] for m in fixed["modes_tightened"]} >= {".memex/index.db", "memories/run.md", "sessions"}
    assert permissions.loose_modes(root) == []
    assert _mode(script) == 0o700  # the owner's bits stay; only other users lose theirs
    assert _mode(root / ".memex" / "index.db") == 0o600


def test_an_existing_folder_made_a_vault_keeps_its_own_mode(tmp_path: Path, open_umask: None) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    os.chmod(notes, 0o750)
    init_vault(notes, git=False)
    assert _mode(notes) == 0o750  # not changed behind the user's back ...
    assert [m.path for m in permissions.loose_modes(notes)] == ["."]  # ... but reported


def test_the_erased_list_is_private(tmp_path: Path) -> None:
    # It holds keyed hashes only, but it tells which bodies were erased and when.
    import os
    import stat

    from memex.erased.erased_list import remember

    old = os.umask(0o022)
    try:
        remember(tmp_path, ["a body that was erased"])
    finally:
        os.umask(old)
    modes = {p.name: stat.S_IMODE(p.stat().st_mode) for p in tmp_path.iterdir()}
    assert modes and all(mode & 0o077 == 0 for mode in modes.values()), modes
