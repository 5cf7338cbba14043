"""Bad files in a vault are reported with their path and reason, never crash a
reindex, never leak content from outside the vault, and never stop the good
files from being indexed (docs/vault.md, "Bad files are reported, never fatal")."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from memex import health
from memex.errors import InvalidArgument, MemoryFileError
from memex.vault import Vault
from memex.meta_edit import update_meta
from memex.text import tokens
from tests.fakes import HashEmbedder

CAP = 4096
GOOD = "The giraffe enclosure opens at nine every morning.\n"


@pytest.fixture
def capped(vault_root: Path) -> Iterator[Vault]:
    """A vault with a small size cap and one good hand-written memory."""
    (vault_root / ".memex" / "config.toml").write_text(f"[index]\nmax_file_bytes = {CAP}\n")
    folder = vault_root / "memories" / "user"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "good.md").write_text(GOOD)
    with Vault(vault_root, embedder=HashEmbedder()) as v:
        yield v


def _errors_by_path(errors: list[dict[str, str]]) -> dict[str, str]:
    return {e["path"]: e["reason"] for e in errors}


def _assert_good_searchable(v: Vault) -> None:
    hits = v.search("giraffe enclosure")
    assert hits and hits[0].path == "memories/user/good.md"


BAD_FILES = {
    "broken-yaml": (b"---\nid: [unclosed\nscope: user\n---\nbody\n", "broken YAML"),
    "yaml-anchor-bomb": (
        b"---\na: &a [x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\n"
        b"c: &c [*b, *b, *b, *b, *b, *b, *b, *b]\n---\nbomb\n",
        "anchors and aliases",
    ),
    "yaml-deep-nesting": (b"---\na: " + b"[" * 200 + b"]" * 200 + b"\n---\ndeep\n", "nested deeper"),
    # libyaml stops at its own depth limit before memex's check sees the tokens.
    "yaml-very-deep-nesting": (b"---\na: " + b"[" * 1500 + b"]" * 1500 + b"\n---\ndeep\n", "nest"),
    "yaml-python-tag": (b"---\na: !!python/object/apply:os.system ['true']\n---\nbody\n", "broken YAML"),
    "frontmatter-not-a-mapping": (b"---\n- one\n- two\n---\nbody\n", "must be a YAML mapping"),
    "frontmatter-never-closed": (b"---\nid: abc\nno closing line\n", "never closed"),
    "latin-1-bytes": (b"---\nscope: user\n---\ncaf\xe9 au lait\n", "not UTF-8"),
    "binary": (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x01", "binary file"),
    "over-size-cap": (b"word " * (CAP // 4), f"over the {CAP}-byte cap"),
    "empty": (b"", "empty memory"),
    "bad-confidence": (b"---\nconfidence: very high\n---\nbody\n", "confidence"),
    "confidence-out-of-range": (b"---\nconfidence: 7\n---\nbody\n", "confidence"),
    "scope-with-dots": (b"---\nscope: ../../etc\n---\nbody\n", "lower-case word"),
    "bad-id": (b"---\nid: ../../evil\n---\nbody\n", "id '../../evil'"),
    "list-as-source": (b"---\nsource: [a, b]\n---\nbody\n", "'source' must be a single value"),
}


@pytest.mark.parametrize("name", sorted(BAD_FILES))
def test_bad_file_is_reported_and_good_files_still_indexed(capped: Vault, name: str) -> None:
    data, reason = BAD_FILES[name]
    rel = f"memories/user/{name}.md"
    (capped.root / rel).write_bytes(data)

    report = capped.reindex()
    assert report.added == 1
    errors = _errors_by_path(report.errors)
    assert list(errors) == [rel]
    assert reason in errors[rel]
    _assert_good_searchable(capped)
    assert all(h.path != rel for h in capped.list())

    # Reported again by the next reindex (without re-reading) and by doctor.
    again = capped.reindex()
    assert _errors_by_path(again.errors) == errors
    drift = health.drift(capped)
    assert _errors_by_path(drift.errors) == errors
    assert not drift.clean and drift.differing == 0


def test_fixing_a_bad_file_gets_it_indexed_and_clears_the_error(capped: Vault) -> None:
    path = capped.root / "memories" / "user" / "fixme.md"
    path.write_bytes(b"---\nid: [oops\n---\nThe okapi is a forest giraffe.\n")
    assert capped.reindex().errors
    path.write_text("---\nid: okapi1\n---\nThe okapi is a forest giraffe.\n")
    report = capped.reindex()
    assert report.added == 1 and report.errors == []
    assert capped.get("okapi1").body == "The okapi is a forest giraffe.\n"
    assert health.drift(capped).clean


def test_size_cap_comes_from_config(vault_root: Path) -> None:
    folder = vault_root / "memories" / "user"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "medium.md").write_text("medium sized memory " * 300)  # ~6 KB
    with Vault(vault_root, embedder=HashEmbedder()) as v:
        assert v.config.max_file_bytes == 1024 * 1024
        assert v.reindex().added == 1
    (vault_root / ".memex" / "config.toml").write_text("[index]\nmax_file_bytes = 1000\n")
    with Vault(vault_root, embedder=HashEmbedder()) as v:
        report = v.reindex(full=True)
        assert _errors_by_path(report.errors) == {
            "memories/user/medium.md": "file is 6000 bytes, over the 1000-byte cap"
        }
        # The row of a file that is now refused is purged, as a rebuild would.
        assert report.removed == 1
        assert v.list() == []


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "secret.md").write_text("The zebra password is hunter2.\n")
    return folder


def _no_secret(v: Vault) -> None:
    for hit in v.search("zebra password hunter2", limit=50):
        assert "hunter2" not in hit.body
    assert all("hunter2" not in h.body for h in v.list())


def test_symlinked_file_outside_the_vault_is_not_followed(capped: Vault, outside: Path) -> None:
    os.symlink(outside / "secret.md", capped.root / "memories" / "user" / "secret.md")
    report = capped.reindex()
    assert _errors_by_path(report.errors) == {
        "memories/user/secret.md": "symbolic link points outside the vault; not followed"
    }
    _no_secret(capped)
    _assert_good_searchable(capped)
    assert "memories/user/secret.md" in _errors_by_path(health.drift(capped).errors)


def test_symlinked_folder_outside_the_vault_is_not_followed(capped: Vault, outside: Path) -> None:
    os.symlink(outside, capped.root / "memories" / "user" / "elsewhere")
    report = capped.reindex()
    assert _errors_by_path(report.errors) == {
        "memories/user/elsewhere": "symbolic link points outside the vault; not followed"
    }
    _no_secret(capped)
    _assert_good_searchable(capped)


def test_memories_folder_linked_outside_the_vault_is_not_followed(vault_root: Path, outside: Path) -> None:
    (vault_root / "memories").rmdir()
    os.symlink(outside, vault_root / "memories")
    with Vault(vault_root, embedder=HashEmbedder()) as v:
        report = v.reindex()
        assert _errors_by_path(report.errors) == {
            "memories": "symbolic link points outside the vault; not followed"
        }
        assert v.list() == []


@pytest.mark.parametrize("linked", ["memories", "memories/user"])
def test_add_never_writes_through_a_folder_linked_outside_the_vault(vault_root: Path, outside: Path, linked: str) -> None:
    """Found from outside: with memories/ a link to a synced folder elsewhere,
    `memex add` answered "created memories/user/..." and exit 0, wrote the file
    out there through the link, and the index (which never follows such a link)
    did not hold it: a memory reported stored that no search would find."""
    target = vault_root / linked
    if target.exists():
        target.rmdir()
    target.parent.mkdir(parents=True, exist_ok=True)
    os.symlink(outside, target)
    before = sorted(p.name for p in outside.rglob("*"))
    with Vault(vault_root, embedder=HashEmbedder()) as v:
        with pytest.raises(InvalidArgument, match="outside the vault"):
            v.add("Stored through a link that leaves the vault")
        assert sorted(p.name for p in outside.rglob("*")) == before
        if linked == "memories/user":  # another scope's folder is inside: fine
            assert v.add("Somewhere else is fine", scope="project:elsewhere").status == "created"


def _link_user_folder(root: Path, target: Path) -> None:
    """memories/user made a relative symbolic link to ``target`` (inside the vault)."""
    user = root / "memories" / "user"
    if user.exists():
        user.rmdir()
    target.mkdir(parents=True, exist_ok=True)
    os.symlink(os.path.relpath(target, user.parent), user)


def test_a_folder_linked_elsewhere_in_the_vault_is_walked_and_written_alike(vault_root: Path) -> None:
    """Found from outside: with memories/user a link to a folder inside the
    vault, `add` wrote and indexed through it, reindex reported the link "not
    followed" but kept the row, and every search noted "1 file changed since
    the last index". Now the walk follows it (each real file once, under the
    link's path) and every command agrees."""
    from memex.watch.state import changed_since_index

    _link_user_folder(vault_root, vault_root / "notes" / "me")
    (vault_root / "notes" / "me" / "by-hand.md").write_text("Hand-written: the user reads release notes on Fridays\n")
    with Vault(vault_root, embedder=HashEmbedder()) as v:
        added = v.add("The user prefers tabs over spaces")
        assert added.status == "created" and added.path.startswith("memories/user/")
        assert (vault_root / "notes" / "me" / Path(added.path).name).is_file()  # the real file
        report = v.reindex()
        assert report.errors == [] and report.removed == 0 and report.added == 1
        assert changed_since_index(v) == []
        assert sorted(h.path for h in v.list()) == sorted([added.path, "memories/user/by-hand.md"])
        assert {h.scope for h in v.list()} == {"user"}
        drift = health.drift(v)
        assert drift.errors == [] and drift.clean, drift
        assert v.reindex().as_dict()["unchanged"] == 2


def test_a_folder_link_the_walk_cannot_follow_is_refused_by_add_too(vault_root: Path) -> None:
    """A link into memories/ itself (its files are indexed at their own path),
    or a loop: not followed, and add refuses to write through it rather than
    report a memory stored under a path no reindex keeps."""
    project = vault_root / "memories" / "project" / "me"
    _link_user_folder(vault_root, project)
    (project / "kept.md").write_text("Indexed once, at its own path\n")
    os.symlink("..", project / "loop")
    with Vault(vault_root, embedder=HashEmbedder()) as v:
        errors = _errors_by_path(v.reindex().errors)
        assert errors["memories/user"] == "symbolic link to memories/project/me, which is indexed itself"
        assert "memories/project/me/loop" in errors
        assert [h.path for h in v.list()] == ["memories/project/me/kept.md"]
        with pytest.raises(InvalidArgument, match="memories/user: symbolic link to memories/project/me"):
            v.add("Written through a link the walk refuses")
        assert sorted(p.name for p in project.iterdir()) == ["kept.md", "loop"]
    notes = vault_root / "notes"
    notes.mkdir()
    os.symlink(".", notes / "again")  # a loop outside memories/, reached through a followed link
    (notes / "n.md").write_text("A note reached through a followed link\n")
    os.symlink(os.path.relpath(notes, project), project / "notes")
    with Vault(vault_root, embedder=HashEmbedder()) as v:
        errors = _errors_by_path(v.reindex().errors)
        assert errors["memories/project/me/notes/again"] == "symbolic link to a folder that holds it (a loop); not followed"
        assert "memories/project/me/notes/n.md" in {h.path for h in v.list()}


def test_dangling_symlink_is_reported(capped: Vault, tmp_path: Path) -> None:
    os.symlink(capped.root / "memories" / "user" / "gone.md", capped.root / "memories" / "user" / "dangling.md")
    report = capped.reindex()
    errors = _errors_by_path(report.errors)
    assert list(errors) == ["memories/user/dangling.md"]
    _assert_good_searchable(capped)


def test_symlink_to_another_memory_is_indexed_once(capped: Vault) -> None:
    os.symlink(capped.root / "memories" / "user" / "good.md", capped.root / "memories" / "user" / "alias.md")
    report = capped.reindex()
    assert report.added == 1
    assert "indexed itself" in _errors_by_path(report.errors)["memories/user/alias.md"]
    assert [h.path for h in capped.list()] == ["memories/user/good.md"]


def test_an_overlong_id_is_named_short_in_the_error(capped: Vault) -> None:
    """Found from outside: an `id:` of 5000 characters was echoed whole, 5000
    characters on one line, by reindex and by every doctor run."""
    (capped.root / "memories" / "user" / "long.md").write_text("---\nid: " + "A" * 3000 + "\n---\nbody\n")
    reason = _errors_by_path(capped.reindex().errors)["memories/user/long.md"]
    assert "must be letters, digits, '_' or '-' (at most 64)" in reason
    assert "AAAA" in reason and "3000 characters" in reason and len(reason) < 200


def test_two_files_claiming_one_id(capped: Vault) -> None:
    folder = capped.root / "memories" / "user"
    (folder / "a-first.md").write_text("---\nid: SAME1\n---\nThe first claimant talks about otters.\n")
    (folder / "b-second.md").write_text("---\nid: SAME1\n---\nThe second claimant talks about beavers.\n")
    report = capped.reindex()
    assert _errors_by_path(report.errors) == {
        "memories/user/b-second.md": "id SAME1 is also claimed by memories/user/a-first.md "
        "(a copy? delete its id line to give it its own)"
    }
    assert capped.get("SAME1").path == "memories/user/a-first.md"
    _assert_good_searchable(capped)
    assert "memories/user/b-second.md" in _errors_by_path(health.drift(capped).errors)

    # The clash depends on the other file: once it is gone, the second is indexed.
    (folder / "a-first.md").unlink()
    report = capped.reindex()
    assert report.errors == []
    assert capped.get("SAME1").path == "memories/user/b-second.md"
    assert capped.search("beavers")[0].id == "SAME1"
    assert health.drift(capped).clean


@pytest.mark.both_backends
def test_a_copy_is_indexed_when_the_watcher_sees_the_first_claimant_go(capped: Vault) -> None:
    """Found from outside: with `memex watch` running, deleting the file that held
    an id left its copy (refused for the clash) unindexed and the memory out of
    search until the periodic reconcile, and doctor named the deleted file."""
    folder = capped.root / "memories" / "user"
    (folder / "a-first.md").write_text("---\nid: SAME1\n---\nThe first claimant talks about otters.\n")
    (folder / "b-second.md").write_text("---\nid: SAME1\n---\nThe second claimant talks about beavers.\n")
    capped.reindex()
    assert "memories/user/b-second.md" in _errors_by_path(health.drift(capped).errors)

    (folder / "a-first.md").unlink()
    # What the watcher does with the delete event: only the deleted path.
    capped.indexer.index_paths(["memories/user/a-first.md"], verify=True)
    assert capped.get("SAME1").path == "memories/user/b-second.md"
    assert capped.search("beavers")[0].id == "SAME1"
    assert health.drift(capped).clean


def test_write_through_refuses_a_link_outside(capped: Vault, outside: Path) -> None:
    """The watcher's path (index_paths) applies the same rule as reindex."""
    link = capped.root / "memories" / "user" / "secret.md"
    os.symlink(outside / "secret.md", link)
    capped.indexer.index_paths(["memories/user/secret.md"])
    _no_secret(capped)


def test_corrupt_index_says_how_to_rebuild(vault_root: Path) -> None:
    from memex.errors import IndexStoreError

    with Vault(vault_root, embedder=HashEmbedder()) as v:
        v.add("A memory that survives a corrupt index")
    for f in (vault_root / ".memex").glob("index.db-*"):
        f.unlink()
    (vault_root / ".memex" / "index.db").write_bytes(b"this is not sqlite" * 300)
    with pytest.raises(IndexStoreError, match=r"delete index\.db\* and run `memex reindex`"):
        Vault(vault_root, embedder=HashEmbedder()).search("memory")
    (vault_root / ".memex" / "index.db").unlink()
    with Vault(vault_root, embedder=HashEmbedder()) as v:
        assert v.reindex().added == 1
        assert v.search("survives corrupt index")[0].body.startswith("A memory that survives")


@pytest.mark.parametrize(
    "config, message",
    [
        ("[index\n", "config.toml: "),
        ('[index]\nmax_file_bytes = "big"\n', "max_file_bytes must be int, got 'big'"),
        ("[index]\nmax_file_bytes = -1\n", "index.max_file_bytes must be positive"),
        ("index = 3\n", "[index] must be a table"),
    ],
)
def test_bad_config_is_one_clear_error(vault_root: Path, config: str, message: str) -> None:
    from memex.errors import ConfigError

    (vault_root / ".memex" / "config.toml").write_text(config)
    with pytest.raises(ConfigError) as info:
        Vault(vault_root)
    assert message in str(info.value) and str(vault_root / ".memex" / "config.toml") in str(info.value)


def test_a_file_swapped_for_an_outside_link_is_not_read(capped: Vault, outside: Path) -> None:
    """A memory file replaced by a link after indexing (a git pull, say)."""
    capped.reindex()
    hit = capped.search("giraffe enclosure")[0]
    good = capped.root / hit.path
    good.unlink()
    os.symlink(outside / "secret.md", good)
    with pytest.raises(MemoryFileError, match="points outside the vault"):
        capped.get(hit.id)
    with pytest.raises(MemoryFileError, match="points outside the vault"):
        update_meta(capped, hit.id, {"category": "x"})
    assert (outside / "secret.md").read_text() == "The zebra password is hunter2.\n"
    capped.reindex()
    _no_secret(capped)


def test_an_indexed_file_swapped_for_an_outside_link_leaves_the_index(capped: Vault, outside: Path) -> None:
    capped.reindex()
    good = capped.root / "memories" / "user" / "good.md"
    good.unlink()
    os.symlink(outside / "secret.md", good)
    report = capped.reindex()
    assert report.removed == 1
    assert capped.list() == [] and capped.search("giraffe enclosure") == []
    _no_secret(capped)


@pytest.mark.parametrize("query", ['"', "*", "NEAR(a b)", "-", "a:b", "AND OR NOT (", "😀", "' OR 1=1 --", "^", "{}", "col:x*"])
def test_fts_syntax_in_a_query_is_just_text(capped: Vault, query: str) -> None:
    capped.reindex()
    if tokens(query):
        hits = capped.search(query)
        assert all(h.path == "memories/user/good.md" for h in hits)
    else:  # no words at all: the one error an empty query gets, never FTS5's syntax error
        with pytest.raises(InvalidArgument, match="query: has no words to search for"):
            capped.search(query)
    assert capped.search(f"giraffe {query}")[0].path == "memories/user/good.md"
