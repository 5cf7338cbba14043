"""An empty search or list over an empty index advises `memex reindex` only
when a reindex would index something: not when every file under memories/
was refused (broken front matter, a link out of the vault), where it would
refuse them again; then it says where to look instead (memex/health.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memex.agents import mcp_server
from memex.vault import Vault
from tests.hook_helpers import lexical_only

REINDEX = "run `memex reindex`"


def _cli(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", "from memex.cli import run; run()", "--vault", str(root), *args],
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def refused_only(vault_root: Path, tmp_path: Path) -> Path:
    """A vault whose every memory file the indexer refuses."""
    lexical_only(vault_root)
    folder = vault_root / "memories" / "user"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "broken.md").write_text("---\nscope: [unclosed\n---\nThe deploy runs on Fridays.\n", encoding="utf-8")
    outside = tmp_path / "outside.md"
    outside.write_text("The deploy runs on Fridays.\n", encoding="utf-8")
    (folder / "link.md").symlink_to(outside)
    done = _cli(vault_root, "reindex")
    assert done.returncode == 0, done.stderr
    return vault_root


@pytest.mark.parametrize("command", [["search", "deploy"], ["list"]])
def test_no_reindex_advice_when_every_file_was_refused(refused_only: Path, command: list[str]) -> None:
    done = _cli(refused_only, *command)
    assert done.returncode == 0, done.stderr
    assert REINDEX not in done.stderr
    assert "every file under memories/ was refused" in done.stderr and "memex doctor" in done.stderr


def test_the_mcp_search_note_says_the_same(refused_only: Path) -> None:
    with Vault(refused_only, embedder=None) as vault:
        answer = mcp_server.Tools(vault).memory_search("deploy")
    assert answer["hits"] == [] and REINDEX not in answer["note"] and "refused" in answer["note"]


def test_the_advice_stays_when_a_reindex_would_help(refused_only: Path) -> None:
    broken = refused_only / "memories" / "user" / "broken.md"
    broken.write_text("The deploy runs on Fridays, fixed by hand.\n", encoding="utf-8")  # fixed since
    st = broken.stat()
    os.utime(broken, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))
    done = _cli(refused_only, "search", "deploy")
    assert REINDEX in done.stderr
    (refused_only / "memories" / "user" / "new.md").write_text("A new note.\n", encoding="utf-8")
    broken.write_text("---\nscope: [unclosed\n---\nbroken again\n", encoding="utf-8")
    assert REINDEX in _cli(refused_only, "list").stderr  # a file never seen: a reindex takes it
