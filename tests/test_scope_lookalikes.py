"""A scope is one text however it is typed: NFKC-normalised (full-width
letters are ASCII), and never holding a control, format or bidi character
(U+202E turns the text around, U+200B is invisible), which would make a
second scope that looks like a real one (memex/scopes.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memex import scopes
from memex.errors import ScopeError
from memex.importers import import_path
from memex.vault import Vault
from tests.hook_helpers import lexical_only


@pytest.mark.parametrize("typed, stored", [
    ("ｐｒｏｊｅｃｔ:memex", "project:memex"),  # full-width letters
    ("project:ｍｅｍｅｘ", "project:memex"),
    ("ｕｓｅｒ", "user"),
    ("project:ﬁles", "project:files"),  # a ligature
    ("project:my\u00a0shop", "project:my shop"),  # a no-break space
])
def test_look_alike_letters_are_the_scope_they_look_like(vault: Vault, typed: str, stored: str) -> None:
    first = vault.add("The release train leaves on Thursdays", scope=stored)
    again = vault.add("The release train leaves on Thursdays", scope=typed)
    assert again.status == "duplicate" and again.existing_id == first.id  # one scope, so dedup meets it
    made = vault.add("Hotfixes skip the train", scope=typed)
    assert made.status == "created" and vault.get(made.id).meta["scope"] == stored
    assert {h.id for h in vault.list(scope=typed)} == {made.id, first.id}
    assert {h.id for h in vault.search("release train hotfixes", scope=[typed])} == {made.id, first.id}


@pytest.mark.parametrize("scope, char", [
    ("project:memex\u202e", "U+202E"),  # right-to-left override
    ("project:mem\u200bex", "U+200B"),  # zero-width space
    ("project:\u2066memex\u2069", "U+2066"),  # left-to-right isolate
    ("project:memex\u200f", "U+200F"),  # right-to-left mark
    ("project:mem\u00adex", "U+00AD"),  # soft hyphen
    ("project:mem\x07ex", "U+0007"),  # a control character
    ("project:mem\u2028ex", "U+2028"),  # line separator
    ("user\ufeff", "U+FEFF"),
])
def test_invisible_and_bidi_characters_are_refused(vault: Vault, scope: str, char: str) -> None:
    with pytest.raises(ScopeError) as caught:
        vault.add("The deploy runs on Fridays", scope=scope)
    assert char in str(caught.value)
    assert vault.list() == [] and not any((vault.root / "memories").rglob("*.md"))
    with pytest.raises(ScopeError):
        vault.search("deploy", scope=[scope])


def test_the_command_line_and_import_refuse_them_too(vault_root: Path, tmp_path: Path) -> None:
    lexical_only(vault_root)
    cmd = [sys.executable, "-c", "from memex.cli import run; run()", "--vault", str(vault_root)]
    done = subprocess.run([*cmd, "add", "Deploys are on Fridays", "--scope", "project:shop\u202e"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "U+202E" in done.stderr and "Traceback" not in done.stderr
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("We deploy on Fridays.", encoding="utf-8")
    with Vault(vault_root, embedder=None) as vault:
        with pytest.raises(ScopeError, match="U\\+200B"):
            import_path(vault, notes, fmt="obsidian", scope="project:sh\u200bop")
        report = import_path(vault, notes, fmt="obsidian", scope="ｐｒｏｊｅｃｔ:shop")
        assert report.scope == "project:shop" and report.created == 1
        assert [h.scope for h in vault.list()] == ["project:shop"]


def test_doctor_names_a_hand_written_scope_with_hidden_or_look_alike_characters(vault: Vault) -> None:
    folder = vault.root / "memories" / "user"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "rtl.md").write_text("---\nscope: \"project:memex\\u202e\"\n---\nA note.\n", encoding="utf-8")
    (folder / "wide.md").write_text("---\nscope: project:ｍｅｍｅｘ\n---\nAnother note.\n", encoding="utf-8")
    vault.reindex()
    found = {u["path"]: u for u in scopes.unknown_scopes(vault.scope_rules, vault.local_store.path_scopes())}
    assert "U+202E" in found["memories/user/rtl.md"]["reason"]
    assert found["memories/user/wide.md"]["suggestion"] == "project:memex"
