#!/usr/bin/env python3
"""Search ranking on a public benchmark nobody here wrote: LoCoMo, one vault per conversation.

    .venv/bin/python scripts/eval_public.py --locomo DIR                 # the rule in force and its yardsticks
    .venv/bin/python scripts/eval_public.py --locomo DIR --ablation      # every element on and off
    .venv/bin/python scripts/eval_public.py --locomo DIR --floor         # what the relevance floor empties
    .venv/bin/python scripts/eval_public.py --locomo DIR --model multilingual --json
    # two runs compared question by question (e.g. two models, each with its rule in force)
    .venv/bin/python scripts/eval_public.py --locomo DIR --save /tmp/minilm.json
    .venv/bin/python scripts/eval_public.py --locomo DIR --model multilingual --against /tmp/minilm.json

DIR is LoCoMo as published (a folder, the zip or ``locomo10.json``; how to
bring it: scripts/locomo.py). Each conversation becomes a vault of its own
with one memory per dialogue turn (``Turn.memory_text``: ``Speaker: text``
plus `` [shares CAPTION]``), created at its session's date, and is indexed
with the real model. Every question with evidence (category 5 left out) is
asked of its conversation's vault; a hit is an evidence turn in the top k.

Each question's candidates are taken once; every rule of
scripts/eval_rules.py then ranks the same candidates (scripts/eval_search.py's
``Prepared``). The rule in force is
also asked through ``Vault.search(q, limit=10, floor=False)``, and the
report says how many rankings differ from the evaluation's (it must be 0).

Figures: recall@1/5/10 and MRR (1 / rank of the first evidence turn within
the top 10), per LoCoMo question category and overall, for the halves of
the fixed split (scripts/locomo.py): ``choose`` (rules are chosen there),
``report`` (reported, never chosen on) and ``all`` ten. Differences between
rules carry a paired bootstrap 95% interval (2,000 resamples of the
questions, fixed seed). ``--work DIR`` keeps the vaults, so a second run
embeds nothing. ``--save FILE`` writes the rule in force's metrics per
question; ``--against FILE`` reports this run's rule in force minus a saved
one on the questions both asked, with the same intervals.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import eval_rules  # noqa: E402
import eval_search  # noqa: E402
import locomo  # noqa: E402
from memex.embedding import embed  # noqa: E402
from memex.search.fusion import Fusion, fusion_for  # noqa: E402
from memex.vault import Vault  # noqa: E402

HALVES = ("choose", "report", "all")
KEYS = eval_search.KEYS
SCOPE = "project:locomo"


def _session_start(text: str) -> dt.datetime | None:
    """"1:56 pm on 8 May, 2023" as a UTC datetime (None: unreadable)."""
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return dt.datetime.strptime(text.strip(), fmt).replace(tzinfo=dt.timezone.utc)
        except ValueError:
            continue
    return None


def memory_id(conv: str, dia_id: str) -> str:
    return f"locomo{conv}-{dia_id.lower().replace(':', '-')}"


def memories_of(conv: locomo.Conversation) -> list[dict[str, Any]]:
    """One memory per turn, created at its session's time plus a minute per turn (the order kept)."""
    out = []
    fallback = dt.datetime(2023, 1, 1, tzinfo=dt.timezone.utc)
    for i, turn in enumerate(conv.turns):
        start = _session_start(turn.session_date) or fallback + dt.timedelta(days=turn.session)
        created = start + dt.timedelta(minutes=i % 1000)
        out.append({
            "id": memory_id(conv.id, turn.dia_id), "scope": SCOPE, "text": turn.memory_text,
            "session": f"locomo{conv.id}-s{turn.session}",
            "created": created.strftime("%Y-%m-%dT%H:%M:%SZ"),
        })
    return out


def questions_of(conv: locomo.Conversation) -> list[dict[str, Any]]:
    """The conversation's retrieval questions in eval_search's shape (``split``: its half)."""
    half = "choose" if conv.id in locomo.CHOOSE else "report" if conv.id in locomo.REPORT else "other"
    ids = {t.dia_id for t in conv.turns}
    return [
        {"id": f"{conv.id}-{n:04d}", "query": q.question, "lang": "en", "split": half,
         "category": locomo.CATEGORY_NAMES.get(q.category, str(q.category)),
         "relevant": sorted({memory_id(conv.id, e) for e in q.evidence if e in ids})}
        for n, q in enumerate(conv.retrieval_questions)
    ]


@contextmanager
def conversation_vault(work: Path, conv: locomo.Conversation, embedder: embed.Embedder) -> Iterator[Vault]:
    """The conversation's vault under ``work`` (built once; a kept one is only re-synced)."""
    root = work / f"conv{conv.id}"
    if (root / ".memex").is_dir():
        vault = Vault(root, embedder=embedder)
        report = vault.reindex()
        if report.errors:
            raise SystemExit(f"re-indexing {root} failed: {report.errors}")
    else:
        vault = eval_search.build_vault(root, memories_of(conv), embedder)
    with vault:
        yield vault


class Measured(NamedTuple):
    """Per rule, per question: the metrics; and the questions themselves."""

    rows: dict[str, dict[str, dict[str, float]]]
    queries: list[dict[str, Any]]
    search_mismatches: int
    floor: dict[str, Any]


def measure(
    convs: list[locomo.Conversation], embedder: embed.Embedder, rules: dict[str, Fusion],
    work: Path, floor: bool = False, progress: Callable[[str], None] = lambda _line: None,
) -> Measured:
    """Every rule on every question of ``convs``; the rule in force through Vault.search too."""
    rows: dict[str, dict[str, dict[str, float]]] = {name: {} for name in rules}
    queries: list[dict[str, Any]] = []
    in_force = fusion_for(embedder.model_id)
    mismatches = 0
    floors: dict[str, Any] = {"emptied_with_evidence_in_top10": 0, "evidence_dropped_from_top10": 0,
                              "evidence_in_top10": 0, "questions": 0, "unrelated_no_matches": 0,
                              "unrelated_asked": 0}
    unrelated = eval_search.load_unrelated()
    for conv in convs:
        started = time.monotonic()
        qs = questions_of(conv)
        with conversation_vault(work, conv, embedder) as vault:
            prep = eval_search.Prepared(vault, qs)
            for q in qs:
                for name, rule in rules.items():
                    rows[name][q["id"]] = eval_search.score_ranking(prep.ranking(q, rule), q["relevant"])
                hits = [h.id for h in vault.search(q["query"], limit=10, floor=False)]
                mismatches += hits != prep.ranking(q, in_force)
                if floor:
                    kept = [h.id for h in vault.search(q["query"], limit=10)]
                    had = bool(set(q["relevant"]) & set(hits))
                    floors["questions"] += 1
                    floors["evidence_in_top10"] += had
                    floors["emptied_with_evidence_in_top10"] += had and not kept
                    floors["evidence_dropped_from_top10"] += had and not set(q["relevant"]) & set(kept)
            if floor:
                for u in unrelated:
                    floors["unrelated_asked"] += 1
                    floors["unrelated_no_matches"] += not vault.search(u["query"], limit=10)
        queries += qs
        progress(f"conversation {conv.id}: {len(conv.turns)} turns, {len(qs)} questions, "
                 f"{time.monotonic() - started:.0f} s")
    return Measured(rows, queries, mismatches, floors if floor else {})


def summarize(measured: Measured, references: list[str]) -> dict[str, Any]:
    """Per rule and half: the metrics overall and per category, and CIs against each reference rule."""
    out: dict[str, Any] = {}
    categories = sorted({q["category"] for q in measured.queries})
    for name, per in measured.rows.items():
        out[name] = {}
        for half in HALVES:
            qs = [q for q in measured.queries if half == "all" or q["split"] == half]
            qids = [q["id"] for q in qs]
            entry: dict[str, Any] = {"questions": len(qids), **eval_search.mean(per, qids)}
            entry["by_category"] = {c: {"questions": sum(q["category"] == c for q in qs),
                                        **eval_search.mean(per, [q["id"] for q in qs if q["category"] == c])}
                                    for c in categories}
            for ref in references:
                if ref != name and ref in measured.rows:
                    entry[f"vs {ref}"] = {k: eval_search.bootstrap(per, measured.rows[ref], qids, k) for k in KEYS}
            out[name][half] = entry
    return out


def _ci(v: list[float]) -> str:
    return f"{v[0]:+.3f} [{v[1]:+.3f}, {v[2]:+.3f}]"


def print_report(summary: dict[str, Any], references: list[str]) -> None:
    names = list(summary)
    width = max(len(n) for n in names) + 2
    # A half this run did not measure (``--half report``) has no figures to print.
    halves = [half for half in HALVES if summary[names[0]][half]["questions"]]
    for half in halves:
        print(f"\n== {half} ({summary[names[0]][half]['questions']} questions) ==")
        print(f"{'rule':{width}s}{'R@1':>7s}{'R@5':>7s}{'R@10':>7s}{'MRR':>7s}")
        for name in names:
            m = summary[name][half]
            print(f"{name:{width}s}" + "".join(f"{m[k]:7.3f}" for k in KEYS))
        for ref in references:
            print(f"-- {half}: difference from {ref}, paired bootstrap 95% CI (R@5 | R@10 | MRR)")
            for name in names:
                m = summary[name][half].get(f"vs {ref}")
                if m:
                    print(f"   {name:{width}s}{_ci(m['recall@5'])}  {_ci(m['recall@10'])}  {_ci(m['mrr'])}")
    first = names[0]
    print(f"\n== by category, {first} ==")
    for half in halves:
        for cat, m in summary[first][half]["by_category"].items():
            print(f"   {half:7s} {cat:12s} n={m['questions']:4d}" + "".join(f"{k} {m[k]:.3f}  " for k in KEYS))


def against(saved: dict[str, Any], rows: dict[str, dict[str, float]],
            queries: list[dict[str, Any]]) -> dict[str, Any]:
    """This run's rule in force minus a saved run's, per half, on the questions both asked."""
    theirs: dict[str, dict[str, float]] = saved["questions"]
    out: dict[str, Any] = {"saved_model": saved["model"], "saved_rule": saved["rule"]}
    for half in HALVES:
        qids = [q["id"] for q in queries if (half == "all" or q["split"] == half) and q["id"] in theirs]
        out[half] = {"questions": len(qids), "this": eval_search.mean(rows, qids),
                     "saved": eval_search.mean(theirs, qids),
                     **{k: eval_search.bootstrap(rows, theirs, qids, k) for k in KEYS}}
    return out


def _saved(path: Path) -> dict[str, Any]:
    try:
        saved: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SystemExit(f"--against {path}: not a file --save wrote ({exc})") from None
    if not isinstance(saved, dict) or not isinstance(saved.get("questions"), dict):
        raise SystemExit(f"--against {path}: not a file --save wrote (no per-question metrics)")
    return saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--locomo", type=Path, required=True, help="LoCoMo: a folder, the zip or locomo10.json")
    parser.add_argument("--model", default="auto", help="[embedding] model setting: auto (MiniLM) or multilingual")
    parser.add_argument("--work", type=Path, help="keep the vaults here (a second run embeds nothing)")
    parser.add_argument("--ablation", action="store_true", help="every element of the rule on and off")
    parser.add_argument("--floor", action="store_true", help="also count what the relevance floor empties")
    parser.add_argument("--half", choices=HALVES, default="all", help="conversations to run (default: all ten)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of tables")
    parser.add_argument("--save", type=Path, help="write the rule in force's metrics per question here")
    parser.add_argument("--against", type=Path, help="compare with a run --save wrote, question by question")
    args = parser.parse_args()
    saved = _saved(args.against) if args.against else None
    convs = locomo.split(locomo.load(args.locomo), args.half)
    embedder = embed.load_embedder(args.model)
    if embedder is None:
        raise SystemExit(f"no embedding model for --model {args.model}: {embed.why_no_embedder(args.model)}")
    rules = (eval_rules.ablation if args.ablation else eval_rules.standard)(embedder.model_id)
    references = eval_rules.references(rules)
    with tempfile.TemporaryDirectory() as tmp:
        work = (args.work or Path(tmp)) / embedder.model_id.replace("/", "_")
        work.mkdir(parents=True, exist_ok=True)
        measured = measure(convs, embedder, rules, work, args.floor,
                           progress=lambda line: print(line, file=sys.stderr, flush=True))
    summary = summarize(measured, references)
    in_force = fusion_for(embedder.model_id).name
    head = {"model": embedder.model_id, "rule_in_force": in_force,
            "search_rankings_differing_from_evaluation": measured.search_mismatches}
    mine = measured.rows[eval_rules.IN_FORCE]
    if args.save:
        args.save.write_text(json.dumps({"model": embedder.model_id, "rule": in_force, "questions": mine}),
                             encoding="utf-8")
    compared = against(saved, mine, measured.queries) if saved is not None else None
    if args.json:
        print(json.dumps({**head, "floor": measured.floor, "rules": summary, "against": compared}, indent=1))
        return
    print(json.dumps(head))
    print_report(summary, references)
    if measured.floor:
        print("\nfloor:", json.dumps(measured.floor))
    if compared is not None:
        print(f"\n== {embedder.model_id} ({in_force}) minus {compared['saved_model']} ({compared['saved_rule']}) ==")
        for half in HALVES:
            c = compared[half]
            print(f"   {half:7s} n={c['questions']:4d}  R@5 {c['this']['recall@5']:.3f} vs {c['saved']['recall@5']:.3f} "
                  f"{_ci(c['recall@5'])}  R@10 {_ci(c['recall@10'])}  MRR {_ci(c['mrr'])}")


if __name__ == "__main__":
    main()
