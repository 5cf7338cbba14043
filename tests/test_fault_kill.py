"""kill -9 at each write step of add, reindex, erase, supersede and consolidate (docs/reliability.md).

Each case runs one operation in a subprocess with ``MEMEX_CRASH_AT`` naming a
crash point (memex/faults.py), checks that the process really died by
SIGKILL there, then reopens the vault as the next memex command would
(``reindex``) and checks: the files and the index agree, no temp file is
left, an add is all or nothing, a supersede can be finished by running it
again, a consolidation leaves each file old or new and can be finished by
running it again, and no byte of erased text is left anywhere under the vault (after
running the killed erase again when the kill came before its files were
deleted: until then doctor names the file).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from memex import health
from memex.files import memory_file
from memex.files import orphans
from memex.vault import Vault, init_vault
from memex.erase.steps import erase
from memex.consolidation.consolidate import consolidate
from memex.consolidation.supersede import supersede
from tests.fakes import HashEmbedder
from tests.faultkit import leaked_bytes, report
from tests.test_meta_batch import write_session

REPO = Path(__file__).resolve().parent.parent
SECRET = "Zqorblax keeps the Xjuimbrelk storage unit key under the mat"
SECRET_WORDS = {"Zqorblax", "Xjuimbrelk"}
NEW = "Quillfeather ordered the Brambleton lanterns for the winter fair"
NEWER = "Quillfeather ordered the Brambleton lanterns for the spring fair instead"

CHILD = r"""
import json, sys
sys.path.insert(0, sys.argv[1])
from memex.vault import Vault
from memex.consolidation.consolidate import consolidate
from memex.consolidation.supersede import supersede
from memex.erase.steps import erase
from tests.fakes import HashEmbedder
root, op, arg = sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
with Vault(root, embedder=HashEmbedder()) as v:
    if op == "add":
        v.add(arg["text"])
    elif op == "reindex":
        v.reindex()
    elif op == "erase":
        erase(v, arg["id"], reason="fault suite")
    elif op == "supersede":
        supersede(v, arg["id"], arg["text"])
    elif op == "consolidate":
        consolidate(v, arg["session"])
"""


def run_child(root: Path, op: str, arg: dict[str, str], point: str | None, nth: int = 1) -> int:
    env = {**os.environ, "MEMEX_CRASH_NTH": str(nth)}
    env.pop("MEMEX_CRASH_AT", None)
    if point is not None:
        env["MEMEX_CRASH_AT"] = point
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(REPO), str(root), op, json.dumps(arg)],
        env=env, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode in (0, -signal.SIGKILL), done.stderr
    return done.returncode


def reopen(root: Path) -> Vault:
    vault = Vault(root, embedder=HashEmbedder())
    vault.reindex()  # what the next reindex / watcher start / doctor --fix does
    return vault


def assert_consistent(vault: Vault, allow_restored: bool = False) -> None:
    found = health.drift(vault)
    assert found.differing == 0 and not found.unembedded and not found.orphan_vectors, found.as_dict()
    assert found.temp_files == [] and orphans.find_orphans(vault.root) == []
    other = [e for e in found.errors if e["path"] not in found.erased_restored]
    assert other == [] and (allow_restored or not found.erased_restored), found.errors
    assert not list(vault.root.rglob(".memex-*.tmp"))


def search_ids(vault: Vault, query: str) -> list[str]:
    return [h.id for h in vault.search(query, limit=20)]


def found_with(vault: Vault, word: str) -> list[str]:
    """Ids that search returns for ``word`` and whose body holds it (the fake embedder ranks everything)."""
    return [h.id for h in vault.search(word, limit=50) if word.lower() in h.body.lower()]


@pytest.fixture
def root(tmp_path: Path) -> Path:
    return init_vault(tmp_path / "vault", git=False)


ADD_POINTS = [("write.temp", 1), ("write.replaced", 1), ("index.commit", 1), ("index.committed", 1)]


@pytest.mark.parametrize(("point", "nth"), ADD_POINTS, ids=[p for p, _ in ADD_POINTS])
def test_kill_during_add_is_all_or_nothing(root: Path, point: str, nth: int) -> None:
    with Vault(root, embedder=HashEmbedder()) as v:
        keep = v.add("The bike lock combination changed in March")
    assert run_child(root, "add", {"text": NEW}, point, nth) == -signal.SIGKILL
    with reopen(root) as vault:
        assert_consistent(vault)
        files = [p for p in (root / "memories").rglob("*.md") if NEW in p.read_text()]
        hits = found_with(vault, "Quillfeather")
        # All or nothing: a file that got its name is indexed; otherwise no trace.
        assert len(files) == len(hits) <= 1
        if point == "write.temp":
            assert files == []
        else:
            assert len(files) == 1  # renamed into place before the kill: the add happened
        assert keep.id in search_ids(vault, "bike lock combination")
        # The user runs the add again: one memory either way.
        again = vault.add(NEW)
        assert again.status in ("created", "duplicate")
        assert len(found_with(vault, "Quillfeather")) == 1
    report("kill-add", 1, 1, 0)


REINDEX_POINTS = [("index.commit", 1), ("index.commit", 2), ("index.committed", 2), ("write.temp", 1)]


@pytest.mark.parametrize(("point", "nth"), REINDEX_POINTS, ids=[f"{p}-{n}" for p, n in REINDEX_POINTS])
def test_kill_during_reindex_then_reindex_agrees(root: Path, point: str, nth: int) -> None:
    folder = root / "memories" / "bulk"
    folder.mkdir(parents=True)
    for i in range(600):  # three batches of 256
        (folder / f"note-{i:03}.md").write_text(f"Bulk note {i} about harbour crane {i * 7}\n")
    code = run_child(root, "reindex", {}, point, nth)
    if point == "write.temp":
        assert code == 0  # a reindex writes no memory file: the point is never reached
        faults = 0
    else:
        assert code == -signal.SIGKILL
        faults = 1
    with reopen(root) as vault:
        assert_consistent(vault)
        assert vault.backend.conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 600
    report("kill-reindex", 1, faults, 0)


ERASE_POINTS = [("erase.listed", 1), ("erase.deleted", 1), ("erase.purged", 1)]


@pytest.mark.parametrize("edited", [False, True], ids=["as-indexed", "edited-by-hand"])
@pytest.mark.parametrize(("point", "nth"), ERASE_POINTS, ids=[p for p, _ in ERASE_POINTS])
def test_kill_during_erase_leaves_nothing_findable(root: Path, point: str, nth: int, edited: bool) -> None:
    with Vault(root, embedder=HashEmbedder()) as v:
        keep = v.add("The bike lock combination changed in March")
        secret = v.add(SECRET, entities=["Zqorblax Storage"])
        path = root / v.get(secret.id).path
        if edited:  # by hand since it was indexed: both texts are erased
            path.write_text(path.read_text().replace("under the mat", "under the blue mat"))
        else:  # indexed long after its mtime: a sync trusts its stat and does not read it again
            os.utime(path, (1_700_000_000, 1_700_000_000))
            v.reindex()
    assert run_child(root, "erase", {"id": secret.id}, point, nth) == -signal.SIGKILL
    with reopen(root) as vault:
        # Whatever the kill interrupted, the erased text is never searchable again.
        assert secret.id not in search_ids(vault, "zqorblax storage unit key")
        assert vault.backend.conn.execute("SELECT count(*) FROM memories WHERE body LIKE '%Zqorblax%'").fetchone()[0] == 0
        if path.exists():
            # Killed before the file went: doctor names it, and the erase is run again.
            assert point in ("erase.listed",) and health.drift(vault).erased_restored == [path.relative_to(root).as_posix()]
            erase(vault, secret.id, reason="finish the killed erase")
        assert_consistent(vault)
        leaked = leaked_bytes(root, SECRET_WORDS)
        assert leaked == {}
        assert keep.id in search_ids(vault, "bike lock combination")
        assert vault.add(SECRET).status == "refused"
    report("kill-erase", 1, 1, sum(leaked.values()), erasures=1)


SUPERSEDE_POINTS = [
    ("write.temp", 1), ("write.replaced", 1), ("index.committed", 1), ("supersede.added", 1),
    ("write.temp", 2), ("write.replaced", 2), ("index.commit", 2),
]


@pytest.mark.parametrize(("point", "nth"), SUPERSEDE_POINTS, ids=[f"{p}-{n}" for p, n in SUPERSEDE_POINTS])
def test_kill_during_supersede_can_be_finished(root: Path, point: str, nth: int) -> None:
    with Vault(root, embedder=HashEmbedder()) as v:
        old = v.add(NEW)
    assert run_child(root, "supersede", {"id": old.id, "text": NEWER}, point, nth) == -signal.SIGKILL
    with reopen(root) as vault:
        assert_consistent(vault)
        assert vault.get(old.id).body.strip() == NEW  # nothing written is lost
        copies = [p for p in (root / "memories").rglob("*.md") if "spring fair" in p.read_text()]
        assert len(copies) <= 1
        if vault.get(old.id).meta.get("superseded_by") is None:
            supersede(vault, old.id, NEWER)  # the user runs it again
        new_id = vault.get(old.id).meta["superseded_by"]
        assert vault.get(new_id).body.strip() == NEWER
        assert len([p for p in (root / "memories").rglob("*.md") if "spring fair" in p.read_text()]) == 1
        assert search_ids(vault, "lanterns spring fair")[:1] == [new_id]
        assert_consistent(vault)
    report("kill-supersede", 1, 1, 0)


@pytest.mark.parametrize("op", ["add", "supersede"])
def test_a_killed_writers_temp_file_goes_at_the_next_open(root: Path, op: str) -> None:
    """Not only at the next reindex: a one-shot search or add opens the vault
    and must not leave the whole text of a memory lying beside it."""
    with Vault(root, embedder=HashEmbedder()) as vault:
        first = vault.add(NEW)
    arg = {"text": SECRET} if op == "add" else {"id": first.id, "text": NEWER}
    assert run_child(root, op, arg, "write.temp") == -signal.SIGKILL
    assert len(list(root.rglob(".memex-*.tmp"))) == 1
    with Vault(root, embedder=HashEmbedder()) as vault:  # an open, no reindex
        assert not list(root.rglob(".memex-*.tmp"))
        # The killed writer's note goes with its files; this process's own stays.
        assert [p.name for p in (root / ".memex" / "writers").iterdir()] == [str(os.getpid())]
        vault.search("lanterns")


def test_an_open_leaves_a_running_writers_temp_file_and_notes_outside_the_vault(root: Path, tmp_path: Path) -> None:
    notes = root / ".memex" / "writers"
    notes.mkdir(exist_ok=True)
    running = os.getppid()  # alive for as long as this test runs
    (notes / str(running)).write_text("memories\n")
    live = root / "memories" / f".memex-{running}-abc123.tmp"
    live.write_text("a write still under way\n")
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    stray = outside / ".memex-999999-abc123.tmp"
    stray.write_text("not memex's to remove\n")
    (notes / "999999").write_text("../elsewhere\n")
    with Vault(root, embedder=HashEmbedder()):
        assert live.exists() and stray.exists()
        assert (notes / str(running)).exists() and not (notes / "999999").exists()


# batch.replaced-2: killed between two renames of one write pass.
CONSOLIDATE_POINTS = [
    ("batch.synced", 1), ("batch.replaced", 1), ("batch.replaced", 2), ("index.commit", 1), ("index.committed", 1),
]


def split_file(path: Path) -> tuple[dict[str, object], str]:
    mf, _ = memory_file.read(path, 1 << 20)
    return dict(mf.meta), mf.body


@pytest.mark.parametrize(("point", "nth"), CONSOLIDATE_POINTS, ids=[f"{p}-{n}" for p, n in CONSOLIDATE_POINTS])
def test_kill_during_consolidate_leaves_each_file_old_or_new(root: Path, point: str, nth: int, tmp_path: Path) -> None:
    with Vault(root, embedder=HashEmbedder()) as v:
        paths = write_session(v)
    before = {name: split_file(p) for name, p in paths.items()}
    # What an uninterrupted run does, on a copy.
    control = init_vault(tmp_path / "control", git=False)
    with Vault(control, embedder=HashEmbedder()) as v:
        write_session(v)
        expected = {m: g.representative for g in consolidate(v, "s1").groups for m in g.superseded}
    assert len(expected) == 4
    assert run_child(root, "consolidate", {"session": "s1"}, point, nth) == -signal.SIGKILL
    with reopen(root) as vault:
        assert_consistent(vault)
        changed = []
        for name, path in paths.items():
            meta, body = split_file(path)
            old_meta, old_body = before[name]
            assert body == old_body  # never half-written: the body is whole
            if meta != old_meta:  # new: exactly the superseding edit
                assert meta == {**old_meta, "superseded_by": expected[name]}
                changed.append(name)
            # The index says what the file says.
            assert vault.get(name).status == ("superseded" if name in changed else "active")
        renamed = {"batch.synced": 0, "batch.replaced": nth}.get(point, len(expected))
        assert len(changed) == renamed
        consolidate(vault, "s1")  # the user runs it again
        assert {n: vault.get(n).meta.get("superseded_by") for n in paths} == {n: expected.get(n) for n in paths}
        assert_consistent(vault)
    report("kill-consolidate", 1, 1, 0)
