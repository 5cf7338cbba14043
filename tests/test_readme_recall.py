"""README.md's Quick start, as a new user types it, then the agent asks about it.

Found from outside: ``memex search "which indentation does the user prefer"``
showed "The user prefers tabs over spaces", but the Claude Code hook and the
context engine injected nothing. The memory shares no word with the
question (cosine 0.40) and its fused score, 0.198, was under the fused-score
bar recall used alone (docs/context-engine.md, "Which memories are recalled").
Everything here runs the installed programs with the real model: the hook as
``memex install claude-code`` wires it, fed Claude Code's own payload.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.hook_helpers import MEMEX, fixture

pytestmark = pytest.mark.model

TABS = "The user prefers tabs over spaces"
SQLITE = "数据库使用 SQLite，开启 WAL 模式"
QUESTION = "which indentation does the user prefer"


@pytest.fixture
def quick_start(tmp_path: Path) -> dict[str, str]:
    """README's Quick start in a fresh home: init, export MEMEX_VAULT, the two adds, install claude-code."""
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "MEMEX_VAULT"}
    env.update(HOME=str(home), MEMEX_WARM="0")
    vault = home / "agent-vault"
    _run([MEMEX, "init", str(vault)], env)
    env["MEMEX_VAULT"] = str(vault)
    _run([MEMEX, "add", TABS, "--scope", "user", "--category", "preference"], env)
    _run([MEMEX, "add", SQLITE, "--scope", "project:memex"], env)
    _run([MEMEX, "install", "claude-code"], env)
    return env


def _run(args: list[str], env: dict[str, str], stdin: str | None = None, shell: bool = False) -> str:
    done = subprocess.run(args if not shell else args[0], input=stdin, capture_output=True, text=True, env=env,
                          timeout=180, shell=shell, check=False)
    assert done.returncode == 0 and "Traceback" not in done.stderr, (args, done.stdout, done.stderr)
    return done.stdout


def _hook_command(home: Path, event: str) -> str:
    settings: dict[str, Any] = json.loads((home / ".claude" / "settings.json").read_text(encoding="utf-8"))
    command: str = settings["hooks"][event][0]["hooks"][0]["command"]
    return command


def test_search_finds_it(quick_start: dict[str, str]) -> None:
    hits = json.loads(_run([MEMEX, "search", QUESTION, "--json"], quick_start))
    assert [h["body"] for h in hits] == [TABS]


def test_the_installed_hook_recalls_it_into_the_prompt(quick_start: dict[str, str], tmp_path: Path) -> None:
    home = Path(quick_start["HOME"])
    payload = fixture("claude-code", "UserPromptSubmit.json", transcript=str(tmp_path / "t.jsonl"),
                      cwd=str(tmp_path))
    payload["prompt"] = QUESTION
    # Claude Code runs the command through a shell, in the user's environment.
    printed = _run([_hook_command(home, "UserPromptSubmit")], quick_start, json.dumps(payload), shell=True)
    assert printed.strip(), "the hook printed nothing: no memory recalled"
    out = json.loads(printed)
    text = out["hookSpecificOutput"]["additionalContext"]
    assert "<relevant-memories>" in text and TABS in text, text
    assert "SQLite" not in text


def test_the_context_engine_recalls_it(quick_start: dict[str, str]) -> None:
    request = {"session_id": "5F0C2B9E-8A41-4C7D-9E3B-2D1F6A7B8C90",
               "messages": [{"role": "user", "content": QUESTION}], "token_budget": 200000}
    out = json.loads(_run([MEMEX, "context", "assemble", "--json"], quick_start, json.dumps(request)))
    assert out["mode"] == "recall" and len(out["injected"]) == 1, out
    content = out["messages"][-1]["content"]
    assert TABS in content and content.endswith(QUESTION)
