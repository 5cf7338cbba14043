"""A committed append-only file and its git-ignored journal (docs/forgetting.md).

Two of memex's files must never shrink and are committed so that the team
sees them: the erased list (``.memex/erased.txt``) and the audit log
(``.memex/erasure.log``). git rewrites committed files whenever it restores
the tree (``git checkout -- .``, ``git restore``, ``git reset --hard``, a
stash, a checkout of an older commit): that would cut an erasure, or the
record of it, out of the file. So each line is also appended to a journal
beside it (``erased.local``, ``erasure.log.local``), git-ignored, which git
never restores over.

Reading takes both (:meth:`Mirror.lines`): the committed copy's lines, then
the journal's lines it holds fewer times, in order; and the journal learns
lines only the committed copy has (a teammate's, pulled).

A read never writes the committed copy. A file memex rewrote on a read is a
local change in a tracked file, and git refuses to touch such a file: found
from outside, `git stash pop` after an erase refused because a search had
already put the stashed lines back, and so would `git checkout main` after
a look at an older commit. The committed copy regains what git cut when
memex appends to it anyway (the next erasure), and at ``memex doctor
--fix`` and ``memex sync`` (:meth:`Mirror.restore`); ``doctor`` says how
many lines it lacks meanwhile (:meth:`Mirror.lacking`).

Only lines ``keep`` accepts travel between the two: anything else (git's
conflict markers in a plain-git vault) stays where the user can delete it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from memex.errors import IndexStoreError
from memex.files import permissions
from memex.erased import spare
from memex.files.locking import file_lock
from memex.layout import ERASURE_JOURNAL_NAME, ERASURE_LOG_NAME, GIT_IGNORE_NAME


@dataclass(frozen=True)
class Mirror:
    tracked: Path
    journal: Path
    keep: Callable[[str], bool]
    # A third copy in git's own folder, which `git clean -fdx` spares (memex/erased/spare.py).
    spare: Path | None = None

    @property
    def journals(self) -> tuple[Path, ...]:
        return (self.journal,) if self.spare is None else (self.journal, self.spare)

    def lines(self) -> list[str]:
        """The committed copy's lines, then those only a journal holds (see the module doc)."""
        if self._agree():
            return self._read(self.tracked)
        merged, copies = self._merged()
        if any(_beyond(merged, lines) for lines in copies):
            with self._locked():  # read again under the lock: another process may have written
                merged, copies = self._merged()
                for path, lines in zip(self.journals, copies):
                    self._write(path, _beyond(merged, lines))
        return merged

    def lacking(self) -> list[str]:
        """The journals' lines the committed copy lacks (git restored an older copy over it)."""
        merged, _ = self._merged()
        return _beyond(merged, self._read(self.tracked))

    def append(self, lines: Iterable[str]) -> None:
        """Append to the journals, then to the committed copy (after the lines git cut from it)."""
        new = list(lines)
        if not new:
            return
        with self._locked():
            if self._agree():
                for path in (*self.journals, self.tracked):
                    self._write(path, new)
                return
            merged, copies = self._merged()
            for path, held in zip(self.journals, copies):
                self._write(path, _beyond(merged, held) + new)
            self._write(self.tracked, _beyond(merged, self._read(self.tracked)) + new)

    def _agree(self) -> bool:
        """All copies byte for byte the same: nothing to merge (the common case, and
        a read of bytes is what it costs: at 20k log lines a merge took 80 ms)."""
        try:
            first = self.tracked.read_bytes()
            return all(path.read_bytes() == first for path in self.journals)
        except OSError:
            return False  # one is missing or unreadable: the merge says what to do

    def restore(self) -> int:
        """Put back the lines git cut from the committed copy; returns how many."""
        if not self.lacking():
            return 0
        with self._locked():
            lost = self.lacking()
            self._write(self.tracked, lost)
        return len(lost)

    def _merged(self) -> tuple[list[str], list[list[str]]]:
        """(the committed copy's lines and then each journal's it lacks, each journal's lines)."""
        merged = self._read(self.tracked)
        copies = [self._read(path) for path in self.journals]
        for lines in copies:
            merged = merged + _beyond(lines, merged)
        return merged, copies

    def _locked(self) -> AbstractContextManager[IO[bytes]]:
        if not self.journal.exists():
            ignore_in_git(self.journal)
        return file_lock(self.journal)

    def _read(self, path: Path) -> list[str]:
        try:
            # A byte an editor or a bad merge garbled only spoils its own line, which
            # then is not one to keep: it must not stop every erase and every read.
            text = path.read_text(encoding="utf-8", errors="replace")
        except FileNotFoundError:
            return []
        except OSError as exc:
            if path == self.spare:
                return []  # the spare is a help, never a reason to stop
            raise IndexStoreError(f"{path}: cannot read it: {exc}") from exc
        return [line.strip() for line in text.splitlines() if self.keep(line.strip())]

    def _write(self, path: Path, lines: list[str]) -> None:
        if not lines:
            return
        try:
            # One write of whole lines on an O_APPEND descriptor: a reader never sees half a line.
            with permissions.open_append(path, binary=True) as handle:  # private, like the rest of .memex/
                handle.write("".join(line + "\n" for line in lines).encode("utf-8"))
                handle.flush()
                os.fsync(handle.fileno())
        except OSError:
            if path != self.spare:
                raise  # a read-only .git (say) only costs the spare


def audit_log(memex_dir: Path) -> Mirror:
    """The audit log (memex/erase/steps.py) and its journals: only JSON lines travel."""
    return journaled(memex_dir, ERASURE_LOG_NAME, ERASURE_JOURNAL_NAME, _json_line)


def journaled(memex_dir: Path, tracked: str, journal: str, keep: Callable[[str], bool]) -> Mirror:
    """``tracked`` under ``.memex/``, its ``journal`` beside it, and the spare in git's folder."""
    where = spare.folder(memex_dir)
    return Mirror(memex_dir / tracked, memex_dir / journal, keep, None if where is None else where / journal)


def _json_line(line: str) -> bool:
    return line.startswith("{") and line.endswith("}")


def _beyond(source: list[str], target: list[str]) -> list[str]:
    """The lines of ``source``, in order, that ``target`` holds fewer times."""
    have: dict[str, int] = {}
    for line in target:
        have[line] = have.get(line, 0) + 1
    extra: list[str] = []
    for line in source:
        if have.get(line, 0) > 0:
            have[line] -= 1
        else:
            extra.append(line)
    return extra


def ignore_in_git(journal: Path) -> None:
    """A vault made before this journal existed learns to keep it out of git."""
    memex_dir = journal.parent
    ignore = memex_dir.parent / GIT_IGNORE_NAME
    line = f"{memex_dir.name}/{journal.name}"
    try:
        text = ignore.read_text(encoding="utf-8")
        if line not in text.splitlines():
            ignore.write_text(text.rstrip("\n") + "\n" + line + "\n", encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        pass  # no .gitignore (or not ours to read): a committed journal holds no text either
