"""scripts/eval_public.py on a tiny conversation set in LoCoMo's layout (never LoCoMo itself).

The script's figures are what docs/search.md reports; here it is judged on
conversations small enough to know every answer: the vaults it builds, the
split, what a hit is, and that ``Vault.search`` ranks as the evaluation does.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.fakes import HashEmbedder
from tests.scriptkit import load_script

EVAL = load_script("eval_public")
LOCOMO = load_script("locomo")
RULES = load_script("eval_rules")


def _conversation(sample: str, a: str, b: str, turns: list[tuple[str, str]], qa: list[dict[str, Any]]) -> dict[str, Any]:
    session = [{"speaker": speaker, "dia_id": f"D1:{i}", "text": text} for i, (speaker, text) in enumerate(turns, 1)]
    return {"sample_id": f"conv-{sample}", "qa": qa,
            "conversation": {"speaker_a": a, "speaker_b": b, "session_1_date_time": "1:56 pm on 8 May, 2023",
                             "session_1": session}}


@pytest.fixture
def locomo_dir(tmp_path: Path) -> Path:
    chooses = _conversation("26", "Ana", "Ben", [
        ("Ana", "Hi Ben, how was your weekend?"),
        ("Ben", "Great, we went kayaking on the Tarn river with my cousins."),
        ("Ana", "My violin recital is next Friday, I am nervous."),
        ("Ben", "You will do great, you practised the Sibelius concerto for months."),
    ], [
        {"question": "Where did Ben go kayaking?", "answer": "Tarn river", "evidence": ["D1:2"], "category": 4},
        {"question": "Which concerto did Ana practise?", "answer": "Sibelius", "evidence": ["D1:4"], "category": 1},
        {"question": "What is not in the talk?", "adversarial_answer": "x", "evidence": ["D1:1"], "category": 5},
    ])
    reports = _conversation("30", "Cleo", "Dan", [
        ("Cleo", "Did you adopt the puppy?"),
        ("Dan", "Yes, a beagle named Pretzel."),
    ], [
        {"question": "What is the name of Dan's beagle?", "answer": "Pretzel", "evidence": ["D1:2"], "category": 2},
    ])
    folder = tmp_path / "locomo"
    folder.mkdir()
    for conv in (chooses, reports):
        (folder / f"{conv['sample_id'][5:]}.json").write_text(json.dumps(conv["conversation"] | {"qa": conv["qa"]}),
                                                               encoding="utf-8")
    return folder


def test_one_memory_per_turn_at_its_sessions_date(locomo_dir: Path) -> None:
    conv = LOCOMO.load(locomo_dir)[0]
    memories = EVAL.memories_of(conv)
    assert [m["text"] for m in memories][:2] == ["Ana: Hi Ben, how was your weekend?",
                                                "Ben: Great, we went kayaking on the Tarn river with my cousins."]
    assert memories[0]["created"] == "2023-05-08T13:56:00Z" < memories[1]["created"]
    assert len({m["session"] for m in memories}) == 1


def test_questions_keep_their_half_and_category_and_leave_adversarial_out(locomo_dir: Path) -> None:
    convs = LOCOMO.load(locomo_dir)
    questions = [q for c in convs for q in EVAL.questions_of(c)]
    assert [(q["split"], q["category"]) for q in questions] == [
        ("choose", "single-hop"), ("choose", "multi-hop"), ("report", "temporal")]
    assert questions[0]["relevant"] == ["locomo26-d1-2"]


def test_figures_per_half_and_search_ranks_as_the_evaluation(locomo_dir: Path, tmp_path: Path) -> None:
    embedder = HashEmbedder()
    convs = LOCOMO.load(locomo_dir)
    rules = RULES.standard(embedder.model_id)
    measured = EVAL.measure(convs, embedder, rules, tmp_path / "work", floor=True)
    assert measured.search_mismatches == 0
    bm25 = measured.rows[RULES.BM25]
    # Each question shares a rare word with its evidence turn alone.
    assert all(row["recall@1"] == 1.0 and row["mrr"] == 1.0 for row in bm25.values())
    summary = EVAL.summarize(measured, RULES.references(rules))
    assert summary[RULES.BM25]["choose"]["questions"] == 2
    assert summary[RULES.BM25]["report"]["questions"] == 1
    assert summary[RULES.BM25]["all"]["by_category"]["temporal"]["recall@5"] == 1.0
    gain = summary[RULES.BM25]["all"][f"vs {RULES.PLAIN}"]["recall@5"]
    assert len(gain) == 3 and gain[1] <= gain[0] <= gain[2]
    assert measured.floor["questions"] == 3 and measured.floor["emptied_with_evidence_in_top10"] == 0


def test_a_second_run_reuses_the_vaults(locomo_dir: Path, tmp_path: Path) -> None:
    convs = LOCOMO.load(locomo_dir)
    first = HashEmbedder()
    EVAL.measure(convs, first, RULES.standard(first.model_id), tmp_path / "work")
    again = HashEmbedder()
    EVAL.measure(convs, again, RULES.standard(again.model_id), tmp_path / "work")
    assert again.texts_embedded < first.texts_embedded


def test_a_wrong_folder_is_one_line_naming_it(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="no LoCoMo conversations under"):
        LOCOMO.load(tmp_path)


def test_two_runs_compare_question_by_question(locomo_dir: Path, tmp_path: Path) -> None:
    """--save / --against: the rule in force of one run minus a saved run's, on the questions both asked."""
    embedder = HashEmbedder()
    convs = LOCOMO.load(locomo_dir)
    measured = EVAL.measure(convs, embedder, RULES.standard(embedder.model_id), tmp_path / "work")
    bm25 = measured.rows[RULES.BM25]
    worse = {q: {k: 0.0 for k in row} for q, row in bm25.items()}
    worse.pop(next(iter(worse)))  # a question the saved run did not ask is left out
    out = EVAL.against({"model": "m", "rule": "r", "questions": worse}, bm25, measured.queries)
    assert out["all"]["questions"] == 2 and out["all"]["saved"]["recall@5"] == 0.0
    assert out["all"]["recall@5"][0] == 1.0 == out["all"]["this"]["recall@5"]
    (tmp_path / "bad.json").write_text("[]", encoding="utf-8")
    with pytest.raises(SystemExit, match="bad.json: not a file --save wrote"):
        EVAL._saved(tmp_path / "bad.json")


def test_a_half_that_was_not_run_prints_no_zero_figures(
    locomo_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Found running `--half report` on LoCoMo: the report printed a "choose"
    table of 0.000 for every rule, figures nobody measured."""
    embedder = HashEmbedder()
    convs = LOCOMO.split(LOCOMO.load(locomo_dir), "report")
    rules = RULES.standard(embedder.model_id)
    measured = EVAL.measure(convs, embedder, rules, tmp_path / "work", floor=False)
    references = RULES.references(rules)
    EVAL.print_report(EVAL.summarize(measured, references), references)
    out = capsys.readouterr().out
    assert "== report (1 questions) ==" in out and "== all (1 questions) ==" in out
    assert "choose" not in out, out
