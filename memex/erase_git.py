"""What git history still holds after an erasure, and ``--purge-history``.

The vault is a git repository (``memex init`` runs ``git init``). Deleting a
file does not remove the commits that hold it, so erasure reports whether
the erased files were ever committed (``git_history: "retained"``, with the
commits and the next step). ``--purge-history`` rewrites every ref with
git-filter-repo (removing the erased paths from all commits), expires the
reflog, prunes unreachable objects, and then checks that ``git log --all
--reflog -S`` no longer finds the erased text. It cannot reach remotes,
other clones or backups; the answer names the remotes it saw.
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

from memex.errors import GitHistoryError, InvalidArgument

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


def _needles(bodies: list[str], ids: list[str]) -> list[str]:
    """Strings that only the erased files contain: each body, and each ``id:`` line."""
    found = [b.strip() for b in bodies if b.strip()]
    found += [f"id: {i}" for i in ids]
    return list(dict.fromkeys(found))


def _commits_with(top: Path, needle: str) -> list[str]:
    return _git(top, "log", "--all", "--reflog", "--format=%H", "-S", needle).split()


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


def _remotes(top: Path) -> list[str]:
    return sorted(set(_git(top, "remote", check=False).split()))


def check_clean(root: Path, erased_paths: list[str]) -> None:
    """Refuse to rewrite history over uncommitted changes to tracked files.

    git-filter-repo resets the work tree to the rewritten HEAD, which would
    lose them. Untracked files are not touched; the erased files themselves
    may be deleted already.
    """
    top = toplevel(root)
    if top is None:
        raise InvalidArgument("--purge-history", f"{root} is not in a git repository")
    _refuse_dirty(top, {_rel(top, root, p) for p in erased_paths})


def _refuse_dirty(top: Path, allowed: set[str]) -> None:
    out = _git(top, "status", "--porcelain", "-z", "--untracked-files=no")
    dirty = [entry[3:] for entry in out.split("\0") if len(entry) > 3 and entry[3:] not in allowed]
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
    for needle in _needles(bodies, ids):
        # Every path (old names, other files quoting the text) that ever held it.
        out = _git(top, "log", "--all", "--reflog", "--format=", "--name-only", "-S", needle)
        found = [line for line in out.splitlines() if line.strip()]
        if found:
            before.commits += _commits_with(top, needle)
        drop.update(found)
    before.commits = list(dict.fromkeys(before.commits))
    if not before.commits:
        return before
    _refuse_dirty(top, drop)
    remotes = {name: _git(top, "remote", "get-url", name).strip() for name in _remotes(top)}
    listing = top / ".git" / "memex-filter-paths.txt"
    listing.write_text("".join(f"literal:{p}\n" for p in sorted(drop)), encoding="utf-8")
    try:
        done = subprocess.run(
            [*_filter_repo_command(), "--force", "--quiet", "--invert-paths", "--paths-from-file", str(listing)],
            cwd=top, capture_output=True, text=True, timeout=GIT_TIMEOUT, check=False,
            env={**os.environ, "LC_ALL": "C"},
        )
    finally:
        listing.unlink(missing_ok=True)
    if done.returncode != 0:
        raise GitHistoryError(f"git-filter-repo failed in {top}: {done.stderr.strip() or done.stdout.strip()}")
    # filter-repo drops 'origin' so that the old history is not pushed over by
    # mistake; put the remotes back, the answer says they need a force-push.
    for name, url in remotes.items():
        if name not in _remotes(top):
            _git(top, "remote", "add", name, url)
    _git(top, "reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all")
    _git(top, "gc", "--prune=now", "--quiet")
    left = [n for n in _needles(bodies, ids) if _commits_with(top, n)]
    if left:
        raise GitHistoryError(
            f"{top}: after the rewrite, git log --all -S still finds {len(left)} erased string(s); "
            "the history was rewritten but is not clean"
        )
    return GitReport(
        status="purged",
        commits=before.commits,
        next_step=(
            "history rewritten and verified with git log --all --reflog -S; force-push "
            "(git push --force --all && git push --force --tags) to every remote and ask "
            "other clones to re-clone" if remotes else "history rewritten and verified with "
            "git log --all --reflog -S"
        ),
        unreachable=UNREACHABLE,
        remotes=sorted(remotes),
    )
