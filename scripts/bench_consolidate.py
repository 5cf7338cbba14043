"""Benchmark: consolidating one 200-memory session with the real model.

Builds a throwaway vault whose one session holds --memories memory files
(the labelled facts of tests/data/consolidate_facts.jsonl, topped up with
synthetic one-off notes), indexes it, then times:

- plan: the dry run (candidates, pair matrices, complete-link clustering);
- apply: the real consolidation (plan + atomic edit and re-index of every
  superseded file);

and measures the Python heap peak of a plan with tracemalloc, plus the
process's max RSS. Prints JSON.

    .venv/bin/python scripts/bench_consolidate.py [--memories 200] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

from memex.embedding.embed import load_embedder
from memex.vault import Vault, init_vault
from memex.consolidation.consolidate import consolidate

sys.path.insert(0, str(Path(__file__).resolve().parent))
from eval_consolidate import write_session  # noqa: E402  (a sibling script)

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "consolidate_facts.jsonl"
FILLER = [
    "The {m} module parses {x} files before the scheduler starts",
    "Handler {m} retries {x} requests on connection reset",
    "The {x} report is generated nightly by the {m} job",
    "Ask before changing the {x} schema used by {m}",
]
WORDS = ["billing", "invoice", "search", "upload", "avatar", "ledger", "catalog", "session",
         "export", "audit", "webhook", "calendar", "payroll", "inventory", "pricing"]


def bodies(n: int) -> list[str]:
    facts = [json.loads(line)["text"] for line in DATA.read_text(encoding="utf-8").splitlines() if line.strip()]
    out = facts[:n]
    k = 0
    while len(out) < n:
        template = FILLER[k % len(FILLER)]
        out.append(template.format(m=f"{WORDS[k % len(WORDS)]}_{k}", x=WORDS[(k * 7 + 3) % len(WORDS)]))
        k += 1
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--memories", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    if args.memories < 3 or args.repeat < 1:
        sys.exit("--memories must be at least 3 and --repeat at least 1")
    embedder = load_embedder("auto")
    if embedder is None:
        sys.exit("the embedding model did not load; this benchmark needs it")
    texts = bodies(args.memories)
    with tempfile.TemporaryDirectory() as tmp:
        template = init_vault(Path(tmp) / "template", git=False)
        write_session(template, texts, "bench")
        started = time.perf_counter()
        with Vault(template, embedder=embedder) as vault:
            vault.reindex()
        index_seconds = time.perf_counter() - started
        plan_times, apply_times = [], []
        report = None
        for run in range(args.repeat):
            root = Path(tmp) / f"run{run}"
            shutil.copytree(template, root)
            with Vault(root, embedder=embedder) as vault:
                vault.reindex()  # nothing changed: only checks the copy
                t0 = time.perf_counter()
                consolidate(vault, "bench", dry_run=True)
                plan_times.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                report = consolidate(vault, "bench")
                apply_times.append(time.perf_counter() - t0)
        root = Path(tmp) / "mem"
        shutil.copytree(template, root)
        with Vault(root, embedder=embedder) as vault:
            vault.reindex()
            vault.indexer  # the model and tables are loaded before measuring
            tracemalloc.start()
            consolidate(vault, "bench", dry_run=True)
            _, peak = tracemalloc.get_traced_memory()
            tracemalloc.stop()
    assert report is not None
    print(json.dumps({
        "memories": args.memories,
        "model": embedder.model_id,
        "repeat": args.repeat,
        "index_seconds": round(index_seconds, 3),
        "plan_seconds_median": round(statistics.median(plan_times), 4),
        "apply_seconds_median": round(statistics.median(apply_times), 4),
        "apply_seconds_all": [round(t, 4) for t in apply_times],
        "plan_peak_python_mib": round(peak / 2**20, 2),
        "process_max_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "merged_groups": report.merged_groups,
        "superseded_count": report.superseded_count,
        "compression_ratio": report.compression_ratio,
        "avg_similarity": report.avg_similarity,
    }, indent=2))


if __name__ == "__main__":
    main()
