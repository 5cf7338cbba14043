"""A stateful fault suite: ordinary user, editor, git, sync-tool and memex actions in any order.

Hypothesis interleaves add / edit / copy (``cp``, a sync tool's conflict copy)
/ rename / delete / erase / git commit / git checkout of an old commit /
reindex / the watcher's event handling (:meth:`memex.watch.indexing.BatchIndexer.index`, what a flush
of file events runs) / the watcher's reconcile, and checks after every step:

* nothing erased is findable: no index row and no search hit holds an erased
  text, and no byte of it is in any file under the vault except ``.git`` and
  the files a git checkout put back (those are the user's own restores; they
  are never indexed, and doctor names them);
* files and index agree: every path no pending event or sync has looked at
  yet aside, doctor finds nothing missing, stale or orphaned, and its only
  errors are copies (an id claimed twice) and restored erased files;
* after a reindex, exactly that, with every restored erased file named.

Every memory text carries a fresh tag (``tagNNNN``), so an erased text is
recognised by its tag wherever its bytes end up. The default run is sized to
take ~20 s on a quiet machine, the same cases on every run (the suite's
Hypothesis profile, tests/hypokit.py); ``MEMEX_FAULT_EXAMPLES`` /
``MEMEX_FAULT_STEPS`` widen it, and ``MEMEX_HYPOTHESIS_PROFILE=deep`` draws
ten times as many fresh cases.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from memex import health
from memex.files.memory_file import parse, serialize
from memex.vault import Vault, init_vault
from memex.watch.watcher import Watcher, WatchSettings
from memex.erase.steps import erase
from tests.fakes import HashEmbedder
from tests.faultkit import leaked_bytes, report
from tests.hypokit import examples

WORDS = ["heron", "otter", "maple", "copper", "violet", "granite", "falcon", "willow"]
TAG = re.compile(r"tag\d{4}x")
EXAMPLES = int(os.environ.get("MEMEX_FAULT_EXAMPLES") or examples(20))
STEPS = int(os.environ.get("MEMEX_FAULT_STEPS", "30"))
# faults: actions memex does not make and must survive (hand edits, copies,
# renames, deletions, restores by git checkout); leaked: bytes of erased text found.
COUNTS = {"cases": 0, "steps": 0, "erases": 0, "faults": 0, "leaked": 0}


def _git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org", "GIT_CONFIG_GLOBAL": os.devnull}
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, env=env, check=False)
    return done.stdout


class VaultLife(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = Path(tempfile.mkdtemp(prefix="memex-fault-"))
        self.root = init_vault(self.tmp / "vault", git=True)
        self.vault = Vault(self.root, embedder=HashEmbedder())
        self.watcher = Watcher(self.vault, WatchSettings(reconcile_seconds=3600.0))
        self.serial = 0
        self.erased: set[str] = set()  # tags of erased texts
        self.restored: set[str] = set()  # files git put back holding erased text
        # Paths the index may name: a memory file's name is made from its
        # text's first words, so a file restored from git, or one whose text
        # was edited since, carries erased words in its name. The index holds
        # the paths of the files a sync saw until a sync looks at them again.
        self.named: set[str] = set()
        self.pending: set[str] = set()  # paths touched since the index last looked
        self.commits: list[str] = []
        COUNTS["cases"] += 1

    def teardown(self) -> None:
        self.vault.close()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # -- helpers ------------------------------------------------------------

    def text(self, words: list[str]) -> str:
        self.serial += 1
        return f"Note tag{self.serial:04}x: {' '.join(words)}"

    def files(self) -> list[str]:
        base = self.root / "memories"
        return sorted(p.relative_to(self.root).as_posix() for p in base.rglob("*.md") if p.is_file())

    def pick(self, i: int) -> str | None:
        files = self.files()
        return files[i % len(files)] if files else None

    def looked(self, paths: set[str] | None = None) -> None:
        """A sync looked at ``paths`` (all when None): the names it dropped are gone."""
        self.named = {p for p in self.named if (paths is not None and p not in paths) or (self.root / p).exists()}
        self.named |= {p for p in self.files() if paths is None or p in paths}

    def touch(self, *paths: str) -> None:
        self.pending.update(paths)
        COUNTS["steps"] += 1

    # -- memex ----------------------------------------------------------------

    @rule(words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4))
    def add(self, words: list[str]) -> None:
        result = self.vault.add(self.text(words))
        if result.path:
            self.named.add(result.path)
        self.touch()

    @rule(i=st.integers(0, 40))
    def erase(self, i: int) -> None:
        rows = [r[0] for r in self.vault.backend.conn.execute("SELECT id FROM memories ORDER BY id")]
        if not rows:
            return
        memory_id = rows[i % len(rows)]
        tags: set[str] = set()
        body = self.vault.backend.conn.execute("SELECT body FROM memories WHERE id = ?", (memory_id,)).fetchone()[0]
        tags.update(TAG.findall(body))
        for rel in self.files():  # every file claiming the id (copies) is erased too
            data = (self.root / rel).read_text()
            if f"id: {memory_id}\n" in data:
                tags.update(TAG.findall(data))
        erase(self.vault, memory_id, reason="fault suite")
        self.erased |= tags
        self.restored = {p for p in self.restored if (self.root / p).exists()}
        COUNTS["erases"] += 1
        self.touch()

    @rule()
    def reindex(self) -> None:
        self.vault.reindex()
        self.pending.clear()
        self.looked()
        self.touch()
        found = health.drift(self.vault)
        assert found.differing == 0, found.as_dict()
        # Every restored file that still holds erased text is named by doctor.
        holding = {p for p in self.restored if (self.root / p).exists() and self._holds_erased(p)}
        assert holding <= set(found.erased_restored) | self._clashes(found), (holding, found.errors)

    @rule()
    def watcher_flush(self) -> None:
        """What the watcher runs for a batch of file events."""
        if self.pending:
            self.watcher.indexing.index(sorted(self.pending))
        self.looked(set(self.pending))
        self.pending.clear()
        self.touch()

    @rule()
    def watcher_reconcile(self) -> None:
        self.watcher.reconcile("fault suite")
        self.pending.clear()
        self.looked()
        self.touch()

    # -- a person, an editor, a sync tool -----------------------------------

    @rule(i=st.integers(0, 40), words=st.lists(st.sampled_from(WORDS), min_size=1, max_size=4))
    def edit(self, i: int, words: list[str]) -> None:
        rel = self.pick(i)
        if rel is None:
            return
        full = self.root / rel
        mf = parse(full.read_text(), full)
        mf.body = self.text(words) + "\n"
        full.write_text(serialize(mf))
        self.restored.discard(rel)
        COUNTS["faults"] += 1
        self.touch(rel)

    @rule(i=st.integers(0, 40), kind=st.sampled_from(["sync-conflict", "cp"]))
    def copy(self, i: int, kind: str) -> None:
        rel = self.pick(i)
        if rel is None:
            return
        self.serial += 1
        suffix = f".sync-conflict-{self.serial}.md" if kind == "sync-conflict" else f" copy {self.serial}.md"
        dest = rel[: -len(".md")] + suffix
        shutil.copy2(self.root / rel, self.root / dest)
        if rel in self.restored:
            self.restored.add(dest)
            self.named.add(dest)
        COUNTS["faults"] += 1
        self.touch(dest)

    @rule(i=st.integers(0, 40), folder=st.sampled_from(["memories", "memories/user", "memories/project/alpha"]))
    def rename(self, i: int, folder: str) -> None:
        rel = self.pick(i)
        if rel is None:
            return
        self.serial += 1
        dest = f"{folder}/renamed-{self.serial}.md"
        (self.root / folder).mkdir(parents=True, exist_ok=True)
        os.replace(self.root / rel, self.root / dest)
        if rel in self.restored:
            self.restored.discard(rel)
            self.restored.add(dest)
            self.named.add(dest)
        COUNTS["faults"] += 1
        self.touch(rel, dest)

    @rule(i=st.integers(0, 40))
    def delete(self, i: int) -> None:
        rel = self.pick(i)
        if rel is None:
            return
        os.unlink(self.root / rel)
        self.restored.discard(rel)
        COUNTS["faults"] += 1
        self.touch(rel)

    # -- git --------------------------------------------------------------------

    @rule()
    def commit(self) -> None:
        _git(self.root, "add", "-A")
        _git(self.root, "commit", "-q", "-m", "step")
        head = _git(self.root, "rev-parse", "-q", "--verify", "HEAD").strip()
        if head and head not in self.commits:
            self.commits.append(head)
        self.touch()

    @precondition(lambda self: bool(self.commits))
    @rule(k=st.integers(0, 20))
    def checkout(self, k: int) -> None:
        """Restore the memory files of an old commit (as `git checkout REV -- memories`)."""
        rev = self.commits[k % len(self.commits)]
        before = {p: (self.root / p).read_bytes() for p in self.files()}
        _git(self.root, "checkout", rev, "--", "memories")
        changed = {p for p in self.files() if before.get(p) != (self.root / p).read_bytes()}
        for rel in changed:
            if self._holds_erased(rel):
                self.restored.add(rel)
                self.named.add(rel)
            else:
                self.restored.discard(rel)
        COUNTS["faults"] += 1
        self.touch(*changed)

    # -- checks ---------------------------------------------------------------------

    def _holds_erased(self, rel: str) -> bool:
        return any(t in self.erased for t in TAG.findall((self.root / rel).read_text()))

    @staticmethod
    def _clashes(found: health.Drift) -> set[str]:
        return {e["path"] for e in found.errors if "also claimed by" in e["reason"]}

    @invariant()
    def nothing_erased_is_findable(self) -> None:
        if not self.erased:
            return
        for (body,) in self.vault.backend.conn.execute("SELECT body FROM memories"):
            assert not set(TAG.findall(body)) & self.erased, body
        for tag in sorted(self.erased)[-3:]:
            hits = self.vault.search(tag, limit=50)
            assert not any(tag in h.body for h in hits), tag
        names = self.named | self.restored | set(self.files())
        leaked = leaked_bytes(self.root, self.erased, allowed=self.restored, names=names)
        COUNTS["leaked"] += sum(leaked.values())
        assert leaked == {}, leaked

    @invariant()
    def files_and_index_agree(self) -> None:
        found = health.drift(self.vault)
        untouched = {p for p in (*found.missing, *found.stale, *found.orphaned) if p not in self.pending}
        assert untouched == set(), (untouched, self.pending)
        allowed = set(found.erased_restored) | self._clashes(found) | self.pending
        assert {e["path"] for e in found.errors} <= allowed, found.errors
        assert found.temp_files == []


# Shrinking a failing interleaving of file and git operations can take minutes: bounded.
VaultLife.TestCase.settings = settings(
    max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None,
    phases=[p for p in Phase if p is not Phase.shrink] if os.environ.get("MEMEX_FAULT_NO_SHRINK") else list(Phase),
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestVaultLife = VaultLife.TestCase


def test_zz_report_counts() -> None:
    """Runs after TestVaultLife (file order): hands the counts to MEMEX_FAULT_REPORT."""
    report("stateful", COUNTS["cases"], COUNTS["faults"], COUNTS["leaked"], COUNTS["steps"], COUNTS["erases"])
    assert COUNTS["leaked"] == 0
