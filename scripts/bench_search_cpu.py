#!/usr/bin/env python3
"""Search CPU at 10k memories: this checkout against another, alternating in one run (JSON out).

    git worktree add /tmp/oldmain 7c13a0c      # the checkout to compare with
    .venv/bin/python scripts/bench_search_cpu.py --other /tmp/oldmain
    .venv/bin/python scripts/bench_search_cpu.py --other /tmp/oldmain --locomo DIR --memories 10000

Two worker processes, one per checkout (``memex`` imported from it through
``PYTHONPATH``, both with this virtualenv's packages), each index its own
copy of the same memory files: conversation turns, one memory per turn
with its session (LoCoMo's when ``--locomo`` is given, then synthetic
ones, scripts/bench.py's, up to ``--memories``). Stored text gets a random
unit vector drawn from a hash of the text, so both checkouts hold the same
vectors without embedding 10k texts (what a search costs does not depend on
what the vectors mean); questions go through the real model, as
``Vault.search`` embeds them.

Two query sets, each asked of both workers in turn (A B, then B A for the
next query, so drifting load hits both alike): conversational questions of
about 60 characters (LoCoMo's, else bench.py's), and 3-word queries (three
content words of a stored memory). Per query each worker reports the CPU
time (``time.process_time``: every thread of the process) of

- ``search``: ``Vault.search(q)`` as an agent or the CLI calls it, the
  question's embedding included (each question is new to the process);
- ``rank``: ``memex.search.hybrid.search`` with the question's vector
  given, i.e. everything but the model;
- ``rank_thread``: the same, the calling thread's CPU alone
  (``time.thread_time``). Ranking runs on that thread; ``rank`` also counts
  what the model's pool threads burn just after embedding the question
  (onnxruntime's optimized session lets them spin between runs), which is
  the model's cost, not ranking's.

after a warm-up that loads the in-process vector copy. Figures: p50 / p95
per worker, query set and measure, the paired ratio (this / other) p50,
and the load average.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

# Runs in each worker, importing memex from its own checkout (PYTHONPATH).
WORKER = r'''
import hashlib, json, sys, time
from pathlib import Path
import numpy as np
from memex.embedding import embed
from memex.search import hybrid
from memex.vault import Vault


class HashedStoreRealQuery:
    """The same unit vector for the same stored text in every process; the real model for questions."""

    def __init__(self, model):
        self.model, self.model_id, self.dim = model, model.model_id, model.dim

    def embed(self, texts):
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for i, t in enumerate(texts):
            seed = int.from_bytes(hashlib.blake2b(t.encode("utf-8"), digest_size=8).digest(), "big")
            v = np.random.default_rng(seed).standard_normal(self.dim).astype(np.float32)
            out[i] = v / np.linalg.norm(v)
        return out

    def embed_query(self, texts):
        return embed.embed_queries(self.model, texts)


root = Path(sys.argv[1])
model = embed.load_embedder("auto")
vault = Vault(root, embedder=HashedStoreRealQuery(model))
vault.reindex()
print(json.dumps({"ready": True, "memories": vault.backend.conn.execute("SELECT count(*) FROM memories").fetchone()[0]}),
      flush=True)
for line in sys.stdin:
    ask = json.loads(line)
    q = ask["q"]
    c0 = time.process_time()
    hits = vault.search(q)
    search_cpu = (time.process_time() - c0) * 1000
    qvec = embed.query_vector(vault.embedder, q)
    c0, t0 = time.process_time(), time.thread_time()
    hybrid.search(vault.backend.conn, vault.embedder, q, 10, qvec=qvec)
    rank_cpu = (time.process_time() - c0) * 1000
    rank_thread = (time.thread_time() - t0) * 1000
    print(json.dumps({"search": search_cpu, "rank": rank_cpu, "rank_thread": rank_thread, "hits": len(hits)}),
          flush=True)
'''

_WORD = re.compile(r"[A-Za-z]{5,}")
MEASURES = ("search", "rank", "rank_thread")


def turns(locomo_dir: Path | None, count: int) -> list[tuple[str, str]]:
    """(session, body) per memory: LoCoMo's turns first when given, then synthetic ones."""
    out: list[tuple[str, str]] = []
    if locomo_dir is not None:
        import locomo

        for conv in locomo.load(locomo_dir):
            out += [(f"locomo{conv.id}-s{t.session}", t.memory_text) for t in conv.turns]
    import bench

    rng = random.Random(count)
    n = 0
    while len(out) < count:
        out.append((f"s{n // 50}", bench.memory_text(rng, n)))
        n += 1
    return out[:count]


def questions(locomo_dir: Path | None, count: int, seed: int) -> list[str]:
    """Conversational questions of about 60 characters, each asked once."""
    rng = random.Random(seed)
    if locomo_dir is not None:
        import locomo

        asked = sorted({q.question for c in locomo.load(locomo_dir) for q in c.retrieval_questions
                        if 45 <= len(q.question) <= 75})
        rng.shuffle(asked)
        return asked[:count]
    import bench

    return list(dict.fromkeys(bench.queries(rng, count * 3)))[:count]


def keywords(memories: list[tuple[str, str]], count: int, seed: int) -> list[str]:
    """Three content words of one stored memory, lower-cased: what a person types as keywords."""
    rng = random.Random(seed)
    out: list[str] = []
    seen: set[str] = set()
    while len(out) < count:
        words = list(dict.fromkeys(w.lower() for w in _WORD.findall(rng.choice(memories)[1])))
        if len(words) >= 3:
            q = " ".join(rng.sample(words, 3))
            if q not in seen:
                seen.add(q)
                out.append(q)
    return out


def write_files(root: Path, memories: list[tuple[str, str]]) -> None:
    from memex.files import memory_file
    from memex.vault import init_vault

    init_vault(root, git=False)
    folder = root / "memories" / "user"
    folder.mkdir(parents=True, exist_ok=True)
    for n, (session, body) in enumerate(memories):
        meta = {"id": f"B{n:08d}", "scope": "user", "source": "bench", "session": session,
                "created": f"2026-11-{1 + n // 2000:02d}T{(n // 60) % 24:02d}:{n % 60:02d}:00Z"}
        memory_file.atomic_write(folder / f"B{n:08d}.md",
                                 memory_file.serialize(memory_file.MemoryFile(meta, body + "\n")))


class Worker:
    def __init__(self, checkout: Path, root: Path) -> None:
        env = {**os.environ, "PYTHONPATH": str(checkout), "OMP_WAIT_POLICY": "PASSIVE", "MEMEX_WARM": "0"}
        self.proc = subprocess.Popen([sys.executable, "-c", WORKER, str(root)], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env, cwd=str(root))
        self.ready = self._read()

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"a worker died (exit {self.proc.wait()})")
        out: dict[str, Any] = json.loads(line)
        return out

    def ask(self, q: str) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"q": q}) + "\n")
        self.proc.stdin.flush()
        return self._read()

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait(timeout=60)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))], 2)


def run(args: argparse.Namespace) -> dict[str, Any]:
    memories = turns(args.locomo, args.memories)
    sets = {"conversational": questions(args.locomo, args.searches + 5, 1),
            "three_words": keywords(memories, args.searches + 5, 2)}
    out: dict[str, Any] = {"memories": len(memories), "searches_per_set": args.searches,
                           "this": str(ROOT), "other": str(args.other)}
    with tempfile.TemporaryDirectory() as tmp:
        workers = {}
        for name, checkout in (("this", ROOT), ("other", args.other)):
            root = Path(tmp) / name
            write_files(root, memories)
            for made in (root / ".memex").glob("index.db*"):
                made.unlink()  # each checkout makes its own index (their schemas differ)
            workers[name] = Worker(checkout, root)
        try:
            for label, qs in sets.items():
                got: dict[str, dict[str, list[float]]] = {w: {m: [] for m in MEASURES} for w in workers}
                for i, q in enumerate(qs):
                    order = ["this", "other"] if i % 2 == 0 else ["other", "this"]
                    for w in order:
                        answer = workers[w].ask(q)
                        if i >= 5:  # warm-up: the vector copy loads on the second search
                            for m in MEASURES:
                                got[w][m].append(answer[m])
                out[label] = {
                    "query_chars_p50": statistics.median(len(q) for q in qs),
                    **{f"{w}_{m}_cpu_ms_p50": _pct(v, 0.5) for w in workers for m, v in got[w].items()},
                    **{f"{w}_{m}_cpu_ms_p95": _pct(v, 0.95) for w in workers for m, v in got[w].items()},
                    **{f"ratio_{m}_p50": round(statistics.median(
                        a / b for a, b in zip(got["this"][m], got["other"][m]) if b > 0), 3) for m in MEASURES},
                }
        finally:
            for w in workers.values():
                w.close()
    out["load_average_1m"] = round(os.getloadavg()[0], 2)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--other", type=Path, required=True, help="the checkout to compare with")
    parser.add_argument("--locomo", type=Path, help="LoCoMo (scripts/locomo.py): its turns and questions")
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--searches", type=int, default=200, help="per query set")
    args = parser.parse_args()
    if not (args.other / "memex" / "vault.py").is_file():
        raise SystemExit(f"--other: no memex checkout at {args.other}")
    if args.memories < 1 or args.searches < 1:
        parser.error("--memories and --searches must be at least 1")
    print(json.dumps(run(args), indent=1))


if __name__ == "__main__":
    main()
