"""SessionStart picks the user's memories about the project with the auto-recall gate (real model).

Captures land in the ``user`` scope by default, so SessionStart's search
(the project's name and memories) is how a project's facts come back. It
keeps a hit on the same gate as prompt recall (memex/context/gate.py): its
fused score, or a clear calibrated cosine, so a paraphrase sharing no word
with the project's memories is not lost on the fused score alone.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memex.agents import claude_code
from memex.agents.hooks import AgentSettings, start_memories
from memex.context import gate, load_settings
from memex.text import has_cjk
from memex.search.fusion import calibration_for
from memex.vault import Vault
from tests.hook_helpers import fixture

pytestmark = [pytest.mark.model, pytest.mark.usefixtures("no_warm_server")]

OWN = "Releases of the shop go out with blue-green deploys on Fridays."
PARAPHRASE = "Never ship to production at the end of the week"
NEWER = [
    "Grandma's birthday is in May",
    "The user likes dark mode in every tool.",
    "Buy oat milk on the way home",
    "The legacy reporting app uses tabs",
]


def test_a_paraphrase_of_the_projects_memory_is_shown_on_its_cosine(model_vault: Vault, project: Path) -> None:
    model_vault.add(OWN, scope="project:shop-api")
    about = model_vault.add(PARAPHRASE, scope="user")
    for body in NEWER:  # newer: the recency places go to them, not to the paraphrase
        model_vault.add(body, scope="user")
    query = f"shop-api {OWN}"
    [hit] = [h for h in model_vault.search(query, scope=["user"]) if h.id == about.id]
    settings = load_settings(model_vault)
    # The case this test is about: below the fused-score bar, above the cosine bar.
    assert hit.score < settings.recall_score_threshold
    calibration = calibration_for(model_vault.embedder.model_id if model_vault.embedder else None)
    assert hit.semantic is not None
    bar = gate.cosine_bar(settings, model_vault.store.memory_count())
    assert calibration.calibrate(hit.semantic, has_cjk(query)) >= bar

    chosen = start_memories(model_vault, AgentSettings.of(model_vault), str(project), 6)
    assert about.id in [h.id for h in chosen]
    payload = fixture("claude-code", "SessionStart.json", cwd=str(project), transcript=str(project / "t.jsonl"))
    text = claude_code.handle(model_vault, payload).answer["hookSpecificOutput"]["additionalContext"]
    assert about.id in text


def test_an_unrelated_memory_is_not_shown_on_its_cosine(model_vault: Vault, project: Path) -> None:
    model_vault.add(OWN, scope="project:shop-api")
    unrelated = model_vault.add("Grandma's birthday is in May", scope="user")
    for body in NEWER[1:] + ["Water the plants on Sunday", "The dentist appointment moved to Tuesday"]:
        model_vault.add(body, scope="user")
    chosen = start_memories(model_vault, AgentSettings.of(model_vault), str(project), 6)
    assert unrelated.id not in [h.id for h in chosen]
