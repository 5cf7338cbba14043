#!/usr/bin/env python3
"""What `memex search`'s "files changed since the last index" note costs.

    .venv/bin/python scripts/bench_changed_files.py               # 10,000 files
    .venv/bin/python scripts/bench_changed_files.py --size 2000 --runs 15

Builds a lexical vault (no model: the check reads no vector) of ``--size``
hand-written files, indexes it, then times, in CPU seconds (the machine is
shared, so wall time mostly measures the others' load):

- ``walk``: the stat walk of ``memories/`` (memex/index/scan.py), which the
  CLI runs on a thread beside the search;
- ``check``: the whole check (walk, then the index's size/mtime per file);
- ``search``: one in-process lexical search, for scale.

Prints one JSON line with the medians (milliseconds) and the load average.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from memex.index import scan
from memex.vault import Vault, init_vault
from memex.watch.state import changed_since_index

WORDS = "deploy friday database port staging release checklist frontend package manager tabs spaces".split()


def cpu_ms(fn: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return round(statistics.median(times) * 1000, 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    rng = random.Random(7)
    with tempfile.TemporaryDirectory() as tmp:
        root = init_vault(Path(tmp) / "vault", git=False, model="none")
        folder = root / "memories" / "user" / "bulk"
        folder.mkdir(parents=True)
        for i in range(args.size):
            (folder / f"note-{i}.md").write_text(" ".join(rng.choice(WORDS) for _ in range(12)) + f" {i}\n")
        with Vault(root) as vault:
            vault.reindex()
            assert changed_since_index(vault) == []
            result = {
                "files": args.size,
                "walk_cpu_ms": cpu_ms(lambda: scan.walk(root), args.runs),
                "check_cpu_ms": cpu_ms(lambda: changed_since_index(vault), args.runs),
                "search_cpu_ms": cpu_ms(lambda: vault.search("staging database port"), args.runs),
                "load_average": [round(x, 2) for x in os.getloadavg()],
            }
    print(json.dumps(result))


if __name__ == "__main__":
    main()
