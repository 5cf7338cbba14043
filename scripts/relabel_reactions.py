"""Relabel the pairs a reaction is wrongly said to duplicate, by the written rule.

The labelling rule (docs/write-path.md, "Real conversations") reads a
*reaction*, a turn with no word of content and no greeting, thanks, offer
or farewell ("Agreed!", "True!", a lone ";)"), as an answer to the turn it
reacts to: it is a duplicate only of the same words. LoCoMo's older labels
counted such a turn as carried by any fuller turn of its speaker; this pass
applies the rule's reading mechanically, so that no one rereads a pair
knowing the figures:

- a turn is a reaction by memex's own test (``memex/dedup/subject.py``,
  the "reaction" reason of ``keeps_apart``): English text (``cosine_trusted``),
  no content word stated or asked (``parts``; a question word alone is
  none: "What is it?"), no phatic act (``acts``);
- "the same words" is ``subject.wording``: the body's words in order,
  case and punctuation left out (what ``keeps_apart`` compares);
- a pair labelled ``same``, ``a_covers`` or ``b_covers`` where either turn
  is a reaction and the two are not the same words becomes ``different``,
  ``"why": "reaction_was_<old label>"``, ``"by": "reaction_rule"``. No
  other label is touched.

    .venv/bin/python scripts/relabel_reactions.py --locomo DIR            # list what would change
    .venv/bin/python scripts/relabel_reactions.py --locomo DIR --write    # and rewrite the labels
    .venv/bin/python scripts/relabel_reactions.py --topical FILE          # the same check on Topical-Chat
    .venv/bin/python scripts/relabel_reactions.py --realtalk DIR          # and on REALTALK
    .venv/bin/python scripts/relabel_reactions.py --msc FILE              # and on MSC's choosing blocks

It prints turn ids and labels only (the data's licences keep their text out
of the repository); ``--text`` prints the texts too, to read, never to commit.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import locomo  # noqa: E402
import locomo_pairs  # noqa: E402

from memex.dedup import subject  # noqa: E402

COVERING = ("same", "a_covers", "b_covers")


# The turns keeps_apart answers "reaction" for (no word of content, no act).
is_reaction = subject.is_reaction


def same_words(a: str, b: str) -> bool:
    # The comparison keeps_apart makes before it calls a reaction carried.
    return subject.wording(a) == subject.wording(b)


def relabel(row: dict[str, Any], text_a: str, text_b: str) -> dict[str, Any] | None:
    """The row relabelled by the rule's reading of reactions, or None when
    its label stands."""
    if row["label"] not in COVERING or same_words(text_a, text_b):
        return None
    if not (is_reaction(text_a) or is_reaction(text_b)):
        return None
    return {**row, "label": "different", "why": f"reaction_was_{row['label']}", "by": "reaction_rule"}


def texts(convs: list[locomo.Conversation]) -> dict[tuple[str, str], str]:
    return {(c.id, t.dia_id): t.memory_text for c in convs for t in c.turns}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = ap.add_mutually_exclusive_group(required=True)
    source.add_argument("--locomo", help="LoCoMo folder, zip or JSON (scripts/locomo.py)")
    source.add_argument("--topical", help="Topical-Chat test_freq.json or a folder with it")
    source.add_argument("--realtalk", help="REALTALK's data folder or Chat_N files (scripts/realtalk.py)")
    source.add_argument("--msc", help="MSC's session_3 test.txt or a folder with it (scripts/msc.py)")
    ap.add_argument("--labels", type=Path, help="default: the source's labels in scripts/data/")
    ap.add_argument("--write", action="store_true", help="rewrite the labels file with the changes")
    ap.add_argument("--text", action="store_true", help="print the pairs' texts to read (never commit)")
    args = ap.parse_args()
    if args.topical:
        import topical_chat

        convs = topical_chat.load_all(args.topical)  # every chat: the labels name chats of every block
        path = args.labels or locomo_pairs.TOPICAL_LABELS
    elif args.realtalk:
        import realtalk

        convs = realtalk.select(args.realtalk, "all")  # both halves; the held-back chat is never labelled
        path = args.labels or locomo_pairs.REALTALK_LABELS
    elif args.msc:
        import msc

        # The choosing blocks only: no MSC reporting episode has been labelled.
        convs = [c for half in ("choose", "choose2", "choose3") for c in msc.select(args.msc, half)]
        path = args.labels or locomo_pairs.MSC_LABELS
    else:
        convs = locomo.select(args.locomo, "all")
        path = args.labels or locomo_pairs.LABELS
    by_turn = texts(convs)
    lines = path.read_text(encoding="utf-8").splitlines()
    out, changed = [], []
    for line in lines:
        if not line.strip():
            out.append(line)
            continue
        row = json.loads(line)
        ta, tb = by_turn[(row["conversation"], row["a"])], by_turn[(row["conversation"], row["b"])]
        new = relabel(row, ta, tb)
        if new is None:
            out.append(line)
            continue
        out.append(json.dumps(new))
        changed.append(new)
        print(f"{row['conversation']} {row['a']} {row['b']} {row['label']} -> different")
        if args.text:
            print(f"  A {ta}\n  B {tb}")
    print(json.dumps({"labelled_pairs": sum(1 for x in lines if x.strip()), "changed": len(changed)}),
          file=sys.stderr)
    if args.write and changed:
        path.write_text("\n".join(out) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
