"""A hook that finds no warm server up answers lexically (SessionStart; a
prompt whose vector does not come), and the server it starts answers the
session's next events (docs/agents.md, "How a hook stays out of the agent's
way"). A prompt's hybrid answer before the server is up:
tests/test_hooks_first_turn.py.

Measured before: a session's first prompt, when it came before the server
was up, imported numpy and loaded the embedding model, about 0.7 s of CPU
(docs/benchmarks.md, "Hooks"). Which modules a hook loads is behaviour,
pinned here; how long it takes is measured by scripts/bench_hooks.py.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memex.agents import claude_code, codex, hook_run, query_child, session_marks, warm
from memex.vault import Vault
from tests.hook_helpers import additional_context, fixture, hook_with_modules, project_event, set_config
from tests.watchkit import wait_for

pytestmark = pytest.mark.model

# What loading the embedding model (or the command line) would import.
RUNTIME = {"numpy", "onnxruntime", "fastembed", "tokenizers", "memex.cli", "memex.agents.warm"}
SESSION = "5f0c2b9e-8a41-4c7d-9e3b-2d1f6a7b8c90"  # the fixtures' id, lower-cased
PORT = "The staging database is postgres 16 on port 5433"


@pytest.fixture
def ids(vault_root: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """A vault with the bundled model and two memories; the warm server on
    (it stops 2 s after its last use). Waits for the server a test's hooks
    started to exit, so that none outlives the test."""
    monkeypatch.delenv("MEMEX_WARM", raising=False)
    set_config(vault_root, "agents", "warm_seconds = 2")
    with Vault(vault_root) as vault:
        found = {
            "port": vault.add(PORT, scope="project:shop-api").id,
            "tabs": vault.add("The user prefers tabs over spaces", scope="user").id,
        }
    yield found
    path = warm.socket_path(vault_root)
    assert path is not None
    wait_for(lambda: warm.server_status(vault_root) is None and not path.exists(), 90, "the warm server to exit")


_event = project_event
_context = additional_context


def test_a_prompt_whose_vector_does_not_come_is_answered_lexically_and_the_log_says_why(
    vault_root: Path, ids: dict[str, str], project: Path, tmp_path: Path
) -> None:
    """The prompt's vector comes from a child process (memex/agents/query_child.py,
    tests/test_hooks_first_turn.py); one that cannot load the model leaves
    the lexical answer, as before, while the server is on its way."""
    blocked = tmp_path / "a-file"
    blocked.write_text("the model's cache folder cannot be made under a file")
    prompt = _event("UserPromptSubmit", project, prompt="which port does the staging database use?")
    done, modules = hook_with_modules(vault_root, prompt, env={"MEMEX_CACHE_DIR": str(blocked / "cache"),
                                                               query_child.ENV: "1"})
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert ids["port"] in _context(done.stdout)
    assert not modules & RUNTIME - {"numpy"}, modules & RUNTIME
    # The same answer as the adapter's own over the index without a model:
    # the same scopes, gate and block.
    with Vault(vault_root, embedder=None) as lexical:
        alone = claude_code.handle(lexical, {**prompt, "session_id": "another"})
        assert alone.answer == json.loads(done.stdout)
        assert ids["port"] in session_marks.shown(lexical, "claude-code", SESSION)
    log = (vault_root / ".memex" / "cache" / "hooks.log").read_text(encoding="utf-8")
    assert "UserPromptSubmit: no vector of the prompt" in log and "answered lexically" in log


def test_session_start_before_the_server_is_up_answers_lexically_and_starts_it(
    vault_root: Path, ids: dict[str, str], tmp_path: Path
) -> None:
    other = tmp_path / "web"  # a project without memories of its own: SessionStart searches
    (other / ".git").mkdir(parents=True)
    dead = warm.socket_path(vault_root)
    assert dead is not None
    dead.parent.mkdir(mode=0o700, exist_ok=True)
    dead.write_text("left by a dead server")
    done, modules = hook_with_modules(vault_root, _event("SessionStart", other))
    assert done.returncode == 0 and done.stderr == "", done.stderr
    text = _context(done.stdout)
    assert SESSION in text and ids["tabs"] in text and ids["port"] not in text  # the user's; not another project's
    assert not modules & RUNTIME, modules & RUNTIME
    wait_for(lambda: warm.server_status(vault_root), 90, "the warm server SessionStart started")


@pytest.mark.parametrize("off", ["env", "config"])
def test_with_the_server_turned_off_a_prompt_still_gets_the_hybrid_answer(
    vault_root: Path, ids: dict[str, str], project: Path, off: str
) -> None:
    """No server will come: a lexical answer would be every answer. A
    paraphrase sharing no word with the memory is recalled by meaning; the
    model runs in the hook's child (memex/agents/query_child.py), as for a
    prompt that finds no server up."""
    if off == "config":
        config = vault_root / ".memex" / "config.toml"
        config.write_text(config.read_text(encoding="utf-8").replace("warm_seconds = 2", "warm_seconds = 0"))
    env = {query_child.ENV: "1", **({"MEMEX_WARM": "0"} if off == "env" else {})}
    prompt = _event("UserPromptSubmit", project, prompt="what's my indentation preference?")
    done, modules = hook_with_modules(vault_root, prompt, env=env)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert "numpy" in modules and "onnxruntime" not in modules
    with Vault(vault_root) as vault:
        hybrid = claude_code.handle(vault, {**prompt, "session_id": "another"})
    assert hybrid.answer == (json.loads(done.stdout) if done.stdout else {})


def test_a_prompt_asking_to_remember_stores_the_memory_with_its_vector(
    vault_root: Path, ids: dict[str, str], project: Path
) -> None:
    prompt = _event("UserPromptSubmit", project, prompt="Remember that the deploy window is Friday at 15:00.")
    done, modules = hook_with_modules(vault_root, prompt)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert "onnxruntime" in modules
    with Vault(vault_root) as vault:
        hit = vault.search("deploy window")[0]
    assert hit.body == "the deploy window is Friday at 15:00" and hit.semantic is not None


def test_what_a_lexical_session_start_leaves_for_later_is_done_with_the_model(
    vault_root: Path, ids: dict[str, str], project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A new Codex session commits the session its agent left (Codex sends
    no session end): the decision becomes a memory with its vector."""
    monkeypatch.setenv("MEMEX_HOOK_SYNC", "1")
    # In this process a server started would outlive the test's Popen (its other tests start real ones).
    started: list[Path] = []
    monkeypatch.setattr(hook_run, "_start_warm_server", lambda vault: started.append(vault.root))
    decision = "We decided to use pnpm for packages."
    first = "019d036d-0000-7000-8000-000000000001"
    rollout = tmp_path / "first.jsonl"
    lines = [
        {"timestamp": "2026-12-01T10:00:00.000Z", "type": "session_meta", "payload": {"id": first, "cwd": str(project)}},
        {"timestamp": "2026-12-01T10:00:01.000Z", "type": "response_item",
         "payload": {"type": "message", "role": "user", "content": [{"type": "input_text", "text": decision}]}},
    ]
    rollout.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")

    def event(name: str, session: str, **changes: Any) -> dict[str, Any]:
        data = fixture("codex", f"{name}.json", cwd=str(project), transcript=str(rollout))
        data.update(session_id=session, **changes)
        return data

    with Vault(vault_root) as vault:
        codex.handle(vault, event("Stop", first, last_assistant_message="Noted.")).deferred()  # type: ignore[misc]
        assert session_marks.left_sessions(vault, "codex") == [first]
    second = event("SessionStart", "019d036d-0000-7000-8000-000000000002")
    assert hook_run.answers_lexically(str(vault_root), second)
    assert hook_run.run_here("codex", str(vault_root), second, no_server=True) == 0
    assert "memex session id" in capsys.readouterr().out and started == [vault_root]
    with Vault(vault_root) as vault:
        assert session_marks.left_sessions(vault, "codex") == []
        hit = vault.search("pnpm packages")[0]
    assert hit.body == decision and hit.semantic is not None
