#!/usr/bin/env python3
"""Benchmark the context engine on a synthetic vault and print JSON.

    .venv/bin/python scripts/bench_context.py [--memories 1000] [--runs 30]

With the real embedding model, in one process, after warm-up:

- ``assemble_recall_ms_p50/p95``: ``assemble`` of a one-prompt conversation
  (query embedding, hybrid search, block rendering, usage write).
- ``assemble_full_ms_p50``: ``assemble`` of a 400-message conversation
  (about 120k tokens) under a 64k budget: token counts and trimming, cold
  (as a fresh CLI process); ``assemble_full_warm_ms_p50`` the same in a
  long-lived process that counted these messages before (next turn).
- ``after_turn_ms_p50/p95``: archiving a two-message turn (no commit).
- ``commit_ms``: a synchronous commit of about 20k pending tokens (rule
  extraction, ``Vault.add`` of each memory, summary).
- ``count_tokens_per_s``: the bundled tokenizer on conversational text.

A hook answers within its latency budget when the assemble and after-turn
figures are well under a second; ``TARGETS`` / ``met`` record that.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from memex.context import after_turn, assemble, commit_session  # noqa: E402
from memex.context.tokens import clear_count_cache, count_text  # noqa: E402
from memex.embedding.embed import load_embedder  # noqa: E402
from memex.vault import Vault, init_vault  # noqa: E402

TARGETS = {
    "assemble_recall_ms_p50": ("<=", 100.0),
    "assemble_full_ms_p50": ("<=", 1000.0),
    "assemble_full_warm_ms_p50": ("<=", 200.0),
    "after_turn_ms_p50": ("<=", 50.0),
}
_SUBJECTS = ["the billing service", "the web frontend", "the CI pipeline", "the data importer",
             "the auth module", "the mobile app", "the search index", "the deploy scripts"]
_FACTS = ["uses {t} for {p}", "must never call {t} during {p}", "was moved to {t} for {p}",
          "prefers {t} over the old tool for {p}", "runs {t} nightly for {p}"]
_TOOLS = ["ruff", "pytest", "postgres", "redis", "kafka", "terraform", "helm", "celery", "nginx", "sqlite"]
_PURPOSES = ["linting", "tests", "caching", "queues", "migrations", "backups", "releases", "metrics"]


def _memory(rng: random.Random, i: int) -> str:
    fact = rng.choice(_FACTS).format(t=rng.choice(_TOOLS), p=rng.choice(_PURPOSES))
    return f"{rng.choice(_SUBJECTS).capitalize()} {fact} (note {i})."


def _ms(samples: list[float]) -> tuple[float, float]:
    ordered = sorted(samples)
    return round(statistics.median(ordered) * 1000, 2), round(ordered[int(len(ordered) * 0.95) - 1] * 1000, 2)


def run(n_memories: int, runs: int) -> dict[str, Any]:
    rng = random.Random(7)
    embedder = load_embedder("auto")
    if embedder is None:
        raise SystemExit("the bundled embedding model is needed for this benchmark")
    with tempfile.TemporaryDirectory() as tmp:
        root = init_vault(Path(tmp) / "vault", git=False)
        for i in range(n_memories):
            folder = root / "memories" / "user"
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"m{i}.md").write_text(_memory(rng, i) + "\n", encoding="utf-8")
        with Vault(root, embedder=embedder) as vault:
            vault.reindex()
            prompts = [f"How does {rng.choice(_SUBJECTS)} handle {rng.choice(_PURPOSES)}?" for _ in range(runs + 5)]
            times = []
            for k, prompt in enumerate(prompts):
                t0 = time.perf_counter()
                assemble(vault, "bench", [{"role": "user", "content": prompt}], 200_000)
                if k >= 5:
                    times.append(time.perf_counter() - t0)
            recall_p50, recall_p95 = _ms(times)
            convo = []
            for i in range(200):
                convo += [{"role": "user", "content": " ".join(_memory(rng, j) for j in range(20))},
                          {"role": "assistant", "content": " ".join(_memory(rng, j) for j in range(20))}]
            full = []
            for _ in range(max(3, runs // 5)):
                clear_count_cache()  # cold: a fresh process (a CLI call) counts everything
                t0 = time.perf_counter()
                out = assemble(vault, "bench-full", convo, 64_000)
                full.append(time.perf_counter() - t0)
            warm = []
            for _ in range(max(3, runs // 5)):
                t0 = time.perf_counter()
                assemble(vault, "bench-full", convo, 64_000)
                warm.append(time.perf_counter() - t0)
            turn_times = []
            msgs: list[dict[str, Any]] = []
            for i in range(runs):
                before = len(msgs)
                msgs += [{"role": "user", "content": f"We decided to use {_TOOLS[i % 10]} for step {i}."},
                         {"role": "assistant", "content": _memory(rng, i) * 3}]
                t0 = time.perf_counter()
                after_turn(vault, "bench-turns", msgs, before, commit="none")
                turn_times.append(time.perf_counter() - t0)
            pending = []
            while sum(count_text(str(m["content"])) for m in pending) < 20_000:
                pending += [{"role": "user", "content": f"I prefer {rng.choice(_TOOLS)} for {rng.choice(_PURPOSES)} {len(pending)}. " + _memory(rng, len(pending)) * 4},
                            {"role": "assistant", "content": _memory(rng, len(pending)) * 6}]
            after_turn(vault, "bench-commit", pending, 0, commit="none")
            t0 = time.perf_counter()
            committed = commit_session(vault, "bench-commit")
            commit_s = time.perf_counter() - t0
            text = " ".join(_memory(rng, i) for i in range(2000))
            clear_count_cache()
            t0 = time.perf_counter()
            n_tokens = count_text(text)
            tok_s = time.perf_counter() - t0
    turn_p50, turn_p95 = _ms(turn_times)
    result: dict[str, Any] = {
        "memories": n_memories,
        "assemble_recall_ms_p50": recall_p50,
        "assemble_recall_ms_p95": recall_p95,
        "assemble_full_ms_p50": _ms(full)[0],
        "assemble_full_warm_ms_p50": _ms(warm)[0],
        "assemble_full_input_messages": len(convo),
        "assemble_full_kept_messages": len(out["messages"]),
        "after_turn_ms_p50": turn_p50,
        "after_turn_ms_p95": turn_p95,
        "commit_ms": round(commit_s * 1000, 1),
        "commit_memories": len(committed["memories"]),
        "count_tokens_per_s": round(n_tokens / tok_s),
    }
    result["met"] = {
        k: (result[k] <= v if op == "<=" else result[k] >= v) for k, (op, v) in TARGETS.items()
    }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=30)
    args = parser.parse_args()
    print(json.dumps(run(args.memories, args.runs), indent=2))


if __name__ == "__main__":
    main()
