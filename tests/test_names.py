"""Scope and session names reach the file system only through safe_name."""

from __future__ import annotations

import re
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memex.errors import InvalidArgument
from memex.files.names import MAX_NAME, check_scope, safe_name, scope_dir_parts, scope_from_dir_parts, slug
from tests.hypokit import examples

WINDOWS_ILLEGAL = set('<>:"/\\|?*') | {chr(c) for c in range(32)} | {"\x7f"}
WINDOWS_RESERVED = {"con", "prn", "aux", "nul"} | {f"com{i}" for i in range(1, 10)} | {f"lpt{i}" for i in range(1, 10)}
HASHED = re.compile(r"(^h-[0-9a-f]{16}$)|(-[0-9a-f]{7}$)")

names = st.text(min_size=0, max_size=120)
# Names made of the characters that matter: separators, dots, spaces, illegal ones.
tricky = st.lists(
    st.sampled_from(list("ab./\\:*?<>|\"\x00\n -_.é") + ["e\u0301", "CON", "nul", "-0123abc"]), max_size=12
).map("".join)


def assert_safe(out: str) -> None:
    assert out, "empty name"
    assert out not in {".", ".."}
    assert not (set(out) & WINDOWS_ILLEGAL), out
    assert "/" not in out and "\\" not in out
    assert not out.startswith("."), "hidden (or relative) name"
    assert not out.endswith((".", " ")), "Windows drops trailing dots and spaces"
    assert out == out.strip(), "no invisible edges"
    assert out.split(".")[0].strip().lower() not in WINDOWS_RESERVED
    assert len(out) <= MAX_NAME
    assert unicodedata.normalize("NFC", out) == out


@settings(max_examples=examples(300))
@given(st.one_of(names, tricky))
def test_safe_name_output_is_a_legal_path_component_everywhere(name: str) -> None:
    assert_safe(safe_name(name))


@settings(max_examples=examples(300))
@given(st.one_of(names, tricky))
def test_safe_name_is_deterministic_and_idempotent(name: str) -> None:
    out = safe_name(name)
    assert safe_name(name) == out
    assert safe_name(out) == out  # a folder name memex made is recognised as its own


def _naive_forms(name: str) -> set[str]:
    """What a sanitizer without a hash would turn ``name`` into, step by step:
    the names that would collide with it if safe_name only cleaned."""
    cleaned = unicodedata.normalize("NFC", name).strip()
    dashed = re.sub(r'[<>:"/\\|?*\x00-\x1f\x7f]', "-", cleaned)
    collapsed = re.sub(r"-{2,}", "-", dashed)
    trimmed = re.sub(r"^[\s.-]+|[\s.-]+$", "", collapsed)
    forms = {cleaned, dashed, collapsed, trimmed, "_" + trimmed, trimmed[: MAX_NAME - 9]}
    return {f for f in forms if f}


@settings(max_examples=examples(500))
@given(tricky, tricky)
def test_distinct_names_collide_only_through_a_hash(head: str, tail: str) -> None:
    # A separator in the middle: this name always needs cleaning.
    name = f"{head}/{tail}"
    out = safe_name(name)
    assert HASHED.search(out), (name, out)  # a cleaned name carries a hash of the original
    for other in _naive_forms(name) - {name, out}:
        assert safe_name(other) != out, (name, other, out)
    assert safe_name(out) == out  # the one other name that meets it is the output itself


@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), min_size=1, max_size=40))
def test_safe_name_is_usable_as_a_real_folder(tmp_path_factory: pytest.TempPathFactory, name: str) -> None:
    base = tmp_path_factory.getbasetemp() / "names"
    base.mkdir(exist_ok=True)
    folder = base / safe_name(name)
    folder.mkdir(exist_ok=True)
    assert folder.parent == base  # one component, never a way out


@pytest.mark.parametrize(
    "name",
    ["..", ".", "../../etc", "a/b", "a\\b", "C:", "con", "CON.txt", "lpt1", "  ", "", "\x00", "???", "a" * 200],
)
def test_dangerous_names_are_made_safe(name: str) -> None:
    out = safe_name(name)
    assert_safe(out)
    assert out != name


def test_readable_names_stay_as_they_are() -> None:
    for name in ("memex", "my-project", "client_2026", "数据库", "Memex Notes"):
        assert safe_name(name) == name


def test_mangled_names_keep_a_readable_stem() -> None:
    out = safe_name("acme/web")
    assert out.startswith("acme-web-") and HASHED.search(out)
    assert safe_name("acme:web") != out  # same stem, different original


def test_trimmed_or_renormalized_names_do_not_collide_with_the_plain_one() -> None:
    assert safe_name(" memex") != safe_name("memex")
    assert safe_name("cafe\u0301") != safe_name("caf\u00e9")


def test_a_name_cut_at_a_dash_is_still_a_fixed_point() -> None:
    """Found by the collision test: a name cut to fit just after a dash got
    "--" before its hash, which safe_name then collapsed (and hashed again)."""
    name = "CON.CONaaa-0123abc-0123abc-0123abc/aaaaCONCON-0123abc-0123abc"
    out = safe_name(name)
    assert "--" not in out and len(out) <= MAX_NAME
    assert safe_name(out) == out


def test_scope_folders() -> None:
    assert scope_dir_parts("user") == ["user"]
    assert scope_dir_parts("project:memex") == ["project", "memex"]
    parts = scope_dir_parts("project:../../etc")
    assert len(parts) == 2 and all(p not in {"..", "."} and "/" not in p for p in parts)
    assert Path("memories", *parts).resolve().is_relative_to(Path("memories").resolve())
    assert scope_dir_parts("nul")[0] != "nul"
    assert scope_from_dir_parts(["project", "memex"], "user") == "project:memex"
    assert scope_from_dir_parts([], "user") == "user"


@pytest.mark.parametrize("scope", ["", "  ", "Project:x", "../x", "project:", "1abc", "a b:c"])
def test_bad_scopes_are_refused(scope: str) -> None:
    with pytest.raises(InvalidArgument) as info:
        check_scope(scope)
    assert info.value.argument == "scope"


def test_slug_is_safe_and_readable() -> None:
    assert slug("Use WAL mode for the SQLite index, always!") == "use-wal-mode-for-the-sqlite-index-always"
    assert slug("数据库使用 SQLite") == "数据库使用-sqlite"
    assert slug("!!!") == "memory"
    assert_safe(slug("../../" * 30))
