"""Two (or more) processes adding the same body at the same moment store one file."""

from __future__ import annotations

import multiprocessing as mp
from pathlib import Path
from typing import Any

from memex.vault import Vault

BODY = "Concurrent writers must not store this sentence twice."
WORKERS = 4


def _add_same_body(root: str, n: int, start: Any, results: Any) -> None:
    from tests.fakes import HashEmbedder

    with Vault(Path(root), embedder=HashEmbedder()) as vault:
        vault.backend.conn  # open the index before the race starts
        start.wait(timeout=120)  # a barrier: every worker is ready, then all go
        # Different provenance each time: the body alone decides.
        text = BODY if n % 2 == 0 else f"[hm session:w{n} src:keyword event:Stop] {BODY}"
        result = vault.add(text, source=f"writer-{n}", session=f"s{n}")
        results.put((result.status, result.id))


def test_concurrent_adds_of_the_same_body_write_exactly_one_file(vault_root: Path) -> None:
    ctx = mp.get_context("spawn")
    start = ctx.Barrier(WORKERS)
    results = ctx.Queue()
    procs = [
        ctx.Process(target=_add_same_body, args=(str(vault_root), n, start, results))
        for n in range(WORKERS)
    ]
    for p in procs:
        p.start()
    outcomes = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0

    statuses = sorted(status for status, _ in outcomes)
    assert statuses == ["created"] + ["duplicate"] * (WORKERS - 1)
    assert len({memory_id for _, memory_id in outcomes}) == 1
    files = list((vault_root / "memories").rglob("*.md"))
    assert len(files) == 1
    with Vault(vault_root, embedder=None) as vault:
        assert [h.body for h in vault.list()] == [BODY]
