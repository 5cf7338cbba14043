#!/usr/bin/env python3
"""memex's own labelled sets: a second opinion on the ranking rule, with confidence intervals.

    .venv/bin/python scripts/eval_search.py            # tables: both sets, dev and test
    .venv/bin/python scripts/eval_search.py --ablation # the rule without each element, and its grids
    .venv/bin/python scripts/eval_search.py --floor    # the relevance floor: cosines, empty rates
    .venv/bin/python scripts/eval_search.py --json     # everything as JSON
    .venv/bin/python scripts/eval_search.py --model multilingual   # any [embedding] model setting
    .venv/bin/python scripts/eval_search.py --guard tests/data/convo_eval_fresh.jsonl   # a third set

The rule is chosen on LoCoMo, conversations nobody here wrote
(scripts/eval_public.py, docs/search.md); these sets were written here, so
they only say whether a rule loses something memex's own uses need.

Sets: ``tests/data/search_eval.jsonl`` (200 hand-written agent memories, 100
queries; no split field, so queries alternate dev/test in id order) and
``tests/data/convo_eval.jsonl`` (written by scripts/gen_convo_eval.py: 1,643
conversation turns, 209 questions with a fixed dev/test split). Each set is
written as files into a throwaway vault and indexed with the real model.
Every query's candidates (BM25 and cosine) are taken once, then each rule of
scripts/eval_rules.py ranks the same candidates (ties on the memory id, as
search does).

Metrics: recall@k = share of queries with any relevant memory in the top k
(as public conversation benchmarks count a hit), MRR = 1 / rank of the first
relevant memory within the top 10. Differences carry a paired bootstrap
95% interval (2,000 resamples of the queries, fixed seed) against the rule
in force, the plain blend and BM25 alone.
"""

from __future__ import annotations

import argparse
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

import eval_rules  # noqa: E402
from memex.embedding import embed  # noqa: E402
from memex.files import memory_file  # noqa: E402
from memex.search.fusion import Fusion, fuse, fusion_for, rank  # noqa: E402
from memex.search.hybrid import Candidates, candidates, search  # noqa: E402
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


class Prepared:
    """Each query's candidates, taken once, and what the index holds about every memory."""

    def __init__(self, vault: Vault, queries: list[dict[str, Any]]) -> None:
        self.queries = queries
        self.cands: dict[str, Candidates] = {}
        for q in queries:
            qvec = question_vector(vault, q["query"])
            self.cands[q["id"]] = candidates(vault.backend.conn, vault.embedder, q["query"], qvec=qvec)
        self.ids = {int(r): str(i) for r, i in vault.backend.conn.execute("SELECT rowid, id FROM memories")}
        self.bodies = {int(r): str(b) for r, b in vault.backend.conn.execute("SELECT rowid, body FROM memories")}
        self.facts = vault.store.facts(list(self.ids))

    def ranking(self, q: dict[str, Any], fusion: Fusion) -> list[str]:
        c = self.cands[q["id"]]
        scores = rank(fuse(c.lexical, c.semantic, fusion, c.use_vectors), self.facts, fusion)
        order = sorted(scores, key=lambda r: (-round(scores[r], 9), self.ids[r]))
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


def per_query(prep: Prepared, rules: dict[str, Fusion]) -> dict[str, dict[str, dict[str, float]]]:
    """rule name -> query id -> metrics."""
    return {
        name: {q["id"]: score_ranking(prep.ranking(q, f), q["relevant"]) for q in prep.queries}
        for name, f in rules.items()
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


def evaluate(vault: Vault, queries: list[dict[str, Any]], rules: dict[str, Fusion]) -> dict[str, dict[str, Any]]:
    """Metrics per rule name for every split (dev, test, all), with CIs against the reference rules."""
    rows = per_query(Prepared(vault, queries), rules)
    splits = {s: [q["id"] for q in queries if q["split"] == s] for s in ("dev", "test")}
    splits["all"] = [q["id"] for q in queries]
    out: dict[str, dict[str, Any]] = {}
    for name, r in rows.items():
        out[name] = {}
        for split, qids in splits.items():
            entry: dict[str, Any] = mean(r, qids)
            for ref in eval_rules.references(rules):
                if ref != name:
                    entry[f"d_recall@5_vs_{ref}"] = bootstrap(r, rows[ref], qids, "recall@5")
                    entry[f"d_mrr_vs_{ref}"] = bootstrap(r, rows[ref], qids, "mrr")
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
        c = candidates(vault.backend.conn, vault.embedder, u["query"], qvec=qvec)
        cos_unrel[u["lang"]].append(max(c.semantic.values(), default=0.0))
        empty_unrel[u["lang"]].append(not search(vault.backend.conn, vault.embedder, u["query"], 10, qvec=qvec))
    empty_real: dict[str, list[bool]] = {"en": [], "zh": []}
    lost: dict[str, list[bool]] = {"en": [], "zh": []}
    for q in queries:
        qvec = question_vector(vault, q["query"])
        kept = [h.id for h in search(vault.backend.conn, vault.embedder, q["query"], 5, qvec=qvec)]
        raw = [h.id for h in search(vault.backend.conn, vault.embedder, q["query"], 5, qvec=qvec, floor=False)]
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
    width = max(len(n) for n in names) + 2
    for split in ("dev", "test", "all"):
        print(f"\n== {split} ==")
        print(f"{'rule':{width}s}" + "".join(f"{s + ' r@1':>16s}{'r@5':>7s}{'r@10':>7s}{'MRR':>7s}" for s in results))
        for name in names:
            line = f"{name:{width}s}"
            for per in results.values():
                m = per[name][split]
                line += f"{m['recall@1']:16.3f}{m['recall@5']:7.3f}{m['recall@10']:7.3f}{m['mrr']:7.3f}"
            print(line)
        for s, per in results.items():
            print(f"-- {s} {split}: differences, paired bootstrap 95% CI")
            for name in names:
                m = per[name][split]
                parts = [f"{k[2:]}: {_ci(m[k])}" for k in m if k.startswith("d_")]
                if parts:
                    print(f"   {name:{width}s}" + "   ".join(parts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ablation", action="store_true", help="the rule without each element, and its grids")
    parser.add_argument("--floor", action="store_true", help="measure the relevance floor")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.add_argument("--model", default="auto", help="[embedding] model setting: auto (MiniLM) or multilingual")
    parser.add_argument("--guard", type=Path, action="append", default=[],
                        help=f"another labelled set, measured beside the two (e.g. {FRESH_DATA.relative_to(ROOT)})")
    args = parser.parse_args()
    for path in args.guard:
        if not path.is_file():
            raise SystemExit(f"--guard: no such file: {path}")
    embedder = embed.load_embedder(args.model)
    if embedder is None:
        raise SystemExit(f"no embedding model for --model {args.model}: {embed.why_no_embedder(args.model)}")
    rules = (eval_rules.ablation if args.ablation else eval_rules.standard)(embedder.model_id)
    results: dict[str, dict[str, dict[str, Any]]] = {}
    floors: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        for label, path in {**SETS, **{f"guard:{p.stem}": p for p in args.guard}}.items():
            memories, queries = load_set(path)
            vault = stack.enter_context(build_vault(Path(tmp) / label, memories, embedder))
            if args.floor:
                floors[label] = floor_report(vault, queries, load_unrelated())
            else:
                results[label] = evaluate(vault, queries, rules)
    rule = fusion_for(embedder.model_id).name
    if args.floor:
        print(json.dumps({"model": embedder.model_id, "rule": rule, **floors}, indent=1, ensure_ascii=False))
        return
    if args.json:
        print(json.dumps({"model": embedder.model_id, "rule": rule, "sets": results}, indent=1, ensure_ascii=False))
        return
    print(f"model {embedder.model_id}; rule in force {rule}")
    print_tables(results, list(rules))


if __name__ == "__main__":
    main()
