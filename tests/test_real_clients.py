"""memex in the real Claude Code and Codex, end to end, offline.

Each client is the pinned npm release (scripts/clients_env.sh), run
non-interactively with a throwaway HOME against the fake model server
(tests/fake_model_server.py), with memex installed as docs/agents.md says
(`memex install claude-code` / `codex`, `memex install mcp [--agent codex]`).
What the model was sent is the evidence:

- the vault's memory is in the model's input on the first turn, once (the
  prompt's recall does not repeat what SessionStart showed);
- memex's MCP search tool is offered on the first turn, the model's call to
  it runs, and its result comes back to the model;
- what the user asked to remember is a memory at once ("integration tests
  need docker", not the whole prompt), and a decision the user said is a
  memory after the session (Claude Code's SessionEnd; for Codex, which has
  none, when its next session starts);
- no hook failed, in the client's own words.

Found with these clients: a memory injected twice in one request, Codex's
first turn without memex's tools, a prompt stored whole as one memory.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

from tests import clientkit
from tests.clientkit import Unavailable, World
from tests.fake_model_server import FakeModelServer, Recorded, Rule

pytestmark = pytest.mark.model  # the hooks embed with the vault's real model

MEMORY = "The shop project deploys with blue-green releases on Fridays"
PROMPT = ("How do we deploy the shop? We decided to use pnpm for packages. "
          "Also, remember that integration tests need docker.")
REQUESTED = "integration tests need docker"
DECISION = "We decided to use pnpm for packages."
SEARCH = "memory_search"


@pytest.fixture
def world(tmp_path: Path) -> World:
    world = clientkit.make_world(tmp_path)
    world.memex("add", MEMORY, "--scope", "project:shop", "--category", "decision")
    return world


def _bodies_with_tools(requests: list[Recorded]) -> list[Recorded]:
    """The agent's own model calls (side calls for titles and the like offer no tools)."""
    return [r for r in requests if r.body.get("tools")]


def _tool_results(request: Recorded) -> list[str]:
    """The text of every tool result a request carries back to the model (both APIs)."""
    out = []
    items = request.body.get("messages") or request.body.get("input") or []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "function_call_output":
            out.append(json.dumps(item.get("output"), ensure_ascii=False))
        content = item.get("content")
        for block in content if isinstance(content, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                out.append(json.dumps(block.get("content"), ensure_ascii=False))
    return out


def _bodies(world: World) -> list[str]:
    return [str(m["body"]).strip() for m in world.memories()]


def _first_turn_checks(first: Recorded, requests: list[Recorded]) -> None:
    offered = first.tool_names()
    assert any(name.endswith(SEARCH) and "memex" in name for name in offered), offered
    # In the model's input on the first turn, and once: SessionStart showed it,
    # the prompt's recall did not show it again.
    assert first.text.count(MEMORY) == 1, first.text.count(MEMORY)
    # The model called memex's search; its result came back to the model.
    assert any(MEMORY in result for r in requests for result in _tool_results(r)), "no tool result with the memory"


def test_claude_code(world: World) -> None:
    try:
        command = clientkit.claude_command()
        version = clientkit.check_runs(command, world.env())
    except Unavailable as exc:
        pytest.skip(str(exc))
    world.memex("install", "claude-code")
    world.memex("install", "mcp")
    debug = world.home / "claude-debug.log"
    with FakeModelServer([Rule(when="deploy", tool=SEARCH, arguments={"query": "how do we deploy"})]) as model:
        done = subprocess.run(
            [*command, "-p", PROMPT, "--debug-file", str(debug), "--allowedTools", f"mcp__memex__{SEARCH}"],
            cwd=world.project, env=clientkit.claude_env(world, model.url), capture_output=True, text=True,
            timeout=600,
        )
        requests = list(model.requests)
    assert done.returncode == 0, f"Claude Code {version}: {done.stderr[-2000:]}"
    turns = _bodies_with_tools([r for r in requests if r.path == "/v1/messages"])
    assert turns, [r.path for r in requests]
    _first_turn_checks(turns[0], turns)
    # What the user asked to remember is stored at once, as asked; the decision
    # when the session ends (SessionEnd, its work done after Claude Code exits).
    assert REQUESTED in _bodies(world)
    clientkit.wait_until(lambda: DECISION in _bodies(world), 180, "the session's decision to become a memory")
    assert not any("remember that" in b.lower() for b in _bodies(world))  # never the whole prompt
    # No hook failed: each memex hook finished with status 0, none said an error.
    log = debug.read_text(encoding="utf-8", errors="replace")
    ran = re.findall(r"(\w+)(?::\w+)? \[[^\]]*memex[^\]]*hook claude-code\] (?:finished|completed) with status (\d+)", log)
    assert {event for event, _ in ran} >= {"SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"}, ran
    assert all(status == "0" for _, status in ran), ran
    for said in (log, done.stdout, done.stderr):
        assert "memex hook claude-code:" not in said and "memex skipped" not in said


def _codex(command: list[str], world: World, prompt: str) -> subprocess.CompletedProcess[str]:
    # The hooks run untrusted only with this flag (docs/agents.md, "Codex must trust the hooks").
    return subprocess.run(
        [*command, "exec", "--dangerously-bypass-hook-trust", "--skip-git-repo-check", prompt],
        cwd=world.project, env=clientkit.codex_env(world), capture_output=True, text=True, timeout=600,
    )


def _codex_hooks_ok(done: subprocess.CompletedProcess[str], events: set[str]) -> None:
    """Codex prints `hook: EVENT` when a hook starts and `hook: EVENT Completed`
    when it succeeded; anything else after the name is a failure."""
    said = done.stdout + done.stderr
    lines = re.findall(r"^hook: (\w+)(.*)$", said, re.M)
    assert {event for event, rest in lines if rest.strip() == "Completed"} >= events, said[-3000:]
    assert all(rest.strip() in ("", "Completed") for _, rest in lines), lines
    assert "memex hook codex:" not in said and "memex skipped" not in said


def test_codex(world: World) -> None:
    try:
        command = clientkit.codex_command()
        version = clientkit.check_runs(command, world.env())
    except Unavailable as exc:
        pytest.skip(str(exc))
    with FakeModelServer([Rule(when="deploy", tool=SEARCH, arguments={"query": "how do we deploy"})]) as model:
        clientkit.codex_config(world, model.url)
        world.memex("install", "codex")
        world.memex("install", "mcp", "--agent", "codex")
        done = _codex(command, world, PROMPT)
        assert done.returncode == 0, f"Codex {version}: {done.stderr[-3000:]}"
        turns = _bodies_with_tools(model.of("responses"))
        assert turns
        _first_turn_checks(turns[0], turns)
        _codex_hooks_ok(done, {"SessionStart", "UserPromptSubmit", "Stop"})
        assert REQUESTED in _bodies(world)
        assert DECISION not in _bodies(world)  # Codex sends no session end ...
        again = _codex(command, world, "Thanks, that is all.")
        assert again.returncode == 0, again.stderr[-3000:]
        _codex_hooks_ok(again, {"SessionStart", "UserPromptSubmit", "Stop"})
    # ... so its next session's start commits the one it left.
    clientkit.wait_until(lambda: DECISION in _bodies(world), 180, "the first session's decision to become a memory")
    assert not any("remember that" in b.lower() for b in _bodies(world))


def test_the_skip_reason_names_the_client(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Without the npm packages the tests skip saying which client is missing and how to get it."""
    monkeypatch.setattr(clientkit, "CLIENTS", tmp_path / "none")
    for get, name in ((clientkit.claude_command, "@anthropic-ai/claude-code"), (clientkit.codex_command, "@openai/codex")):
        with pytest.raises(Unavailable, match=re.escape(name) + ".*clients_env.sh"):
            get()

