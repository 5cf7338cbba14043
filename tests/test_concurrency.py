"""Several processes adding and reindexing on one vault at once: no "database
is locked" reaches anyone, and no update is lost (docs/write-path.md)."""

from __future__ import annotations

import multiprocessing as mp
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memex import health
from memex.vault import Vault
from tests.fakes import HashEmbedder

WORKERS = 4
PER_WORKER = 12


def _word(worker: int, i: int) -> str:
    """A token that only one memory contains, to check each one is searchable."""
    return f"tok{worker}x{i}q"


def _adder(root: str, worker: int, out: mp.Queue) -> None:  # type: ignore[type-arg]
    """Add memories; every third step also reindex, and drop a hand-written file."""
    try:
        with Vault(Path(root), embedder=HashEmbedder()) as v:
            ids = []
            for i in range(PER_WORKER):
                result = v.add(f"Worker {worker} memory {i} mentions {_word(worker, i)}", session=f"w{worker}")
                ids.append(result.id if result.status == "created" else f"!{result.status}")
                if i % 3 == 2:
                    hand = Path(root) / "memories" / "user" / f"hand-{worker}-{i}.md"
                    hand.parent.mkdir(parents=True, exist_ok=True)
                    hand.write_text(f"Hand note {worker} {i} with {_word(worker, 100 + i)}\n")
                    v.reindex()
        out.put((worker, ids, None))
    except BaseException as exc:  # report, never hang the parent
        out.put((worker, [], f"{type(exc).__name__}: {exc}"))


Result = tuple[int, list[str], "str | None"]


def _run_workers(target: Callable[[str, int, Any], None], root: Path) -> list[Result]:
    """Start WORKERS processes at once; their results, after asserting none failed."""
    ctx = mp.get_context("spawn")
    out: mp.Queue = ctx.Queue()  # type: ignore[type-arg]
    procs = [ctx.Process(target=target, args=(str(root), w, out)) for w in range(WORKERS)]
    for p in procs:
        p.start()
    results: list[Result] = [out.get(timeout=180) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert [err for _, _, err in results if err] == []
    return results


def test_processes_adding_and_reindexing_at_once_lose_nothing(vault_root: Path) -> None:
    results = _run_workers(_adder, vault_root)
    expected = WORKERS * (PER_WORKER + PER_WORKER // 3)
    with Vault(vault_root, embedder=HashEmbedder()) as v:
        final = v.reindex()
        assert final.errors == []
        assert final.added == 0, "write-through and the workers' reindexes left nothing behind"
        assert final.embedded == 0 and health.stats(v)["embedded"] == expected
        assert health.drift(v).clean
    # Checked lexically: the fake embedder's hash collisions must not decide ranks.
    with Vault(vault_root, embedder=None) as v:
        for worker, ids, _ in results:
            assert len(ids) == PER_WORKER and not any(i.startswith("!") for i in ids)
            for i, memory_id in enumerate(ids):
                hits = v.search(_word(worker, i), limit=1)
                assert hits and hits[0].id == memory_id
            for i in range(2, PER_WORKER, 3):
                hits = v.search(_word(worker, 100 + i), limit=1)
                assert hits and hits[0].path == f"memories/user/hand-{worker}-{i}.md"
        assert health.stats(v)["memories"] == expected


def test_same_body_from_two_processes_is_stored_once(vault_root: Path) -> None:
    """The dedup check and the write happen under one lock across processes."""
    (vault_root / ".memex" / "config.toml").write_text('[embedding]\nmodel = "none"\n')
    cmd = [str(Path(sys.executable).parent / "memex")]
    if not Path(cmd[0]).exists():
        cmd = [sys.executable, "-c", "from memex.cli import run; run()"]
    env = {**os.environ, "MEMEX_VAULT": str(vault_root)}
    procs = [
        subprocess.Popen(
            cmd + ["add", "The release branch is cut every second Thursday", "--json", "--source", f"writer{n}"],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        for n in range(3)
    ]
    outputs = [p.communicate(timeout=120) for p in procs]
    for p, (stdout, stderr) in zip(procs, outputs):
        assert p.returncode == 0, stderr.decode()
        assert b"locked" not in stderr
    statuses = sorted(b'"status": "created"' in stdout for stdout, _ in outputs)
    assert statuses == [False, False, True]
    files = list((vault_root / "memories").rglob("*.md"))
    assert len(files) == 1


def _first_opener(root: str, worker: int, out: mp.Queue) -> None:  # type: ignore[type-arg]
    try:
        with Vault(Path(root), embedder=HashEmbedder()) as v:
            result = v.add(f"First opener {worker} writes {_word(worker, 0)}")
        out.put((worker, [result.id], None))
    except BaseException as exc:
        out.put((worker, [], f"{type(exc).__name__}: {exc}"))


def test_processes_creating_the_index_at_once_keep_every_vector(vault_root: Path) -> None:
    """No index.db yet: schema and vector tables are created once, by one of them."""
    for f in (vault_root / ".memex").glob("index.db*"):
        f.unlink()
    _run_workers(_first_opener, vault_root)
    with Vault(vault_root, embedder=HashEmbedder()) as v:
        drift = health.drift(v)
        assert drift.unembedded == [] and drift.clean
        assert health.stats(v)["embedded"] == WORKERS


def _index_opener(path: str, start: float, out: mp.Queue) -> None:  # type: ignore[type-arg]
    from memex.store.sqlite.schema import connect

    while time.time() < start:  # all of them open at the same moment
        pass
    try:
        connect(Path(path)).close()
        out.put(None)
    except BaseException as exc:
        out.put(f"{type(exc).__name__}: {exc}")


def test_processes_opening_a_new_index_at_the_same_moment_all_open_it(tmp_path: Path) -> None:
    """SQLite answers 'database is locked' without waiting when two connections
    switch a new file to WAL at once: found by the fresh-clone CI run (one
    first opener of test_processes_creating_the_index_at_once failed)."""
    ctx = mp.get_context("spawn")
    errors = []
    for round_ in range(6):
        out: mp.Queue = ctx.Queue()  # type: ignore[type-arg]
        path = tmp_path / f"round{round_}" / "index.db"
        path.parent.mkdir()
        start = time.time() + 1.5  # past the spawned interpreters' start-up
        procs = [ctx.Process(target=_index_opener, args=(str(path), start, out)) for _ in range(4)]
        for p in procs:
            p.start()
        errors += [e for e in (out.get(timeout=120) for _ in procs) if e]
        for p in procs:
            p.join(timeout=60)
    assert errors == []
