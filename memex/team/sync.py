"""``memex sync``: share one vault through a git remote (docs/team.md).

Git is the engine; memex adds its rules around it. One sync, under the
vault's sync lock:

1. check the clone (a git repository, on a branch, with a remote; no
   rebase or merge left unfinished) and set up the merge drivers
   (memex/team/wiring.py);
2. fetch, and check this clone's erasure key against the team's fingerprint
   (memex/team/tombstones.py);
3. commit memex's own files (memory files, the erased list, the key's
   fingerprint, ``.gitattributes``; never the index), then rebase them onto
   the remote branch (memex/team/rebase.py). Memory files merge by rule
   (memex/team/merge.py); a memory deleted on one side and edited on the
   other is kept (an erasure takes it below); any other conflict aborts the
   rebase and names the file;
4. reindex, erase here what teammates erased (the real erase path), and
   retire exact duplicates of the merged tree (``memex dedup``'s rule, which
   picks the same survivor on every clone); commit that;
5. push. Rejected because a teammate pushed meanwhile: fetch and go again
   from 3, at most ``[team] push_attempts`` times.

A history rewrite (``memex erase --purge-history``) is coordinated, not
assumed: the clone that rewrote publishes it with a force-push only if
nobody pushed since its last sync; every other clone sees the remote
rewritten at its next sync, moves its own commits onto the new history as
one commit (so erased text it still held never reaches the remote), and
drops the old objects; each sync report says what this clone's history
still holds (memex/team/history.py).
"""

from __future__ import annotations

import socket
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memex import layout
from memex.config import load_config, setting
from memex.config_trust import machine_settings_in
from memex.erased import erased_list
from memex.errors import ConfigError, MemexError, SyncError
from memex.files import permissions
from memex.files.locking import file_lock
from memex.team import tombstones, wiring
from memex.team.gitrepo import Repo
from memex.team.history import load_state, report_history, rewrites, rewritten_here, save_state
from memex.team.rebase import conflicts, rebase, repair_markers
from memex.team.report import SyncReport, timed
from memex.team.wiring import KEY_ID_FILE, LIST_FILE, MEMORY_PREFIX

if TYPE_CHECKING:
    from memex.vault import Vault

SHARED = (layout.MEMORIES_DIR, LIST_FILE, KEY_ID_FILE, wiring.ATTRIBUTES_NAME)
FIRST_TIME = (layout.GIT_IGNORE_NAME, layout.CONFIG_RELPATH.as_posix())  # committed once, when still untracked


def _team_key_id(repo: Repo, ref: str | None, root: Path) -> str | None:
    path = layout.VaultPaths(root).erase_key_id
    if ref is not None:
        done = repo.run("show", f"{ref}:{repo.prefix}{KEY_ID_FILE}", check=False)
        if done.code == 0 and done.out.strip():
            return done.out.strip()
    return path.read_text(encoding="utf-8").strip() if path.is_file() else None


def _has_list(repo: Repo, ref: str | None, memex_dir: Path) -> bool:
    """Whether the vault (here or on the remote) already holds erased-list lines."""
    local = memex_dir / erased_list.LIST_NAME
    if local.is_file() and local.stat().st_size:
        return True
    if ref is None:
        return False
    done = repo.run("show", f"{ref}:{repo.prefix}{LIST_FILE}", check=False)
    return done.code == 0 and bool(done.out.strip())


def _settle_key(vault: Vault, repo: Repo, ref: str | None, report: SyncReport) -> None:
    team_id = _team_key_id(repo, ref, vault.root)
    status = tombstones.check_key(vault.memex_dir, team_id)
    if status != "new":
        return
    key = tombstones.local_key(vault.memex_dir)
    if key is None and _has_list(repo, ref, vault.memex_dir):
        # Lines made under a key this clone does not have: a new key could not read them.
        raise SyncError(
            "the vault has an erased list but no key fingerprint yet: run the first `memex sync` on the clone "
            f"whose {tombstones.KEY_FILE} made the list, or install that key here with `memex sync --key-file PATH`"
        )
    key = key or tombstones.create_key(vault.memex_dir)
    layout.VaultPaths(vault.root).erase_key_id.write_text(tombstones.fingerprint(key) + "\n", encoding="utf-8")
    report.key = f"created: share {tombstones.KEY_FILE} with each teammate over a private channel (memex help team)"


def _tracked(repo: Repo, path: str) -> bool:
    return bool(repo.run("ls-files", "-z", "--", path).out)


def _is_template_readme(root: Path) -> bool:
    """True when the vault's README is the one `memex init` wrote: shared like
    the rest of the template. A README the folder already had is the user's
    own file, which sync never commits."""
    from memex.vault import template_dir

    ours, template = root / layout.README_NAME, template_dir() / layout.README_NAME
    return ours.is_file() and template.is_file() and ours.read_bytes() == template.read_bytes()


def _commit(vault: Vault, repo: Repo, message: str) -> int:
    """Stage memex's own files and commit them; returns how many files changed."""
    # Lines git cut from the erased list (a restore of an older copy) go to the team too.
    erased_list.mirror(vault.memex_dir).restore()
    paths = [p for p in SHARED if (vault.root / p).exists() or _tracked(repo, p)]
    paths += [p for p in FIRST_TIME if (vault.root / p).exists() and not _tracked(repo, p) and not _private(vault, p)]
    if _is_template_readme(vault.root) and not _tracked(repo, layout.README_NAME):
        paths.append(layout.README_NAME)
    if paths:
        repo.run("add", "-A", "--", *paths)
    if _tracked(repo, layout.SESSIONS_DIR):
        repo.run("add", "-u", "--", layout.SESSIONS_DIR)  # archives an erasure deleted
    staged = [p for p in repo.out("diff", "--cached", "--name-only", "-z").split("\0") if p]
    if not staged:
        return 0
    repo.run("commit", "-q", "--no-verify", "-m", message, env=repo.identity_env())
    return len(staged)


def _private(vault: Vault, path: str) -> bool:
    """A settings file holding what only this machine may set (a server URL may hold a
    password, a command names this machine's files): the team never gets it from memex."""
    return path == layout.CONFIG_RELPATH.as_posix() and bool(machine_settings_in(vault.root / path))


def _config_notes(vault: Vault, repo: Repo, report: SyncReport) -> None:
    """What the settings files, as this sync left them, say memex does not use."""
    try:
        report.config = list(load_config(vault.root).notices)
    except ConfigError as exc:  # a teammate's broken file: the next command says so too
        report.config = [str(exc)]
    config = layout.CONFIG_RELPATH.as_posix()
    if (vault.root / config).exists() and _private(vault, config) and not _tracked(repo, config):
        report.notes.append(
            f"{config} is not committed: it holds {', '.join(machine_settings_in(vault.root / config))}, which only "
            f"this machine may use; move them to {layout.CONFIG_LOCAL_RELPATH.as_posix()} and the next sync shares the rest"
        )


# Files each clone keeps for itself (git-ignored): one in the branch was committed with
# `git add -f`; a pull would write it over this clone's own, or make it tracked (docs/team.md).
CLONE_OWN = (layout.CONFIG_LOCAL_NAME, layout.ERASE_KEY_NAME, layout.ERASURES_PENDING_NAME,
             layout.ERASED_JOURNAL_NAME, layout.ERASURE_JOURNAL_NAME, layout.INDEX_NAME)


def _refuse_unreadable_settings(vault: Vault, repo: Repo, pre: str | None, remote: str, branch: str) -> None:
    """Never land settings this clone cannot read: a teammate's config.toml that
    does not parse (or holds a value memex refuses) would stop every memex
    command on the clone, this sync included, and agents would run without
    memory. When the settings do not read after the pull, the clone goes
    back to where it was (its own commits kept) and the sync stops."""
    if pre is None:
        return
    try:
        load_config(vault.root)
        return
    except ConfigError as exc:
        error = str(exc)
    shared = layout.CONFIG_RELPATH.as_posix()
    # They read before the pull (this sync took its [team] settings from them).
    # --keep: back to this clone's last commit; a change not committed stays.
    back = repo.run("reset", "-q", "--keep", pre, check=False)
    if back.code != 0:
        raise SyncError(f"{error}; the pull brought settings memex cannot read, and going back failed: "
                        f"{_git_said(back.err or back.out)}")
    vault.reindex()  # git rewrote files to go and come back: the same text, new stats
    raise SyncError(
        f"the team's settings cannot be read: {error}; nothing was pulled, so this clone keeps working on its "
        f"own settings. `git log -p {remote}/{branch} -- {shared}` shows who changed it; once it is fixed and "
        f"pushed, `memex sync` again (or fix it yourself: `git pull`, fix {shared}, `git commit`, `git push`)"
    )


def _refuse_clone_own(repo: Repo, ref: str | None, remote: str, branch: str) -> None:
    """Stop before git changes anything when the remote branch holds a file each clone keeps for itself."""
    if ref is None:
        return
    listed = repo.out("ls-tree", "-r", "-z", "--name-only", ref, "--", f"{repo.prefix}{layout.MEMEX_DIR}/")
    found = [p for p in listed.split("\0") if p and p.rsplit("/", 1)[-1].split("-")[0] in CLONE_OWN]
    if found:
        shown = ", ".join(p.removeprefix(repo.prefix) for p in found)
        raise SyncError(
            f"{remote}/{branch} holds {shown}, which each clone keeps for itself (someone committed it with "
            "`git add -f`); memex does not pull it over this clone's own: remove it from the branch "
            f"(`git rm --cached {shown}`, commit, push) and sync again; nothing was changed here"
        )


def _reach_shared_index(vault: Vault, dry_run: bool) -> None:
    """A sync settles the pulled tree into the index, the shared one too: without it, rows of
    files a teammate deleted (or erased) would stay there. So it stops before git changes anything."""
    if dry_run or not vault.backend.shared:
        return
    try:
        vault.backend.connect()  # also finishes the erasures journaled for it (memex/erased/pending.py)
    except MemexError as exc:
        raise SyncError(f"{exc}; nothing was synced: run `memex sync` again when the server can be reached") from exc


def _message(what: str) -> str:
    return f"memex sync: {what} ({socket.gethostname()})"


def _settle_tree(vault: Vault, report: SyncReport, state: dict[str, Any]) -> bool:
    """Reindex, apply teammates' erasures, retire exact duplicates; True when something was erased."""
    from memex.consolidation.cleanup import dedup_existing

    # git writes what it pulls with the umask's modes (0644 files, 0755
    # folders); a vault is private to its user (docs/write-path.md).
    tightened = permissions.tighten(vault.root)
    if tightened:
        report.notes.append(f"made {len(tightened)} file(s) and folder(s) git wrote private (0600 / 0700)")
    started = time.perf_counter()
    done = vault.reindex()
    report.seconds["index"] = report.seconds.get("index", 0.0) + time.perf_counter() - started
    for key in ("added", "updated", "removed"):
        report.index[key] = report.index.get(key, 0) + int(getattr(done, key, 0) or 0)
    size = erased_list.Guard(vault.memex_dir)
    size.refresh()
    # Conflict copies of erased memories need a look at every memory id: only
    # when the list grew since the last sync, or this sync made conflict copies.
    deep = size.size != state.get("erased_size") or bool(report.conflicts)
    with timed(report, "erasures"):
        applied = tombstones.apply(vault, conflict_copies=deep)
    size.refresh()
    state["erased_size"] = size.size
    report.erased += [i for i in applied.ids if i not in report.erased]
    with timed(report, "dedup"):
        for _ in range(100):  # memex dedup changes at most 200 memories a run
            cleanup = dedup_existing(vault, apply=True)
            report.deduplicated += [{"keep": g.keep, "superseded": g.supersede} for g in cleanup.groups]
            if not cleanup.remaining:
                break
    return bool(applied.ids)


def _publish_rewrite(vault: Vault, repo: Repo, remote: str, branch: str, state: dict[str, Any],
                     report: SyncReport) -> None:
    """This clone rewrote history: force-push it, if nobody pushed since this clone's last sync."""
    tip = repo.rev(f"refs/remotes/{remote}/{branch}")
    known = state.get("remote_tip")
    by_hand = tip is not None and repo.run("merge-base", "--is-ancestor", tip, "HEAD", check=False).code == 0
    if tip is not None and tip != known and not by_hand:  # by hand: the rewrite was force-pushed already
        raise SyncError(
            "this clone rewrote its git history (`memex erase --purge-history`), and a teammate pushed to "
            f"{remote}/{branch} since this clone last synced, on the old history; to keep their work, re-clone "
            f"from the remote, copy your {tombstones.KEY_FILE} and {LIST_FILE} lines in, run `memex sync`, and "
            "run the erase with --purge-history again there"
        )
    report.local_changes += _commit(vault, repo, _message("local changes"))
    _settle_tree(vault, report, state)
    report.local_changes += _commit(vault, repo, _message("erasures and duplicates"))
    lease = f"--force-with-lease=refs/heads/{branch}:{tip}" if tip else "--force-with-lease"
    repo.run("push", "-q", lease, remote, f"HEAD:refs/heads/{branch}")
    report.history["status"] = "rewritten_here_and_published"
    report.notes.append(
        "this clone's rewritten history is now on the remote; each teammate's next `memex sync` adopts it and "
        "drops the old objects; copies outside git clones (backups, forks, a host's caches) are out of reach"
    )


def _git_said(text: str) -> str:
    """What a failed git command said, in one line: its ``fatal:`` / ``error:``
    lines (what went wrong), else its last lines; not the blank lines and the
    generic advice git prints after them."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    said = [line for line in lines if line.startswith(("fatal:", "error:"))]
    return " / ".join((said or lines)[-3:]) or "no message"


def _push(repo: Repo, remote: str, branch: str, exists: bool) -> bool:
    ahead = int(repo.out("rev-list", "--count", f"{remote}/{branch}..HEAD").strip()) if exists else 1
    if not ahead:
        return True
    done = repo.run("push", "-q", *([] if exists else ["-u"]), remote, f"HEAD:refs/heads/{branch}", check=False)
    if done.code == 0:
        return True
    text = done.err + done.out
    if "rejected" in text or "fetch first" in text or "non-fast-forward" in text:
        return False
    raise SyncError(f"git push to {remote} failed: {_git_said(text)}")


def _fetch(repo: Repo, remote: str, branch: str) -> tuple[str | None, str | None]:
    """(the remote branch before, after); None when the remote does not have the branch."""
    before = repo.rev(f"refs/remotes/{remote}/{branch}")
    done = repo.run("fetch", "-q", remote, f"+refs/heads/{branch}:refs/remotes/{remote}/{branch}", check=False)
    if done.code != 0:
        text = (done.err or done.out).strip()
        if "couldn't find remote ref" in text:
            return before, None
        raise SyncError(f"git fetch from {remote} failed: {_git_said(text)}")
    return before, repo.rev(f"refs/remotes/{remote}/{branch}")


def _dry_run(vault: Vault, repo: Repo, remote: str, branch: str, before: str | None, after: str | None,
             report: SyncReport) -> SyncReport:
    report.set_up = wiring.missing(repo, vault.root)
    state = load_state(repo)
    if rewrites(vault.memex_dir) > int(state.get("rewrites", 0)) and rewritten_here(repo, state):
        report.history["status"] = "rewritten_here"
        report.notes.append("this clone rewrote its history; the next `memex sync` publishes it (a force-push with lease)")
    elif before is not None and after is not None and repo.run(
        "merge-base", "--is-ancestor", before, after, check=False
    ).code != 0:
        report.history["status"] = "remote_rewritten"
        report.notes.append("the remote's history was rewritten; the next `memex sync` adopts it and drops the old objects")
    team_id = _team_key_id(repo, f"{remote}/{branch}" if after else None, vault.root)
    report.key = tombstones.check_key(vault.memex_dir, team_id)
    paths = [p for p in SHARED if (vault.root / p).exists() or _tracked(repo, p)]
    status = repo.out("status", "--porcelain", "-z", "--untracked-files=all", "--", *paths) if paths else ""
    report.local_changes = len([e for e in status.split("\0") if len(e) > 3])
    if after:
        report.incoming = int(repo.out("rev-list", "--count", f"HEAD..{after}").strip())
        report.outgoing = int(repo.out("rev-list", "--count", f"{after}..HEAD").strip())
    else:
        report.outgoing = int(repo.out("rev-list", "--count", "HEAD").strip()) if repo.rev("HEAD") else 0
    return report


def sync(vault: Vault, remote: str | None = None, dry_run: bool = False, key_file: Path | None = None) -> SyncReport:
    """Sync the vault with its team remote (see the module doc); raises SyncError with what to do."""
    started = time.perf_counter()
    repo = Repo(vault.root)
    busy = repo.busy()
    if busy:
        raise SyncError(f"{repo.top}: a git {busy} is unfinished; finish it or abort it (`git {busy} --abort`), then run `memex sync`")
    branch = repo.branch()
    team = vault.config.section("team")
    where = str(layout.VaultPaths(vault.root).config) + " [team]"
    remote_name, remote_branch = repo.upstream(branch, remote or setting(team, "remote", "", where) or None)
    attempts = int(setting(team, "push_attempts", 5, where))
    if attempts < 1:
        raise SyncError(f"{where}: push_attempts must be at least 1")
    report = SyncReport(remote=remote_name, branch=remote_branch, dry_run=dry_run)
    _reach_shared_index(vault, dry_run)
    if key_file is not None:
        report.key = tombstones.install_key(vault.memex_dir, key_file)
    with file_lock(layout.VaultPaths(vault.root).sync_lock, timeout=600):
        tracked, after = _fetch(repo, remote_name, remote_branch)
        _refuse_clone_own(repo, after, remote_name, remote_branch)
        # Where the remote was at this clone's last sync (a plain `git fetch`, or a dry run,
        # moves the tracking ref since): a rewrite is seen against that.
        last = load_state(repo).get("remote_tip")
        before = (repo.rev(last) if isinstance(last, str) else None) or tracked
        if dry_run:
            _dry_run(vault, repo, remote_name, remote_branch, before, after, report)
            _config_notes(vault, repo, report)
            return report
        if after is not None and not repo.rev("HEAD"):
            raise SyncError(
                f"{repo.top} has no commits yet, but {remote_name}/{remote_branch} already holds the team vault: "
                "clone it instead (`git clone URL`) and run `memex sync --key-file PATH` in the clone; move "
                f"memory files written here into the clone's {MEMORY_PREFIX} first"
            )
        report.set_up = wiring.ensure(repo, vault.root)
        _settle_key(vault, repo, f"{remote_name}/{remote_branch}" if after else None, report)
        state = load_state(repo)
        purges = rewrites(vault.memex_dir)
        git_started = time.perf_counter()
        if purges > int(state.get("rewrites", 0)) and rewritten_here(repo, state):
            _publish_rewrite(vault, repo, remote_name, remote_branch, state, report)
            rewritten = True
        else:
            rewritten = _sync_loop(vault, repo, remote_name, remote_branch, before, after, attempts, report, state)
        state.update(rewrites=purges, remote_tip=repo.rev("HEAD"))
        save_state(repo, state)
        with timed(report, "history"):
            report_history(vault, repo, report, rewritten)
        report.seconds["git_and_rules"] = time.perf_counter() - git_started - report.seconds.get("index", 0.0)
        _config_notes(vault, repo, report)
    report.seconds["total"] = time.perf_counter() - started
    return report


def _sync_loop(vault: Vault, repo: Repo, remote: str, branch: str, before: str | None, after: str | None,
               attempts: int, report: SyncReport, state: dict[str, Any]) -> bool:
    """Commit, rebase, settle, push; again while the push is rejected. True when the remote was rewritten."""
    rewritten = False
    for attempt in range(1, attempts + 1):
        report.attempts = attempt
        report.local_changes += _commit(vault, repo, _message("local changes"))
        pre = repo.rev("HEAD")
        if after is not None and repo.rev("HEAD"):
            report.incoming += int(repo.out("rev-list", "--count", f"HEAD..{after}").strip())
            forced = before is not None and repo.run("merge-base", "--is-ancestor", before, after, check=False).code != 0
            if forced:
                # The team rewrote history: keep only this clone's own commits, as one commit below.
                rewritten = True
                report.history["status"] = "rewrite_adopted"
                report.notes.append(
                    "the remote's history was rewritten (a teammate's `memex erase --purge-history`); this "
                    "clone moved its own changes onto it and dropped the old objects"
                )
                with timed(report, "rebase"):
                    rebase(vault, repo, after, before, report)
            else:
                with timed(report, "rebase"):
                    rebase(vault, repo, after, None, report)
            _refuse_unreadable_settings(vault, repo, pre, remote, branch)
        with vault.write_lock():
            report.repaired += repair_markers(vault, repo, [r for r in (pre, after) if r])
        report.conflicts += conflicts(vault, repo)
        erased = _settle_tree(vault, report, state)
        if after is not None and (rewritten or erased) and repo.rev(after):
            # Erased text may sit in this clone's unpushed commits: push one commit holding the settled tree.
            repo.run("reset", "-q", "--soft", after)
        report.local_changes += _commit(vault, repo, _message("merged, erasures and duplicates"))
        if repo.rev("HEAD"):
            span = f"{after}..HEAD" if after is not None else "HEAD"
            report.outgoing = int(repo.out("rev-list", "--count", span).strip())
        if _push(repo, remote, branch, after is not None):
            return rewritten
        before, after = _fetch(repo, remote, branch)
        _refuse_clone_own(repo, after, remote, branch)
        report.notes.append(f"push rejected (a teammate pushed meanwhile); pulled again (attempt {attempt})")
    raise SyncError(
        f"the push to {remote}/{branch} was rejected {attempts} times (teammates kept pushing); "
        "your changes are committed locally; run `memex sync` again"
    )
