"""Read the LoCoMo benchmark (snap-research/locomo) for the scripts beside it.

LoCoMo is public data nobody here wrote: ten long conversations between two
people over many sessions, with questions whose evidence is named by dialogue
turn (``D3:12`` = session 3, turn 12). memex never ships it and no test needs
it; bring it with

    git --git-dir=<mirror of github.com/snap-research/locomo> show HEAD:data/locomo10.zip > locomo10.zip
    unzip locomo10.zip -d DIR

and point a script at DIR (or at the zip, or at a ``locomo10.json``). Both
layouts that have been published are read: one JSON list of samples with a
``conversation`` object each, or one ``NN.json`` file per conversation with
the sessions at the top level.

One memory per dialogue turn, as an agent capturing the conversation would
store it: ``Speaker: text``, plus `` [shares CAPTION]`` where the turn has an
image caption.

The split is fixed by conversation so that a rule is chosen on one half and
reported on the other: conversations in sorted order alternate between
:data:`CHOOSE` and :data:`REPORT` (786 and 750 questions).
"""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHOOSE = ("26", "41", "43", "47", "49")
REPORT = ("30", "42", "44", "48", "50")

CATEGORY_NAMES = {
    1: "multi-hop",
    2: "temporal",
    3: "open-domain",
    4: "single-hop",
    5: "adversarial",
}
"""LoCoMo's question categories. Category 5 (adversarial: the answer is not in
the conversation) has no evidence to find and is left out of retrieval figures."""


@dataclass(frozen=True)
class Turn:
    conversation: str
    session: int
    session_date: str
    dia_id: str
    speaker: str
    text: str
    caption: str

    @property
    def memory_text(self) -> str:
        """The turn as one memory: ``Speaker: text [shares CAPTION]``."""
        body = f"{self.speaker}: {self.text}"
        if self.caption:
            body += f" [shares {self.caption}]"
        return body


@dataclass(frozen=True)
class Question:
    conversation: str
    question: str
    answer: str
    evidence: tuple[str, ...]
    category: int


@dataclass(frozen=True)
class Conversation:
    id: str
    speakers: tuple[str, str]
    turns: tuple[Turn, ...]
    questions: tuple[Question, ...]

    @property
    def retrieval_questions(self) -> tuple[Question, ...]:
        """Questions with evidence turns that exist, category 5 left out."""
        ids = {t.dia_id for t in self.turns}
        return tuple(
            q
            for q in self.questions
            if q.category != 5 and q.evidence and any(e in ids for e in q.evidence)
        )


def _conversation_id(raw: dict[str, Any], fallback: str) -> str:
    sample = str(raw.get("sample_id") or fallback)
    digits = re.findall(r"\d+", sample)
    return digits[-1] if digits else sample


def _evidence(raw: Any) -> tuple[str, ...]:
    out: list[str] = []
    for item in raw or ():
        # A few evidence strings name several turns at once ("D8:6; D9:17"),
        # or are spelled "D30:05" / "D:11:26"; turn ids are "D30:5".
        for m in re.finditer(r"D:?(\d+):(\d+)", str(item)):
            out.append(f"D{int(m.group(1))}:{int(m.group(2))}")
    return tuple(out)


def _parse(raw: dict[str, Any], fallback: str) -> Conversation:
    conv_id = _conversation_id(raw, fallback)
    sessions = raw.get("conversation", raw)
    turns: list[Turn] = []
    numbers = sorted(
        int(m.group(1))
        for key in sessions
        if (m := re.fullmatch(r"session_(\d+)", key)) and isinstance(sessions[key], list)
    )
    for n in numbers:
        date = str(sessions.get(f"session_{n}_date_time", ""))
        for t in sessions[f"session_{n}"]:
            caption = t.get("blip_caption") or ""
            turns.append(
                Turn(
                    conversation=conv_id,
                    session=n,
                    session_date=date,
                    dia_id=str(t["dia_id"]),
                    speaker=str(t["speaker"]),
                    text=str(t.get("text", "")),
                    caption=str(caption),
                )
            )
    questions = tuple(
        Question(
            conversation=conv_id,
            question=str(q["question"]),
            answer=str(q.get("answer", q.get("adversarial_answer", ""))),
            evidence=_evidence(q.get("evidence")),
            category=int(q.get("category", 0)),
        )
        for q in raw.get("qa", ())
    )
    speakers = (str(sessions.get("speaker_a", "")), str(sessions.get("speaker_b", "")))
    return Conversation(conv_id, speakers, tuple(turns), questions)


def data_file(path: str | Path, names: tuple[str, ...], source: str) -> Path:
    """The data file at PATH: PATH itself, or the first of ``names`` in the
    folder PATH; ``source`` names the set (and its script) in the error."""
    p = Path(path).expanduser()
    if not p.exists():
        raise SystemExit(f"{source}: {p} does not exist (see scripts/{source}.py for how to bring it)")
    if p.is_dir():
        for name in names:
            if (p / name).is_file():
                return p / name
        raise SystemExit(f"{source}: no {' or '.join(names)} under {p}")
    return p


def _raw_samples(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    if path.is_dir():
        files = sorted(p for p in path.rglob("*.json") if not p.name.startswith("."))
        for f in files:
            data = json.loads(f.read_text(encoding="utf-8"))
            if isinstance(data, list):
                for i, item in enumerate(data):
                    yield f"{f.stem}-{i}", item
            elif isinstance(data, dict) and "qa" in data:
                yield f.stem, data
        return
    if path.suffix == ".zip":
        with zipfile.ZipFile(path) as zf:
            for name in sorted(zf.namelist()):
                if not name.endswith(".json") or "/." in name or name.startswith("__MACOSX"):
                    continue
                data = json.loads(zf.read(name).decode("utf-8"))
                stem = Path(name).stem
                if isinstance(data, list):
                    for i, item in enumerate(data):
                        yield f"{stem}-{i}", item
                elif isinstance(data, dict) and "qa" in data:
                    yield stem, data
        return
    data = json.loads(path.read_text(encoding="utf-8"))
    items = data if isinstance(data, list) else [data]
    for i, item in enumerate(items):
        yield f"{path.stem}-{i}", item


def load(path: str | Path) -> list[Conversation]:
    """Every conversation under PATH (a folder, the zip or one JSON file), by id.

    Raises ``SystemExit`` with a line naming PATH when nothing is found, so a
    script given the wrong folder says so instead of reporting empty figures.
    """
    p = Path(path).expanduser()
    if not p.exists():
        raise SystemExit(f"locomo: {p} does not exist (see scripts/locomo.py for how to bring LoCoMo)")
    seen: dict[str, Conversation] = {}
    for fallback, raw in _raw_samples(p):
        conv = _parse(raw, fallback)
        seen.setdefault(conv.id, conv)
    if not seen:
        raise SystemExit(f"locomo: no LoCoMo conversations under {p}")
    return [seen[k] for k in sorted(seen, key=lambda k: (len(k), k))]


def split(conversations: list[Conversation], half: str) -> list[Conversation]:
    """``choose``, ``report`` or ``all``."""
    if half == "all":
        return conversations
    wanted = CHOOSE if half == "choose" else REPORT
    if half not in ("choose", "report"):
        raise SystemExit(f"locomo: unknown half {half!r} (choose, report, all)")
    return [c for c in conversations if c.id in wanted]


def select(path: str | Path, half: str, ids: list[str] | None = None) -> list[Conversation]:
    """The conversations of ``half`` (``--half``), only ``ids`` when given (``--conversation``)."""
    conversations = split(load(path), half)
    return [c for c in conversations if c.id in ids] if ids else conversations


if __name__ == "__main__":
    import sys

    convs = load(sys.argv[1] if len(sys.argv) > 1 else "locomo")
    for half in ("choose", "report", "all"):
        part = split(convs, half)
        print(
            f"{half:7s} conversations {len(part):2d}  turns {sum(len(c.turns) for c in part):5d}"
            f"  questions {sum(len(c.retrieval_questions) for c in part):5d}"
        )
