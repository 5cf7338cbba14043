"""The rebase onto the team's branch, and what it leaves for memex to settle.

Memory files merge through memex's driver (memex/team/merge.py) while git
rebases. What the driver cannot see is settled here: a memory deleted on one
side and edited on the other is kept; a memory file that arrived with git's
conflict markers is split into its two sides; the second memories that body
conflicts made are reported. Any other conflict aborts the rebase and names
the file (docs/team.md, "What a sync does").
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from memex import layout
from memex.errors import SyncError
from memex.files.memory_file import atomic_write, read
from memex.team import tombstones
from memex.team.gitrepo import Repo
from memex.team.merge import CONFLICT_KEY, LOCAL_ENV, merge_memory, split_markers
from memex.team.report import SyncReport
from memex.team.wiring import KEY_ID_FILE, LIST_FILE, MEMORY_PREFIX

if TYPE_CHECKING:
    from memex.vault import Vault

MAX_CONTINUES = 200


def _both_sides(repo: Repo) -> set[str]:
    """Unmerged paths with both sides' versions (a content conflict, not deleted on one side)."""
    stages: dict[str, set[str]] = {}
    for entry in repo.out("ls-files", "-u", "-z").split("\0"):
        meta, _, path = entry.partition("\t")
        if path:
            stages.setdefault(path, set()).add(meta.split()[-1])
    return {p for p, s in stages.items() if {"2", "3"} <= s}


def _continue_rebase(vault: Vault, repo: Repo, report: SyncReport) -> None:
    """Settle what the drivers could not: a memory deleted on one side and edited on the other."""
    for _ in range(MAX_CONTINUES):
        if repo.busy() != "rebase":
            return
        unmerged = repo.unmerged()
        both = _both_sides(repo)
        # A memory file both sides changed is the driver's; if it is still unmerged, the driver failed.
        other = [p for p in unmerged if not (p.startswith(MEMORY_PREFIX) and p.endswith(".md")) or p in both]
        gone = [p for p in unmerged if p not in other and not (vault.root / p).exists()]
        if other or gone or not unmerged:
            repo.run("rebase", "--abort", check=False)
            if KEY_ID_FILE in other:
                raise SyncError(
                    "a teammate set up the team's erasure key at the same time as this clone made its own; "
                    f"nothing was pushed. If this clone's {LIST_FILE} is empty, remove {tombstones.KEY_FILE} and "
                    f"{KEY_ID_FILE}, undo the local commit that added it (`git reset HEAD~1`), and run "
                    "`memex sync --key-file PATH` with the teammate's key"
                )
            names = ", ".join((other or gone or ["(none listed)"])[:5])
            raise SyncError(
                f"the rebase onto the team's branch stopped on a conflict memex does not resolve ({names}); "
                "nothing was pushed and your commits are as they were: resolve it with git "
                "(`git pull --rebase`, fix, `git rebase --continue`), then run `memex sync` again"
            )
        # Deleted on one side, edited on the other: the edited file is in the work tree; keep it.
        repo.run("add", "--", *unmerged)
        report.kept_edited += [p for p in unmerged if p not in report.kept_edited]
        done = repo.run("-c", "core.editor=true", "rebase", "--continue", check=False, env=repo.identity_env())
        if done.code == 0 and repo.busy() != "rebase":
            return
    repo.run("rebase", "--abort", check=False)
    raise SyncError("the rebase did not finish after many steps; nothing was pushed; run `memex sync` again")


def rebase(vault: Vault, repo: Repo, onto: str, since: str | None, report: SyncReport) -> None:
    head = repo.rev("HEAD")
    env = {LOCAL_ENV: head or ""}
    args = ["rebase", "-q", "--autostash"] + (["--onto", onto, since] if since else [onto])
    with vault.write_lock():
        done = repo.run(*args, check=False, env={**env, **repo.identity_env()})
        if done.code != 0:
            if repo.busy() != "rebase":
                raise SyncError(f"git rebase failed in {repo.root}: {(done.err or done.out).strip()}")
            _continue_rebase(vault, repo, report)


def repair_markers(vault: Vault, repo: Repo, since: list[str]) -> list[str]:
    """Memory files that arrived (or were committed here) with git's conflict markers in them.

    A clone that merged without memex's driver (plain git, the driver not set
    up) can push such a file; it is split into its two sides and merged by the
    same rules, so both versions are kept and no marker reaches the index.
    Returns the repaired paths.
    """
    changed: set[str] = set()
    for rev in since:
        out = repo.out("diff", "--name-only", "--relative", "-z", rev, "HEAD", "--", layout.MEMORIES_DIR)
        changed.update(p for p in out.split("\0") if p.endswith(".md"))
    repaired: list[str] = []
    for rel in sorted(changed):
        path = vault.root / rel
        try:
            text = path.read_bytes().decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        sides = split_markers(text)
        if sides is None:
            continue
        merged = merge_memory(None, sides[0], sides[1], rel)
        if merged.extra_name is not None and merged.extra_text is not None:
            atomic_write(path.parent / merged.extra_name, merged.extra_text)
        atomic_write(path, merged.text)
        repaired.append(rel)
    return repaired


def conflicts(vault: Vault, repo: Repo) -> list[dict[str, str]]:
    """Second memories the merge driver wrote for body conflicts (untracked until committed)."""
    out: list[dict[str, str]] = []
    for rel in repo.untracked(layout.MEMORIES_DIR):
        if not rel.endswith(".md"):
            continue
        try:
            mf, _ = read(vault.root / rel, vault.config.max_file_bytes, vault.root)
        except Exception:  # not ours to judge here: the reindex reports unreadable files
            continue
        original = mf.meta.get(CONFLICT_KEY)
        if original in (None, ""):
            continue
        out.append({
            "id": str(original), "other_id": str(mf.meta.get("id")), "other_path": rel, "suggestion": "supersede",
            "next_step": f"both versions are kept; read them (`memex show {original}`, `memex show {mf.meta.get('id')}`) "
                         f"and supersede the one that is out of date (`memex supersede OLD_ID TEXT`)",
        })
    return out
