"""Benchmark: erase one memory from an N-memory vault, forensic cleanup included.

Builds a throwaway vault of N generated memories (about 10% longer than the
chunk size, so chunk vectors exist; entities on most), indexes it, commits it
to git (as ``memex init`` vaults are repositories), then erases memories one
at a time with :func:`memex.erase.steps.erase` and times each call: file deletion, the
one-transaction purge, FTS5 segment rewrite, WAL checkpoint, git history
check and the audit log.

    .venv/bin/python scripts/bench_erase.py --memories 10000
    .venv/bin/python scripts/bench_erase.py --memories 100000 --embedder random384

``--embedder model`` (the default) embeds with the bundled all-MiniLM-L6-v2;
``random384`` stores random unit vectors of the same dimension, so the index
has the same size and layout but building it takes minutes instead of hours
on a small machine. Erasure never embeds, so its timing does not depend on
which one built the index. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memex.embedding.embed import load_embedder  # noqa: E402
from memex.files.memory_file import MemoryFile, serialize  # noqa: E402
from memex.vault import Vault, init_vault  # noqa: E402
from memex.erase.steps import erase  # noqa: E402
from benchkit import RandomEmbedder  # noqa: E402

SYLLABLES = "ka lo mi ne ru sa ti vo be da fe gi ho ju ly po qu re so tu va we xi yo ze".split()


def vocabulary(rng: random.Random, size: int) -> list[str]:
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def generate(root: Path, count: int, rng: random.Random) -> list[str]:
    vocab = vocabulary(rng, 20_000)
    entities = [w.capitalize() for w in vocab[:2000]]
    folder = root / "memories" / "user"
    folder.mkdir(parents=True, exist_ok=True)
    ids = []
    for i in range(count):
        n_words = rng.randint(150, 220) if rng.random() < 0.1 else rng.randint(12, 45)
        body = " ".join(rng.choice(vocab) for _ in range(n_words)) + f" (note {i})."
        memory_id = f"B{i:08d}"
        meta: dict[str, object] = {"id": memory_id, "scope": "user", "source": "bench", "confidence": 0.8,
                                   "created": "2026-11-30T10:00:00Z"}
        if rng.random() < 0.7:
            meta["entities"] = rng.sample(entities, 2)
        (folder / f"m{i:08d}.md").write_text(serialize(MemoryFile(meta, body + "\n")), encoding="utf-8")
        ids.append(memory_id)
    return ids


def vault_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in (root / ".memex").glob("index.db*"))


def run(count: int, erasures: int, embedder_kind: str, use_git: bool, seed: int) -> dict[str, object]:
    rng = random.Random(seed)
    tmp = Path(tempfile.mkdtemp(prefix="memex-bench-erase-"))
    try:
        root = init_vault(tmp / "vault", git=use_git)
        ids = generate(root, count, rng)
        embedder = load_embedder("auto") if embedder_kind == "model" else RandomEmbedder(seed)
        if embedder is None:
            raise SystemExit("the bundled model did not load; use --embedder random384")
        started = time.perf_counter()
        with Vault(root, embedder=embedder) as vault:
            vault.reindex()
            build_seconds = time.perf_counter() - started
            if use_git:
                env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.org",
                       "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.org"}
                subprocess.run(["git", "-C", str(root), "add", "-A"], check=True, env=env)
                subprocess.run(["git", "-C", str(root), "commit", "-qm", "bench"], check=True, env=env)
            index_bytes = vault_bytes(root)
            row = vault.backend.conn.execute("SELECT count(*) FROM chunks").fetchone()
            chunks = int(row[0]) if row else 0
            timings = []
            answers = []
            for memory_id in rng.sample(ids, erasures):
                t0 = time.perf_counter()
                result = erase(vault, memory_id, reason="benchmark")
                timings.append(time.perf_counter() - t0)
                answers.append(result)
            assert all(a.counts.memories == 1 and a.wal_truncated for a in answers)
            timings.sort()
            return {
                "benchmark": "erase one memory (file, one-transaction purge, FTS5 optimize, WAL truncate, "
                             "git history check, audit log)",
                "memories": count,
                "chunks": chunks,
                "embedder": embedder.model_id,
                "git": use_git,
                "git_history": answers[-1].git.status,
                "index_mib": round(index_bytes / 2**20, 1),
                "build_seconds": round(build_seconds, 1),
                "erasures": erasures,
                "p50_seconds": round(statistics.median(timings), 3),
                "p95_seconds": round(timings[int(0.95 * (len(timings) - 1))], 3),
                "max_seconds": round(timings[-1], 3),
                "target_p50_seconds": 1.0,
                "cpu_count": os.cpu_count(),
            }
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--erasures", type=int, default=21)
    parser.add_argument("--embedder", choices=("model", "random384"), default="model")
    parser.add_argument("--no-git", action="store_true", help="Do not make the vault a git repository.")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    if args.memories < args.erasures or args.erasures < 1:
        parser.error("--erasures must be from 1 to --memories")
    print(json.dumps(run(args.memories, args.erasures, args.embedder, not args.no_git, args.seed), indent=2))


if __name__ == "__main__":
    main()
