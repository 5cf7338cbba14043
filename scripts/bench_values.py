"""Benchmark: the value checks on large bodies, alone and inside a real add.

Issue 12 item 8: an add beside a similar large memory ran the value checks
(memex.dedup.values.conflicts) inside the write lock, and they were quadratic.
For each kind of body (prose, a log, numbers, names, CJK) this builds a
--kb KB body and a similar one (one value changed), times ``conflicts`` on
the pair, then times a real ``Vault.add`` of the second beside the first
(real model unless --no-model; the add includes embedding the body).

    .venv/bin/python scripts/bench_values.py [--kb 54] [--no-model]

Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from memex.embedding.embed import load_embedder
from memex.dedup.values import conflicts
from memex.vault import Vault, init_vault


def bodies(size: int) -> dict[str, tuple[str, str]]:
    def fill(unit: str) -> str:
        return (unit * (size // len(unit.encode()) + 1))[: size // max(1, len(unit.encode()) // len(unit))]

    prose = fill("The deploy script retries the upload three times before giving up on the billing API. ")
    log = "".join(f"2026-11-30 10:{k // 60 % 60:02d}:{k % 60:02d} INFO request {k} ok in {k % 97} ms\n"
                  for k in range(size // 48))
    numbers = fill("1 2 3 4 5 ")
    names = fill("Alice Bob Carol Dave ")
    cjk = fill("夹爪的夹持力设为12.5N效果最好")
    return {
        "prose": (prose, prose.replace("three", "four", 1)),
        "log": (log, log.replace("ok in 5 ms", "ok in 6 ms", 1)),
        "numbers": (numbers, "2 1" + numbers[3:]),
        "names": (names, "Bob Alice" + names[9:]),
        "cjk": (cjk, cjk.replace("12.5N", "15N", 1)),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kb", type=int, default=54)
    ap.add_argument("--no-model", action="store_true")
    args = ap.parse_args()
    embedder = None if args.no_model else load_embedder("auto")
    out: dict[str, dict[str, float | int | str]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = init_vault(Path(tmp) / "v", git=False)
        with Vault(root, embedder=embedder) as vault:
            vault.add("warm up the model and the index", scope="project:bench")
            for kind, (a, b) in bodies(args.kb * 1000).items():
                t0 = time.perf_counter()
                conflicts(a, b)
                check = time.perf_counter() - t0
                vault.add(a, scope=f"project:{kind}")
                t0 = time.perf_counter()
                result = vault.add(b, scope=f"project:{kind}")
                add = time.perf_counter() - t0
                out[kind] = {"bytes_a": len(a.encode()), "bytes_b": len(b.encode()),
                             "conflicts_seconds": round(check, 4), "add_seconds": round(add, 3),
                             "add_status": result.status}
    print(json.dumps({"model": None if embedder is None else embedder.model_id, "kb": args.kb, "cases": out}, indent=2))


if __name__ == "__main__":
    main()
