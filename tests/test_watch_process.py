"""`memex watch` as a real process: status, one watcher per vault, signals, sharing the index."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from typing import Any
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from memex.watch import state as watch_state
from memex.cli import app
from memex.vault import Vault, init_vault
from tests.watchkit import TIMEOUT, found, index_matches_disk, running_watcher, wait_for

main = app()  # the memex group with every command, as users run it


def memex_cmd(*args: str) -> list[str]:
    return [sys.executable, "-c", "from memex.cli import run; run()", *args]


@pytest.fixture
def lexical_root(tmp_path: Path) -> Path:
    """A vault without the model: these tests are about processes, not ranking."""
    root = init_vault(tmp_path / "vault", git=False)
    config = root / ".memex" / "config.toml"
    config.write_text(config.read_text().replace('# model = "auto"', 'model = "none"'))
    return root


@pytest.fixture
def watch_proc(lexical_root: Path) -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen(memex_cmd("--vault", str(lexical_root), "watch", "--reconcile-seconds", "3600"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: proc.poll() is not None or watch_state.watcher_info(lexical_root / ".memex")["pid"]
                 == proc.pid, what="the watcher process to start")
        assert proc.poll() is None, proc.communicate()[1]
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate(timeout=TIMEOUT)


def status_json(root: Path) -> dict[str, object]:
    result = CliRunner().invoke(main, ["--vault", str(root), "status", "--json"])
    assert result.exit_code == 0, result.output
    data: dict[str, object] = json.loads(result.output)
    return data


def test_status_counts_every_kind_of_difference(lexical_root: Path) -> None:
    root = lexical_root
    data = status_json(root)
    assert data["differing"] == 0 and data["fresh"] is True
    assert data["watcher"] == {"running": False, "pid": None, "started": None, "heartbeat": None,
                               "heartbeat_age_seconds": None, "responsive": None}
    with Vault(root) as vault:
        kept, gone = vault.add("first memory about marmots"), vault.add("second memory about voles")
    (root / "memories" / "by-hand.md").write_text("written by hand\n")
    (root / gone.path).unlink()
    st = (root / kept.path).stat()
    os.utime(root / kept.path, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))
    data = status_json(root)
    assert data["differing"] == 3 and data["fresh"] is False and data["clean"] is False
    assert data["missing"] == ["memories/by-hand.md"]
    assert data["stale"] == [kept.path] and data["orphaned"] == [gone.path]
    human = CliRunner(env={"COLUMNS": "200"}).invoke(main, ["--vault", str(root), "status"])
    assert human.exit_code == 0
    assert "3 file(s) differ" in human.output and "not running" in human.output
    assert "missing: memories/by-hand.md" in human.output


def test_status_tells_the_truth_even_when_the_watcher_lost_its_events(lexical_root: Path) -> None:
    with running_watcher(lexical_root, embedder=None) as watcher:
        watcher._observer.unschedule_all()
        (lexical_root / "memories" / "unseen.md").write_text("no event will announce this\n")
        data = status_json(lexical_root)
        watcher_info = data["watcher"]
        assert isinstance(watcher_info, dict)
        assert watcher_info["running"] is True and watcher_info["pid"] == os.getpid()
        assert watcher_info["responsive"] is True
        assert data["differing"] == 1 and data["missing"] == ["memories/unseen.md"]
    info = watch_state.watcher_info(lexical_root / ".memex")
    assert info["running"] is False and info["last_state"] == "stopped"


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_watch_process_indexes_refuses_a_second_and_stops_cleanly(
    watch_proc: subprocess.Popen[str], lexical_root: Path, signum: int
) -> None:
    root = lexical_root
    (root / "memories" / "live.md").write_text("indexed by the watcher process: bandicoot\n")
    with Vault(root) as vault:
        wait_for(lambda: found(vault, "bandicoot"), what="the watcher process to index a file")
    assert status_json(root)["differing"] == 0

    second = subprocess.run(memex_cmd("--vault", str(root), "watch"), capture_output=True, text=True,
                            timeout=60)
    assert second.returncode != 0
    assert "already running" in second.stderr and str(watch_proc.pid) in second.stderr
    assert watch_proc.poll() is None  # the first one is unaffected

    watch_proc.send_signal(signum)
    # Ctrl-C: 130, as docs/cli.md says of every command; SIGTERM, a supervisor's stop: 0.
    assert watch_proc.wait(TIMEOUT) == (130 if signum == signal.SIGINT else 0)
    _, stderr = watch_proc.communicate()
    assert "Traceback" not in stderr and "stopped" in stderr
    state = watch_state.read_state(root / ".memex")
    assert state is not None and state["state"] == "stopped"
    assert watch_state.watcher_info(root / ".memex")["running"] is False


def test_add_and_reindex_while_the_watcher_runs(watch_proc: subprocess.Popen[str], lexical_root: Path) -> None:
    root = lexical_root
    reindexers = [
        subprocess.Popen(memex_cmd("--vault", str(root), "reindex", "--json"), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
        for _ in range(3)
    ]
    ids = []
    with Vault(root) as vault:
        for i in range(30):
            result = vault.add(f"Concurrent memory {i} about wallaby{i}")
            assert result.status == "created"
            ids.append(result.id)
            if i % 5 == 0:  # hand edits land in the same moments
                (root / "memories" / f"hand{i}.md").write_text(f"hand-written {i}: quoll{i}\n")
        outputs = [p.communicate(timeout=60) for p in reindexers]
        for proc, (out, err) in zip(reindexers, outputs):
            assert proc.returncode == 0, err
            assert "locked" not in err.lower()
            json.loads(out)
        wait_for(lambda: index_matches_disk(vault), what="the index to settle")
        for i, memory_id in enumerate(ids):
            assert vault.get(memory_id).body.strip() == f"Concurrent memory {i} about wallaby{i}"
            assert found(vault, f"wallaby{i}")
        assert all(found(vault, f"quoll{i}") for i in range(0, 30, 5))
    # Stop only once the watcher has handled the last changes (so its stderr,
    # checked below, covers them): a state it wrote after their debounce.
    def state() -> dict[str, Any]:
        return watch_state.read_state(root / ".memex") or {}

    handled_after = time.time() + state()["debounce_ms"] / 1000
    wait_for(lambda: state().get("heartbeat_ts", 0) > handled_after, what="the watcher to handle the last changes")
    watch_proc.send_signal(signal.SIGTERM)
    assert watch_proc.wait(TIMEOUT) == 0
    _, stderr = watch_proc.communicate()
    assert "locked" not in stderr.lower() and "Traceback" not in stderr and "ERROR" not in stderr


def test_a_killed_watcher_is_reported_as_not_running(watch_proc: subprocess.Popen[str], lexical_root: Path) -> None:
    watch_proc.kill()  # SIGKILL: no chance to clean up; watch.json still says "running"
    watch_proc.wait(TIMEOUT)
    state = watch_state.read_state(lexical_root / ".memex")
    assert state is not None and state["state"] == "running"
    info = watch_state.watcher_info(lexical_root / ".memex")
    assert info["running"] is False and info["last_state"] == "crashed" and info["last_pid"] == watch_proc.pid
    human = CliRunner(env={"COLUMNS": "200"}).invoke(main, ["--vault", str(lexical_root), "status"])
    assert "not running" in human.output and "without shutting down" in human.output


def test_a_stuck_watcher_is_reported_as_not_responding(lexical_root: Path) -> None:
    memex_dir = lexical_root / ".memex"
    holder = watch_state.try_file_lock(watch_state.lock_path(memex_dir))
    assert holder is not None
    try:
        old = time.time() - 120
        watch_state.write_state(memex_dir, {"state": "running", "pid": os.getpid(), "heartbeat_ts": old,
                                            "heartbeat": watch_state.iso(old), "started": watch_state.iso(old)})
        info = status_json(lexical_root)["watcher"]
        assert isinstance(info, dict)
        assert info["running"] is True and info["responsive"] is False
        assert isinstance(info["heartbeat_age_seconds"], float) and info["heartbeat_age_seconds"] >= 119
        human = CliRunner(env={"COLUMNS": "200"}).invoke(main, ["--vault", str(lexical_root), "status"])
        assert "NOT RESPONDING" in human.output
    finally:
        holder.close()


def test_status_reads_a_watch_state_nested_too_deeply_as_no_state(lexical_root: Path) -> None:
    """Found from outside: a `.memex/watch.json` nested past Python's stack
    (a damaged or hand-made file) made `memex status` print a traceback."""
    (lexical_root / ".memex" / "watch.json").write_text("[" * 100_000 + "]" * 100_000)
    data = status_json(lexical_root)
    watcher = data["watcher"]
    assert isinstance(watcher, dict) and watcher["running"] is False
