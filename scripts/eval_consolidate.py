"""Fit and judge consolidation's pair score and guards on labelled memories.

Data (default tests/data/consolidate_pairs.jsonl, written for the calibrated pair score, docs/consolidation.md
after the earlier tuning): one memory per line with ``split`` (dev/test, by
topic), ``origin`` (``session``: tool output, decisions, preferences as an
agent leaves them; ``notes``: project knowledge), ``topic`` and ``fact``.
Lines of one fact are paraphrases (a pair that should merge); different
facts of a topic are hard negatives; ``value_of`` marks a fact that differs
from another only in a value (a number, a name in the same role, a flipped
side). Every pair of memories within a split is labelled by that: same fact
or not. The older tests/data/consolidate_facts.jsonl (no split field: topics
alternate) can be scored with --data.

What it does, with the real model:

1. fits the logistic pair score (memex.consolidation.pairscore) on dev pairs the guards
   let through, and picks the merge threshold with the most dev recall at
   pair precision >= --min-precision;
2. reports pair precision/recall with 95% bootstrap CIs (resampling topics,
   --boot times) per layer on both splits: Jaccard alone, cosine alone, the
   old OR of two thresholds, the calibrated score; all with the guards;
3. per guard: among pairs the score would merge, how many it refused and
   how many of those refusals were right (not the same fact), with CIs;
4. runs the real consolidation (memex.consolidation.consolidate, dry run) on each split
   as one session and scores its complete-link clusters: at the configured
   profile, over a sweep of merge thresholds on dev, and on test at the
   configured threshold and the one with the most dev cluster recall at
   precision >= --min-precision.

    .venv/bin/python scripts/eval_consolidate.py [--min-precision 0.97] [--boot 1000] [--model auto]

Prints JSON (``fitted_profile`` is what memex.consolidation.pairscore.PROFILES holds for
the model; with --model another model's profile is fitted the same way).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from memex.embedding.embed import load_embedder
from memex.errors import MemexError
from memex.consolidation.pairscore import LEXICAL_PROFILE, PROFILES, ScoreProfile, fit_logistic, pair_matrices, profile_for
from memex.dedup.values import GUARDS
from memex.consolidation.consolidate import consolidate

DATA = Path(__file__).resolve().parent.parent / "tests" / "data" / "consolidate_pairs.jsonl"


def load(path: Path) -> list[dict[str, Any]]:
    rows = []
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                sys.exit(f"{path}:{n}: {exc}")
    if any("split" not in r for r in rows):
        topics = sorted({r["topic"] for r in rows})
        alternate = {t: ("dev" if k % 2 == 0 else "test") for k, t in enumerate(topics)}
        for r in rows:
            r.setdefault("split", alternate[r["topic"]])
    return rows


def rates(tp: float, fp: float, fn: float) -> tuple[float, float]:
    return (tp / (tp + fp) if tp + fp else 1.0), (tp / (tp + fn) if tp + fn else 1.0)


class Scorer:
    """Precision/recall of a pair prediction, with a topic bootstrap."""

    def __init__(self, gold: np.ndarray, topic: np.ndarray, boot: int, seed: int = 17) -> None:
        self.gold, self.topic = gold, topic
        self.n_topics = int(topic.max()) + 1
        rng = np.random.default_rng(seed)
        # Each resample draws topics with replacement: a weight per topic.
        self.weights = rng.multinomial(self.n_topics, [1 / self.n_topics] * self.n_topics, size=boot)

    def __call__(self, pred: np.ndarray) -> dict[str, Any]:
        per = [np.bincount(self.topic, weights=(m).astype(float), minlength=self.n_topics)
               for m in (pred & self.gold, pred & ~self.gold, ~pred & self.gold)]
        tp, fp, fn = (float(x.sum()) for x in per)
        p, r = rates(tp, fp, fn)
        bp, br = [], []
        for w in self.weights:
            q, s = rates(float(w @ per[0]), float(w @ per[1]), float(w @ per[2]))
            bp.append(q)
            br.append(s)
        ci = lambda xs: [round(float(np.percentile(xs, 2.5)), 3), round(float(np.percentile(xs, 97.5)), 3)]  # noqa: E731
        return {"precision": round(p, 4), "precision_ci95": ci(bp), "recall": round(r, 4), "recall_ci95": ci(br),
                "tp": int(tp), "fp": int(fp), "fn": int(fn)}


def topic_scorer(subset: list[dict[str, Any]], boot: int) -> Scorer:
    """A scorer over every pair of ``subset`` (same fact or not), bootstrapping its topics."""
    local = {t: k for k, t in enumerate(sorted({r["topic"] for r in subset}))}
    pairs = list(combinations(range(len(subset)), 2))
    gold = np.array([subset[a]["fact"] == subset[b]["fact"] for a, b in pairs])
    return Scorer(gold, np.array([local[subset[a]["topic"]] for a, _ in pairs]), boot)


def guard_precision(scorer: Scorer, right: np.ndarray, wrong: np.ndarray) -> dict[str, Any]:
    """Share of a guard's refusals that were right (the pair was not one
    fact), with the same topic bootstrap."""
    r = np.bincount(scorer.topic, weights=right.astype(float), minlength=scorer.n_topics)
    w = np.bincount(scorer.topic, weights=wrong.astype(float), minlength=scorer.n_topics)
    total = r.sum() + w.sum()
    if not total:
        return {"precision": None, "precision_ci95": None}
    boot = [float(b @ r) / float(b @ (r + w)) for b in scorer.weights if float(b @ (r + w))]
    return {"precision": round(float(r.sum() / total), 4),
            "precision_ci95": [round(float(np.percentile(boot, 2.5)), 3), round(float(np.percentile(boot, 97.5)), 3)]}


def best_threshold(values: np.ndarray, gold: np.ndarray, allowed: np.ndarray, floor: float,
                   grid: np.ndarray) -> float:
    """The threshold on ``values`` with the most recall at precision >= floor (ties: the higher)."""
    best = (-1.0, float(grid[-1]))
    for t in grid:
        pred = (values >= t) & allowed
        p, r = rates(float(np.sum(pred & gold)), float(np.sum(pred & ~gold)), float(np.sum(~pred & gold)))
        if p >= floor and (r, t) > best:
            best = (r, float(t))
    return best[1]


def write_session(root: Path, texts: list[str], session: str) -> None:
    """One memory file per text, ids m000.., all in ``session`` (as an agent leaves them)."""
    folder = root / "memories" / "user"
    folder.mkdir(parents=True, exist_ok=True)
    for k, text in enumerate(texts):
        (folder / f"m{k:03d}.md").write_text(
            f"---\nid: m{k:03d}\nsession: {session}\ncategory: observation\nconfidence: 0.8\n"
            f"created: 2026-11-30T{10 + k // 3600:02d}:{k // 60 % 60:02d}:{k % 60:02d}Z\n---\n{text}\n",
            encoding="utf-8",
        )


def cluster_eval(rows: list[dict[str, Any]], embedder: Any, scorer_for: Any,
                 thresholds: list[float | None]) -> dict[str, Any]:
    """Consolidate the rows as one session in a real vault (dry run), once per
    merge threshold (None: the configured profile's); score the clusters."""
    from memex.config import load_config
    from memex.vault import Vault, init_vault

    fact = [r["fact"] for r in rows]
    scorer = scorer_for(rows)
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = init_vault(Path(tmp) / "v", git=False)
        write_session(root, [r["text"] for r in rows], "eval")
        config = root / ".memex" / "config.toml"
        template = config.read_text(encoding="utf-8")
        with Vault(root, embedder=embedder) as vault:
            vault.reindex()
            for t in thresholds:
                extra = "" if t is None else f"merge_threshold = {t}\n"
                config.write_text(template.replace("[consolidate]\n", "[consolidate]\n" + extra, 1), encoding="utf-8")
                vault.config = load_config(root)
                report = consolidate(vault, "eval", dry_run=True)
                cluster_of = {f"m{k:03d}": f"m{k:03d}" for k in range(len(rows))}
                for g in report.groups:
                    for member in [g.representative, *g.superseded]:
                        cluster_of[member] = g.representative
                ids = sorted(cluster_of)
                pred = np.array([cluster_of[a] == cluster_of[b] for a, b in combinations(ids, 2)])
                out["configured" if t is None else str(t)] = {
                    "merge_threshold": report.merge_threshold,
                    "memories": len(rows),
                    "facts": len(set(fact)),
                    "visible_after": len(set(cluster_of.values())),
                    "merged_groups": report.merged_groups,
                    "pairs": scorer(pred),
                    "wrongly_merged_groups": sum(
                        1 for g in report.groups
                        if len({fact[int(m[1:])] for m in [g.representative, *g.superseded]}) > 1
                    ),
                }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--min-precision", type=float, default=0.97)
    ap.add_argument("--boot", type=int, default=1000)
    ap.add_argument("--model", default="auto",
                    help="embedding model setting ([embedding] model); fit a profile for another model with it")
    args = ap.parse_args()
    rows = load(args.data)
    try:
        embedder = load_embedder(args.model)
    except MemexError as exc:
        sys.exit(f"--model: {exc}")
    if embedder is None:
        sys.exit(f"the embedding model {args.model!r} did not load; this evaluation needs one")
    texts = [r["text"] for r in rows]
    jac, cos = pair_matrices(texts, embedder.embed(texts))
    topic_ids = {t: k for k, t in enumerate(sorted({r["topic"] for r in rows}))}

    def split_pairs(split: str) -> list[tuple[int, int]]:
        idx = [k for k, r in enumerate(rows) if r["split"] == split]
        return list(combinations(idx, 2))

    def scorer_for(subset: list[dict[str, Any]]) -> Scorer:
        return topic_scorer(subset, args.boot)

    data: dict[str, dict[str, Any]] = {}
    for split in ("dev", "test"):
        pairs = split_pairs(split)
        ii, jj = np.array([a for a, _ in pairs]), np.array([b for _, b in pairs])
        gold = np.array([rows[a]["fact"] == rows[b]["fact"] for a, b in pairs])
        # Which guard fires on each pair (all of them, for the per-guard table).
        fired = {name: np.array([guard(texts[a], texts[b]) for a, b in pairs]) for name, guard in GUARDS}
        refused = np.zeros(len(pairs), dtype=bool)
        for mask in fired.values():
            refused |= mask
        topic = np.array([topic_ids[rows[a]["topic"]] for a, _ in pairs])
        same_topic = np.array([rows[a]["topic"] == rows[b]["topic"] for a, b in pairs])
        session = np.array([rows[a]["origin"] == "session" for a, _ in pairs]) if "origin" in rows[0] else None
        data[split] = {"gold": gold, "fired": fired, "allowed": ~refused, "cos": cos[ii, jj], "jac": jac[ii, jj],
                       "scorer": Scorer(gold, np.unique(topic, return_inverse=True)[1], args.boot),
                       "same_topic": same_topic, "session": session, "pairs": pairs}

    dev = data["dev"]
    fit_mask = dev["allowed"] & dev["same_topic"]  # the hard pairs: cross-topic ones are easy
    bias, w_cos, w_jac = fit_logistic(dev["cos"][fit_mask], dev["jac"][fit_mask], dev["gold"][fit_mask])
    fitted = ScoreProfile(round(bias, 3), round(w_cos, 3), round(w_jac, 3), 0.5)
    grid = np.round(np.arange(0.05, 0.991, 0.01), 3)
    t_score = best_threshold(fitted.score(dev["cos"], dev["jac"]), dev["gold"], dev["allowed"], args.min_precision, grid)
    fitted = ScoreProfile(fitted.bias, fitted.w_cosine, fitted.w_jaccard, t_score)
    # Without a model only Jaccard speaks: the same fit with cosine absent.
    lb, _, lj = fit_logistic(np.zeros(int(fit_mask.sum())), dev["jac"][fit_mask], dev["gold"][fit_mask])
    lexical = ScoreProfile(round(lb, 3), 0.0, round(lj, 3), 0.5)
    t_lex = best_threshold(lexical.score(np.zeros(len(dev["jac"])), dev["jac"]), dev["gold"], dev["allowed"],
                           args.min_precision, grid)
    lexical = ScoreProfile(lexical.bias, 0.0, lexical.w_jaccard, t_lex)
    t_cos = best_threshold(dev["cos"], dev["gold"], dev["allowed"], args.min_precision, np.round(np.arange(0.5, 0.99, 0.01), 3))
    t_jac = best_threshold(dev["jac"], dev["gold"], dev["allowed"], args.min_precision, np.round(np.arange(0.2, 0.99, 0.02), 3))
    configured = profile_for(embedder.model_id)

    layers: dict[str, Any] = {}
    guards: dict[str, Any] = {}
    for split, d in data.items():
        score_fit = fitted.score(d["cos"], d["jac"])
        score_cfg = configured.score(d["cos"], d["jac"])
        preds = {
            f"jaccard_alone>={t_jac}": d["jac"] >= t_jac,
            f"cosine_alone>={t_cos}": d["cos"] >= t_cos,
            "or_rule(jaccard>=0.7|cosine>=0.75)": (d["jac"] >= 0.7) | (d["cos"] >= 0.75),
            "calibrated(fitted)": score_fit >= fitted.merge_threshold,
            "calibrated(configured)": score_cfg >= configured.merge_threshold,
            "lexical_profile(configured, no model)": LEXICAL_PROFILE.score(np.zeros(len(d["jac"])), d["jac"])
            >= LEXICAL_PROFILE.merge_threshold,
        }
        layers[split] = {name: {"without_guards": d["scorer"](p), "with_guards": d["scorer"](p & d["allowed"])}
                         for name, p in preds.items()}
        if d["session"] is not None:
            sess = d["session"] & d["same_topic"]
            p = preds["calibrated(configured)"] & d["allowed"]
            layers[split]["calibrated(configured)"]["session_topics_only"] = {
                "pairs": int(sess.sum()), "positives": int((d["gold"] & sess).sum()),
                "recall": round(float((p & d["gold"] & sess).sum() / max(1, (d["gold"] & sess).sum())), 4),
                "false_merges": int((p & ~d["gold"] & sess).sum()),
            }
        would_merge = score_cfg >= configured.merge_threshold
        guards[split] = {}
        for name, mask in d["fired"].items():
            hit = mask & would_merge
            right, wrong = int((hit & ~d["gold"]).sum()), int((hit & d["gold"]).sum())
            guards[split][name] = {
                "refused": int(hit.sum()), "right": right, "wrong": wrong,
                **guard_precision(d["scorer"], hit & ~d["gold"], hit & d["gold"]),
                "refused_anywhere": int(mask.sum()), "same_fact_refused_anywhere": int((mask & d["gold"]).sum()),
            }
        hit = ~d["allowed"] & would_merge
        guards[split]["any guard"] = {
            "refused": int(hit.sum()), "right": int((hit & ~d["gold"]).sum()), "wrong": int((hit & d["gold"]).sum()),
            **guard_precision(d["scorer"], hit & ~d["gold"], hit & d["gold"]),
        }

    # Complete link adds precision of its own, so the threshold for the real
    # consolidation is swept on dev clusters too (most recall at precision
    # >= the floor); test is scored at the configured and at that threshold.
    sweep = [round(float(t), 2) for t in np.arange(0.30, 0.951, 0.05)]
    dev_rows = [r for r in rows if r["split"] == "dev"]
    dev_clusters = cluster_eval(dev_rows, embedder, scorer_for, [None, *sweep])
    ok = [(v["pairs"]["recall"], float(k)) for k, v in dev_clusters.items()
          if k != "configured" and v["pairs"]["precision"] >= args.min_precision]
    cluster_threshold = max(ok)[1] if ok else None
    test_rows = [r for r in rows if r["split"] == "test"]
    clusters = {
        "dev": dev_clusters,
        "dev_chosen_threshold": cluster_threshold,
        "test": cluster_eval(test_rows, embedder, scorer_for, [None, cluster_threshold]),
    }
    result = {
        "data": str(args.data),
        "model": embedder.model_id,
        "memories": len(rows),
        "labelled_pairs": {s: {"all": len(d["pairs"]), "same_topic": int(d["same_topic"].sum()),
                               "positive": int(d["gold"].sum()),
                               "from_sessions": None if d["session"] is None else int((d["session"] & d["same_topic"]).sum())}
                           for s, d in data.items()},
        "min_precision": args.min_precision,
        "fitted_profile": fitted.__dict__,
        "fitted_lexical_profile": lexical.__dict__,
        "configured_profile": configured.__dict__,
        "single_measure_thresholds_on_dev": {"cosine": t_cos, "jaccard": t_jac},
        "layers": layers,
        "guards": guards,
        "clusters": clusters,
        "profiles_known": sorted(PROFILES),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
