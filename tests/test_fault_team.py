"""A stateful fault suite for a team vault and its shared index.

Hypothesis interleaves, on two honest clones (a, b) of one vault sharing a
bare remote and one PostgreSQL index: adds, erasures, `memex sync`, an
agent session's extraction (the context engine's commit), the PostgreSQL
server crashing (``pg_ctl stop -m immediate``) and starting again; and, from
a third clone (t) that only uses plain git, teammate pushes of hostile
settings (a command to run, a server to connect to, a force-added
``config.local.toml``, resource roots) and hostile memory files (an erased
text under a new id, git's conflict markers, a symbolic link out of the
vault, broken frontmatter). After every step it checks:

* no teammate command ever ran, and no connection ever reached the
  teammate's server;
* no byte of a text erased on a clone, or pulled by it since, is anywhere
  under that clone outside ``.git`` (the index, its WAL, caches, logs
  included), and no search there answers it;

and when the server is up and everyone has synced twice (the ``settle``
rule, and the end of every run):

* no add is lost: every memory an add stored and nobody erased is a file on
  both clones, and both find it;
* the shared index holds no erased memory, and no erasure is left unfinished.

Every text carries a fresh tag (``tagNNNNx``). The default run is sized for
CI (derandomized by the suite's Hypothesis profile, tests/hypokit.py; about
a minute); ``MEMEX_FAULT_TEAM_EXAMPLES`` / ``MEMEX_FAULT_TEAM_STEPS`` widen
it, ``MEMEX_FAULT_TEAM_SEED`` runs another fixed sequence and
``MEMEX_HYPOTHESIS_PROFILE=deep`` ten times as many random ones
(docs/reliability.md).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, seed, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from memex import health
from memex.context import after_turn, commit_session
from memex.erased import pending
from memex.erase.steps import erase
from memex.errors import MemexError
from memex.files.memory_file import parse
from tests.conftest import use_postgres
from tests.faultkit import leaked_bytes, report
from tests.hypokit import examples
from tests.team_helpers import Listener, Team, git

WORDS = ["heron", "otter", "maple", "copper", "violet", "granite", "falcon", "willow"]
TAG = re.compile(r"tag\d{4}x")
HONEST = ("a", "b")
EXAMPLES = int(os.environ.get("MEMEX_FAULT_TEAM_EXAMPLES") or examples(3))
STEPS = int(os.environ.get("MEMEX_FAULT_TEAM_STEPS", "20"))
SEED = os.environ.get("MEMEX_FAULT_TEAM_SEED")
COUNTS = {"cases": 0, "steps": 0, "erases": 0, "faults": 0, "leaked": 0}
# "add" first: the first example Hypothesis makes repeats the first action (cheap, so).
ACTIONS = ["add", "sync", "erase", "erase", "agent_session", "server", "teammate_settings", "teammate_file",
           "teammate_file", "sync", "settle"]
SETTINGS = ["extract_command", "index_url", "local_file", "roots"]
FILES = ["erased_text", "markers", "link_out", "link_key", "bad_yaml"]
RULES: dict[str, int] = {}  # how often each rule did something (printed by the last test, with -s)


class World:
    """What outlives one example: the PostgreSQL server, the teammate's server and command."""

    server: Any = None
    listener: Listener | None = None
    base: Path | None = None
    marker: Path | None = None
    command = ""


def start_world() -> None:
    from tests import pgkit

    World.base = Path(tempfile.mkdtemp(prefix="memex-fault-team-"))
    World.base.chmod(0o755)
    World.marker = World.base / "teammate-command-ran"
    script = World.base / "evil.py"
    script.write_text(f"open({str(World.marker)!r}, 'w').write('ran')\nprint('{{}}')\n")
    World.command = f"{sys.executable} {script}"
    World.listener = Listener()
    if pgkit.MISSING is None:
        World.server = pgkit.PgServer(World.base / "pg")


def stop_world() -> None:
    if World.server is not None:
        World.server.stop()
    if World.listener is not None:
        World.listener.close()
    if World.base is not None:
        shutil.rmtree(World.base, ignore_errors=True)


@pytest.fixture(scope="module", autouse=True)
def _world() -> Iterator[None]:
    start_world()
    yield
    stop_world()


class TeamLife(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        assert World.base is not None
        self.tmp = Path(tempfile.mkdtemp(prefix="case-", dir=World.base))
        self.team = Team(self.tmp, names=HONEST)
        # The teammate: a plain git clone, nothing of memex (its syncs are pushes by hand).
        self.team.roots["t"] = self.tmp / "t"
        git(self.tmp, "clone", "-q", str(self.team.remote), str(self.team.roots["t"]))
        git(self.team.roots["t"], "config", "user.email", "t@example.org")
        git(self.team.roots["t"], "config", "user.name", "t")
        self.url = None if World.server is None else World.server.new_database()
        if self.url is not None:
            for name in HONEST:
                use_postgres(self.team.roots[name], self.url)
        self.down = False
        self.serial = 0
        self.bodies: dict[str, str] = {}  # tag -> the text stored
        self.added: set[str] = set()  # tags an add stored (a file was written)
        self.erased: set[str] = set()  # tags erased anywhere
        self.known: dict[str, set[str]] = {n: set() for n in HONEST}  # erased tags each clone has seen
        self.unpushed: dict[str, set[str]] = {n: set() for n in HONEST}  # erased here, not synced since
        self.published: set[str] = set()
        COUNTS["cases"] += 1

    def teardown(self) -> None:
        try:
            if self.down or any(self.unpushed.values()) or self.added:
                self.settle()
        finally:
            if self.down:
                World.server.restart()
            shutil.rmtree(self.tmp, ignore_errors=True)

    # -- helpers --------------------------------------------------------------

    def text(self, word: str) -> str:
        self.serial += 1
        tag = f"tag{self.serial:04}x"
        body = f"Entry {tag} about {word} number {self.serial * 7919 % 10007}"
        self.bodies[tag] = body
        return body

    def step(self, fault: bool = False) -> None:
        COUNTS["steps"] += 1
        COUNTS["faults"] += int(fault)
        caller = sys._getframe(1).f_code.co_name
        RULES[caller] = RULES.get(caller, 0) + 1

    def files_of(self, name: str) -> dict[str, str]:
        """{path: text} of the clone's memory files that parse (links and broken ones aside)."""
        root = self.team.roots[name]
        out: dict[str, str] = {}
        for path in sorted((root / "memories").rglob("*.md")):
            if path.is_symlink() or not path.is_file():
                continue
            out[path.relative_to(root).as_posix()] = path.read_text(encoding="utf-8", errors="replace")
        return out

    def teammate_pushes(self, paths: list[str], message: str) -> None:
        root = self.team.roots["t"]
        git(root, "add", "-f", "--", *paths)
        git(root, "commit", "-q", "-m", message)
        git(root, "push", "-q", "origin", "HEAD:main")

    def teammate_fresh(self) -> Path:
        """The teammate's clone, level with the remote (their own changes dropped)."""
        root = self.team.roots["t"]
        git(root, "fetch", "-q", "origin")
        git(root, "reset", "-q", "--hard", "origin/main")
        return root

    # -- memex on the honest clones ------------------------------------------------

    @initialize()
    def some_memories_on_both(self) -> None:
        """Something to erase and to lose from the first step on."""
        for name in ("a", "a", "b"):
            self.add(name, WORDS[self.serial % len(WORDS)])
        for name in HONEST:
            self.sync(name)

    def add(self, name: str, word: str) -> None:
        body = self.text(word)
        tag = TAG.findall(body)[0]
        with self.team.vault(name) as vault:
            try:
                result = vault.add(body)
            except MemexError:
                assert self.down, "an add failed with the server up"
                assert not any(tag in t for t in self.files_of(name).values()), "a failed add left a file"
                self.step()
                return
        if result.status == "created":
            self.added.add(tag)
        self.step()

    def sync(self, name: str) -> None:
        try:
            self.team.sync(name)
        except MemexError as exc:
            assert self.down, f"a sync failed with the server up: {exc}"
            assert "nothing was synced" in str(exc)
            self.step()
            return
        self.published |= self.unpushed[name]
        self.unpushed[name] = set()
        self.known[name] |= self.published
        self.step()

    def erase_one(self, name: str, i: int) -> None:
        files = [(p, t) for p, t in self.files_of(name).items() if TAG.search(t)]
        if not files:
            return
        rel, text = files[i % len(files)]
        mf = parse(text, Path(rel))
        memory_id = str(mf.meta.get("id") or "")
        if not memory_id:
            return
        tags = set(TAG.findall(mf.body))  # each text is unique: copies of it hold the same tag
        with self.team.vault(name) as vault:
            try:
                erase(vault, memory_id, reason="fault suite")
            except MemexError as exc:
                if "journaled" not in str(exc):
                    return  # not erased (the server was needed to select it, say): nothing changed
                assert self.down, f"an erase was left unfinished with the server up: {exc}"
        self.erased |= tags
        self.known[name] |= tags
        self.unpushed[name] |= tags
        COUNTS["erases"] += 1
        self.step()

    def agent_session(self, name: str) -> None:
        """What an agent session's Stop hook runs: archive the turns, extract memories."""
        self.serial += 1
        session = f"s{self.serial}"
        turns = [{"role": "user", "content": f"We decided the {WORDS[self.serial % 8]} queue drains at {self.serial}."}]
        with self.team.vault(name) as vault:
            try:
                after_turn(vault, session, turns, 0, commit="none")
                commit_session(vault, session)
            except MemexError:
                assert self.down, "a session's commit failed with the server up"
        self.step()

    # -- the server --------------------------------------------------------------------

    def server_crashes_or_starts(self) -> None:
        """The PostgreSQL server dies (``pg_ctl stop -m immediate``), or comes back."""
        if self.url is None:
            return
        if self.down:
            self.server_starts()
            return
        World.server.crash()
        self.down = True
        self.step(fault=True)

    def server_starts(self) -> None:
        World.server.restart()
        self.down = False
        self.step()

    # -- a hostile teammate, with plain git ---------------------------------------------

    def teammate_pushes_settings(self, kind: str) -> None:
        root = self.teammate_fresh()
        shared, local = root / ".memex" / "config.toml", root / ".memex" / "config.local.toml"
        assert World.listener is not None
        line = {
            "extract_command": ("context", f"extract_command = {json.dumps(World.command)}"),
            "local_file": ("context", f"extract_command = {json.dumps(World.command)}"),
            "index_url": ("index", f'backend = "postgres"\nurl = "postgresql://x@127.0.0.1:{World.listener.port}/v"'),
            "roots": ("resources", 'roots = ["/"]'),
        }[kind]
        target = local if kind == "local_file" else shared
        text = target.read_text(encoding="utf-8") if target.exists() else ""
        if kind != "local_file" and f"\n{line[1].splitlines()[0]}" in "\n" + text:
            return  # pushed before
        header = f"[{line[0]}]"
        text = text.replace(f"\n{header}\n", f"\n{header}\n{line[1]}\n", 1) if f"\n{header}\n" in text else (
            text + f"\n{header}\n{line[1]}\n")
        target.write_text(text, encoding="utf-8")
        rel = target.relative_to(root).as_posix()
        self.teammate_pushes([rel], f"settings: {kind}")
        if kind == "local_file":
            # Each clone keeps that file for itself: a sync refuses to pull it and changes nothing.
            for name in HONEST:
                head = git(self.team.roots[name], "rev-parse", "HEAD")
                with pytest.raises(MemexError, match="nothing was"):
                    self.team.sync(name)
                assert git(self.team.roots[name], "rev-parse", "HEAD") == head
            git(root, "rm", "-q", "--cached", rel)  # the team takes it out again
            git(root, "commit", "-q", "-m", "untrack it")
            git(root, "push", "-q", "origin", "HEAD:main")
        self.step(fault=True)

    def teammate_pushes_a_file(self, kind: str) -> None:
        root = self.teammate_fresh()
        self.serial += 1
        rel = f"memories/user/from-teammate-{self.serial}.md"
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if kind == "erased_text" and not self.published:
            kind = "markers"  # nothing erased yet to bring back
        if kind == "erased_text":
            gone = sorted(self.published)
            # The text of a memory the team erased, back under a new id.
            path.write_text(f"---\nid: 01TEAMMATE{self.serial:016d}\nscope: user\n---\n{self.bodies[gone[0]]}\n")
        elif kind == "markers":
            path.write_text("---\nscope: user\n---\n<<<<<<< ours\nqueue one\n=======\nqueue two\n>>>>>>> theirs\n")
        elif kind == "link_out":
            path.symlink_to("/etc/hostname")
        elif kind == "link_key":
            path.symlink_to("../../.memex/erase.key")
        else:
            path.write_text("---\nscope: [unclosed\n---\nbody\n")
        self.teammate_pushes([rel], f"file: {kind}")
        self.step(fault=True)

    # -- the steps ------------------------------------------------------------------------
    # One rule draws which step comes next. Hypothesis's swarm testing leaves
    # a random subset of the rules out of each example; with the few, costly
    # examples a CI run affords, separate rules left whole kinds of step out
    # (no erasure in a default run): here each step is drawn from them all.

    @rule(
        action=st.sampled_from(ACTIONS), name=st.sampled_from(HONEST), word=st.sampled_from(WORDS),
        i=st.integers(0, 30), setting=st.sampled_from(SETTINGS), file=st.sampled_from(FILES),
    )
    def act(self, action: str, name: str, word: str, i: int, setting: str, file: str) -> None:
        if action == "add":
            self.add(name, word)
        elif action == "sync":
            self.sync(name)
        elif action == "erase":
            self.erase_one(name, i)
        elif action == "agent_session":
            self.agent_session(name)
        elif action == "server":
            self.server_crashes_or_starts()
        elif action == "teammate_settings":
            self.teammate_pushes_settings(setting)
        elif action == "teammate_file":
            self.teammate_pushes_a_file(file)
        else:
            self.settle()

    # -- checks -------------------------------------------------------------------------

    @invariant()
    def no_teammate_command_ran_and_no_connection_was_made(self) -> None:
        assert World.marker is not None and World.listener is not None
        assert not World.marker.exists(), "a teammate's command ran"
        assert World.listener.accepted == 0, "memex connected to a teammate's server"

    @invariant()
    def nothing_erased_is_left_on_a_clone_that_knows(self) -> None:
        for name in HONEST:
            known = self.known[name]
            if not known:
                continue
            root = self.team.roots[name]
            leaked = leaked_bytes(root, known)
            COUNTS["leaked"] += sum(leaked.values())
            assert leaked == {}, (name, leaked)
            if self.down:
                continue  # reads need the server
            with self.team.vault(name) as vault:
                for tag in sorted(known)[-2:]:
                    assert not any(tag in h.body for h in vault.search(tag, limit=50)), (name, tag)

    def settle(self) -> None:
        """The server up, every clone synced twice: nothing lost, nothing erased left anywhere."""
        if self.down:
            self.server_starts()
        for name in (*HONEST, *HONEST):
            self.sync(name)
        alive = self.added - self.erased
        for name in HONEST:
            bodies = "\n".join(self.files_of(name).values())
            assert not [t for t in alive if self.bodies[t] not in bodies], (name, "an add was lost")
            assert self.known[name] == self.erased
            with self.team.vault(name) as vault:
                found = health.drift(vault)
                assert found.unfinished_erasures == [], found.unfinished_erasures
                for tag in sorted(alive)[-3:]:
                    assert any(tag in h.body for h in vault.search(tag, limit=50)), (name, tag, "not found")
            assert pending.outstanding(self.team.roots[name] / ".memex") == []
        if self.url is not None:
            rows = World.server.sql(self.url, "SELECT body FROM memories")
            held = {t for (body,) in rows for t in TAG.findall(body)}
            assert not held & self.erased, ("the shared index kept erased memories", held & self.erased)


# Derandomized by the suite's profile (tests/hypokit.py) unless a seed is given.
TeamLife.TestCase.settings = settings(
    **({"derandomize": False} if SEED is not None else {}),
    max_examples=EXAMPLES, stateful_step_count=STEPS, deadline=None,
    phases=[p for p in Phase if p is not Phase.shrink] if os.environ.get("MEMEX_FAULT_NO_SHRINK") else list(Phase),
    suppress_health_check=list(HealthCheck),
)
TestTeamLife = TeamLife.TestCase
if SEED is not None:
    TestTeamLife = seed(int(SEED))(TestTeamLife)


def test_zz_report_counts() -> None:
    """Runs after TestTeamLife (file order): hands the counts to MEMEX_FAULT_REPORT."""
    report("team", COUNTS["cases"], COUNTS["faults"], COUNTS["leaked"], COUNTS["steps"], COUNTS["erases"])
    print("team fault suite:", COUNTS, dict(sorted(RULES.items())))
    assert COUNTS["leaked"] == 0
