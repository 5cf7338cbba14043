#!/usr/bin/env python3
"""Measure search fusions on the labelled sets, side by side, with confidence intervals.

    .venv/bin/python scripts/eval_search.py            # tables: both sets, dev and test
    .venv/bin/python scripts/eval_search.py --choose   # every rule in FUSIONS ranked on dev
    .venv/bin/python scripts/eval_search.py --floor    # the relevance floor: cosines, empty rates
    .venv/bin/python scripts/eval_search.py --json     # everything as JSON
    .venv/bin/python scripts/eval_search.py --model multilingual   # any [embedding] model setting
    .venv/bin/python scripts/eval_search.py --guard tests/data/convo_eval_fresh.jsonl   # a third set, never chosen on

Sets: ``tests/data/search_eval.jsonl`` (200 hand-written agent memories, 100
queries; no split field, so queries alternate dev/test in id order) and
``tests/data/convo_eval.jsonl`` (written by scripts/gen_convo_eval.py: 1,643
conversation turns, 209 questions with a fixed dev/test split). Each set is
written as files into a throwaway vault and indexed with the real model.
Every query's candidates (BM25 and cosine) are taken once, then each rule in
:data:`fusion_grid.FUSIONS` (scripts/fusion_grid.py) ranks the same candidates (ties on the memory
id, as search does).

Metrics: recall@k = share of queries with any relevant memory in the top k
(as public conversation benchmarks count a hit), MRR = 1 / rank of the first
relevant memory within the top 10. Differences carry a paired bootstrap
95% interval (2,000 resamples of the queries, fixed seed) against BM25 alone
and against the previous rule.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tempfile
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from memex.embedding import embed  # noqa: E402
from memex.files import memory_file
from memex.search import when
from fusion_grid import FUSIONS, NAMED_FUSIONS, PREVIOUS_FUSION  # noqa: E402
from memex.search.fusion import (  # noqa: E402
    DEFAULT_FUSION,
    Fusion,
    calibration_for,
    fuse,
    fusion_for,
)
from memex.search.hybrid import Candidates, candidates, search, unique_bodies  # noqa: E402
from memex.search.rarity import rarity_for  # noqa: E402
from memex.store import facts  # noqa: E402
from memex.vault import Vault, init_vault  # noqa: E402

DATA = ROOT / "tests" / "data"
DEFAULT_DATA = DATA / "search_eval.jsonl"
CONVO_DATA = DATA / "convo_eval.jsonl"
UNRELATED = DATA / "unrelated_queries.jsonl"
SETS = {"handwritten": DEFAULT_DATA, "convo": CONVO_DATA}
# The guard rail (docs/search.md): the generator run with another seed and with small talk and
# distractors written apart from the ones the rules were chosen with (--filler fresh).
FRESH_DATA = DATA / "convo_eval_fresh.jsonl"
DEPTH = 10
KEYS = ("recall@1", "recall@5", "recall@10", "mrr")


def load_set(path: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Memories and queries of a labelled set; bad lines name the file and line.

    Queries without a ``split`` alternate dev/test in id order.
    """
    memories: list[dict[str, Any]] = []
    queries: list[dict[str, Any]] = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
            kind = item["kind"]
        except (ValueError, KeyError) as exc:
            raise SystemExit(f"{path}:{n}: not a memory or query line: {exc}") from exc
        (memories if kind == "memory" else queries).append(item)
    ids = {m["id"] for m in memories}
    for i, q in enumerate(sorted(queries, key=lambda q: q["id"])):
        unknown = [r for r in q["relevant"] if r not in ids]
        if unknown:
            raise SystemExit(f"{path}: query {q['id']} names unknown memories {unknown}")
        q.setdefault("split", "dev" if i % 2 == 0 else "test")
        q.setdefault("lang", "en")
    return memories, queries


def load_unrelated(path: Path = UNRELATED) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def build_vault(root: Path, memories: list[dict[str, Any]], embedder: embed.Embedder) -> Vault:
    """A vault holding the set's memories as files (ids, dates, sessions kept), fully indexed."""
    init_vault(root, git=False)
    for m in memories:
        meta = {"id": m["id"], "scope": m["scope"], "category": m.get("category"), "source": "eval",
                "session": m.get("session"), "created": m.get("created")}
        folder = root / "memories" / m["scope"].replace(":", "/")
        memory_file.atomic_write(
            folder / f"{m['id']}.md",
            memory_file.serialize(memory_file.MemoryFile({k: v for k, v in meta.items() if v}, m["text"] + "\n")),
        )
    vault = Vault(root, embedder=embedder)
    report = vault.reindex()
    if report.errors:
        raise SystemExit(f"indexing the eval set failed: {report.errors}")
    return vault


def question_vector(vault: Vault, text: str) -> np.ndarray:
    """A question's vector as ``Vault.search`` embeds it: the model's query side (e5's "query:")."""
    assert vault.embedder is not None
    return embed.query_vector(vault.embedder, text)


def query_now(q: dict[str, Any]) -> dt.datetime:
    """When the question is asked: its ``now`` date (noon UTC), else the clock."""
    if "now" in q:
        return dt.datetime.fromisoformat(q["now"] + "T12:00:00+00:00")
    return dt.datetime.now(dt.timezone.utc)


class Prepared:
    """Each query's candidates, taken once, and what ranking needs besides."""

    def __init__(self, vault: Vault, queries: list[dict[str, Any]]) -> None:
        self.queries = queries
        self.cands: dict[str, Candidates] = {}
        for q in queries:
            qvec = question_vector(vault, q["query"])
            self.cands[q["id"]] = candidates(vault.conn, vault.embedder, q["query"], qvec=qvec)
        self.ids = {int(r): str(i) for r, i in vault.conn.execute("SELECT rowid, id FROM memories")}
        self.created = {int(r): str(c) for r, c in vault.conn.execute("SELECT rowid, created FROM memories")}
        self.bodies = {int(r): str(b) for r, b in vault.conn.execute("SELECT rowid, body FROM memories")}
        self.densities = vault.store.densities(list(self.bodies))
        self.calibration = calibration_for(vault.embedder.model_id if vault.embedder else None)
        self.term_counts = vault.store.term_counts
        self.facts = facts.facts(vault.conn, list(self.bodies))

    def ranking(self, q: dict[str, Any], fusion: Fusion) -> list[str]:
        c = self.cands[q["id"]]
        span = when.window(q["query"], query_now(q)) if fusion.time_boost else None
        rarity = rarity_for(q["query"], fusion, self.term_counts)
        scores = fuse(c.lexical, c.semantic, fusion, c.use_vectors, q["query"], self.calibration, self.created,
                      self.bodies, span, self.densities, rarity, self.facts)
        order = sorted(scores, key=lambda r: (-round(scores[r], 9), self.ids[r]))
        if fusion.collapse_duplicates:
            order = unique_bodies(order[: DEPTH * 3], self.bodies)
        return [self.ids[r] for r in order[:DEPTH]]


def score_ranking(ranked: list[str], relevant: list[str]) -> dict[str, float]:
    rel = set(relevant)
    first = next((i for i, mid in enumerate(ranked[:DEPTH], 1) if mid in rel), None)
    return {
        "recall@1": float(bool(rel & set(ranked[:1]))),
        "recall@5": float(bool(rel & set(ranked[:5]))),
        "recall@10": float(bool(rel & set(ranked[:10]))),
        "mrr": 1.0 / first if first else 0.0,
    }


def per_query(prep: Prepared, fusions: tuple[Fusion, ...]) -> dict[str, dict[str, dict[str, float]]]:
    """fusion name -> query id -> metrics."""
    return {
        f.name: {q["id"]: score_ranking(prep.ranking(q, f), q["relevant"]) for q in prep.queries} for f in fusions
    }


def mean(rows: dict[str, dict[str, float]], qids: list[str]) -> dict[str, float]:
    return {k: round(float(np.mean([rows[q][k] for q in qids])), 4) if qids else 0.0 for k in KEYS}


def bootstrap(a: dict[str, dict[str, float]], b: dict[str, dict[str, float]], qids: list[str], key: str,
              n: int = 2000, seed: int = 11) -> list[float]:
    """Mean of a - b over the queries and its paired bootstrap 95% interval."""
    diff = np.array([a[q][key] - b[q][key] for q in qids])
    if not len(diff):
        return [0.0, 0.0, 0.0]
    rng = np.random.default_rng(seed)
    means = diff[rng.integers(0, len(diff), size=(n, len(diff)))].mean(axis=1)
    return [round(float(diff.mean()), 4), round(float(np.percentile(means, 2.5)), 4),
            round(float(np.percentile(means, 97.5)), 4)]


def evaluate(
    vault: Vault, queries: list[dict[str, Any]], fusions: tuple[Fusion, ...] = FUSIONS
) -> dict[str, dict[str, Any]]:
    """Metrics per fusion name for every split (dev, test, all), with CIs against BM25 and the previous rule."""
    rows = per_query(Prepared(vault, queries), fusions)
    splits = {s: [q["id"] for q in queries if q["split"] == s] for s in ("dev", "test")}
    splits["all"] = [q["id"] for q in queries]
    out: dict[str, dict[str, Any]] = {}
    for name, r in rows.items():
        out[name] = {}
        for split, qids in splits.items():
            entry: dict[str, Any] = mean(r, qids)
            for ref, label in ((Fusion("lexical").name, "bm25"), (PREVIOUS_FUSION.name, "previous")):
                if ref in rows and ref != name:
                    entry[f"d_recall@5_vs_{label}"] = bootstrap(r, rows[ref], qids, "recall@5")
                    entry[f"d_mrr_vs_{label}"] = bootstrap(r, rows[ref], qids, "mrr")
            out[name][split] = entry
        out[name]["by_group"] = {
            f"{lang}/{qtype}": mean(r, [q["id"] for q in queries if q["lang"] == lang and q.get("type", "-") == qtype])
            for lang, qtype in sorted({(q["lang"], q.get("type", "-")) for q in queries})
        }
    return out


def floor_report(vault: Vault, queries: list[dict[str, Any]], unrelated: list[dict[str, Any]]) -> dict[str, Any]:
    """Cosines that calibrate the floor, and what the floor does with the default rule."""
    prep = Prepared(vault, queries)
    cos_rel: dict[str, list[float]] = {"en": [], "zh": []}
    for q in queries:
        sem = prep.cands[q["id"]].semantic
        best = max((c for r, c in sem.items() if prep.ids[r] in q["relevant"]), default=None)
        if best is not None:
            cos_rel["zh" if q["lang"] == "zh" else "en"].append(best)
    cos_unrel: dict[str, list[float]] = {"en": [], "zh": []}
    empty_unrel: dict[str, list[bool]] = {"en": [], "zh": []}
    for u in unrelated:
        qvec = question_vector(vault, u["query"])
        c = candidates(vault.conn, vault.embedder, u["query"], qvec=qvec)
        cos_unrel[u["lang"]].append(max(c.semantic.values(), default=0.0))
        empty_unrel[u["lang"]].append(not search(vault.conn, vault.embedder, u["query"], 10, qvec=qvec))
    empty_real: dict[str, list[bool]] = {"en": [], "zh": []}
    lost: dict[str, list[bool]] = {"en": [], "zh": []}
    for q in queries:
        qvec = question_vector(vault, q["query"])
        kept = [h.id for h in search(vault.conn, vault.embedder, q["query"], 5, qvec=qvec)]
        raw = [h.id for h in search(vault.conn, vault.embedder, q["query"], 5, qvec=qvec, floor=False)]
        lang = "zh" if q["lang"] == "zh" else "en"
        empty_real[lang].append(not kept)
        lost[lang].append(bool(set(q["relevant"]) & set(raw)) and not set(q["relevant"]) & set(kept))

    def pct(values: list[float]) -> dict[str, float]:
        if not values:
            return {}
        return {f"p{p}": round(float(np.percentile(values, p)), 3) for p in (5, 25, 50, 75, 95, 100)}

    def rate(flags: list[bool]) -> str:
        return f"{sum(flags)}/{len(flags)}"

    return {
        "cosine_of_evidence": {k: pct(v) for k, v in cos_rel.items()},
        "best_cosine_unrelated": {k: pct(v) for k, v in cos_unrel.items()},
        "true_empty_unrelated": {k: rate(v) for k, v in empty_unrel.items()},
        "false_empty_real": {k: rate(v) for k, v in empty_real.items()},
        "evidence_in_top5_lost_to_floor": {k: rate(v) for k, v in lost.items()},
    }


def _ci(v: list[float]) -> str:
    return f"{v[0]:+.3f} [{v[1]:+.3f}, {v[2]:+.3f}]"


def print_tables(results: dict[str, dict[str, dict[str, Any]]], names: list[str]) -> None:
    for split in ("dev", "test"):
        print(f"\n== {split} ==")
        print(f"{'rule':52s}" + "".join(f"{s + ' r@1':>14s}{'r@5':>7s}{'r@10':>7s}{'MRR':>7s}" for s in results))
        for name in names:
            line = f"{name:52s}"
            for per in results.values():
                m = per[name][split]
                line += f"{m['recall@1']:14.3f}{m['recall@5']:7.3f}{m['recall@10']:7.3f}{m['mrr']:7.3f}"
            print(line)
        for s, per in results.items():
            print(f"-- {s} {split}: recall@5 difference, paired bootstrap 95% CI")
            for name in names:
                m = per[name][split]
                parts = [f"{k[len('d_recall@5_'):]}: {_ci(m[k])}" for k in m if k.startswith("d_recall@5")]
                print(f"   {name:52s}" + "   ".join(parts))
            print(f"-- {s} {split}: MRR difference, paired bootstrap 95% CI")
            for name in names:
                m = per[name][split]
                parts = [f"{k[len('d_mrr_'):]}: {_ci(m[k])}" for k in m if k.startswith("d_mrr")]
                print(f"   {name:52s}" + "   ".join(parts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--choose", action="store_true", help="rank every rule in FUSIONS on the dev splits")
    parser.add_argument("--floor", action="store_true", help="measure the relevance floor")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.add_argument("--model", default="auto", help="[embedding] model setting: auto (MiniLM) or multilingual")
    parser.add_argument("--guard", type=Path, action="append", default=[],
                        help="another labelled set, measured beside the two but never chosen on "
                             f"(e.g. {FRESH_DATA.relative_to(ROOT)})")
    args = parser.parse_args()
    for path in args.guard:
        if not path.is_file():
            raise SystemExit(f"--guard: no such file: {path}")
    embedder = embed.load_embedder(args.model)
    if embedder is None:
        raise SystemExit(f"no embedding model for --model {args.model}: {embed.why_no_embedder(args.model)}")
    chosen = fusion_for(embedder.model_id)
    fusions = FUSIONS if args.choose else tuple(dict.fromkeys((*NAMED_FUSIONS, DEFAULT_FUSION, chosen)))
    results: dict[str, dict[str, dict[str, Any]]] = {}
    floors: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        for label, path in {**SETS, **{f"guard:{p.stem}": p for p in args.guard}}.items():
            memories, queries = load_set(path)
            vault = stack.enter_context(build_vault(Path(tmp) / label, memories, embedder))
            if args.floor:
                floors[label] = floor_report(vault, queries, load_unrelated())
            else:
                results[label] = evaluate(vault, queries, fusions)
    if args.floor:
        print(json.dumps({"model": embedder.model_id, "rule": chosen.name, **floors}, indent=1, ensure_ascii=False))
        return
    if args.json:
        print(json.dumps({"model": embedder.model_id, "chosen": chosen.name, "sets": results},
                         indent=1, ensure_ascii=False))
        return
    names = [f.name for f in fusions]
    if args.choose:
        def objective(name: str) -> float:
            return float(np.mean([per[name]["dev"][k] for label, per in results.items() if label in SETS
                                  for k in ("recall@5", "mrr")]))
        names = sorted(names, key=objective, reverse=True)
        print("rules by mean of dev recall@5 and MRR over the two sets, never a --guard set (best first):")
        for name in names:
            print(f"  {objective(name):.4f}  {name}")
        names = names[:15]
    print(f"model {embedder.model_id}; chosen rule {chosen.name}")
    print_tables(results, names)


if __name__ == "__main__":
    main()
