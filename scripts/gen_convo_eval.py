#!/usr/bin/env python3
"""Write tests/data/convo_eval.jsonl: long team conversations and questions about them.

    .venv/bin/python scripts/gen_convo_eval.py [--out tests/data/convo_eval.jsonl] [--seed 20261201]
    .venv/bin/python scripts/gen_convo_eval.py --seed 7 --filler fresh --out /tmp/convo_fresh.jsonl

The set imitates what an agent's memory holds after weeks of chat: one
memory per dialogue turn, in sessions with dates and several speakers, where
most turns are small talk or mention a system without saying anything about
it, and a fact is a single turn somewhere in the middle. Facts are slots
(system x attribute, person x attribute) filled from scripts/convo_vocab.py;
about a third change later in another session (the newer turn answers the
question, the older one stays as a distractor). One session in five is in
Chinese, with its own people and systems.

Question types (``type`` on each query line):

- ``direct`` / ``paraphrase``: one turn answers; a paraphrase names the
  system by an alias or asks in other words than the turn uses.
- ``changed``: the slot was stated twice; the newer turn is the answer.
- ``original``: asks for the value before a change; the older turn answers.
- ``multihop``: two turns are needed (who owns X + what X uses; a person's
  hometown + what they own); both are evidence.
- ``temporal``: "what did we decide last week about ..." with ``now`` set
  relative to the session that holds the answer.

A query is a hit at k when any evidence turn is in the top k (as in public
conversation benchmarks). Each query has ``split``: ``dev`` (choose on it)
or ``test`` (report it), fixed by the seed and stratified by language and
type. The same seed always writes the same file.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import random
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "scripts"))

import convo_vocab as V  # noqa: E402

OUT = ROOT / "tests" / "data" / "convo_eval.jsonl"
SEED = 20261201
START = dt.date(2026, 3, 2)
N_EN, N_ZH = 20, 5
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
ZH_WEEKDAYS = ["周一", "周二", "周三", "周四", "周五", "周六", "周日"]


class Gen:
    def __init__(self, seed: int, filler: Any = V) -> None:
        self.rng = random.Random(seed)
        # Where small talk and distractors come from (--filler; the facts always come from V).
        self.filler = filler
        self.sessions: list[dict[str, Any]] = []
        self.slots: list[dict[str, Any]] = []

    # -- sessions and slots --------------------------------------------------

    def make_sessions(self) -> None:
        langs = ["en"] * N_EN + ["zh"] * N_ZH
        # Chinese sessions spread through the timeline, never first.
        zh_at = sorted(self.rng.sample(range(2, N_EN + N_ZH), N_ZH))
        langs = ["zh" if i in zh_at else "en" for i in range(N_EN + N_ZH)]
        day = START
        for i, lang in enumerate(langs):
            self.sessions.append({"id": f"s{i + 1:02d}", "lang": lang, "date": day, "events": [], "people": set()})
            day += dt.timedelta(days=self.rng.choice([2, 3, 3, 4, 5]))

    def _idx(self, lang: str) -> list[int]:
        return [i for i, s in enumerate(self.sessions) if s["lang"] == lang]

    def make_slots(self) -> None:
        for lang, systems, attrs, people, pattrs, n_sys, n_people in (
            ("en", V.SYSTEMS_EN, V.ATTRS_EN, V.EN_TEAM, V.PEOPLE_ATTRS_EN, 80, 28),
            ("zh", V.SYSTEMS_ZH, V.ATTRS_ZH, V.ZH_TEAM, V.PEOPLE_ATTRS_ZH, 26, 12),
        ):
            pairs = [("sys", s, a) for s in systems for a in attrs]
            chosen = self.rng.sample(pairs, n_sys)
            ppairs = [("person", p, a) for p in people for a in pattrs]
            chosen += self.rng.sample(ppairs, min(n_people, len(ppairs)))
            order = self._idx(lang)
            for kind, ent, attr in chosen:
                spec = (attrs if kind == "sys" else pattrs)[attr]
                values = self.rng.sample(spec["values"], 2)
                changes = bool(spec["change"]) and self.rng.random() < 0.33
                first = self.rng.randrange(0, len(order) - (2 if changes else 0))
                sessions = [order[first]]
                if changes:
                    sessions.append(order[self.rng.randrange(first + 1, len(order))])
                slot = {
                    "lang": lang, "kind": kind, "ent": ent, "attr": attr, "spec": spec,
                    "values": values[: len(sessions)], "sessions": sessions, "turns": [],
                }
                if kind == "person":
                    for s in sessions:
                        self.sessions[s]["people"].add(ent)
                for n, s in enumerate(sessions):
                    self.sessions[s]["events"].append((slot, n))
                self.slots.append(slot)

    # -- turns ---------------------------------------------------------------

    def _statement(self, slot: dict[str, Any], n: int) -> str:
        spec = slot["spec"]
        v = slot["values"][n]
        if n == 0:
            tpl = self.rng.choice(spec["state"])
            old = ""
        else:
            tpl = self.rng.choice(spec["change"])
            old = slot["values"][n - 1]
        name = slot["ent"]["name"] if slot["kind"] == "sys" else slot["ent"]
        said = None
        if slot["kind"] == "sys" and self.rng.random() < 0.5:
            # Half the statements also say what the system is; only those
            # can fairly be asked about by that description.
            said = self.rng.choice(slot["ent"]["aliases"])
            name = f"{name} ({said})" if slot["lang"] == "en" else f"{name}（{said}）"
        slot.setdefault("said", {})[n] = said
        text = tpl.format(S=name, v=v, old=old)
        return text[0].upper() + text[1:] if slot["lang"] == "en" and not text[0].isupper() else text

    def _filler(self, lang: str, speakers: list[str]) -> str:
        systems = V.SYSTEMS_EN if lang == "en" else V.SYSTEMS_ZH
        attrs = V.ATTRS_EN if lang == "en" else V.ATTRS_ZH
        if self.rng.random() < 0.15:
            s, s2 = self.rng.sample(systems, 2)
            # Not "owner": its values are people, and "a blog post about Lena" is no system talk.
            a = attrs[self.rng.choice([k for k in attrs if k != "owner"])]
            tpl = self.rng.choice(self.filler.DISTRACT_EN if lang == "en" else self.filler.DISTRACT_ZH)
            return tpl.format(S=s["name"], S2=s2["name"], A=self.rng.choice(s["aliases"]),
                              w=self.rng.choice(a["values"]), word=a["word"])
        return self.rng.choice(self.filler.SMALL_TALK_EN if lang == "en" else self.filler.SMALL_TALK_ZH)

    def make_turns(self) -> list[dict[str, Any]]:
        turns: list[dict[str, Any]] = []
        for sess in self.sessions:
            lang = sess["lang"]
            user, agent, team = (V.EN_USER, V.EN_AGENT, V.EN_TEAM) if lang == "en" else (V.ZH_USER, V.ZH_AGENT, V.ZH_TEAM)
            free = [p for p in team if p not in sess["people"]]
            extra = self.rng.sample(free, min(len(free), self.rng.choice([1, 2])))
            speakers = [user, agent, *sorted(sess["people"]), *extra]
            talkers = [p for p in speakers if p != agent]
            total = self.rng.randrange(56, 74)
            slots_at = self.rng.sample(range(2, total), len(sess["events"]))
            placed = dict(zip(slots_at, sess["events"]))
            lines: list[tuple[str, str, Any]] = []
            for i in range(total):
                if i in placed:
                    slot, n = placed[i]
                    if slot["kind"] == "person":
                        who = slot["ent"]
                    else:
                        # Nobody announces their own new duty in the third person.
                        pool = [p for p in talkers if p not in slot["values"]] or talkers
                        who = self.rng.choice(pool + ([agent] if self.rng.random() < 0.2 else []))
                    if slot["kind"] == "sys" and self.rng.random() < 0.2:
                        # Asked first, answered by someone else: the question turn is not evidence.
                        asker = self.rng.choice([p for p in speakers if p != who])
                        q = slot["spec"]["ask"][0].format(S=slot["ent"]["name"], A="")
                        lines.append((asker, q, None))
                    lines.append((who, self._statement(slot, n), (slot, n)))
                else:
                    lines.append((self.rng.choice(speakers), self._filler(lang, speakers), None))
            start = dt.datetime.combine(sess["date"], dt.time(9, self.rng.randrange(0, 50)))
            for j, (who, text, ev) in enumerate(lines):
                tid = f"t{len(turns) + 1:04d}"
                created = (start + dt.timedelta(minutes=j)).isoformat() + "Z"
                sep = ": " if lang == "en" else "："
                turns.append({"kind": "memory", "id": tid, "session": sess["id"], "created": created,
                              "speaker": who, "lang": lang, "scope": "user", "text": f"{who}{sep}{text}"})
                if ev is not None:
                    slot, n = ev
                    while len(slot["turns"]) <= n:
                        slot["turns"].append(None)
                    slot["turns"][n] = tid
        return turns

    # -- questions -----------------------------------------------------------

    def _q(self, lang: str, qtype: str, text: str, relevant: list[str], now: dt.date | None = None) -> dict[str, Any]:
        out = {"kind": "query", "lang": lang, "type": qtype, "query": text, "relevant": relevant}
        if now is not None:
            out["now"] = now.isoformat()
        return out

    def _name_for(self, slot: dict[str, Any], n: int) -> tuple[str, bool]:
        """The system's name, or the description the evidence turn gave it (70% of those)."""
        said = slot.get("said", {}).get(n)
        if said and self.rng.random() < 0.7:
            return said, True
        return slot["ent"]["name"], False

    def _ask(self, slot: dict[str, Any], key: str = "ask", n: int = -1) -> tuple[str, bool]:
        i = self.rng.randrange(len(slot["spec"][key]))
        tpl = slot["spec"][key][i]
        if slot["kind"] == "sys":
            alias, described = self._name_for(slot, n % len(slot["turns"]))
            text = tpl.format(S=slot["ent"]["name"], A=alias)
            return text[0].upper() + text[1:] if slot["lang"] == "en" else text, described or i > 0
        return tpl.format(P=slot["ent"]), i > 0

    def make_questions(self) -> list[dict[str, Any]]:
        qs: list[dict[str, Any]] = []
        for slot in self.slots:
            text, para = self._ask(slot)
            if len(slot["turns"]) > 1:
                qs.append(self._q(slot["lang"], "changed", text, [slot["turns"][-1]]))
                if slot["kind"] == "sys" and self.rng.random() < 0.35:
                    qs.append(self._q(slot["lang"], "original", self._ask(slot, "ask_old", 0)[0], [slot["turns"][0]]))
            else:
                qs.append(self._q(slot["lang"], "paraphrase" if para else "direct", text, [slot["turns"][0]]))
        qs += self._multihop("en") + self._multihop("zh")
        qs += self._temporal()
        return qs

    def _current(self, lang: str, kind: str, attr: str) -> dict[Any, dict[str, Any]]:
        return {
            (s["ent"]["name"] if kind == "sys" else s["ent"]): s
            for s in self.slots if s["lang"] == lang and s["kind"] == kind and s["attr"] == attr
        }

    def _multihop(self, lang: str) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        owners = self._current(lang, "sys", "owner")
        by_owner: dict[str, list[str]] = {}
        for name, slot in owners.items():
            by_owner.setdefault(slot["values"][-1], []).append(name)
        attrs = V.ATTRS_EN if lang == "en" else V.ATTRS_ZH
        # Who owns X + what X uses, where the owner owns exactly one system.
        for person, names in sorted(by_owner.items()):
            if len(names) != 1:
                continue
            sysname = names[0]
            for attr, spec in attrs.items():
                other = self._current(lang, "sys", attr).get(sysname)
                if other is None or not spec["hop"]:
                    continue
                if lang == "en":
                    via = self.rng.choice([f"the system {person} owns", f"whatever {person} maintains",
                                           f"the service {person} is responsible for"])
                    text = spec["hop"].format(X=via)
                    text = text[0].upper() + text[1:] + "?"
                else:
                    via = self.rng.choice([f"{person}负责的那个系统", f"{person}管的服务"])
                    text = f"{via}{spec['hop']}？"
                out.append(self._q(lang, "multihop", text, [owners[sysname]["turns"][-1], other["turns"][-1]]))
        # A person known by a fact about them, then what they own.
        towns = self._current(lang, "person", "hometown")
        for person, tslot in sorted(towns.items()):
            names = by_owner.get(person, [])
            if len(names) != 1:
                continue
            town = tslot["values"][-1]
            text = (f"Which system does the teammate from {town} look after?" if lang == "en"
                    else f"老家在{town}的那位同事负责哪个系统？")
            out.append(self._q(lang, "multihop", text, [tslot["turns"][-1], owners[names[0]]["turns"][-1]]))
        return out

    def _temporal(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for slot in self.slots:
            if slot["kind"] != "sys" or self.rng.random() > 0.3:
                continue
            n = self.rng.randrange(len(slot["turns"]))
            day = self.sessions[slot["sessions"][n]]["date"]
            alias = self._name_for(slot, n)[0]
            word = slot["spec"]["word"]
            gap = self.rng.choice([1, 7, 8, 14, 3])
            now = day + dt.timedelta(days=gap)
            # Calendar weeks (Monday first), as a reader of "last week" counts them.
            weeks = ((now - dt.timedelta(days=now.weekday())) - (day - dt.timedelta(days=day.weekday()))).days // 7
            span = "day" if gap == 1 else {1: "week", 2: "two"}.get(weeks, "weekday") if gap >= 7 else "weekday"
            if slot["lang"] == "en":
                rel = {"day": "yesterday", "week": "last week", "two": "two weeks ago"}.get(
                    span, f"on {WEEKDAYS[day.weekday()]}")
                tpl = self.rng.choice([
                    "What did we decide {rel} about the {w} of {A}?",
                    "Remind me what was agreed {rel} regarding the {w} for {A}.",
                    "{rel}, what did we land on for {A}, {w}-wise?",
                ])
                text = tpl.format(rel=rel, A=alias, w=word)
                text = text[0].upper() + text[1:]
            else:
                rel = {"day": "昨天", "week": "上周", "two": "两周前"}.get(span, ZH_WEEKDAYS[day.weekday()])
                tpl = self.rng.choice(["{rel}我们对{A}的{w}是怎么定的？", "{rel}开会说的{A}{w}最后定了什么？"])
                text = tpl.format(rel=rel, A=alias, w=word)
            out.append(self._q(slot["lang"], "temporal", text, [slot["turns"][n]], now))
        return out


def split(queries: list[dict[str, Any]], rng: random.Random) -> None:
    """Half dev, half test within every (language, type) group; ids in file order."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for q in queries:
        groups.setdefault((q["lang"], q["type"]), []).append(q)
    for key in sorted(groups):
        members = groups[key]
        rng.shuffle(members)
        for i, q in enumerate(members):
            q["split"] = "dev" if i % 2 == 0 else "test"


def filler_vocab(name: str) -> Any:
    """The small talk and distractor lists: ``original`` (convo_vocab) or ``fresh`` (convo_vocab_fresh)."""
    if name == "original":
        return V
    if name == "fresh":
        import convo_vocab_fresh

        return convo_vocab_fresh
    raise SystemExit(f"--filler: unknown list {name!r} (original, fresh)")


def generate(seed: int = SEED, filler: str = "original") -> list[dict[str, Any]]:
    gen = Gen(seed, filler_vocab(filler))
    gen.make_sessions()
    gen.make_slots()
    turns = gen.make_turns()
    queries = gen.make_questions()
    gen.rng.shuffle(queries)
    split(queries, gen.rng)
    for i, q in enumerate(queries, 1):
        q["id"] = f"q{i:03d}"
    return turns + [{"kind": "query", "id": q.pop("id"), **q} for q in queries]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--filler", default="original",
                        help="small talk and distractors: original (convo_vocab) or fresh (convo_vocab_fresh), "
                             "to check a ranking rule does not depend on one list's wording")
    args = parser.parse_args()
    rows = generate(args.seed, args.filler)
    args.out.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    turns = [r for r in rows if r["kind"] == "memory"]
    queries = [r for r in rows if r["kind"] == "query"]
    counts: dict[str, int] = {}
    for q in queries:
        counts[f"{q['lang']}/{q['type']}"] = counts.get(f"{q['lang']}/{q['type']}", 0) + 1
    print(json.dumps({
        "out": str(args.out), "turns": len(turns), "sessions": len({t["session"] for t in turns}),
        "speakers": len({t["speaker"] for t in turns}), "queries": len(queries),
        "zh_share": round(sum(q["lang"] == "zh" for q in queries) / len(queries), 3),
        "dev": sum(q["split"] == "dev" for q in queries), "by_type": dict(sorted(counts.items())),
    }, ensure_ascii=False, indent=1))


if __name__ == "__main__":
    main()
