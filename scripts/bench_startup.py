#!/usr/bin/env python3
"""Benchmark one-shot commands as a user types them: whole processes, start-up included.

    .venv/bin/python scripts/bench_startup.py                      # 10k vault in a temp folder
    .venv/bin/python scripts/bench_startup.py --vault /tmp/v10k    # build it once, reuse it after
    .venv/bin/python scripts/bench_startup.py --runs 21 --size 10000

Each figure is a new ``memex`` process (the console script of this
interpreter's environment) timed from spawn to exit, as a person at a
terminal waits for it, over a vault of ``--size`` synthetic memories
(scripts/bench.py's generator) indexed with the real bundled model:

- ``cold``: no warm model server for the vault, so ``search`` and ``add``
  load the model in the process (what a one-shot command costs when no agent
  session is running);
- ``warm``: the vault's warm model server is running (an agent session's
  SessionStart hook starts it, memex/agents/warm.py), so the command embeds
  through it and loads no model. Checked, not assumed: before the warm runs
  one ``search`` and one ``add`` run with ``python -X importtime``, and the
  script stops if either imported onnxruntime or fastembed (a command that
  missed the server and loaded the model itself would time the cold path
  under the warm name; ``warm_checked`` in the output).

Commands: ``memex --version``; ``memex search QUERY`` (a distinct
conversational query each run); ``memex add TEXT --json`` (a distinct new
memory each run: embedding, dedup, file write with fsync, indexing).
For reference, cold ``search`` is also timed with the model loaded through
fastembed (``MEMEX_EMBED_BACKEND=fastembed``, the old path), without the
model preload thread (``MEMEX_PRELOAD=0``), and without the optimized graph
saved in the user's cache (``search_no_saved_graph``: a cache folder of its
own, as on a machine where no process has built the optimized session yet;
memex/embedding/prebuilt.py). The warm server saves that graph when it
starts, so the other cold cases, timed after the warm ones, load it
(``saved_graph`` in the output says whether it was there). After one warm-up run (not
counted) each case runs ``--runs`` times; cases are interleaved run by run
so that a change in the machine's load touches them alike. Prints JSON:
p50 / p95 / max wall milliseconds and median CPU milliseconds (user + system
of the child) per case, and the load average before and after.

The target (docs/benchmarks.md, "Start-up"): one-shot ``memex search`` p50 <= 350 ms on a 10k vault
on a quiet machine. On a shared machine, compare CPU time and the ratios.
"""

from __future__ import annotations

import argparse
import compileall
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench  # noqa: E402  (the synthetic memories and queries of scripts/bench.py)

import memex  # noqa: E402
from memex.agents import warm  # noqa: E402
from memex.vault import Vault  # noqa: E402

MEMEX = str(Path(sys.executable).with_name("memex"))


def build(root: Path, size: int) -> float:
    """A vault of ``size`` memories, indexed with the real model; seconds taken."""
    rng = random.Random(14)
    bench.write_vault(root, [bench.memory_text(rng, n) for n in range(size)])
    start = time.perf_counter()
    with Vault(root) as vault:
        vault.reindex()
    return time.perf_counter() - start


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_once(args: list[str], env: dict[str, str]) -> tuple[float, float]:
    cpu = _cpu()
    start = time.perf_counter()
    done = subprocess.run([MEMEX, *args], env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"memex {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()}")
    return wall * 1000, (_cpu() - cpu) * 1000


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def summary(walls: list[float], cpus: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(statistics.median(walls), 1), "p95_ms": round(_pct(walls, 0.95), 1),
        "max_ms": round(max(walls), 1), "cpu_p50_ms": round(statistics.median(cpus), 1), "runs": len(walls),
    }


def cases(root: Path, rng: random.Random, n: int, bare_cache: Path) -> dict[str, tuple[list[str], dict[str, str]]]:
    """Each case's arguments and environment for run ``n``."""
    base = {**os.environ, "MEMEX_VAULT": str(root)}
    query = bench.queries(rng, 1)[0]
    text = bench.memory_text(rng, 10_000_000 + n)
    return {
        "version": (["--version"], base),
        "search": (["search", query], base),
        "add": (["add", text, "--json"], base),
        "search_fastembed": (["search", query], {**base, "MEMEX_EMBED_BACKEND": "fastembed"}),
        "search_no_preload": (["search", query], {**base, "MEMEX_PRELOAD": "0"}),
        "search_no_saved_graph": (["search", query], {**base, "MEMEX_CACHE_DIR": str(bare_cache)}),
    }


def measure(root: Path, runs: int, names: list[str], seed: int, bare_cache: Path) -> dict[str, dict[str, float]]:
    rng = random.Random(seed)
    walls: dict[str, list[float]] = {name: [] for name in names}
    cpus: dict[str, list[float]] = {name: [] for name in names}
    for n in range(runs + 1):
        chosen = cases(root, rng, n, bare_cache)
        for name in names:
            wall, cpu = run_once(*chosen[name])
            if n:  # run 0 warms the file-system cache and is not counted
                walls[name].append(wall)
                cpus[name].append(cpu)
    return {name: summary(walls[name], cpus[name]) for name in names}


MODEL_MODULES = ("onnxruntime", "fastembed")


def loaded_model_modules(args: list[str], env: dict[str, str]) -> list[str]:
    """The model runtimes a ``memex`` command imported (``-X importtime``, so not a timed run)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", "from memex.cli import run; run()", *args],
        env=env, capture_output=True, text=True, check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"memex {' '.join(args)} failed ({done.returncode}): {done.stderr.strip()[-500:]}")
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    return sorted(m for m in imported if m.split(".")[0] in MODEL_MODULES)


def check_warm(root: Path, rng: random.Random, bare_cache: Path) -> dict[str, bool]:
    """Stop unless a search and an add are answered by the warm server (no model in process)."""
    chosen = cases(root, rng, -1, bare_cache)
    for name in ("search", "add"):
        loaded = loaded_model_modules(*chosen[name])
        if loaded:
            raise SystemExit(f"warm case: `memex {name}` loaded the model in process ({', '.join(loaded[:3])}): "
                             "it did not reach the warm server, so its timing would be the cold path's")
    return {"search": True, "add": True}


def saved_graph(cache: Path | None = None) -> bool:
    """Whether the bundled model's optimized graph is saved in ``cache`` (default: the user's)."""
    code = (
        "import onnxruntime; from memex.embedding import embed, prebuilt; d = embed._bundled_model_dir(); "
        "print(d is not None and prebuilt.find(d / 'model.onnx', onnxruntime.__version__) is not None)"
    )
    env = {**os.environ, **({"MEMEX_CACHE_DIR": str(cache)} if cache is not None else {})}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return done.stdout.strip() == "True"


def start_warm(root: Path) -> subprocess.Popen[bytes]:
    """The vault's warm model server, as SessionStart starts it (but ours to stop)."""
    server = subprocess.Popen(
        [sys.executable, "-m", "memex.agents.warm", str(root)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    with Vault(root) as vault:
        while warm.connect(vault) is None:
            if server.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("the warm model server did not start (is it off: [agents] warm_seconds = 0?)")
            time.sleep(0.1)
    return server


def stop_warm(root: Path, server: subprocess.Popen[bytes]) -> None:
    server.terminate()
    server.wait(30)
    path = warm.socket_path(root)  # killed by a signal, it leaves its socket file
    if path is not None:
        path.unlink(missing_ok=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=10_000, help="memories in the vault (default 10000)")
    parser.add_argument("--runs", type=int, default=15, help="counted runs per case (default 15)")
    parser.add_argument("--vault", help="build the vault here, or reuse the one already here")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    if args.size < 1 or args.runs < 1:
        parser.error("--size and --runs must be positive")
    os.environ.pop("MEMEX_WARM", None)
    os.environ.pop("MEMEX_VAULT", None)
    # An installed memex has its bytecode (pip compiles it); a source tree
    # under PYTHONDONTWRITEBYTECODE=1 has none and would compile every module
    # in every run (50-70 ms of CPU more than a user pays): compile it once.
    compileall.compile_dir(str(Path(memex.__file__).parent), quiet=1)
    with tempfile.TemporaryDirectory(prefix="memex-bench-startup-") as tmp:
        root = Path(args.vault).expanduser() if args.vault else Path(tmp) / "vault"
        built = None
        if not (root / ".memex").is_dir():
            built = round(build(root, args.size), 1)
        with Vault(root) as vault:
            memories = vault.backend.conn.execute("SELECT count(*) FROM memories").fetchone()[0]
        figures: dict[str, Any] = {
            "vault": str(root), "size": args.size, "built_in_s": built, "memories": memories,
            "load_average_1m_before": round(os.getloadavg()[0], 2),
        }
        bare_cache = Path(tmp) / "cache-without-saved-graph"
        server = start_warm(root)
        try:
            figures["warm_checked"] = check_warm(root, random.Random(args.seed + 2), bare_cache)
            figures["warm"] = measure(root, args.runs, ["version", "search", "add"], args.seed, bare_cache)
        finally:
            stop_warm(root, server)
        figures["saved_graph"] = saved_graph()
        figures["cold"] = measure(
            root, args.runs,
            ["version", "search", "add", "search_fastembed", "search_no_preload", "search_no_saved_graph"],
            args.seed + 1, bare_cache,
        )
        if saved_graph(bare_cache):
            raise SystemExit("search_no_saved_graph found a saved graph: its figure would be the other case's")
        figures["load_average_1m_after"] = round(os.getloadavg()[0], 2)
        cold = figures["cold"]
        figures["target_search_p50_ms_350"] = {
            "cold": cold["search"]["p50_ms"] <= 350, "warm": figures["warm"]["search"]["p50_ms"] <= 350,
        }
        print(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
