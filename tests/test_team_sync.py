"""`memex sync` with three clones and a bare remote on this machine (real git, real vaults)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import time
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from memex.embedding import embed
from memex.cli import app
from memex.erase.steps import erase
from memex.errors import SyncError
from memex.files import permissions
from memex.files.memory_file import parse
from memex.team.merge import CONFLICT_KEY
from memex.team.sync import sync
from memex.vault import Vault, init_vault
from tests.fakes import HashEmbedder
from tests.team_helpers import Team, git, raw_bytes_outside_git

SECRET = "my salary is 91234 euros"


@pytest.fixture
def team(tmp_path: Path) -> Team:
    return Team(tmp_path)


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch) -> click.Group:
    monkeypatch.setattr(embed, "load_embedder", lambda setting: HashEmbedder())
    return app()


def run(cli: click.Group, root: Path, *args: str) -> tuple[int, str]:
    out = CliRunner().invoke(cli, ["--vault", str(root), "sync", *args])
    assert out.exception is None or isinstance(out.exception, SystemExit), out.output
    return out.exit_code, out.output


def bodies(team: Team, name: str) -> list[tuple[str, str]]:
    return sorted((status, body) for _, _, status, body in team.index(name))


def test_adds_on_each_clone_reach_every_clone(team: Team) -> None:
    for name in "abc":
        team.add(name, f"fact written on clone {name}")
    for name in "abcab":
        team.sync(name)
    want = [("active", f"fact written on clone {n}") for n in "abc"]
    assert all(bodies(team, n) == want for n in "abc")
    assert team.files("a") == team.files("b") == team.files("c")


def test_the_same_fact_added_on_two_clones_ends_as_one_memory(team: Team) -> None:
    team.add("a", "we pin numpy below 2")
    team.add("c", "we pin numpy below 2")
    team.sync("a")
    report = team.sync("c")
    assert len(report.deduplicated) == 1
    team.sync("a")
    team.sync("b")
    for name in "abc":
        active = [b for s, b in bodies(team, name) if s == "active"]
        assert len(active) == 1, (name, bodies(team, name))
    assert team.index("a") == team.index("b") == team.index("c")


def test_a_body_edited_on_two_clones_keeps_both_and_says_so(team: Team, cli: click.Group) -> None:
    memory_id = team.add("a", "the api token rotates every 30 days")
    for name in "abc":
        team.sync(name)
    for name, days in (("a", "14"), ("b", "60")):
        path = team.path_of(name, memory_id)
        path.write_text(path.read_text().replace("30 days", f"{days} days"))
    assert team.sync("a").conflicts == []
    code, out = run(cli, team.roots["b"], "--json")
    assert code == 0, out
    report = json.loads(out)
    [conflict] = report["conflicts"]
    assert conflict["id"] == memory_id and conflict["suggestion"] == "supersede"
    for name in "cab":
        team.sync(name)
    for name in "abc":
        assert [b for _, b in bodies(team, name)] == [
            "the api token rotates every 14 days", "the api token rotates every 60 days"]
        for text in team.files(name).values():
            assert b"<<<<<<<" not in text and b">>>>>>>" not in text
    other = team.roots["c"] / conflict["other_path"]
    assert parse(other.read_text(), other).meta[CONFLICT_KEY] == memory_id
    code, out = run(cli, team.roots["a"])
    assert code == 0 and "synced" in out


def test_an_erasure_reaches_every_clone_and_local_copies_of_the_text(team: Team) -> None:
    secret = team.add("b", SECRET)
    team.sync("b")
    team.sync("c")
    # Clone a has not synced since: it stores the same text on its own.
    team.add("a", "My salary is 91234 euros.")
    with team.vault("b") as v:
        erase(v, secret, reason="asked")
    team.sync("b")
    team.sync("c")  # the file's deletion arrives through git
    report_a = team.sync("a")
    assert len(report_a.erased) == 1 and report_a.erased != [secret]  # a's own copy, by the tombstone
    team.sync("b")
    team.sync("c")
    for name in "abc":
        raw = raw_bytes_outside_git(team.roots[name]).lower()
        assert b"91234" not in raw, name
        with team.vault(name) as v:
            assert v.search("salary 91234") == []
    assert team.files("a") == team.files("b") == team.files("c")
    # What history still holds is said, not hidden.
    assert report_a.history["status"] == "retained" and report_a.history["erased_blobs"] >= 1
    assert "91234" in git(team.roots["a"], "log", "-p", "--all")


def test_purge_history_is_published_and_adopted_by_each_clone(team: Team) -> None:
    secret = team.add("b", SECRET)
    team.add("a", "keep this one")
    for name in "bacb":
        team.sync(name)
    team.add("c", "written on c before the rewrite reached it")
    with team.vault("b") as v:
        result = erase(v, secret, reason="asked", purge_history=True)
    assert result.git.status == "purged" and "`memex sync`" in str(result.git.next_step)
    assert team.sync("b", dry_run=True).history["status"] == "rewritten_here"
    assert team.sync("b").history["status"] == "rewritten_here_and_published"
    git(team.roots["a"], "fetch", "-q")  # a plain fetch moves the tracking ref; the rewrite is still seen
    assert team.sync("a", dry_run=True).history["status"] == "remote_rewritten"
    for name in "ac":
        report = team.sync(name)
        assert report.history["status"] == "rewrite_adopted", report
        assert report.history["erased_blobs"] == 0
    team.sync("a")
    team.sync("b")
    for name in "abc":
        assert "91234" not in git(team.roots[name], "log", "-p", "--all", "--reflog"), name
        assert b"91234" not in raw_bytes_outside_git(team.roots[name])
    assert "91234" not in git(team.remote, "log", "-p", "--all")
    assert team.index("a") == team.index("b") == team.index("c")
    assert ("active", "written on c before the rewrite reached it") in bodies(team, "a")


def test_a_memory_deleted_on_one_clone_and_edited_on_another_is_kept(team: Team) -> None:
    memory_id = team.add("a", "the cache lives in /var/cache/app")
    for name in "ab":
        team.sync(name)
    team.path_of("a", memory_id).unlink()
    path = team.path_of("b", memory_id)
    path.write_text(path.read_text().replace("/var/cache/app", "/srv/cache/app"))
    team.sync("a")
    report = team.sync("b")
    assert report.kept_edited
    team.sync("a")
    assert [b for _, b in bodies(team, "a")] == ["the cache lives in /srv/cache/app"]


def _race_hook(team: Team, every_time: bool = False) -> None:
    """A pre-push hook in clone a that first pushes a commit from clone b (a teammate, meanwhile)."""
    b = team.roots["b"]
    (b / "memories" / "user").mkdir(parents=True, exist_ok=True)
    marker = team.base / "pushed-once"
    guard = "" if every_time else f"if [ ! -e {marker} ]; then touch {marker}; "
    hook = team.roots["a"] / ".git" / "hooks" / "pre-push"
    hook.write_text(
        "#!/bin/sh\n"
        f"{guard}cd {b} && n=$(date +%s%N) && "
        "printf -- '---\\nid: R%s\\n---\\nfact from b %s, pushed meanwhile\\n' $n $n > memories/user/race-$n.md && "
        "git add -A memories && git commit -qm race && git push -q origin HEAD:main"
        + ("; fi" if guard else "") + "\nexit 0\n"
    )
    hook.chmod(hook.stat().st_mode | stat.S_IEXEC)


def test_a_rejected_push_pulls_again_and_succeeds(team: Team) -> None:
    """A teammate pushes while this clone is syncing (from a real pre-push hook)."""
    team.add("a", "fact from a")
    _race_hook(team)
    report = team.sync("a")
    assert report.attempts == 2 and any("rejected" in n for n in report.notes)
    team.sync("c")
    found = [b for _, b in bodies(team, "c")]
    assert "fact from a" in found and len(found) == 2 and "pushed meanwhile" in found[1]


def test_pushes_rejected_every_time_stop_after_the_configured_attempts(team: Team, cli: click.Group) -> None:
    team.add("a", "fact from a")
    config = team.roots["a"] / ".memex" / "config.toml"
    config.write_text(config.read_text().replace("# push_attempts = 5", "push_attempts = 2"))
    _race_hook(team, every_time=True)
    code, out = run(cli, team.roots["a"])
    assert code == 1 and "rejected 2 times" in out and "committed locally" in out
    assert "fact from a" in git(team.roots["a"], "log", "-p", "main", "--", "memories")  # kept, committed
    (team.roots["a"] / ".git" / "hooks" / "pre-push").unlink()
    code, out = run(cli, team.roots["a"])
    assert code == 0, out
    team.sync("c")
    assert ("active", "fact from a") in bodies(team, "c")


def test_dry_run_changes_nothing(team: Team, cli: click.Group) -> None:
    team.add("a", "not pushed yet")
    head = git(team.roots["a"], "rev-parse", "HEAD")
    code, out = run(cli, team.roots["a"], "--dry-run", "--json")
    assert code == 0, out
    assert json.loads(out)["local_changes"] == 1
    assert git(team.roots["a"], "rev-parse", "HEAD") == head
    assert git(team.remote, "rev-parse", "main") == head


def test_clear_errors_without_a_traceback(tmp_path: Path, team: Team, cli: click.Group) -> None:
    plain = init_vault(tmp_path / "plain", git=False)
    code, out = run(cli, plain)
    assert code == 1 and "not a git repository" in out and "git init" in out
    lonely = init_vault(tmp_path / "lonely", git=True)
    code, out = run(cli, lonely)
    assert code == 1 and "no git remote" in out and "git remote add" in out
    a = team.roots["a"]
    git(a, "checkout", "-q", "--detach")
    code, out = run(cli, a)
    assert code == 1 and "detached" in out and "git switch" in out
    git(a, "switch", "-q", "main")
    code, out = run(cli, a, "--key-file", str(tmp_path / "nope"))
    assert code == 1 and "does not exist" in out


def test_a_remote_git_cannot_reach_is_named_in_the_error(tmp_path: Path, cli: click.Group) -> None:
    """Found from outside: the error kept git's last three lines, its generic
    advice ("Please make sure you have the correct access rights / and the
    repository exists."), and dropped the line saying what was wrong."""
    vault = init_vault(tmp_path / "v", git=True)
    git(vault, "remote", "add", "origin", str(tmp_path / "no-such-remote.git"))
    code, out = run(cli, vault)
    assert code == 1 and "git fetch from origin failed" in out
    assert "no-such-remote.git' does not appear to be a git repository" in out
    assert " /  / " not in out and "failed:  /" not in out


def test_a_clone_without_the_team_key_is_stopped(team: Team, cli: click.Group) -> None:
    git(team.base, "clone", "-q", str(team.remote), str(team.base / "d"))
    d = team.base / "d"
    code, out = run(cli, d)
    assert code == 1 and "--key-file" in out and "erasure key" in out
    wrong = team.base / "wrong.key"
    wrong.write_text("ab" * 32 + "\n")
    (d / ".memex" / "erase.key").write_text("ab" * 32 + "\n")
    code, out = run(cli, d)
    assert code == 1 and "not the team's erasure key" in out
    (d / ".memex" / "erase.key").unlink()
    code, out = run(cli, d, "--key-file", str(team.roots["a"] / ".memex" / "erase.key"))
    assert code == 0, out
    assert stat.S_IMODE(os.stat(d / ".memex" / "erase.key").st_mode) == 0o600


def test_the_index_is_never_committed(team: Team) -> None:
    team.add("a", "anything")
    team.sync("a")
    tracked = git(team.roots["a"], "ls-files").split()
    assert not [p for p in tracked if p.endswith(".db") or "index" in p or p.endswith("erase.key")]
    assert ".memex/erase-key.id" in tracked and ".gitattributes" in tracked


def test_the_vaults_own_readme_reaches_teammates_but_a_users_readme_stays_theirs(tmp_path: Path) -> None:
    (tmp_path / "t").mkdir()
    team = Team(tmp_path / "t")
    assert "README.md" in git(team.roots["a"], "ls-files").split()  # what `memex init` wrote
    assert (team.roots["b"] / "README.md").read_bytes() == (team.roots["a"] / "README.md").read_bytes()
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "README.md").write_text("my own notes, not for the team\n", encoding="utf-8")
    root = init_vault(notes, git=True)
    git(root, "config", "user.name", "n")
    git(root, "config", "user.email", "n@example.org")
    git(tmp_path, "init", "-q", "--bare", "notes.git")
    git(root, "remote", "add", "origin", str(tmp_path / "notes.git"))
    with Vault(root, embedder=HashEmbedder()) as v:
        sync(v)
    assert "README.md" not in git(root, "ls-files").split()


def test_sync_rejects_an_unfinished_rebase(team: Team) -> None:
    (team.roots["a"] / ".git" / "rebase-merge").mkdir()
    with pytest.raises(SyncError, match="rebase is unfinished"):
        with Vault(team.roots["a"], embedder=team.embedder) as v:
            sync(v)
    subprocess.run(["rmdir", str(team.roots["a"] / ".git" / "rebase-merge")], check=True)


def test_a_list_made_before_the_team_key_existed_needs_that_key(tmp_path: Path, cli: click.Group) -> None:
    """A vault pushed by hand, erased list included, before anyone ran memex sync."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    first = init_vault(tmp_path / "first", git=True)
    with Vault(first, embedder=HashEmbedder()) as v:
        erase(v, v.add(SECRET).id, reason="before the team")
    for args in (("symbolic-ref", "HEAD", "refs/heads/main"), ("add", "-A"), ("-c", "user.name=t", "-c",
                 "user.email=t@example.org", "commit", "-qm", "by hand"), ("push", "-q", str(remote), "main")):
        git(first, *args)
    git(tmp_path, "clone", "-q", str(remote), str(tmp_path / "second"))
    code, out = run(cli, tmp_path / "second")
    assert code == 1 and "erased list but no key fingerprint" in out
    assert not (tmp_path / "second" / ".memex" / "erase.key").exists()
    code, out = run(cli, tmp_path / "second", "--key-file", str(first / ".memex" / "erase.key"))
    assert code == 0, out


def test_a_new_repository_pointed_at_a_team_remote_is_told_to_clone(team: Team, cli: click.Group) -> None:
    fresh = init_vault(team.base / "fresh", git=True)
    git(fresh, "remote", "add", "origin", str(team.remote))
    git(fresh, "symbolic-ref", "HEAD", "refs/heads/main")
    code, out = run(cli, fresh)
    assert code == 1 and "no commits yet" in out and "git clone" in out
    assert git(team.remote, "log", "--oneline", "main").count("\n") == 1  # the remote is untouched


def test_a_rewrite_force_pushed_by_hand_is_adopted_too(team: Team) -> None:
    """`memex erase --purge-history` says to force-push; a clone that did so by hand syncs on."""
    secret = team.add("b", SECRET)
    for name in "bac":
        team.sync(name)
    with team.vault("b") as v:
        erase(v, secret, reason="asked", purge_history=True)
    git(team.roots["b"], "push", "-q", "--force", "origin", "main")
    assert team.sync("b").history["status"] == "rewritten_here_and_published"
    for name in "ac":
        assert team.sync(name).history["status"] == "rewrite_adopted"
        assert "91234" not in git(team.roots[name], "log", "-p", "--all", "--reflog")


def _set_confidence(team: Team, name: str, memory_id: str, value: float) -> None:
    path = team.path_of(name, memory_id)
    text = path.read_text()
    old = next(line for line in text.splitlines() if line.startswith("confidence:"))
    path.write_text(text.replace(old, f"confidence: {value}", 1))


def _confidence(team: Team, name: str, memory_id: str) -> object:
    with team.vault(name) as v:
        return v.get(memory_id).meta["confidence"]


def test_confidence_changed_on_two_clones_takes_the_newer_change(
    team: Team, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Newer is the side whose commit touching the file is later, whichever side git calls ours
    (the fallback without times, the higher value, would give the other answer in both cases)."""
    memory_id = team.add("a", "the staging database is postgres 15")
    for name in "ab":
        team.sync(name)
    # Commit times have one-second resolution: each step's commits are dated
    # (git reads GIT_AUTHOR_DATE, memex's commits too) rather than slept apart.
    start = int(time.time()) + 60

    def at(step: int) -> None:
        monkeypatch.setenv("GIT_AUTHOR_DATE", f"@{start + 10 * step} +0000")

    # b's change is older (committed before a's), a's is on the remote: a's lower value wins.
    at(0)
    _set_confidence(team, "b", memory_id, 0.9)
    git(team.roots["b"], "commit", "-qam", "b, earlier")
    at(1)
    _set_confidence(team, "a", memory_id, 0.3)
    team.sync("a")
    team.sync("b")
    team.sync("a")
    assert _confidence(team, "a", memory_id) == _confidence(team, "b", memory_id) == 0.3
    # Now a's change reaches the remote first, but b's local change is newer: b's lower value wins.
    at(2)
    _set_confidence(team, "a", memory_id, 0.5)
    team.sync("a")
    at(3)
    _set_confidence(team, "b", memory_id, 0.4)
    team.sync("b")
    team.sync("a")
    assert _confidence(team, "a", memory_id) == _confidence(team, "b", memory_id) == 0.4


def test_a_memory_pushed_with_conflict_markers_is_split_into_both_versions(team: Team, cli: click.Group) -> None:
    """A teammate merged with plain git, without memex's driver, and pushed the markers."""
    memory_id = team.add("b", "the release branch is cut on mondays")
    team.sync("b")
    path = team.path_of("b", memory_id)
    text = path.read_text()
    body = "the release branch is cut on mondays"
    path.write_text(text.replace(body, f"<<<<<<< HEAD\n{body.replace('mondays', 'tuesdays')}\n=======\n"
                                       f"{body.replace('mondays', 'fridays')}\n>>>>>>> other\n"))
    git(team.roots["b"], "commit", "-qam", "merged by hand")
    git(team.roots["b"], "push", "-q", "origin", "main")
    code, out = run(cli, team.roots["a"], "--json")
    assert code == 0, out
    report = json.loads(out)
    assert report["repaired"] == [path.relative_to(team.roots["b"]).as_posix()]
    assert [c["id"] for c in report["conflicts"]] == [memory_id]
    found = [b for _, b in bodies(team, "a")]
    assert found == ["the release branch is cut on fridays", "the release branch is cut on tuesdays"]
    for name in "bc":
        team.sync(name)
    for name in "abc":
        assert b"<<<<<<<" not in raw_bytes_outside_git(team.roots[name])
    assert team.index("a") == team.index("b") == team.index("c")


def test_two_clones_making_the_team_key_at_once_are_told_what_to_do(tmp_path: Path, cli: click.Group) -> None:
    """A vault pushed by hand (no key yet); x and y both sync first, x's push lands in the middle of y's."""
    import sys

    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(remote))
    first = init_vault(tmp_path / "first", git=True)
    for args in (("symbolic-ref", "HEAD", "refs/heads/main"), ("add", "-A"), ("-c", "user.name=t", "-c",
                 "user.email=t@example.org", "commit", "-qm", "by hand"), ("push", "-q", str(remote), "main")):
        git(first, *args)
    for name in "xy":
        git(tmp_path, "clone", "-q", str(remote), str(tmp_path / name))
        git(tmp_path / name, "config", "user.name", name)
        git(tmp_path / name, "config", "user.email", f"{name}@example.org")
    hook = tmp_path / "y" / ".git" / "hooks" / "pre-push"
    marker = tmp_path / "x-synced"
    hook.write_text(
        f"#!/bin/sh\nif [ ! -e {marker} ]; then touch {marker}; "
        f"{Path(sys.executable).parent / 'memex'} --vault {tmp_path / 'x'} sync >/dev/null 2>&1; fi\n"
        "exit 0\n"
    )
    hook.chmod(hook.stat().st_mode | stat.S_IEXEC)
    code, out = run(cli, tmp_path / "y")
    assert marker.exists()
    assert code == 1 and "at the same time" in out and "--key-file" in out, out
    assert git(remote, "show", "main:.memex/erase-key.id").strip()  # x's key is the team's


def test_three_clones_syncing_at_the_same_moment_converge(team: Team) -> None:
    """Real concurrency: three syncs race for the remote; the losers pull again and push."""
    import threading

    for name in "abc":
        for i in range(5):
            team.add(name, f"concurrent fact {i} from clone {name}")
    errors: list[BaseException] = []
    reports = {}

    def one(name: str) -> None:
        try:
            reports[name] = team.sync(name)
        except BaseException as exc:  # the assertion below shows it
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(n,)) for n in "abc"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert errors == []
    for name in "abc":
        team.sync(name)
    team.sync("a")
    assert team.files("a") == team.files("b") == team.files("c")
    assert len(team.index("a")) == 15 and team.index("a") == team.index("b") == team.index("c")


def test_what_a_sync_brings_in_is_private_like_the_rest_of_the_vault(team: Team) -> None:
    """git writes pulled files and folders with the umask's modes (0644 / 0755);
    a vault's files are 0600 and its folders 0700 (docs/write-path.md)."""
    memory_id = team.add("a", "the vpn certificate expires in march")
    team.sync("a")
    team.sync("b")
    with team.vault("a") as v:
        erase(v, memory_id, reason="test")
    team.sync("a")
    team.sync("b")  # brings in a's erased list and the folders of a's memory
    with team.vault("b") as v:
        assert permissions.loose_modes(v.root) == []
