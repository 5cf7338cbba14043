"""Dedup and consolidation judged on real conversations: LoCoMo's turns as captured.

Every turn of a LoCoMo conversation (scripts/locomo.py) is what an agent
capturing the conversation would store: ``Vault.add("Speaker: text",
scope="user", source="import", session=<dialogue session>)``. This script

- ``candidates``: lists the pairs of turns any dedup layer or consolidation
  flags: the layers *as they were before they were judged on real
  conversations* (memex 9c2b6d1: exact body, Jaccard > 0.70, cosine >= 0.85,
  the same in a session, the turn-echo guard's Jaccard >= 0.28 in a session,
  consolidation's MiniLM pair score >= 0.74 in a session; none where a value
  guard fires), and with ``--now`` also the pairs today's code merges (the
  real pipeline and ``consolidate --all --dry-run``);
- ``eval``: runs today's code on the labelled pairs and on the whole
  capture, and scores it against the labels.

LoCoMo is CC BY-NC 4.0, memex is MIT: no LoCoMo text is kept here. The
labels (``scripts/data/locomo_labels.jsonl``) name turns by conversation
and dialogue id only; this script rebuilds the pairs and their texts from
a local copy of LoCoMo. The labelling rule is in docs/write-path.md
("Real conversations"); in short, for a pair (a, b), a said first:

- ``same``: neither says anything the other does not, about the same subject;
- ``a_covers``: b says nothing a does not (b may be dropped for a), a says more;
- ``b_covers``: the reverse;
- ``different``: each says something the other does not, or they are about
  different subjects (another speaker's statement, an answer and its
  question, first person and someone named).

Pairs of two speakers whose words (the speaker prefix left out) share under
half their content words were labelled ``different`` by that rule without
being read (``"by": "rule"``); every other pair was read. Pairs where a
reaction (no word of content) was said to be carried by other words were
relabelled ``different`` by scripts/relabel_reactions.py
(``"by": "reaction_rule"``).

    .venv/bin/python scripts/locomo_pairs.py candidates --locomo DIR --half choose [--now] [--unlabelled]
    .venv/bin/python scripts/locomo_pairs.py eval --locomo DIR --half choose [--sequential]

``--topical FILE`` instead of ``--locomo DIR`` judges the Topical-Chat set
the same way (scripts/topical_chat.py; labels in
``scripts/data/topical_labels.jsonl``, chat and turn ids only), and
``--realtalk DIR`` REALTALK's multi-session chats (scripts/realtalk.py;
labels in ``scripts/data/realtalk_labels.jsonl``; ``--half choose`` or
``report``, its chat 1 held back from both), and ``--msc FILE`` Multi-Session
Chat's three-session episodes (scripts/msc.py; labels in
``scripts/data/msc_labels.jsonl``; ``--half choose`` or ``report``; ``choose2`` and
``choose3`` its further choosing blocks; its valid split held back), and
``--memorybank FILE`` MemoryBank's users talking with an AI companion over ten
days (scripts/memorybank.py; labels in ``scripts/data/memorybank_labels.jsonl``;
``--half choose`` or ``report``).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import locomo  # noqa: E402

LABELS = ROOT / "scripts" / "data" / "locomo_labels.jsonl"
TOPICAL_LABELS = ROOT / "scripts" / "data" / "topical_labels.jsonl"
REALTALK_LABELS = ROOT / "scripts" / "data" / "realtalk_labels.jsonl"
MSC_LABELS = ROOT / "scripts" / "data" / "msc_labels.jsonl"
MEMORYBANK_LABELS = ROOT / "scripts" / "data" / "memorybank_labels.jsonl"
SCOPE = "user"
KINDS = ("same", "a_covers", "b_covers", "different")

# The layers as they were (memex 9c2b6d1), fixed here so that the labelled
# set does not move with the code it judges.
BASE_JACCARD = 0.70
BASE_COSINE = 0.85
BASE_ECHO_JACCARD = 0.28
BASE_PAIR_SCORE = (-8.498, 15.647, 0.682, 0.74)
# Two speakers' turns sharing under this share of their words (the speaker
# prefix left out) were labelled "different" without being read.
RULE_BODY_JACCARD = 0.5


def session_of(turn: locomo.Turn) -> str:
    # LoCoMo's conversations are numbered; a Topical-Chat or REALTALK chat id, an MSC episode id names itself.
    name = f"locomo{turn.conversation}" if turn.conversation.isdigit() else turn.conversation
    return f"{name}-D{turn.session}"


def key(conv: str, a: str, b: str) -> str:
    return f"{conv}|{a}|{b}"


def load_labels(path: Path = LABELS) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    if not path.exists():
        return out
    for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        if row.get("label") not in KINDS:
            raise SystemExit(f"{path}:{n}: label must be one of {KINDS}")
        out[key(row["conversation"], row["a"], row["b"])] = row
    return out


def covers(label: str, dropped_is_b: bool) -> bool:
    """Whether the turn that would be dropped (b when ``dropped_is_b``) says
    nothing the kept one does not."""
    return label == "same" or label == ("a_covers" if dropped_is_b else "b_covers")


@dataclass
class Features:
    conv: locomo.Conversation
    texts: list[str]
    jac: np.ndarray
    cos: np.ndarray
    body_jac: np.ndarray


def features(conv: locomo.Conversation, embedder: Any) -> Features:
    from memex.consolidation.pairscore import pair_matrices
    from memex.text import SPEAKER_PREFIX, normalize

    texts = [t.memory_text for t in conv.turns]
    vectors = embedder.embed([normalize(t) for t in texts])
    jac, cos = pair_matrices(texts, vectors)
    bodies = [t[m.end():] if (m := SPEAKER_PREFIX.match(t)) else t for t in texts]
    body_jac, _ = pair_matrices(bodies, None)
    return Features(conv, texts, jac, cos, body_jac)


def base_flags(f: Features, i: int, j: int) -> list[str]:
    """Which layers flagged turn j against the earlier turn i before this work."""
    from memex.dedup.values import conflicts, differs_in_number
    from memex.text import body_hash

    a, b = f.texts[i], f.texts[j]
    ta, tb = f.conv.turns[i], f.conv.turns[j]
    same_session = ta.session == tb.session
    jac, cos = float(f.jac[i, j]), float(f.cos[i, j])
    flags: list[str] = []
    if body_hash(a) == body_hash(b):
        return ["exact"]
    bias, wc, wj, thr = BASE_PAIR_SCORE
    score = 1.0 / (1.0 + np.exp(-(bias + wc * cos + wj * jac)))
    loose = jac > BASE_JACCARD or cos >= BASE_COSINE or (same_session and score >= thr)
    if loose and conflicts(a, b):
        loose = False
    if loose and jac > BASE_JACCARD:
        flags.append("jaccard")
    if loose and cos >= BASE_COSINE:
        flags.append("session_cosine" if same_session else "cosine")
    if loose and same_session and score >= thr:
        flags.append("consolidation")
    if same_session and jac >= BASE_ECHO_JACCARD and not differs_in_number(a, b):
        flags.append("turn_echo")
    return flags


def base_pairs(f: Features) -> dict[tuple[int, int], list[str]]:
    out: dict[tuple[int, int], list[str]] = {}
    n = len(f.texts)
    ii, jj = np.nonzero(np.triu((f.jac >= BASE_ECHO_JACCARD) | (f.cos >= 0.55), 1))
    for i, j in zip(ii.tolist(), jj.tolist()):
        flags = base_flags(f, i, j)
        if flags:
            out[(i, j)] = flags
    # Exact copies share every token: found above (Jaccard 1.0).
    assert all(0 <= i < j < n for i, j in out)
    return out


def rule_label(f: Features, i: int, j: int) -> dict[str, Any] | None:
    """The label the rule gives without reading, or None (to be read)."""
    ta, tb = f.conv.turns[i], f.conv.turns[j]
    if ta.speaker != tb.speaker and f.body_jac[i, j] < RULE_BODY_JACCARD:
        return {"label": "different", "why": "other_speaker", "by": "rule"}
    return None


def warm_cache(vault: Any, texts: list[str]) -> None:
    """Embed every turn once, in batches: the adds then read the cache."""
    from memex.embedding import embed
    from memex.store.sqlite.schema import write_txn
    from memex.text import normalize

    if vault.embedder is None:
        return
    vault.indexer  # the vector tables belong to the loaded model
    wanted = list(dict.fromkeys(x for t in texts for x in (t.strip(), normalize(t.strip()))))
    for start in range(0, len(wanted), 256):
        _, rows = embed.cached_vectors(vault.backend.conn, vault.embedder, wanted[start : start + 256])
        with write_txn(vault.backend.conn):
            embed.store_cache(vault.backend.conn, rows)


@dataclass
class Capture:
    """One conversation captured turn by turn into a vault of its own."""

    conv: locomo.Conversation
    vault: Any
    turn_of: dict[str, str]  # memory id -> dialogue id
    # (dialogue id, status, method, dialogue id of the memory it matched)
    decisions: list[tuple[str, str, str | None, str | None]]


def capture(conv: locomo.Conversation, embedder: Any, root: Path) -> Capture:
    from memex.vault import Vault, init_vault

    vault = Vault(init_vault(root, git=False), embedder=embedder)
    warm_cache(vault, [t.memory_text for t in conv.turns])
    turn_of: dict[str, str] = {}
    decisions = []
    for t in conv.turns:
        r = vault.add(t.memory_text, scope=SCOPE, source="import", session=session_of(t))
        if r.status == "created":
            turn_of[r.id] = t.dia_id
        decisions.append((t.dia_id, r.status, r.method, turn_of.get(r.existing_id or "")))
    return Capture(conv, vault, turn_of, decisions)


def consolidation_pairs(cap: Capture) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """(superseded, representative) of ``consolidate --all --dry-run``, and
    every pair of memories it puts in one group (dialogue ids)."""
    from memex.consolidation.consolidate import consolidate_all

    report = consolidate_all(cap.vault, dry_run=True)
    hidden, grouped = [], []
    for session in report.sessions:
        for g in session.groups:
            members = [cap.turn_of[g.representative], *(cap.turn_of[m] for m in g.superseded)]
            hidden.extend((x, members[0]) for x in members[1:])
            grouped.extend((x, y) for k, x in enumerate(members) for y in members[k + 1 :])
    return hidden, grouped


def judge_pairs(vault: Any, conv: locomo.Conversation, pairs: list[tuple[int, int]], echo: bool) -> dict[tuple[int, int], Any]:
    """The decision today's pipeline makes on turn j with only turn i stored.

    ``echo``: turn i as a hook's capture (source ``user``) and j as an
    agent's memory (source ``agent``) in the same session, so the turn-echo
    guard runs; else both as imported turns.
    """
    from memex.dedup import pipeline

    by_a: dict[int, list[int]] = defaultdict(list)
    for i, j in pairs:
        by_a[i].append(j)
    out: dict[tuple[int, int], Any] = {}
    for i, js in by_a.items():
        ta = conv.turns[i]
        added = vault.add(ta.memory_text, scope=SCOPE, source="user" if echo else "import", session=session_of(ta))
        assert added.status == "created", (ta.dia_id, added)
        try:
            for j in js:
                tb = conv.turns[j]
                body = tb.memory_text.strip()
                cand = pipeline.Candidate(body=body, scope=SCOPE, source="agent" if echo else "import",
                                          session=session_of(tb))
                cand.qvec = vault.embed_query(body)
                out[(i, j)] = pipeline.check(vault.backend.conn, vault.config, vault.embedder, cand)
        finally:
            (vault.root / added.path).unlink()
            vault.indexer.index_paths([added.path])
    return out


def _index(conv: locomo.Conversation) -> dict[str, int]:
    return {t.dia_id: k for k, t in enumerate(conv.turns)}


def ordered(conv: locomo.Conversation, x: str, y: str) -> tuple[str, str]:
    at = _index(conv)
    return (x, y) if at[x] < at[y] else (y, x)


def _rates(tp: int, fp: int, fn: int) -> dict[str, Any]:
    return {"precision": round(tp / (tp + fp), 4) if tp + fp else None,
            "recall": round(tp / (tp + fn), 4) if tp + fn else None, "tp": tp, "fp": fp, "fn": fn}


def _text(conv: locomo.Conversation, dia: str) -> str:
    return conv.turns[_index(conv)[dia]].memory_text


class Scores:
    """Dropped/kept decisions against the labels, with what went wrong."""

    def __init__(self) -> None:
        self.tp = self.fp = self.fn = self.tn = 0
        self.by_method: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        self.wrong: list[dict[str, Any]] = []
        self.missed: list[dict[str, Any]] = []
        self.unlabelled: list[dict[str, Any]] = []

    def add(self, conv: locomo.Conversation, labels: dict[str, dict[str, Any]], dropped: str, kept: str,
            is_dropped: bool, method: str | None) -> None:
        a, b = ordered(conv, dropped, kept)
        row = labels.get(key(conv.id, a, b))
        entry = {"conversation": conv.id, "a": a, "b": b, "dropped": dropped, "method": method}
        if row is None:
            self.unlabelled.append(entry)
            return
        right = covers(row["label"], dropped_is_b=dropped == b)
        if is_dropped:
            self.by_method[str(method)][0 if right else 1] += 1
            if right:
                self.tp += 1
            else:
                self.fp += 1
                self.wrong.append({**entry, "label": row["label"], "why": row.get("why")})
        elif right:
            self.fn += 1
            self.missed.append({**entry, "label": row["label"]})
        else:
            self.tn += 1

    def report(self) -> dict[str, Any]:
        return {**_rates(self.tp, self.fp, self.fn), "tn": self.tn,
                "by_method": {m: {"right": r, "wrong": w} for m, (r, w) in sorted(self.by_method.items())},
                "wrong": self.wrong, "missed": len(self.missed), "unlabelled": self.unlabelled}


DEDUP_LAYERS = frozenset({"exact", "jaccard", "cosine", "session_cosine"})


def evaluate(convs: list[locomo.Conversation], embedder: Any, labels: dict[str, dict[str, Any]],
             sequential: bool, tmp: Path) -> dict[str, Any]:
    """Today's code on the labelled pairs (each judged with only the earlier
    turn stored) and, with ``sequential``, on the whole capture and its
    consolidation. ``*_layer_pairs`` keep the pairs the layer itself
    flagged before this work: the true duplicates it can see."""
    pairwise, echo, seq, hidden, grouped = Scores(), Scores(), Scores(), Scores(), Scores()
    dedup_seen, echo_seen = Scores(), Scores()
    counts: dict[str, Any] = defaultdict(int)
    for conv in convs:
        at = _index(conv)
        mine = [(at[r["a"]], at[r["b"]]) for r in labels.values() if r["conversation"] == conv.id]
        counts["labelled_pairs"] += len(mine)
        f = features(conv, embedder)
        flags = {(i, j): set(base_flags(f, i, j)) for i, j in mine}
        from memex.vault import Vault, init_vault

        with Vault(init_vault(tmp / f"pairs-{conv.id}", git=False), embedder=embedder) as vault:
            warm_cache(vault, [t.memory_text for t in conv.turns])
            for (i, j), d in judge_pairs(vault, conv, mine, echo=False).items():
                args = (conv, labels, conv.turns[j].dia_id, conv.turns[i].dia_id, d.status != "created", d.method)
                pairwise.add(*args)
                if flags[(i, j)] & DEDUP_LAYERS:
                    dedup_seen.add(*args)
            same_session = [(i, j) for i, j in mine if conv.turns[i].session == conv.turns[j].session]
            for (i, j), d in judge_pairs(vault, conv, same_session, echo=True).items():
                args = (conv, labels, conv.turns[j].dia_id, conv.turns[i].dia_id,
                        d.status != "created" and d.method == "turn_echo", d.method)
                echo.add(*args)
                if "turn_echo" in flags[(i, j)]:
                    echo_seen.add(*args)
        if not sequential:
            continue
        cap = capture(conv, embedder, tmp / f"capture-{conv.id}")
        try:
            counts["turns"] += len(conv.turns)
            for dia, status, method, existing in cap.decisions:
                if status != "created":
                    counts["dropped_at_capture"] += 1
                    if existing is None:
                        seq.unlabelled.append({"conversation": conv.id, "b": dia, "method": method})
                    else:
                        seq.add(conv, labels, dia, existing, True, method)
            counts["memories"] += len(cap.turn_of)
            sup, grp = consolidation_pairs(cap)
            counts["superseded"] += len(sup)
            for x, rep in sup:
                hidden.add(conv, labels, x, rep, True, "consolidation")
            for x, y in grp:
                # Within a group either may be hidden: right when one covers the other.
                a, b = ordered(conv, x, y)
                row = labels.get(key(conv.id, a, b))
                lab = None if row is None else row["label"]
                grouped.add(conv, labels, b if lab != "b_covers" else a, a if lab != "b_covers" else b,
                            True, "group")
        finally:
            cap.vault.close()
    out: dict[str, Any] = {"counts": dict(counts), "dedup_pairwise": pairwise.report(),
                           "dedup_layer_pairs": dedup_seen.report(),
                           "turn_echo_pairwise": echo.report(), "turn_echo_layer_pairs": echo_seen.report()}
    if sequential:
        out["dedup_capture"] = seq.report()
        out["consolidation_superseded"] = hidden.report()
        out["consolidation_group_pairs"] = grouped.report()
    return out


def candidates(convs: list[locomo.Conversation], embedder: Any, labels: dict[str, dict[str, Any]], now: bool,
               tmp: Path) -> list[dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for conv in convs:
        f = features(conv, embedder)
        at = _index(conv)
        pairs: dict[tuple[int, int], list[str]] = {k: [f"base:{x}" for x in v] for k, v in base_pairs(f).items()}
        if now:
            cap = capture(conv, embedder, tmp / f"capture-{conv.id}")
            try:
                for dia, status, method, existing in cap.decisions:
                    if status != "created" and existing is not None:
                        a, b = ordered(conv, dia, existing)
                        pairs.setdefault((at[a], at[b]), []).append(f"now:{method}")
                sup, grp = consolidation_pairs(cap)
                for x, y in grp:
                    a, b = ordered(conv, x, y)
                    pairs.setdefault((at[a], at[b]), []).append("now:consolidation")
            finally:
                cap.vault.close()
        for (i, j), flags in sorted(pairs.items()):
            a, b = conv.turns[i].dia_id, conv.turns[j].dia_id
            row = {"conversation": conv.id, "a": a, "b": b, "flags": sorted(set(flags)),
                   "jaccard": round(float(f.jac[i, j]), 3), "cosine": round(float(f.cos[i, j]), 3),
                   "same_speaker": conv.turns[i].speaker == conv.turns[j].speaker,
                   "same_session": conv.turns[i].session == conv.turns[j].session}
            rule = rule_label(f, i, j)
            if rule is not None:
                row["rule"] = rule
            found[key(conv.id, a, b)] = row
    return list(found.values())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=("candidates", "eval"))
    source = ap.add_mutually_exclusive_group(required=True)
    source.add_argument("--locomo", help="LoCoMo folder, zip or JSON (scripts/locomo.py)")
    source.add_argument("--topical", help="Topical-Chat test_freq.json or a folder with it (scripts/topical_chat.py)")
    source.add_argument("--realtalk", help="REALTALK's data folder or Chat_N files (scripts/realtalk.py)")
    source.add_argument("--msc", help="MSC's session_3 test.txt or a folder with it (scripts/msc.py)")
    source.add_argument("--memorybank", help="MemoryBank's memory_bank_en.json or a folder with it (scripts/memorybank.py)")
    ap.add_argument("--half", default="choose", choices=("choose", "report", "all", "choose2", "choose3"),
                    help="choose2, choose3: Topical-Chat's second and third choosing blocks (scripts/topical_chat.py);"
                         " choose2, choose3: MSC's (scripts/msc.py)")
    ap.add_argument("--conversation", action="append", help="only these conversation ids")
    ap.add_argument("--labels", type=Path, help="default: the source's labels in scripts/data/")
    ap.add_argument("--now", action="store_true", help="candidates: add what today's code merges")
    ap.add_argument("--unlabelled", action="store_true", help="candidates: only pairs without a label")
    ap.add_argument("--write-rule-labels", action="store_true",
                    help="candidates: append the rule's labels for unlabelled pairs to --labels")
    ap.add_argument("--text", action="store_true", help="candidates: print the pairs' texts to read (never commit)")
    ap.add_argument("--sequential", action="store_true", help="eval: capture every turn and consolidate too")
    args = ap.parse_args()

    from memex.embedding.embed import load_embedder

    if args.topical:
        import topical_chat

        convs = topical_chat.select(args.topical, args.half, args.conversation)
    elif args.realtalk:
        import realtalk

        convs = realtalk.select(args.realtalk, args.half, args.conversation)
    elif args.msc:
        import msc

        convs = msc.select(args.msc, args.half, args.conversation)
    elif args.memorybank:
        import memorybank

        convs = memorybank.select(args.memorybank, args.half, args.conversation)
    else:
        convs = locomo.select(args.locomo, args.half, args.conversation)
    if args.labels is None:
        args.labels = (TOPICAL_LABELS if args.topical else REALTALK_LABELS if args.realtalk
                       else MSC_LABELS if args.msc else MEMORYBANK_LABELS if args.memorybank else LABELS)
    embedder = load_embedder("auto")
    if embedder is None:
        raise SystemExit("the embedding model did not load; this evaluation needs it")
    labels = load_labels(args.labels)
    with tempfile.TemporaryDirectory() as tmp:
        if args.command == "eval":
            result = evaluate(convs, embedder, labels, args.sequential, Path(tmp))
            result["half"] = args.half
            print(json.dumps(result, indent=1))
            return
        rows = candidates(convs, embedder, labels, args.now, Path(tmp))
    if args.write_rule_labels:
        new = [r for r in rows if "rule" in r and key(r["conversation"], r["a"], r["b"]) not in labels]
        with args.labels.open("a", encoding="utf-8") as out:
            for r in new:
                out.write(json.dumps({"conversation": r["conversation"], "a": r["a"], "b": r["b"], **r["rule"]}) + "\n")
        print(f"{len(new)} rule labels appended to {args.labels}", file=sys.stderr)
        labels = load_labels(args.labels)
    if args.unlabelled:
        rows = [r for r in rows if key(r["conversation"], r["a"], r["b"]) not in labels]
    by_conv = {c.id: c for c in convs}
    for r in rows:
        if args.text:
            conv = by_conv[r["conversation"]]
            print(f"{r['conversation']}|{r['a']}|{r['b']} {' '.join(r['flags'])} j={r['jaccard']} c={r['cosine']}")
            print(f"  A {_text(conv, r['a'])}")
            print(f"  B {_text(conv, r['b'])}")
        else:
            print(json.dumps(r))
    counts = defaultdict(int)
    for r in rows:
        counts["pairs"] += 1
        counts["rule"] += "rule" in r
        for fl in r["flags"]:
            counts[fl] += 1
    print(json.dumps(dict(counts)), file=sys.stderr)


if __name__ == "__main__":
    main()
