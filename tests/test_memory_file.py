"""Memory files: exact round trips, atomic writes, hand-written files."""

from __future__ import annotations

import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memex.files import memory_file
from memex.errors import MemoryFileError
from memex.files.memory_file import KNOWN_KEYS, MemoryFile
from memex.vault import Vault
from memex.meta_edit import update_meta
from tests.fakes import HashEmbedder
from tests.hypokit import examples

# Text a person could put in a file: any Unicode except surrogates and NUL
# (a NUL marks a binary file).
file_text = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"], exclude_characters="\x00"), max_size=300
)
bodies = file_text.filter(lambda b: any(c.isalnum() for c in b))
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**62), max_value=2**62),
    st.floats(allow_nan=False, allow_infinity=True),
    file_text,
    st.sampled_from(["2026-11-30", "2026-11-30T10:00:00Z", "yes", "no", "null", "~", "0x1F", "1e3", "'q'", "a: b"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(min_size=1, max_size=8), inner, max_size=4),
    max_leaves=8,
)
unknown_keys = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]), min_size=1, max_size=12
).filter(lambda k: k not in KNOWN_KEYS and k.strip() == k)


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    return bool(a == b and type(a) is type(b)) if not isinstance(a, (list, dict)) else bool(a == b)


@settings(max_examples=examples(200))
@given(st.dictionaries(unknown_keys, values, max_size=5), file_text)
def test_serialize_then_parse_is_exact(meta: dict[str, Any], body: str) -> None:
    mf = MemoryFile({"id": "01ABC", **meta}, body)
    back = memory_file.parse(memory_file.serialize(mf), Path("x.md"))
    assert back.body == body
    assert back.meta == mf.meta
    assert all(_same(back.meta[k], v) for k, v in mf.meta.items())


@pytest.fixture
def fresh(vault_root: Path) -> Iterator[Vault]:
    with Vault(vault_root, embedder=HashEmbedder()) as v:
        yield v


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(meta=st.dictionaries(unknown_keys, values, max_size=4), body=bodies, category=st.text(min_size=1, max_size=10).filter(str.strip))
def test_update_meta_keeps_unknown_keys_and_the_body_exactly(
    fresh: Vault, meta: dict[str, Any], body: str, category: str
) -> None:
    """update_meta rewrites a hand-written file: everything else survives."""
    folder = fresh.root / "memories" / "user"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "prop.md"
    path.write_bytes(memory_file.serialize(MemoryFile({"id": "prop1", **meta}, body)).encode("utf-8"))
    report = fresh.reindex()
    assert not report.errors, report.errors
    shown = fresh.get("prop1").as_dict()["created"]  # from the file's mtime: no created key
    update_meta(fresh, "prop1", {"category": category})
    back, _ = memory_file.read(path, 10**7)
    assert back.body == body
    # ... and the date memex showed is written down, or the rewrite would change it (docs/vault.md).
    assert back.meta == {"id": "prop1", **meta, "category": category, "created": shown}
    assert fresh.get("prop1").body == body
    path.unlink()
    fresh.reindex()


def test_hand_formatted_frontmatter_keeps_its_values(fresh: Vault) -> None:
    path = fresh.root / "memories" / "user" / "hand.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        "---\nid: hand1\ncreated: 2026-01-02T03:04:05+01:00\nreviewed: 2026-02-03\n"
        "my_tags: [a, b]\nnested: {k: [1, 2.5, true, null]}\nquoted: 'yes'\n---\n"
        "  Body with leading spaces,\n\n\ttabs, trailing spaces   \nand no final newline"
    )
    fresh.reindex()
    update_meta(fresh, "hand1", {"superseded_by": "other1"})
    back, _ = memory_file.read(path, 10**6)
    assert back.meta["created"] == "2026-01-02T03:04:05+01:00"  # not a datetime, not reformatted
    assert back.meta["reviewed"] == "2026-02-03"
    assert back.meta["my_tags"] == ["a", "b"]
    assert back.meta["nested"] == {"k": [1, 2.5, True, None]}
    assert back.meta["quoted"] == "yes"
    assert back.meta["superseded_by"] == "other1"
    assert back.body == "  Body with leading spaces,\n\n\ttabs, trailing spaces   \nand no final newline"
    assert list(back.meta)[:3] == ["id", "created", "superseded_by"]  # known keys first


def test_update_meta_with_none_removes_a_key(fresh: Vault) -> None:
    added = fresh.add("Prefer short commit messages", category="preference")
    update_meta(fresh, added.id, {"category": None})
    assert "category" not in fresh.get(added.id).meta
    assert fresh.get(added.id).body == "Prefer short commit messages\n"


def test_crlf_and_bom_files_are_read() -> None:
    mf = memory_file.parse("---\r\nid: abc\r\n---\r\nbody\r\n", Path("x.md"))
    assert mf.meta == {"id": "abc"} and mf.body == "body\r\n"
    text = memory_file.decode("\ufeff---\nid: abc\n---\nbody\n".encode("utf-8"), Path("x.md"))
    assert memory_file.parse(text, Path("x.md")).meta == {"id": "abc"}


def test_hand_written_file_without_frontmatter(fresh: Vault) -> None:
    path = fresh.root / "memories" / "project" / "notes" / "todo.md"
    path.parent.mkdir(parents=True)
    path.write_text("# Release checklist\n\nBump the version before tagging.\n")
    report = fresh.reindex()
    assert report.added == 1
    hit = fresh.search("bump version tagging")[0]
    assert hit.scope == "project:notes"
    assert hit.source == "file"
    memory = fresh.get(hit.id)
    assert memory.meta == {}
    assert memory.body == "# Release checklist\n\nBump the version before tagging.\n"
    # Setting a key adds frontmatter; the body stays, and so does the id (from its path).
    # The date memex showed (the file's mtime) is written down: the rewrite changes the mtime.
    update_meta(fresh, hit.id, {"category": "process"})
    assert path.read_text() == (
        f"---\ncategory: process\ncreated: {hit.created}\n---\n# Release checklist\n\nBump the version before tagging.\n"
    )
    assert fresh.get(hit.id).meta == {"category": "process", "created": hit.created}
    assert fresh.get(hit.id).as_dict()["source"] == "file"


def test_empty_frontmatter_is_a_memory() -> None:
    mf = memory_file.parse("---\n---\nJust a body\n", Path("x.md"))
    assert mf.meta == {} and mf.body == "Just a body\n" and mf.has_frontmatter


def test_a_body_with_rule_lines_is_kept() -> None:
    text = "---\nid: r1\n---\nabove\n---\nbelow\n---\n"
    mf = memory_file.parse(text, Path("x.md"))
    assert mf.body == "above\n---\nbelow\n---\n"
    assert memory_file.serialize(mf) == text


def _temp_files(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.startswith(".memex-")]


@pytest.mark.parametrize("failing", ["fsync", "replace"])
def test_failed_write_leaves_the_old_file_and_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str
) -> None:
    path = tmp_path / "m.md"
    memory_file.atomic_write(path, "---\nid: a1\n---\nold body\n")

    def boom(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, failing, boom)
    with pytest.raises(OSError, match="No space left"):
        memory_file.atomic_write(path, "---\nid: a1\n---\nnew body\n")
    monkeypatch.undo()
    assert path.read_text() == "---\nid: a1\n---\nold body\n"
    assert _temp_files(tmp_path) == []


def test_failed_update_meta_leaves_file_and_index_unchanged(fresh: Vault, monkeypatch: pytest.MonkeyPatch) -> None:
    added = fresh.add("Deploys happen on Tuesdays", category="process")
    path = fresh.root / added.path
    before = path.read_bytes()

    def boom(*args: object) -> None:
        raise OSError(5, "Input/output error")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        update_meta(fresh, added.id, {"category": "schedule"})
    monkeypatch.undo()
    assert path.read_bytes() == before
    assert _temp_files(path.parent) == []
    assert fresh.get(added.id).meta["category"] == "process"
    assert fresh.reindex().unchanged == 1


def test_written_files_are_utf8_and_readable_by_hand(fresh: Vault) -> None:
    added = fresh.add("数据库使用 SQLite，开启 WAL 模式", scope="project:memex", entities=["SQLite"])
    text = (fresh.root / added.path).read_text(encoding="utf-8")
    assert "数据库使用 SQLite，开启 WAL 模式" in text  # not \u-escaped
    assert "entities:\n- SQLite\n" in text
    assert text.endswith("---\n数据库使用 SQLite，开启 WAL 模式\n")


def test_unreadable_file_names_its_path(tmp_path: Path) -> None:
    path = tmp_path / "gone.md"
    with pytest.raises(MemoryFileError) as info:
        memory_file.read(path, 1000)
    assert info.value.path == str(path) and "cannot read" in info.value.reason


# Characters that build YAML structure, without "&" and "*" (anchors, aliases).
_YAML_BITS = st.sampled_from(["[", "]", "{", "}", "- ", ": ", "? ", "\n", "  ", "a", "b: ", "'x'", ",", "#c"])


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(_YAML_BITS, max_size=120).map("".join))
def test_the_yaml_scan_is_skipped_only_where_it_could_not_object(fm: str) -> None:
    """The fast path of the safety check: no "&", no "*" and at most 50 level
    openers. The token scan then finds no anchor and no deep nesting (at most
    a syntax error, which loading the YAML reports the same way)."""
    openers = sum(fm.count(c) for c in "[{-:?")
    if openers > memory_file.MAX_YAML_DEPTH:
        return
    try:
        memory_file._scan_yaml(fm, Path("m.md"))
    except MemoryFileError as exc:
        assert exc.reason.startswith("broken YAML"), exc.reason


def test_deep_block_nesting_on_one_line_is_still_refused() -> None:
    fm = "- " * 60 + "x\n"
    with pytest.raises(MemoryFileError, match="nested deeper"):
        memory_file.parse(f"---\n{fm}---\nbody\n", Path("m.md"))
