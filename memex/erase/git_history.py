"""What git history still holds after an erasure, and ``--purge-history``.

The vault is a git repository (``memex init`` runs ``git init``). Deleting a
file does not remove the commits that hold it, so erasure reports whether
the erased files were ever committed (``git_history: "retained"``, with the
commits and the next step). ``--purge-history`` rewrites every ref with
git-filter-repo (removing the erased paths from all commits, and every blob
that holds an erased file under any name), expires the reflog, prunes
unreachable objects, and then checks that no object in the repository holds
the erased text. It cannot reach remotes, other clones or backups; the answer
names the remotes it saw.

The text is looked for by reading every object (``git cat-file
--batch-all-objects``), not with ``git log -S TEXT``: a body is an argument
there, and the kernel refuses arguments over 128 KB. A blob
holds an erased file when it has the erased id line (``id: ID``), or when it
is a memory file whose body is an erased one as the erased list compares, or
(bodies of at least :data:`QUOTE_MIN` characters, so a short body does not
take unrelated files with it) when it quotes an erased body whole.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memex.erased.erased_list import canonical
from memex.errors import GitHistoryError, InvalidArgument
from memex.layout import ERASE_KEY_ID_NAME, ERASED_LIST_NAME, ERASURE_LOG_NAME, MEMEX_DIR, WRITERS_DIR

GIT_TIMEOUT = 600
UNREACHABLE = (
    "remotes (until you force-push the rewritten branches and tags), other clones, "
    "forks, backups and snapshots of this folder, and copies a hosting service keeps "
    "(cached views, pull-request refs)"
)


@dataclass
class GitReport:
    """What git history holds of the erased files; ``status`` is the answer's ``git_history``."""

    status: str = "not_a_repository"  # not_a_repository | never_committed | retained | purged
    commits: list[str] = field(default_factory=list)
    next_step: str | None = None
    unreachable: str | None = None
    remotes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "status": self.status,
            "commits": self.commits,
            "next_step": self.next_step,
            "unreachable": self.unreachable,
            "remotes": self.remotes,
        }


def _git(top: Path, *args: str, check: bool = True, input_text: str | None = None) -> str:
    try:
        done = subprocess.run(
            ["git", "-C", str(top), *args], capture_output=True, text=True,
            timeout=GIT_TIMEOUT, input=input_text, check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise GitHistoryError(f"git {args[0]} failed in {top}: {exc}") from exc
    if check and done.returncode != 0:
        raise GitHistoryError(f"git {' '.join(args[:2])} failed in {top}: {done.stderr.strip()}")
    return done.stdout


def toplevel(root: Path) -> Path | None:
    """The work tree holding the vault, or None when it is not in a git repository."""
    if shutil.which("git") is None:
        return None
    try:
        out = _git(root, "rev-parse", "--show-toplevel", check=False).strip()
    except GitHistoryError:
        return None
    return Path(out) if out else None


QUOTE_MIN = 40


@dataclass
class _Needles:
    """What marks a blob as holding an erased file or text."""

    id_lines: list[bytes]
    forms: set[str]
    quotes: list[bytes]

    @classmethod
    def of(cls, bodies: list[str], ids: list[str]) -> _Needles:
        stripped = [b.strip() for b in bodies if b.strip()]
        return cls(
            id_lines=[f"id: {i}".encode() for i in dict.fromkeys(ids)],
            forms={canonical(b) for b in stripped},
            quotes=[b.encode("utf-8") for b in dict.fromkeys(stripped) if len(b) >= QUOTE_MIN],
        )

    def match(self, data: bytes) -> bool:
        if any(n in data for n in self.id_lines) or any(q in data for q in self.quotes):
            return True
        if not self.forms or not data.startswith(b"---"):
            return False
        text = data.decode("utf-8", errors="replace")
        end = text.find("\n---", 3)
        if end < 0:
            return False
        body = text[text.find("\n", end + 1) + 1 :] if text.find("\n", end + 1) >= 0 else ""
        return canonical(body) in self.forms


def _blobs_with(top: Path, needles: _Needles) -> set[str]:
    """Every blob in the object store (reachable or not) that holds erased text."""
    try:
        proc = subprocess.Popen(
            ["git", "-C", str(top), "cat-file", "--batch-all-objects", "--batch", "--unordered"],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )
    except OSError as exc:
        raise GitHistoryError(f"git cat-file failed in {top}: {exc}") from exc
    found: set[str] = set()
    assert proc.stdout is not None
    with proc:
        stream = proc.stdout
        while header := stream.readline():
            parts = header.split()
            if len(parts) != 3:
                continue  # "<name> missing"
            name, kind, size = parts[0].decode(), parts[1], int(parts[2])
            data = stream.read(size)
            stream.read(1)  # the newline after each object
            if kind == b"blob" and needles.match(data):
                found.add(name)
    if proc.returncode not in (0, None):
        raise GitHistoryError(f"git cat-file --batch-all-objects failed in {top} (exit {proc.returncode})")
    return found


def _commits_with(top: Path, blobs: set[str]) -> list[str]:
    """Commits (on any ref or in the reflog) that add or remove one of ``blobs``."""
    if not blobs:
        return []
    out = _git(top, "log", "--all", "--reflog", "--format=commit %H", "--raw", "--no-abbrev", "--no-renames", "-m")
    commits: list[str] = []
    current = ""
    for line in out.splitlines():
        if line.startswith("commit "):
            current = line[7:].strip()
        elif line.startswith(":") and current:
            fields = line.split("\t", 1)[0].split()
            if len(fields) >= 4 and (fields[2] in blobs or fields[3] in blobs):
                commits.append(current)
    return list(dict.fromkeys(commits))


def _rel(top: Path, root: Path, rel: str) -> str:
    return (root / rel).resolve().relative_to(top.resolve()).as_posix()


def history(root: Path, paths: list[str], bodies: list[str], ids: list[str]) -> GitReport:
    """Which commits (on any ref or in the reflog) hold an erased file or text."""
    top = toplevel(root)
    if top is None:
        return GitReport()
    if not _git(top, "rev-parse", "--verify", "-q", "HEAD", check=False).strip() and not _git(
        top, "for-each-ref", "--count=1"
    ).strip():
        return GitReport(status="never_committed")
    # By path only: cheap enough to run on every erase. --purge-history also
    # searches the text itself (older names, other files quoting it).
    rels = [_rel(top, root, p) for p in paths]
    commits: list[str] = []
    if rels:
        commits += _git(top, "log", "--all", "--reflog", "--format=%H", "--", *rels).split()
    commits = list(dict.fromkeys(commits))
    if not commits:
        return GitReport(status="never_committed")
    by_hand = " ".join(f"--path {shlex.quote(p)}" for p in rels)
    again = f"`memex erase {ids[0]} --reason ... --purge-history`" if len(ids) == 1 else "the same erase with --purge-history"
    return GitReport(
        status="retained",
        commits=commits,
        next_step=(
            f"the erased files are still in these commits; run {again} to rewrite the history "
            f"(every branch and tag), or by hand: git filter-repo --force --invert-paths {by_hand} && "
            "git reflog expire --expire=now --all && git gc --prune=now"
        ),
        unreachable=UNREACHABLE,
        remotes=_remotes(top),
    )


def _paths_of(top: Path, blobs: set[str]) -> set[str]:
    """Paths at which the current HEAD tree holds one of ``blobs`` (the rewrite resets them)."""
    if not blobs:
        return set()
    out = _git(top, "ls-tree", "-r", "-z", "HEAD", check=False)
    found: set[str] = set()
    for entry in out.split("\0"):
        meta, _, path = entry.partition("\t")
        fields = meta.split()
        if len(fields) == 3 and fields[2] in blobs:
            found.add(path)
    return found


def _remotes(top: Path) -> list[str]:
    return sorted(set(_git(top, "remote", check=False).split()))


# memex's own append-only files, vault-relative: the erase has just written
# them, and their journals put back what the rewrite's reset of the work tree
# takes (memex/erased/mirror.py; the caller restores them after the rewrite).
JOURNALED = (f"{MEMEX_DIR}/{ERASED_LIST_NAME}", f"{MEMEX_DIR}/{ERASURE_LOG_NAME}")


def check_clean(root: Path, erased_paths: list[str]) -> None:
    """Refuse to rewrite history over uncommitted changes to tracked files.

    git-filter-repo resets the work tree to the rewritten HEAD, which would
    lose them. Untracked files are not touched; the erased files themselves
    may be deleted already.
    """
    top = toplevel(root)
    if top is None:
        raise InvalidArgument("--purge-history", f"{root} is not in a git repository")
    _refuse_dirty(top, {_rel(top, root, p) for p in [*erased_paths, *JOURNALED]})


def _refuse_dirty(top: Path, allowed: set[str]) -> None:
    out = _git(top, "status", "--porcelain", "-z", "--untracked-files=no")
    dirty = [
        entry[3:] for entry in out.split("\0")
        if len(entry) > 3 and entry[3:] not in allowed
        # a writer note (memex/files/writers.py) an older vault committed: runtime state the next open removes
        and f"/{MEMEX_DIR}/{WRITERS_DIR}/" not in "/" + entry[3:]
    ]
    if dirty:
        shown = ", ".join(dirty[:5]) + (" ..." if len(dirty) > 5 else "")
        raise InvalidArgument(
            "--purge-history",
            f"uncommitted changes to tracked files would be lost by the rewrite ({shown}); "
            "commit or stash them first",
        )


def _filter_repo_command() -> list[str]:
    beside = Path(sys.executable).parent / "git-filter-repo"
    if beside.exists():
        return [sys.executable, str(beside)]
    found = shutil.which("git-filter-repo")
    if found is None:
        raise GitHistoryError("git-filter-repo is not installed (pip install git-filter-repo)")
    return [found]


def purge(root: Path, paths: list[str], bodies: list[str], ids: list[str]) -> GitReport:
    """Remove the erased files from every commit, then prove the text is gone."""
    top = toplevel(root)
    if top is None:
        raise InvalidArgument("--purge-history", f"{root} is not in a git repository")
    before = history(root, paths, bodies, ids)
    drop = {_rel(top, root, p) for p in paths}
    needles = _Needles.of(bodies, ids)
    # Every blob (old names, copies, other files quoting the text) that holds it.
    blobs = _blobs_with(top, needles)
    before.commits = list(dict.fromkeys(before.commits + _commits_with(top, blobs)))
    if not before.commits:
        return before
    _refuse_dirty(top, drop | _paths_of(top, blobs) | {_rel(top, root, p) for p in JOURNALED})
    remotes = {name: _git(top, "remote", "get-url", name).strip() for name in _remotes(top)}
    listing = top / ".git" / "memex-filter-paths.txt"
    blob_list = top / ".git" / "memex-filter-blobs.txt"
    listing.write_text("".join(f"literal:{p}\n" for p in sorted(drop)), encoding="utf-8")
    blob_list.write_text("".join(f"{b}\n" for b in sorted(blobs)), encoding="ascii")
    try:
        done = subprocess.run(
            [*_filter_repo_command(), "--force", "--quiet", "--invert-paths", "--paths-from-file", str(listing),
             "--strip-blobs-with-ids", str(blob_list)],
            cwd=top, capture_output=True, text=True, timeout=GIT_TIMEOUT, check=False,
            env={**os.environ, "LC_ALL": "C"},
        )
    finally:
        listing.unlink(missing_ok=True)
        blob_list.unlink(missing_ok=True)
    if done.returncode != 0:
        raise GitHistoryError(f"git-filter-repo failed in {top}: {done.stderr.strip() or done.stdout.strip()}")
    # filter-repo drops 'origin' so that the old history is not pushed over by
    # mistake; put the remotes back, the answer says they need a force-push.
    for name, url in remotes.items():
        if name not in _remotes(top):
            _git(top, "remote", "add", name, url)
    _git(top, "reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all")
    _git(top, "gc", "--prune=now", "--quiet")
    left = _blobs_with(top, needles)
    if left:
        raise GitHistoryError(
            f"{top}: after the rewrite, {len(left)} object(s) still hold erased text; "
            "the history was rewritten but is not clean"
        )
    return GitReport(
        status="purged",
        commits=before.commits,
        next_step=_after_rewrite(root, bool(remotes)),
        unreachable=UNREACHABLE,
        remotes=sorted(remotes),
    )


def _after_rewrite(root: Path, has_remotes: bool) -> str:
    done = "history rewritten and verified (no object holds the erased text)"
    if not has_remotes:
        return done
    if (root / MEMEX_DIR / ERASE_KEY_ID_NAME).is_file():
        # A team vault (docs/team.md): memex sync publishes the rewrite and each clone adopts it.
        return (
            f"{done}; run `memex sync` here to publish it (a force-push with lease), then `memex sync` "
            "on every other clone: each moves its own changes onto the new history and drops the old objects"
        )
    return (
        f"{done}; force-push (git push --force --all && git push --force --tags) to every remote "
        "and ask other clones to re-clone"
    )
