"""Benchmark `memex sync`: 1,000 changed memories across three clones of a team vault.

    .venv/bin/python scripts/bench_sync.py [--changes 1000] [--base 300] [--embedder model|random384] [--erasures 10]

A bare remote and three clones on this machine (real git). Clone a starts the
vault with ``--base`` memories; b and c join. Then each clone changes a third
of ``--changes`` memories the way memex writes them (new memory files,
indexed at write as ``memex add`` does; a fifth of the changes edit base
memories, a few of them on two clones, so body conflicts happen), and the
clones sync in the order a, b, c, a, b: after that every clone holds every
change. Reported: each sync's wall time, the part of it spent indexing what
the pull brought (embedding included), and the sums with and without
indexing. ``random384`` stores random unit vectors (no model), so the
indexing figure is what SQLite costs without embedding. Last, clone a erases
``--erasures`` base memories and the three clones sync once more (the
erasure round: tombstones applied, history counted).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memex.embedding.embed import load_embedder  # noqa: E402
from memex.erase.steps import erase  # noqa: E402
from memex.files.memory_file import MemoryFile, serialize  # noqa: E402
from memex.team.sync import sync  # noqa: E402
from memex.vault import Vault, init_vault  # noqa: E402
from benchkit import RandomEmbedder  # noqa: E402

WORDS = ("deploy build cache token review branch release index vector query latency schema migration "
         "backup queue worker retry timeout config secret lint format docker kernel thread socket").split()


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def body(rng: random.Random, tag: str) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(10, 30))) + f" ({tag})"


def write(root: Path, memory_id: str, text: str) -> Path:
    folder = root / "memories" / "user"
    folder.mkdir(parents=True, exist_ok=True)
    meta = {"id": memory_id, "scope": "user", "source": "bench", "confidence": 0.8, "created": "2026-12-01T10:00:00Z"}
    path = folder / f"{memory_id.lower()}.md"
    path.write_text(serialize(MemoryFile(meta, text + "\n")), encoding="utf-8")
    return path


def run(changes: int, base: int, embedder_kind: str, seed: int, erasures: int) -> dict[str, object]:
    rng = random.Random(seed)
    embedder = load_embedder("auto") if embedder_kind == "model" else RandomEmbedder(seed)
    if embedder is None:
        raise SystemExit("the bundled model did not load; use --embedder random384")
    tmp = Path(tempfile.mkdtemp(prefix="memex-bench-sync-"))
    try:
        remote = tmp / "remote.git"
        git(tmp, "init", "-q", "--bare", "-b", "main", str(remote))
        roots = {"a": init_vault(tmp / "a", git=True)}
        git(roots["a"], "symbolic-ref", "HEAD", "refs/heads/main")
        git(roots["a"], "remote", "add", "origin", str(remote))
        for i in range(base):
            write(roots["a"], f"BASE{i:06d}", body(rng, f"base {i}"))
        for name in "abc":
            if name != "a":
                git(tmp, "clone", "-q", str(remote), str(tmp / name))
                roots[name] = tmp / name
                shutil.copy(roots["a"] / ".memex" / "erase.key", roots[name] / ".memex" / "erase.key")
            for key, value in (("user.name", name), ("user.email", f"{name}@example.org")):
                git(roots[name], "config", key, value)
            with Vault(roots[name], embedder=embedder) as v:
                v.reindex()
                sync(v)
        share = changes // 3
        for n, name in enumerate("abc"):
            edits = share // 5
            # Each clone edits its own slice of the base memories, plus the first 3 (shared: conflicts).
            targets = [f"BASE{i:06d}" for i in range(3)] + [
                f"BASE{i:06d}" for i in range(3 + n * edits, 3 + (n + 1) * edits - 3)]
            for memory_id in targets:
                write(roots[name], memory_id, body(rng, f"edited on {name}"))
            for i in range(share - len(targets)):
                write(roots[name], f"NEW{name.upper()}{i:06d}", body(rng, f"new {i} on {name}"))
            with Vault(roots[name], embedder=embedder) as v:
                v.reindex()  # memex add indexes at write; the sync then indexes only what it pulls
        rows = []
        for name in "abcab":
            with Vault(roots[name], embedder=embedder) as v:
                started = time.perf_counter()
                report = sync(v)
                wall = time.perf_counter() - started
            index = report.seconds.get("index", 0.0)
            rows.append({"clone": name, "wall_s": round(wall, 3), "index_s": round(index, 3),
                         "without_index_s": round(wall - index, 3), "pulled": report.incoming,
                         "committed_files": report.local_changes, "conflicts": len(report.conflicts),
                         "indexed": report.index, "steps": {k: round(v, 3) for k, v in report.seconds.items()}})
        # Then clone a erases ``erasures`` base memories (all in history) and every clone syncs:
        # the tombstones reach b and c, and each report counts what history still holds.
        erase_rows = []
        if erasures:
            with Vault(roots["a"], embedder=embedder) as v:
                for i in range(erasures):
                    erase(v, f"BASE{base - 1 - i:06d}", reason="bench")
        for name in ("a", "b", "c") if erasures else ():
            with Vault(roots[name], embedder=embedder) as v:
                started = time.perf_counter()
                report = sync(v)
                wall = time.perf_counter() - started
            erase_rows.append({"clone": name, "wall_s": round(wall, 3), "erased_here": len(report.erased),
                               "history": report.history, "steps": {k: round(v, 3) for k, v in report.seconds.items()}})
        trees = {name: sorted(p.read_bytes() for p in (roots[name] / "memories").rglob("*.md")) for name in "abc"}
        return {
            "changes": share * 3, "base": base, "embedder": embedder_kind, "syncs": rows,
            "total_wall_s": round(sum(float(str(r["wall_s"])) for r in rows), 3),
            "total_index_s": round(sum(float(str(r["index_s"])) for r in rows), 3),
            "total_without_index_s": round(sum(float(str(r["without_index_s"])) for r in rows), 3),
            "erasure_round": erase_rows,
            "converged": trees["a"] == trees["b"] == trees["c"],
        }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--changes", type=int, default=1000)
    parser.add_argument("--base", type=int, default=300)
    parser.add_argument("--embedder", choices=("model", "random384"), default="model")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--erasures", type=int, default=10, help="Base memories clone a erases afterwards.")
    args = parser.parse_args()
    print(json.dumps(run(args.changes, args.base, args.embedder, args.seed, args.erasures), indent=2))


if __name__ == "__main__":
    main()
