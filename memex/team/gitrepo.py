"""The git commands ``memex sync`` runs, and the checks before it runs any.

Every failure is a :class:`~memex.errors.SyncError` whose message says what
to do; nothing here prints a traceback to a user.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from memex.errors import SyncError

GIT_TIMEOUT = 600


@dataclass
class Done:
    code: int
    out: str
    err: str


class Repo:
    """The git repository holding a vault (the vault may be a folder inside it)."""

    def __init__(self, root: Path) -> None:
        if shutil.which("git") is None:
            raise SyncError("git is not installed; memex sync uses git to share the vault (install git)")
        self.root = root
        top = self.run("rev-parse", "--show-toplevel", check=False)
        if top.code != 0 or not top.out.strip():
            raise SyncError(
                f"{root} is not a git repository: run `git init` there, add the team's remote "
                "(`git remote add origin URL`), then `memex sync`"
            )
        self.top = Path(top.out.strip())
        self.git_dir = Path(self.out("rev-parse", "--absolute-git-dir").strip())
        rel = root.resolve().relative_to(self.top.resolve()).as_posix()
        self.prefix = "" if rel == "." else rel + "/"  # the vault's folder inside the repository

    def run(self, *args: str, check: bool = True, env: dict[str, str] | None = None) -> Done:
        try:
            proc = subprocess.run(
                ["git", *args], cwd=self.root, capture_output=True, text=True, timeout=GIT_TIMEOUT,
                check=False, env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C", **(env or {})},
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise SyncError(f"git {args[0]} failed in {self.root}: {exc}") from exc
        done = Done(proc.returncode, proc.stdout, proc.stderr)
        if check and done.code != 0:
            detail = (done.err.strip() or done.out.strip()).splitlines()
            raise SyncError(f"git {' '.join(args[:2])} failed in {self.root}: {' / '.join(detail[-3:])}")
        return done

    def out(self, *args: str) -> str:
        return self.run(*args).out

    def rev(self, name: str) -> str | None:
        done = self.run("rev-parse", "--verify", "-q", name + "^{commit}", check=False)
        return done.out.strip() or None

    def branch(self) -> str:
        done = self.run("symbolic-ref", "-q", "--short", "HEAD", check=False)
        if done.code != 0 or not done.out.strip():
            raise SyncError(
                f"{self.top}: HEAD is detached (not on a branch); check out the team's branch "
                "(`git switch main`), then run `memex sync`"
            )
        return done.out.strip()

    def busy(self) -> str | None:
        """A rebase, merge or cherry-pick left unfinished (by hand or by a killed sync)."""
        for name, what in (("rebase-merge", "rebase"), ("rebase-apply", "rebase"), ("MERGE_HEAD", "merge"),
                           ("CHERRY_PICK_HEAD", "cherry-pick")):
            if (self.git_dir / name).exists():
                return what
        return None

    def remotes(self) -> list[str]:
        return self.out("remote").split()

    def upstream(self, branch: str, wanted: str | None) -> tuple[str, str]:
        """(remote, remote branch) to sync with: the branch's upstream, else ``wanted`` or origin."""
        configured = self.run("config", f"branch.{branch}.remote", check=False).out.strip()
        merge = self.run("config", f"branch.{branch}.merge", check=False).out.strip()
        remotes = self.remotes()
        remote = wanted or configured or ("origin" if "origin" in remotes else (remotes[0] if len(remotes) == 1 else ""))
        if not remote:
            raise SyncError(
                f"{self.top}: no git remote to sync with; add the team's with `git remote add origin URL`"
                + (f" (remotes here: {', '.join(remotes)}; pick one with --remote)" if remotes else "")
            )
        if remote not in remotes:
            raise SyncError(f"{self.top}: no git remote named {remote!r}; remotes here: {', '.join(remotes) or 'none'}")
        target = merge.removeprefix("refs/heads/") if merge and remote == configured else branch
        return remote, target

    def identity_env(self) -> dict[str, str]:
        """A committer for memex's commits when the clone has none configured."""
        if self.run("config", "user.email", check=False).out.strip():
            return {}
        return {
            "GIT_AUTHOR_NAME": "memex", "GIT_AUTHOR_EMAIL": "memex@localhost",
            "GIT_COMMITTER_NAME": "memex", "GIT_COMMITTER_EMAIL": "memex@localhost",
        }

    def unmerged(self) -> list[str]:
        return sorted(set(self.out("diff", "--name-only", "--relative", "--diff-filter=U", "-z").split("\0")) - {""})

    def untracked(self, *paths: str) -> list[str]:
        out = self.out("ls-files", "--others", "--exclude-standard", "-z", "--", *paths)
        return [p for p in out.split("\0") if p]
