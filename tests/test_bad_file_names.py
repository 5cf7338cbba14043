"""A file or folder name that is not valid UTF-8 is reported like any bad
file, by its bytes, and every other file is indexed (docs/write-path.md: it
crashed reindex and doctor --fix with a traceback, indexing nothing)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from memex.cli import app
from memex.vault import Vault
from tests.fakes import HashEmbedder

pytestmark = pytest.mark.skipif(sys.platform in ("win32", "darwin"), reason="file names must be bytes")

BAD_FILE = "memories/caf\\xe9.md"
BAD_DIR = "memories/notes-\\xff"


def _write(root: Path, rel: bytes, text: str) -> None:
    full = os.path.join(os.fsencode(root), rel)
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "wb") as handle:
        handle.write(text.encode("utf-8"))


@pytest.fixture
def odd_vault(vault_root: Path) -> Path:
    _write(vault_root, b"memories/caf\xe9.md", "A note saved under a Latin-1 file name.\n")
    _write(vault_root, b"memories/notes-\xff/inner.md", "A note inside a folder with a bad name.\n")
    _write(vault_root, b"memories/good.md", "The quarterly report is due on Fridays.\n")
    return vault_root


def test_reindex_reports_undecodable_names_and_indexes_the_rest(odd_vault: Path) -> None:
    with Vault(odd_vault, embedder=HashEmbedder()) as vault:
        report = vault.reindex()
        assert sorted(e["path"] for e in report.errors) == [BAD_FILE, BAD_DIR]
        assert all("not valid UTF-8" in e["reason"] for e in report.errors)
        assert [h.path for h in vault.list()] == ["memories/good.md"]
        assert [h.path for h in vault.search("quarterly report")] == ["memories/good.md"]
        # A watcher event for such a file is reported the same way.
        bad = os.fsdecode(b"memories/caf\xe9.md")
        assert [e["path"] for e in vault.indexer.index_paths([bad]).errors] == [BAD_FILE]


def test_cli_reindex_and_doctor_fix_name_the_file_without_a_traceback(odd_vault: Path) -> None:
    (odd_vault / ".memex" / "config.toml").write_text('[embedding]\nmodel = "none"\n', encoding="utf-8")
    cli = app()
    for args in (["reindex", "--json"], ["doctor", "--fix", "--json"]):
        result = CliRunner().invoke(cli, ["--vault", str(odd_vault), *args])
        # doctor exits 1 while files need a person (docs/cli.md); reindex reports and succeeds.
        assert result.exit_code == (1 if args[0] == "doctor" else 0), result.output
        assert "Traceback" not in result.output
        data = json.loads(result.output)
        errors = data["errors"] if "errors" in data else data["drift"]["errors"]
        assert sorted(e["path"] for e in errors) == [BAD_FILE, BAD_DIR]
    text = CliRunner().invoke(cli, ["--vault", str(odd_vault), "doctor"]).output
    assert f"error: {BAD_FILE}: file name is not valid UTF-8" in text
    with Vault(odd_vault, embedder=None) as vault:
        assert [h.path for h in vault.list()] == ["memories/good.md"]
