"""The merge rules for memory files and the erased list, alone and as a real git merge driver."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memex.files.memory_file import MemoryFile, parse, serialize
from memex.team.merge import CONFLICT_KEY, conflict_id, merge_erased, merge_memory, merge_meta
from memex.team.wiring import ensure
from memex.team.gitrepo import Repo
from tests.team_helpers import git
from tests.hypokit import examples

PATH = "memories/user/api-token-abc123.md"


def doc(body: str, **meta: object) -> str:
    return serialize(MemoryFile({"id": "01ABC", **meta}, body, True))


def meta_of(text: str) -> dict[str, object]:
    return parse(text, Path(PATH)).meta


def test_one_side_changes_win_without_conflict() -> None:
    base = doc("token rotates monthly", confidence=0.8, category="fact")
    ours = doc("token rotates monthly", confidence=0.9, category="fact")
    theirs = doc("token rotates weekly", confidence=0.8, category="fact")
    merged = merge_memory(base, ours, theirs, PATH)
    assert merged.extra_name is None
    assert meta_of(merged.text)["confidence"] == 0.9
    assert parse(merged.text, Path(PATH)).body == "token rotates weekly"


def test_confidence_changed_on_both_sides_takes_the_newer_side() -> None:
    base, ours, theirs = (doc("x", confidence=c) for c in (0.5, 0.9, 0.6))
    assert meta_of(merge_memory(base, ours, theirs, PATH, newer="theirs").text)["confidence"] == 0.6
    assert meta_of(merge_memory(base, ours, theirs, PATH, newer="ours").text)["confidence"] == 0.9
    # No time to go by: the higher value, whichever side git calls ours.
    assert meta_of(merge_memory(base, theirs, ours, PATH).text)["confidence"] == 0.9


def test_entities_merge_as_sets() -> None:
    base = doc("x", entities=["sqlite", "git"])
    ours = doc("x", entities=["sqlite", "git", "python"])  # added python
    theirs = doc("x", entities=["sqlite", "rust"])  # removed git, added rust
    assert meta_of(merge_memory(base, ours, theirs, PATH).text)["entities"] == ["sqlite", "python", "rust"]


def test_supersede_links_set_on_either_side_are_kept() -> None:
    base = doc("x")
    ours = doc("x", superseded_by="01NEWB")
    theirs = doc("x", superseded_by="01NEWA", supersedes="01OLD")
    meta = meta_of(merge_memory(base, ours, theirs, PATH, newer="ours").text)
    assert meta["superseded_by"] == "01NEWA"  # both set: the smaller id, on either side's turn
    assert meta["supersedes"] == "01OLD"
    # A link one side cleared while the other changed it stays set.
    merged = merge_meta({"superseded_by": "A"}, {}, {"superseded_by": "B"}, "ours")
    assert merged["superseded_by"] == "B"


def test_body_edited_on_both_sides_keeps_both_versions_linked() -> None:
    base = doc("the api token rotates every 30 days", confidence=0.8)
    ours = doc("the api token rotates every 14 days", confidence=0.8)
    theirs = doc("the api token rotates every 60 days", confidence=0.8)
    merged = merge_memory(base, ours, theirs, PATH, newer="theirs")
    kept = parse(merged.text, Path(PATH))
    assert kept.body == "the api token rotates every 60 days" and kept.meta["id"] == "01ABC"
    assert merged.extra_text is not None and merged.extra_name is not None
    extra = parse(merged.extra_text, Path(merged.extra_name))
    assert extra.body == "the api token rotates every 14 days"
    assert extra.meta[CONFLICT_KEY] == "01ABC"
    assert extra.meta["id"] == conflict_id("01ABC", extra.body) == merged.conflict_id
    for text in (merged.text, merged.extra_text):
        assert "<<<<<<<" not in text and ">>>>>>>" not in text


def test_the_same_conflict_resolved_twice_makes_the_same_second_memory() -> None:
    base, ours, theirs = doc("v0"), doc("v1"), doc("v2")
    first = merge_memory(base, ours, theirs, PATH)
    second = merge_memory(base, theirs, ours, PATH)  # git's sides swapped (a merge, not a rebase)
    assert (first.text, first.extra_name, first.extra_text) == (second.text, second.extra_name, second.extra_text)


def test_a_side_that_is_not_a_memory_file_keeps_both_texts() -> None:
    broken = "---\nid: [unclosed\n---\nbody\n"
    merged = merge_memory(doc("v0"), broken, doc("v2"), PATH)
    assert merged.text == broken and merged.extra_text == doc("v2")


def test_erased_lists_merge_as_a_union() -> None:
    base = "aa\n"
    assert merge_erased(base, "aa\nbb\n", "aa\ncc\n") == "aa\nbb\ncc\n"
    assert merge_erased("", "bb\n", "bb\ncc\n") == "bb\ncc\n"


def _erased_now(text: str, digest: str) -> bool:
    """The erased list's rule: the last line about a digest decides."""
    state = False
    for line in text.splitlines():
        parts = line.split()
        if parts == [digest]:
            state = True
        elif parts == ["allow", digest]:
            state = False
    return state


def test_an_erasure_beats_a_concurrent_allow_back() -> None:
    allowed, erased_again = "aa\nallow aa\n", "aa\nallow aa\naa\n"
    base = "aa\nallow aa\n"
    assert _erased_now(merge_erased(base, base, erased_again), "aa")
    relisted, allowed_back = "aa\naa\n", "aa\nallow aa\n"
    for ours, theirs in ((relisted, allowed_back), (allowed_back, relisted)):
        assert _erased_now(merge_erased("aa\n", ours, theirs), "aa"), (ours, theirs)
    del allowed


_words = st.lists(st.sampled_from(["alpha", "beta", "gamma", "delta"]), max_size=3, unique=True)


@settings(max_examples=examples(150), deadline=None)
@given(base=_words, ours=_words, theirs=_words, conf=st.tuples(*(st.sampled_from([0.2, 0.5, 0.9]),) * 3),
       bodies=st.tuples(*(st.sampled_from(["one", "two", "three"]),) * 3))
def test_merging_is_the_same_whichever_side_git_calls_ours(
    base: list[str], ours: list[str], theirs: list[str], conf: tuple[float, float, float], bodies: tuple[str, str, str]
) -> None:
    b = doc(bodies[0], confidence=conf[0], entities=base)
    o = doc(bodies[1], confidence=conf[1], entities=ours)
    t = doc(bodies[2], confidence=conf[2], entities=theirs)
    one, two = merge_memory(b, o, t, PATH), merge_memory(b, t, o, PATH)
    assert sorted(meta_of(one.text)["entities"]) == sorted(meta_of(two.text)["entities"])  # type: ignore[arg-type]
    assert meta_of(one.text)["confidence"] == meta_of(two.text)["confidence"]
    kept = {parse(one.text, Path(PATH)).body, parse(one.extra_text, Path(PATH)).body if one.extra_text else None}
    assert {bodies[1], bodies[2]} <= kept | {bodies[0]} or bodies[1] == bodies[2]
    assert "<<<<<<<" not in one.text


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "t")
    git(root, "config", "user.email", "t@example.org")
    return root


def test_git_uses_the_driver_and_leaves_no_conflict_marker(repo: Path) -> None:
    """A real `git merge` of two branches that both edited one memory's body."""
    ensure(Repo(repo), repo)
    path = repo / PATH
    path.parent.mkdir(parents=True)
    path.write_text(doc("the api token rotates every 30 days", entities=["api"]))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    git(repo, "switch", "-qc", "other")
    path.write_text(doc("the api token rotates every 60 days", entities=["api", "vault"]))
    git(repo, "commit", "-qam", "other")
    git(repo, "switch", "-q", "main")
    path.write_text(doc("the api token rotates every 14 days", entities=["api", "tokens"]))
    git(repo, "commit", "-qam", "main")
    done = subprocess.run(["git", "merge", "-q", "--no-edit", "other"], cwd=repo, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    texts = [p.read_text() for p in path.parent.glob("*.md")]
    assert len(texts) == 2
    assert not any("<<<<<<<" in t or "=======" in t for t in texts)
    bodies = sorted(parse(t, Path(PATH)).body for t in texts)
    assert bodies == ["the api token rotates every 14 days", "the api token rotates every 60 days"]
    assert meta_of(path.read_text())["entities"] == ["api", "tokens", "vault"]


def test_the_driver_command_is_this_python() -> None:
    from memex.team.wiring import drivers

    assert all(sys.executable in v for k, v in drivers().items() if k.endswith(".driver"))


def test_conflict_markers_split_into_their_two_sides() -> None:
    from memex.team.merge import split_markers

    text = "---\nid: X\n---\n<<<<<<< ours\nA\n||||||| base\nO\n=======\nB\n>>>>>>> theirs\ntail\n"
    assert split_markers(text) == ("---\nid: X\n---\nA\ntail\n", "---\nid: X\n---\nB\ntail\n")
    assert split_markers("no markers\n") is None
    assert split_markers("<<<<<<< ours\nA\n=======\nB\n") is None  # never closed: not ours to guess
    assert split_markers("a line\n=======\nunderline\n") is None
