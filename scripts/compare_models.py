#!/usr/bin/env python3
"""Compare embedding models on the labelled search sets, per language, with paired CIs.

    # per-query metrics of one model under MiniLM's rule (or its own: --rule own), written to a file
    .venv/bin/python scripts/compare_models.py run auto /tmp/minilm.json
    .venv/bin/python scripts/compare_models.py run multilingual /tmp/e5.json --rule own
    .venv/bin/python scripts/compare_models.py run auto /tmp/minilm-sem.json --rule semantic   # cosine alone
    # NEW - BASE per set, split and language: recall@5 and MRR, paired bootstrap 95% intervals
    .venv/bin/python scripts/compare_models.py diff /tmp/minilm.json /tmp/new.json
    # query latency, texts/s and peak RSS of one model (run it under `nice -n 10`, note the load)
    .venv/bin/python scripts/compare_models.py speed /path/to/onnx-folder --direct

A model is any ``[embedding] model`` setting (``auto``, ``multilingual``, a
folder holding ``model.onnx`` and its tokenizer files), or ``use:FILE`` for
an ONNX Universal Sentence Encoder that takes raw strings (it needs
``onnxruntime-extensions``, not a memex dependency).

Sets: the two of ``scripts/eval_search.py`` (hand-written and conversation)
and its guard set ``tests/data/convo_eval_fresh.jsonl``, each indexed into a
throwaway vault with the real model. Every model is ranked by the same rule,
MiniLM's (``profiles.MINILM.fusion``), so what differs is the model; or by
its own (``--rule own``: the rule memex uses with it). The relevance floor
is not applied (a ranking is compared, as scripts/eval_search.py does).
Results of the candidates measured and why: docs/models.md, "Looking for a
stronger model".
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import eval_search as es  # noqa: E402
from memex.embedding import embed, profiles  # noqa: E402
from memex.search.fusion import Fusion, fusion_for  # noqa: E402

SETS = {"handwritten": es.DEFAULT_DATA, "convo": es.CONVO_DATA, "fresh": es.FRESH_DATA}


class UseEmbedder:
    """An ONNX Universal Sentence Encoder: one raw string per run (its graph tokenizes)."""

    def __init__(self, path: str) -> None:
        import onnxruntime as ort
        from onnxruntime_extensions import get_library_path

        options = ort.SessionOptions()
        options.register_custom_ops_library(get_library_path())
        options.intra_op_num_threads = 2
        self.session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        self.model_id = "use:" + Path(path).name
        self.dim = int(self.embed(["dimension probe"]).shape[1])

    def embed(self, texts: list[str]) -> np.ndarray:
        rows = [self.session.run(["outputs"], {"inputs": [t]})[0][0] for t in texts]
        if not rows:
            return np.zeros((0, getattr(self, "dim", 0)), np.float32)
        vectors = np.stack(rows).astype(np.float32)
        return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def load(setting: str, direct: bool = False) -> Any:
    if setting.startswith("use:"):
        return UseEmbedder(setting[4:])
    if direct and Path(setting).is_dir():
        # onnxruntime straight (memex/embedding/onnx.py), as the bundled model
        # runs: without fastembed's per-call overhead, which a model memex
        # supported would not pay either.
        return embed.FastEmbedder(Path(setting), "local:" + Path(setting).name, direct=True)
    embedder = embed.load_embedder(setting)
    if embedder is None:
        raise SystemExit(f"no model for {setting!r}: {embed.why_no_embedder(setting)}")
    return embedder


class Timed:
    """The model, counting the texts it embeds and the seconds it takes."""

    def __init__(self, inner: Any) -> None:
        self.inner, self.model_id, self.dim = inner, inner.model_id, inner.dim
        self.texts, self.seconds = 0, 0.0

    def embed(self, texts: list[str]) -> np.ndarray:
        start = time.perf_counter()
        vectors: np.ndarray = self.inner.embed(texts)
        self.seconds += time.perf_counter() - start
        self.texts += len(texts)
        return vectors

    def embed_query(self, texts: list[str]) -> np.ndarray:
        return embed.embed_queries(self.inner, texts)


RULES = {"minilm": lambda model_id: profiles.MINILM.fusion, "own": lambda model_id: fusion_for(model_id),
         "semantic": lambda model_id: Fusion(1.0), "lexical": lambda model_id: Fusion(0.0)}


def run(setting: str, out: Path, rule_name: str) -> None:
    model = Timed(load(setting))
    rule = RULES[rule_name](model.model_id)
    result: dict[str, Any] = {"model": model.model_id, "rule": rule.name, "sets": {}}
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        for label, path in SETS.items():
            memories, queries = es.load_set(path)
            vault = stack.enter_context(es.build_vault(Path(tmp) / label, memories, model))
            prep = es.Prepared(vault, queries)
            result["sets"][label] = {
                q["id"]: {"split": q["split"], "lang": q.get("lang", "en"),
                          **es.score_ranking(prep.ranking(q, rule), q["relevant"])}
                for q in queries
            }
    result["indexing"] = {"texts": model.texts, "seconds": round(model.seconds, 2),
                          "texts_per_s": round(model.texts / max(model.seconds, 1e-9), 1)}
    out.write_text(json.dumps(result), encoding="utf-8")
    print(json.dumps({"model": model.model_id, **result["indexing"]}))


def interval(diffs: list[float], n: int = 2000, seed: int = 11) -> tuple[float, float, float]:
    """Mean of the paired differences and its bootstrap 95% interval (as eval_search.py)."""
    values = np.array(diffs)
    means = values[np.random.default_rng(seed).integers(0, len(values), size=(n, len(values)))].mean(axis=1)
    return float(values.mean()), float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))


def diff(base_path: Path, new_path: Path) -> None:
    base, new = (json.loads(p.read_text(encoding="utf-8")) for p in (base_path, new_path))
    print(f"base {base['model']} (rule {base['rule']}) vs new {new['model']} (rule {new['rule']})")
    print(f"{'set':12} {'split':5} {'lang':4} {'n':>4} | recall@5 base  new  diff [95% CI]      "
          f"| MRR base  new  diff [95% CI]")
    for label, rows in base["sets"].items():
        other = new["sets"][label]
        for split in ("dev", "test"):
            for lang in ("en", "zh", "all"):
                qids = [q for q, r in rows.items() if r["split"] == split and lang in ("all", r["lang"])]
                if not qids:
                    continue
                line = f"{label:12} {split:5} {lang:4} {len(qids):4} |"
                for key in ("recall@5", "mrr"):
                    mean, low, high = interval([other[q][key] - rows[q][key] for q in qids])
                    before = np.mean([rows[q][key] for q in qids])
                    after = np.mean([other[q][key] for q in qids])
                    line += f" {before:.3f} {after:.3f} {mean:+.3f} [{low:+.3f}, {high:+.3f}] |"
                print(line)


def speed(setting: str, texts: int, direct: bool) -> None:
    start = time.perf_counter()
    model = load(setting, direct)
    loaded = time.perf_counter() - start
    memories, queries = es.load_set(es.CONVO_DATA)
    questions = [q["query"] for q in queries][:100]
    for question in questions[:5]:  # warm-up
        embed.embed_queries(model, [question + " warm"])
    times, cpu = [], []
    for question in questions:
        start, start_cpu = time.perf_counter(), time.process_time()
        embed.embed_queries(model, [question])
        times.append((time.perf_counter() - start) * 1000)
        # CPU time of all the process's threads: less sensitive than wall time
        # to what else the machine runs.
        cpu.append((time.process_time() - start_cpu) * 1000)
    bodies = [m["text"] for m in memories][:texts]
    start = time.perf_counter()
    model.embed(bodies)
    seconds = time.perf_counter() - start
    print(json.dumps({
        "model": model.model_id, "load_s": round(loaded, 2), "query_p50_ms": round(float(np.median(times)), 2),
        "query_p95_ms": round(float(np.percentile(times, 95)), 2),
        "query_cpu_p50_ms": round(float(np.median(cpu)), 2), "texts": len(bodies),
        "texts_per_s": round(len(bodies) / seconds, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
    }))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p_run = sub.add_parser("run", help="per-query metrics of one model, written to OUT")
    p_run.add_argument("model")
    p_run.add_argument("out", type=Path)
    p_run.add_argument("--rule", choices=tuple(RULES), default="minilm",
                       help="minilm (MiniLM's rule), own (the model's), semantic or lexical (a signal alone)")
    p_diff = sub.add_parser("diff", help="NEW - BASE per set, split and language")
    p_diff.add_argument("base", type=Path)
    p_diff.add_argument("new", type=Path)
    p_speed = sub.add_parser("speed", help="query latency, texts/s and peak RSS")
    p_speed.add_argument("model")
    p_speed.add_argument("--texts", type=int, default=1000)
    p_speed.add_argument("--direct", action="store_true", help="a model folder on onnxruntime directly, not fastembed")
    args = parser.parse_args()
    if args.command == "run":
        run(args.model, args.out, args.rule)
    elif args.command == "diff":
        diff(args.base, args.new)
    else:
        speed(args.model, args.texts, args.direct)


if __name__ == "__main__":
    main()
