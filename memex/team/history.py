"""What this clone's git history holds, and history rewrites across the team.

Per clone, never shared, in ``.git/memex-sync.json``: where the remote was at
the last sync (``remote_tip``) and how many rewrites (``memex erase
--purge-history``) this clone's audit log held then. A rewrite made here is
seen when both say so: the history no longer holds the last synced tip, and
the audit log records a rewrite since (docs/team.md, "Rewriting history
across the team").
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memex.erased import erased_list, mirror
from memex.errors import IndexStoreError
from memex.team import tombstones
from memex.team.gitrepo import Repo
from memex.team.report import SyncReport

if TYPE_CHECKING:
    from memex.vault import Vault

STATE_NAME = "memex-sync.json"  # in .git/: per clone, never shared


def load_state(repo: Repo) -> dict[str, Any]:
    try:
        data = json.loads((repo.git_dir / STATE_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def save_state(repo: Repo, state: dict[str, Any]) -> None:
    (repo.git_dir / STATE_NAME).write_text(json.dumps(state, sort_keys=True) + "\n", encoding="utf-8")


def rewrites(memex_dir: Path) -> int:
    """How many history rewrites (``erase --purge-history``) this clone's audit log records."""
    try:
        lines = mirror.audit_log(memex_dir).lines()  # with its journal: git may have cut the log
    except IndexStoreError:
        return 0
    count = 0
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict) and (entry.get("phase") == "history_purged" or entry.get("git_history") == "purged"):
            count += 1
    return count


def rewritten_here(repo: Repo, state: dict[str, Any]) -> bool:
    """This clone's history no longer holds what it last synced (checked with the audit log's word)."""
    last = state.get("remote_tip")
    if not isinstance(last, str) or not repo.rev("HEAD"):
        return False
    return repo.run("merge-base", "--is-ancestor", last, "HEAD", check=False).code != 0


def report_history(vault: Vault, repo: Repo, report: SyncReport, rewritten: bool) -> None:
    if rewritten:
        repo.run("reflog", "expire", "--expire=now", "--expire-unreachable=now", "--all")
        repo.run("gc", "--prune=now", "--quiet")
    guard = erased_list.Guard(vault.memex_dir)
    guard.refresh()
    if guard.size == 0:
        report.history = {"status": "nothing_erased", "erased_blobs": 0}
        return
    count = tombstones.erased_blobs(repo.top, vault.memex_dir)
    report.history["erased_blobs"] = count
    if count:
        report.history.setdefault("status", "retained")
        report.history["next_step"] = (
            f"{count} git object(s) in this clone still hold erased memories (older commits); to remove them "
            "everywhere, run `memex erase ID --reason ... --purge-history` on one clone, then `memex sync` "
            "there (it publishes the rewrite) and on every other clone (each adopts it)"
        )
    else:
        report.history.setdefault("status", "clean")
