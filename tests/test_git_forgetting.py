"""Forgetting against everyday git, each in a real repository through the CLI (docs/forgetting.md).

Each test here failed on the code before its fix: `git stash pop` after an
erase refused, a look at an older commit left git refusing to go back, and
`git reset --hard` took the audit log's record of an erasure with it.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.erasekit import files_with_text
from tests.erasekit import SECRET, WORDS, cli, commit_all, git, git_env  # noqa: F401 (a fixture)
from memex.vault import init_vault

KEEP = "We deploy the shop on Fridays after the standup"


def run(root: Path, *args: str) -> dict[str, object]:
    code, out = cli(root, *args, "--json")
    data = json.loads(out)
    assert isinstance(data, dict)
    return {**data, "_code": code}


def add(root: Path, text: str) -> str:
    data = run(root, "add", text)
    assert data["_code"] == 0, data
    return str(data["id"])


def erase(root: Path, memory_id: str) -> None:
    data = run(root, "erase", memory_id, "--reason", "privacy")
    assert data["_code"] == 0 and data["erased"] == [memory_id], data


def git_try(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=False)


def assert_forgotten(root: Path, secret: str) -> None:
    """Nothing memex shows holds the erased memory, and no file of the work tree does."""
    code, out = cli(root, "search", "Zqorblax storage unit", "--json")
    assert code == 0 and secret not in out and "Zqorblax" not in out
    code, out = cli(root, "list", "--json")
    assert code == 0 and secret not in out
    code, _ = cli(root, "get", secret)
    assert code != 0
    assert files_with_text(root, WORDS) == {}


@pytest.fixture
def repo(tmp_path: Path, git_env: None) -> Path:
    """A committed vault whose erased list and audit log are already tracked (an erasure happened before)."""
    root = init_vault(tmp_path / "gvault", git=True)
    erase(root, add(root, "An earlier note nobody needs any more"))
    add(root, KEEP)
    commit_all(root, "memories")
    return root


def test_git_stash_pop_after_an_erase_is_not_refused(repo: Path) -> None:
    """Found from outside: erase, `git stash`, any memex read (a hook's search),
    `git stash pop` refused: the read had already appended the stashed lines to
    the tracked .memex/erased.txt, a local change git will not overwrite."""
    secret = add(repo, SECRET)
    commit_all(repo, "secret")
    erase(repo, secret)
    after_erase = {name: (repo / ".memex" / name).read_bytes() for name in ("erased.txt", "erasure.log")}
    git(repo, "stash")
    code, out = cli(repo, "search", "Zqorblax storage unit", "--json")
    assert code == 0 and secret not in out  # the stash holds the erasure; the journal still does too
    assert cli(repo, "reindex")[0] == 0
    doctor = run(repo, "doctor")
    assert doctor["_code"] != 0 and len(doctor["drift"]["erased_restored"]) == 1  # type: ignore[index]

    popped = git_try(repo, "stash", "pop")
    assert popped.returncode == 0, popped.stdout + popped.stderr
    for name, data in after_erase.items():
        assert (repo / ".memex" / name).read_bytes() == data
    assert cli(repo, "reindex")[0] == 0
    assert run(repo, "doctor")["_code"] == 0
    assert_forgotten(repo, secret)


def test_a_look_at_an_older_commit_lets_git_go_back(repo: Path) -> None:
    """`git checkout OLD` (as `git bisect` does), memex used there, then
    `git checkout main`: memex must leave no local change in the way."""
    branch = git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip()
    secret = add(repo, SECRET)
    commit_all(repo, "secret")
    erase(repo, secret)
    commit_all(repo, "erased")
    git(repo, "checkout", "-q", "HEAD~1")  # the secret and the shorter list come back
    code, out = cli(repo, "search", "Zqorblax storage unit", "--json")
    assert code == 0 and secret not in out
    assert cli(repo, "reindex")[0] == 0
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""

    back = git_try(repo, "checkout", "-q", branch)
    assert back.returncode == 0, back.stdout + back.stderr
    assert cli(repo, "reindex")[0] == 0
    assert run(repo, "doctor")["_code"] == 0
    assert_forgotten(repo, secret)


def test_git_reset_hard_past_the_erasure_keeps_its_record(repo: Path) -> None:
    """`git reset --hard` to before the erase commit deleted the record of the
    erasure from .memex/erasure.log (committed like the list). The record
    stays in its journal, doctor says the log is behind, --fix appends it again."""
    secret = add(repo, SECRET)
    commit_all(repo, "secret")
    erase(repo, secret)
    log = repo / ".memex" / "erasure.log"
    full = log.read_text(encoding="utf-8")
    assert secret in full and "Zqorblax" not in full  # ids and counts, never the text
    commit_all(repo, "erased")
    git(repo, "reset", "-q", "--hard", "HEAD~1")
    assert secret not in log.read_text(encoding="utf-8")

    doctor = run(repo, "doctor")
    behind = doctor["drift"]["behind"]  # type: ignore[index]
    assert doctor["_code"] != 0 and any(b.startswith(".memex/erasure.log:") for b in behind), behind
    assert any(b.startswith(".memex/erased.txt:") for b in behind), behind
    fixed = run(repo, "doctor", "--fix")
    assert fixed["after"]["behind"] == []  # type: ignore[index]
    assert log.read_text(encoding="utf-8") == full
    code, out = cli(repo, "search", "Zqorblax storage unit", "--json")
    assert code == 0 and secret not in out


def test_the_next_erasure_puts_back_what_git_cut(repo: Path) -> None:
    """A list and a log that git restored older copies of regain the lost
    lines, in order, when memex appends to them anyway."""
    secret = add(repo, SECRET)
    commit_all(repo, "secret")
    erase(repo, secret)
    listed = {name: (repo / ".memex" / name).read_text() for name in ("erased.txt", "erasure.log")}
    git(repo, "checkout", "--", ".")
    other = add(repo, "Rotate the staging database password every quarter")
    erase(repo, other)
    for name, before in listed.items():
        now = (repo / ".memex" / name).read_text()
        assert now.startswith(before) and len(now) > len(before)
    # The restored file is still the user's to delete (erase by id takes it).
    erase(repo, secret)
    assert_forgotten(repo, secret)


def test_git_clean_fdx_takes_nothing_forgetting_needs(repo: Path) -> None:
    """`git clean -fdx` deletes every git-ignored file: the erasure key (every
    command then stopped: "erase.key missing"), the journals and the index.
    After `git checkout -- .` had cut the list, the erasure was gone for good."""
    secret = add(repo, SECRET)
    commit_all(repo, "secret")
    erase(repo, secret)
    git(repo, "checkout", "--", ".")  # the file and the shorter list are back
    git(repo, "clean", "-q", "-f", "-d", "-x")
    assert not (repo / ".memex" / "erase.key").exists() and not (repo / ".memex" / "erased.local").exists()

    assert cli(repo, "reindex")[0] == 0
    code, out = cli(repo, "search", "Zqorblax storage unit", "--json")
    assert code == 0 and secret not in out
    doctor = run(repo, "doctor")
    assert len(doctor["drift"]["erased_restored"]) == 1, doctor  # type: ignore[index]
    erase(repo, secret)  # the file git brought back, by id
    assert cli(repo, "reindex")[0] == 0
    assert run(repo, "doctor", "--fix")["clean"] is True
    assert_forgotten(repo, secret)


def test_a_linked_worktree_of_an_older_commit_keeps_the_erasure(repo: Path, tmp_path: Path) -> None:
    """`git worktree add ../old HEAD~1` and memex run there: the work tree has
    the list but no key (every command stopped), nor any journal."""
    secret = add(repo, SECRET)
    commit_all(repo, "secret")
    erase(repo, secret)
    commit_all(repo, "erased")
    old = tmp_path / "old"
    git(repo, "worktree", "add", "-q", str(old), "HEAD~1")
    assert files_with_text(old, WORDS)  # the older commit holds the file: git history is the user's

    assert cli(old, "reindex")[0] == 0
    code, out = cli(old, "search", "Zqorblax storage unit", "--json")
    assert code == 0 and secret not in out
    code, out = cli(old, "list", "--json")
    assert code == 0 and secret not in out
    doctor = run(old, "doctor")
    assert len(doctor["drift"]["erased_restored"]) == 1, doctor  # type: ignore[index]


def test_a_wrong_key_moved_away_does_not_come_back_from_its_spare(tmp_path: Path, git_env: None) -> None:
    """The spare copy of the key must not stop `memex sync --key-file`: a clone
    that made its own key, then learns the team's, moves its own away."""
    from memex.erased import erased_list
    from memex.team import tombstones

    root = init_vault(tmp_path / "clone", git=True)
    memex_dir = root / ".memex"
    erased_list.remember(memex_dir, [])  # this clone's own key; its spare too
    (memex_dir / "erase.key").unlink()
    team_key = tmp_path / "team.key"
    team_key.write_text("cd" * 32 + "\n")
    assert tombstones.install_key(memex_dir, team_key) == "installed"
    (memex_dir / "erase.key").unlink()  # `git clean -fdx`
    assert tombstones.local_key(memex_dir) == bytes.fromhex("cd" * 32)


def test_a_garbled_audit_log_does_not_stop_an_erase(repo: Path) -> None:
    """The audit log is now read before each append (for the lines git cut from
    it): a byte that is not UTF-8 in it must not stop the erasure."""
    log = repo / ".memex" / "erasure.log"
    log.write_bytes(log.read_bytes() + b'{"reason": "caf\xe9"}\n')
    secret = add(repo, SECRET)
    erase(repo, secret)
    assert secret in log.read_text(encoding="utf-8", errors="replace")
    assert_forgotten(repo, secret)


def test_purge_history_in_a_vault_whose_list_is_committed(repo: Path) -> None:
    """Found from outside: in a vault whose erased list and audit log were
    committed (any vault that erased before), `memex erase ID --purge-history`
    erased, then refused the rewrite: "uncommitted changes to tracked files
    (.memex/erased.txt, .memex/erasure.log)", the two files it had just written."""
    secret = add(repo, SECRET)
    commit_all(repo, "secret")
    data = run(repo, "erase", secret, "--reason", "privacy", "--purge-history")
    assert data["_code"] == 0 and data["git_history"] == "purged", data
    objects = subprocess.run(["git", "-C", str(repo), "cat-file", "--batch-all-objects", "--batch"],
                             capture_output=True, check=True).stdout.lower()
    assert WORDS[0].lower().encode() not in objects
    # The rewrite reset the work tree; the erasure's lines are back in both files, for the next commit.
    status = git(repo, "status", "--porcelain")
    assert " M .memex/erased.txt" in status and " M .memex/erasure.log" in status
    assert secret in (repo / ".memex" / "erasure.log").read_text(encoding="utf-8")
    assert run(repo, "doctor")["_code"] == 0
    assert_forgotten(repo, secret)
