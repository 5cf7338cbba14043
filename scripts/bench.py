#!/usr/bin/env python3
"""Benchmark the core on synthetic vaults and print JSON.

    .venv/bin/python scripts/bench.py                 # 1k and 10k memories
    .venv/bin/python scripts/bench.py --sizes 1000    # just one size
    .venv/bin/python scripts/bench.py --with-100k     # also 100k (slow: about an hour on 2 cores)
    .venv/bin/python scripts/bench.py --model multilingual --sizes 10000

Each size runs in its own process (so peak RSS is that size's) on a fresh
vault in a temp folder, with the real embedding model and an empty model
cache. Figures per size:

- ``embed_raw_per_s``: the model alone (``Embedder.embed``, 256 bodies per
  call as the indexer does) on the very bodies of the vault, in the same
  process, once before and once after the reindex; the faster run counts
  (other work on a shared machine comes and goes).
- ``reindex_cold_per_s``: ``Vault.reindex()`` on the new vault (read, parse,
  embed, write SQLite), memories per second; ``reindex_vs_raw`` is the ratio
  (``_cpu``: the same ratio in CPU seconds, less sensitive to other load).
- ``embed_raw_with_chunks_per_s`` / ``reindex_vs_raw_with_chunks``: bodies
  longer than the model's 256-word-piece window also get chunk vectors for
  what lies past it (``memex/index/chunking.py``), so the index embeds more text
  than the bodies alone; this is the model alone on all of it. Every 40th
  synthetic memory is such a long body, about 300 pieces (``--long-every N``).
- ``fastembed_defaults_per_s`` (with ``--fastembed-defaults N``): for
  reference, fastembed's ``embed()`` called as its documentation shows
  (default batches of 256 in the given order) on the first N bodies, timed
  after peak RSS is taken (its padded batches take GiBs). ``reindex_vs_raw``
  is measured against memex's own, faster use of the model (sorted batches
  of 16 of about equal length), not against this.
- ``resync_files_per_s``: ``Vault.reindex()`` again with nothing changed
  (best of 5 runs, as the file-system cache is warm after the first).
- ``search_ms_p50/p95``: ``Vault.search`` (query embedding included) over
  distinct conversational queries, after a few warm-up queries;
  ``search_cpu_ms_p50`` is CPU time, which other load inflates less.
  ``search_first_two_ms``: the first search (through sqlite-vec, as a
  one-shot ``memex search`` does) and the second (which loads the
  in-process vector copy, see ``memex/store/sqlite/vecmatrix.py``).
- ``add_ms_p50/p95``: ``Vault.add`` of new distinct bodies (the full path:
  embedding, dedup, atomic file write with fsync, write-through indexing),
  with ``add_breakdown_ms_p50`` per step.
- ``peak_rss_mib``: the process's peak resident memory.

Targets on the 2-core reference machine are in ``TARGETS``; ``met`` says
which hold.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

TARGETS = {
    "reindex_vs_raw": (">=", 0.8),
    "resync_files_per_s": (">=", 20_000),
    "search_ms_p50": ("<=", 15.0),
    "add_ms_p50": ("<=", 25.0),
}

# Sentence parts for realistic, varied agent memories.
_PEOPLE = ["Dana", "Marco", "Priya", "Kenji", "Sofia", "Lena", "Omar", "Yuki", "Tom", "Aisha", "王磊", "李娜"]
_TOOLS = [
    "ruff", "mypy", "pytest", "uv", "poetry", "docker", "podman", "kubectl", "helm", "terraform",
    "ripgrep", "fd", "jq", "tmux", "neovim", "vscode", "pre-commit", "black", "isort", "nox",
    "tox", "hatch", "gh", "git", "make", "just", "bazel", "celery", "redis", "postgres",
]
_TECH = [
    "FastAPI", "Django", "Flask", "SQLAlchemy", "Alembic", "Pydantic", "httpx", "asyncio",
    "SQLite", "FTS5", "sqlite-vec", "Kafka", "RabbitMQ", "S3", "Lambda", "GraphQL", "gRPC",
    "React", "Vite", "TypeScript", "Rust", "Go", "WebSockets", "OAuth", "JWT", "nginx",
]
_COMPONENTS = [
    "billing service", "auth module", "search index", "export job", "webhook sender",
    "admin panel", "report builder", "notification worker", "CLI", "API gateway",
    "ingest pipeline", "cache layer", "scheduler", "file uploader", "audit log",
    "payment retry loop", "session store", "rate limiter", "feature flag service", "ETL job",
]
_PROJECTS = ["atlas", "memex", "orbit", "harbor", "lumen", "quartz", "ember", "nimbus"]
_REASONS = [
    "it keeps operations simple", "the team already knows it", "it halved the p95 latency",
    "the old approach leaked connections", "it works offline", "the licence is permissive",
    "it avoids a second database", "tests got three times faster", "it is easier to debug",
    "the customer asked for it", "it removes a flaky dependency", "memory use dropped by half",
]
_PROBLEMS = [
    "times out", "leaks file handles", "returns stale data", "double-counts events",
    "crashes on empty input", "drops the last batch", "logs secrets", "deadlocks under load",
    "ignores the timezone", "rounds amounts wrongly", "retries forever", "uses too much memory",
]
_CONDITIONS = [
    "the queue is longer than 10k items", "two workers start at once", "the locale is de_DE",
    "the input has a BOM", "the network drops for a second", "the disk is nearly full",
    "a user has more than 500 projects", "daylight saving time starts", "the cache is cold",
    "the file name contains spaces", "Redis restarts", "the token expires mid-request",
]
_PREFS = [
    "short answers in bullet points", "small pull requests", "type hints everywhere",
    "tests before the fix", "British spelling in docs", "ISO 8601 dates", "dark themes",
    "explicit error messages", "dataclasses over dicts", "no emoji in commits",
    "real databases in tests", "a diff before a rewrite",
]
_ZH_TOPICS = ["支付模块", "日志系统", "缓存层", "数据同步", "报表导出", "权限管理", "消息队列", "监控告警"]
_ZH_FACTS = [
    "每周一需要清理旧数据", "修改之前要先找负责人确认", "超时时间设置为十秒", "必须加密存储",
    "上线前要发变更说明", "只能在工作日部署", "失败后重试三次", "需要两个人审批",
]

_TEMPLATES = [
    "{person} prefers {tool} over {tool2} for the {component}.",
    "We decided to use {tech} in {project}'s {component} because {reason}.",
    "The {component} in {project} {problem} when {condition}.",
    "Gotcha: {tool} {problem} on the CI runners when {condition}; pin it in {project}.",
    "{person} owns the {component} of {project}; ask them before changing it.",
    "The user wants {pref}, and {pref2} when working on {project}.",
    "In {project}, never call the {component} directly from {tech} handlers; go through the service layer.",
    "Ticket {ticket} tracks moving the {component} from {tech} to {tech2}.",
    "Run `{tool} check` before pushing changes to the {component}; {person} reviews them.",
    "{project} 的{zh_topic}{zh_fact}。",
    "{person} 说 {project} 的{zh_topic}在 {condition_zh} 时会出问题。",
]


LONG_EVERY = 40
MODEL = "auto"  # the [embedding] model setting of the benchmark vault (--model)
FASTEMBED_DEFAULTS = 0  # bodies for the fastembed-defaults reference (0: skip it)


def memory_text(rng: random.Random, n: int) -> str:
    """One synthetic memory; every LONG_EVERY-th is long enough to be chunked."""
    template = rng.choice(_TEMPLATES)
    text = template.format(
        person=rng.choice(_PEOPLE), tool=rng.choice(_TOOLS), tool2=rng.choice(_TOOLS),
        tech=rng.choice(_TECH), tech2=rng.choice(_TECH), component=rng.choice(_COMPONENTS),
        project=rng.choice(_PROJECTS), reason=rng.choice(_REASONS), problem=rng.choice(_PROBLEMS),
        condition=rng.choice(_CONDITIONS), pref=rng.choice(_PREFS), pref2=rng.choice(_PREFS),
        ticket=f"{rng.choice(_PROJECTS).upper()[:3]}-{n}", zh_topic=rng.choice(_ZH_TOPICS),
        zh_fact=rng.choice(_ZH_FACTS), condition_zh=f"第{n % 97}次重试",
    )
    if LONG_EVERY and n % LONG_EVERY == 0:
        extra = " ".join(memory_text(rng, n + k + 1) for k in range(12))
        text = f"Notes from the {rng.choice(_COMPONENTS)} review: {text} {extra}"
    # A serial keeps bodies distinct (dedup would fold exact repeats).
    return f"{text} (note {n})"


def queries(rng: random.Random, count: int) -> list[str]:
    shapes = [
        "why does the {component} {problem}?", "who owns the {component} in {project}?",
        "what did we decide about {tech} for {project}?", "does {person} prefer {tool}?",
        "what should I know before touching the {component}", "{project} {tool} gotchas",
        "{project} 的{zh_topic}有什么要求？",
    ]
    out = []
    for i in range(count):
        out.append(rng.choice(shapes).format(
            component=rng.choice(_COMPONENTS), problem=rng.choice(_PROBLEMS), project=rng.choice(_PROJECTS),
            tech=rng.choice(_TECH), person=rng.choice(_PEOPLE), tool=rng.choice(_TOOLS),
            zh_topic=rng.choice(_ZH_TOPICS),
        ) + f" #{i}")
    return out


def write_vault(root: Path, bodies: list[str]) -> None:
    """Memory files as `memex add` writes them (plain writes: generating is not measured)."""
    from memex.files import memory_file
    from memex.vault import init_vault

    init_vault(root, git=False)
    scopes = ["user", *(f"project:{p}" for p in _PROJECTS)]
    for n, body in enumerate(bodies):
        scope = scopes[n % len(scopes)]
        meta = {
            "id": f"B{n:08d}", "scope": scope, "source": "bench", "session": f"s{n // 50}",
            "category": "observation", "confidence": 0.8, "created": "2026-11-30T10:00:00Z",
        }
        folder = root / "memories" / Path(*scope.split(":"))
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"m{n:07d}.md").write_text(
            memory_file.serialize(memory_file.MemoryFile(meta, body + "\n")), encoding="utf-8"
        )


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


class _Stopwatch:
    """Accumulates time spent in named functions (for the add breakdown)."""

    def __init__(self) -> None:
        self.ms: dict[str, list[float]] = {}

    def wrap(self, owner: Any, attr: str, label: str) -> None:
        inner = getattr(owner, attr)

        def timed(*args: Any, **kwargs: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return inner(*args, **kwargs)
            finally:
                self.ms.setdefault(label, []).append((time.perf_counter() - t0) * 1000)

        setattr(owner, attr, timed)

    def medians(self) -> dict[str, float]:
        return {k: round(statistics.median(v), 2) for k, v in self.ms.items()}


def _raw_embed(embedder: Any, texts: list[str]) -> tuple[float, float]:
    """Texts per wall second and per CPU second of the model alone."""
    wall, cpu = time.perf_counter(), time.process_time()
    for i in range(0, len(texts), 256):  # the indexer's batch of files
        embedder.embed(texts[i : i + 256])
    return len(texts) / (time.perf_counter() - wall), len(texts) / (time.process_time() - cpu)


def _timed(fn: Any, items: list[Any]) -> tuple[list[float], list[float]]:
    """Wall and CPU milliseconds of ``fn(item)`` for each item."""
    wall_ms, cpu_ms = [], []
    for item in items:
        w, c = time.perf_counter(), time.process_time()
        fn(item)
        wall_ms.append((time.perf_counter() - w) * 1000)
        cpu_ms.append((time.process_time() - c) * 1000)
    return wall_ms, cpu_ms


def run_one(size: int, searches: int, adds: int) -> dict[str, Any]:
    from memex import adding
    from memex.dedup import pipeline
    from memex.embedding import embed
    from memex.files import memory_file
    from memex.index.indexer import Indexer
    from memex.text import normalize
    from memex.vault import Vault

    rng = random.Random(size)
    bodies = [memory_text(rng, n) for n in range(size)]
    texts = [normalize(b) for b in bodies]  # what the index embeds
    embedder = embed.load_embedder(MODEL)
    if embedder is None:
        raise SystemExit(f"no embedding model: {embed.why_no_embedder(MODEL)}")
    figures: dict[str, Any] = {"memories": size}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "vault"
        write_vault(root, bodies)
        config = root / ".memex" / "config.toml"
        config.write_text(
            config.read_text(encoding="utf-8").replace('# model = "auto"', f'model = "{MODEL}"', 1),
            encoding="utf-8",
        )
        # The model alone on the same bodies, before and after the reindex
        # (other work on a shared machine comes and goes; the faster counts).
        raw_before, raw_cpu_before = _raw_embed(embedder, texts)
        with Vault(root) as vault:
            cpu = time.process_time()
            report = vault.reindex()
            cold_cpu = size / (time.process_time() - cpu)
            if report.errors or report.added != size:
                raise SystemExit(f"cold reindex went wrong: {report.as_dict()}")
            cold = size / report.seconds
            raw_after, raw_cpu_after = _raw_embed(embedder, texts)
            raw, raw_cpu = max(raw_before, raw_after), max(raw_cpu_before, raw_cpu_after)
            # Long bodies also get chunk vectors: the model alone on everything
            # the index embeds, counted per memory.
            pieces = [p for t in texts for p in vault.indexer.chunker(t)]
            all_per_s, _ = _raw_embed(embedder, texts + pieces)

            raw_all = all_per_s * size / (size + len(pieces))
            resync = []
            for _ in range(5):
                again = vault.reindex()
                assert again.unchanged == size, again.as_dict()
                resync.append(size / again.seconds)
            qs = queries(rng, searches + 5)
            # The first search goes to sqlite-vec; the second, finding the
            # index unchanged, loads the in-process vector copy.
            warm_ms, _ = _timed(vault.search, qs[:5])
            search_ms, search_cpu = _timed(vault.search, qs[5:])
            # Where an add's time goes: the steps of Vault.add, timed in place.
            watch = _Stopwatch()
            # The body is embedded (and the cache read) in adding._vectors, before dedup.
            watch.wrap(adding, "_vectors", "embed_body")
            watch.wrap(pipeline, "check", "dedup_check")
            watch.wrap(memory_file, "atomic_write", "atomic_write")
            watch.wrap(Indexer, "index_paths", "index_file")
            new_bodies = [memory_text(rng, size + 1000 + n) for n in range(adds)]
            results: list[Any] = []
            add_ms, add_cpu = _timed(
                lambda body: results.append(vault.add(body, scope="project:bench", source="bench")), new_bodies
            )
            if any(r.status != "created" for r in results):
                raise SystemExit(f"an add did not create: {[r.as_dict() for r in results if r.status != 'created']}")
    figures.update({
        "embed_raw_per_s": round(raw, 1),
        "embed_raw_per_s_before_after": [round(raw_before, 1), round(raw_after, 1)],
        "reindex_cold_per_s": round(cold, 1),
        "reindex_vs_raw": round(cold / raw, 3),
        "reindex_vs_raw_cpu": round(cold_cpu / raw_cpu, 3),
        "chunks": len(pieces),
        "embed_raw_with_chunks_per_s": round(raw_all, 1),
        "reindex_vs_raw_with_chunks": round(cold / raw_all, 3),
        "resync_files_per_s": round(max(resync)),
        "search_ms_p50": round(statistics.median(search_ms), 2),
        "search_ms_p95": round(_pct(search_ms, 0.95), 2),
        "search_cpu_ms_p50": round(statistics.median(search_cpu), 2),
        "search_first_two_ms": [round(x, 1) for x in warm_ms[:2]],
        "add_ms_p50": round(statistics.median(add_ms), 2),
        "add_ms_p95": round(_pct(add_ms, 0.95), 2),
        "add_cpu_ms_p50": round(statistics.median(add_cpu), 2),
        "add_breakdown_ms_p50": watch.medians(),
        "peak_rss_mib": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "load_average_1m_at_end": round(os.getloadavg()[0], 2),
    })
    if FASTEMBED_DEFAULTS:
        # For reference, after peak RSS is taken: fastembed's own embed() with
        # its defaults (batches of 256 in the given order, each padded to its
        # longest text) on the same model and bodies.
        sample = texts[:FASTEMBED_DEFAULTS]
        wall = time.perf_counter()
        list(embedder._model.embed(sample))
        per_s = len(sample) / (time.perf_counter() - wall)
        figures["fastembed_defaults_per_s"] = round(per_s, 1)
        figures["reindex_vs_fastembed_defaults"] = round(cold / per_s, 3)
        figures["peak_rss_mib_after_fastembed_defaults"] = round(
            resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1
        )
    figures["met"] = {
        key: (figures[key] >= bound if op == ">=" else figures[key] <= bound)
        for key, (op, bound) in TARGETS.items()
    }
    return figures


def main() -> None:
    global LONG_EVERY, FASTEMBED_DEFAULTS, MODEL
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1000, 10_000])
    parser.add_argument("--with-100k", action="store_true", help="also run a 100,000-memory vault")
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument("--adds", type=int, default=100)
    parser.add_argument(
        "--long-every", type=int, default=LONG_EVERY,
        help="every Nth memory is a long, chunked body (0: none); default %(default)s",
    )
    parser.add_argument(
        "--fastembed-defaults", type=int, default=0, metavar="N",
        help="also time fastembed's embed() with its default batching on N bodies (slow, GiBs of RAM)",
    )
    parser.add_argument(
        "--model", default=MODEL, help='[embedding] model setting: "auto" (MiniLM) or "multilingual"',
    )
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # child process: one size
    args = parser.parse_args()
    if args.long_every < 0:
        parser.error(f"--long-every: {args.long_every} must be 0 or more")
    LONG_EVERY = args.long_every
    FASTEMBED_DEFAULTS = args.fastembed_defaults
    if FASTEMBED_DEFAULTS:
        # The reference calls fastembed's own embed(): load the model through fastembed.
        os.environ["MEMEX_EMBED_BACKEND"] = "fastembed"
    MODEL = args.model
    if args.one is not None:
        print(json.dumps(run_one(args.one, args.searches, args.adds)))
        return
    sizes = list(args.sizes) + ([100_000] if args.with_100k else [])
    results = []
    for size in sizes:
        if size < 1:
            parser.error(f"--sizes: {size} is not a positive number of memories")
        with tempfile.TemporaryDirectory(prefix="memex-bench-cache-") as cache:
            env = {**os.environ, "MEMEX_CACHE_DIR": cache}
            env.pop("MEMEX_VAULT", None)
            child = subprocess.run(
                [sys.executable, __file__, "--one", str(size), "--searches", str(args.searches),
                 "--adds", str(args.adds), "--long-every", str(args.long_every),
                 "--fastembed-defaults", str(args.fastembed_defaults), "--model", args.model],
                env=env, capture_output=True, text=True, check=False,
            )
        if child.returncode != 0:
            raise SystemExit(f"benchmark of {size} memories failed:\n{child.stderr}")
        results.append(json.loads(child.stdout.strip().splitlines()[-1]))
    cpu = next(
        (line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
         if line.startswith("model name")), "unknown",
    ) if Path("/proc/cpuinfo").exists() else "unknown"
    print(json.dumps({
        "long_every": args.long_every,
        "model": args.model,
        "machine": {"cpus": os.cpu_count(), "cpu": cpu, "python": sys.version.split()[0]},
        "targets": {k: f"{op} {v}" for k, (op, v) in TARGETS.items()},
        "results": results,
    }, indent=2))


if __name__ == "__main__":
    main()
