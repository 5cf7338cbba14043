"""Codex hooks and notify, the OpenClaw gateway, and one turn seen by both a gateway and its backend."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memex import context
from memex.agents import claude_code, codex, hook_io, hooks, openclaw
from memex.vault import Vault
from tests.hook_helpers import copy_transcript, fixture, lexical_only, run_hook, set_config

CODEX_SESSION = "019d036d-c7fa-72d2-b6fd-78878bfe34e4"


def finish(result: hook_io.HookResult) -> dict[str, Any]:
    if result.deferred is not None:
        result.deferred()
    return result.answer



pytestmark = pytest.mark.usefixtures("no_warm_server")

@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "infra"
    (root / ".git").mkdir(parents=True)
    return root


def codex_event(name: str, repo: Path, transcript: Path) -> dict[str, Any]:
    return fixture("codex", f"{name}.json", cwd=str(repo), transcript=str(transcript))


def test_codex_hooks_capture_recall_and_archive(vault: Vault, repo: Path, tmp_path: Path) -> None:
    rollout = copy_transcript("codex", "rollout.jsonl", tmp_path / "rollout.jsonl", str(repo))
    start = finish(codex.handle(vault, codex_event("SessionStart", repo, rollout)))
    assert CODEX_SESSION in start["hookSpecificOutput"]["additionalContext"]
    prompt = codex_event("UserPromptSubmit", repo, rollout)
    out = finish(codex.handle(vault, prompt))
    [stored] = vault.list(source="keyword")
    assert stored.body == "integration tests need the docker daemon running" and stored.session == CODEX_SESSION
    assert stored.id in out["hookSpecificOutput"]["additionalContext"]
    stop = codex.handle(vault, codex_event("Stop", repo, rollout))
    assert stop.answer == {}
    assert stop.deferred is not None and stop.deferred()["archived"] == 2  # harness context skipped
    hits = context.archive_search(vault, CODEX_SESSION, "docker daemon")
    messages = [m for h in hits for m in context.archive_expand(vault, h["archive_id"])]
    assert messages and not any("environment_context" in json.dumps(m) for m in messages)


def test_codex_stop_without_transcript_archives_the_last_reply(vault: Vault, repo: Path) -> None:
    payload = fixture("codex", "Stop.json", cwd=str(repo), transcript="")
    payload["transcript_path"] = None
    result = codex.handle(vault, payload)
    assert result.deferred is not None and result.deferred()["archived"] == 1


def test_codex_notify_payload_as_argument(vault_root: Path, repo: Path) -> None:
    lexical_only(vault_root)
    payload = json.dumps(fixture("codex", "notify.json", cwd=str(repo)))
    proc = run_hook("codex", "", vault_root, payload)
    assert proc.returncode == 0 and proc.stderr == "" and proc.stdout == ""
    with Vault(vault_root) as vault:
        [stored] = vault.list(source="keyword")
        assert stored.session == CODEX_SESSION and "docker daemon" in stored.body
        assert context.archive_search(vault, CODEX_SESSION, "docker")


OPENCLAW_SESSION = context.session_id(session_key="agent:main:telegram:dm:4242")


def test_openclaw_received_and_sent(vault: Vault) -> None:
    received = fixture("openclaw", "message_received.json")
    out = finish(openclaw.handle(vault, received))
    assert out["session"] == OPENCLAW_SESSION  # the conversation's, not the channel's (docs/openclaw.md)
    assert out["captured"]["status"] == "created"
    [stored] = vault.list(source="openclaw")
    # The request's fact, not the whole message (docs/context-engine.md, "Keyword capture").
    assert stored.session == OPENCLAW_SESSION and stored.body == "this project deploys with blue-green releases on Fridays"
    sent = finish(openclaw.handle(vault, fixture("openclaw", "message_sent.json")))
    assert sent == {"session": OPENCLAW_SESSION, "archived": True}
    assert context.archive_search(vault, OPENCLAW_SESSION, "kubectl")
    # Recall for a later question on the channel brings the memory back.
    later = dict(received, context={**received["context"], "content": "when do we do blue-green deploys?"})
    again = finish(openclaw.handle(vault, later))
    assert again["captured"] is None and stored.id in again["injected"] and stored.id in again["context"]


def test_openclaw_flat_form_and_chinese_capture(vault: Vault) -> None:
    out = finish(openclaw.handle(vault, fixture("openclaw", "message_received_flat.json")))
    assert out["session"] == context.session_id(session_key="agent:ops:discord:channel:77")
    assert out["captured"]["status"] == "created"
    assert vault.get(out["captured"]["id"]).body.strip() == "周五不要部署数据库迁移"


def test_openclaw_failed_delivery_is_not_archived(vault: Vault) -> None:
    sent = fixture("openclaw", "message_sent.json")
    sent["context"]["success"] = False
    result = openclaw.handle(vault, sent)
    assert result.answer["archived"] is False and result.deferred is None


@pytest.mark.parametrize("bad", [{"type": "message", "action": "edited", "context": {"channelId": "x", "content": "y"}},
                                 {"event": "session:start"},
                                 {"type": "message", "action": "received", "context": {"content": "no channel"}}])
def test_openclaw_bad_events_are_named(vault: Vault, bad: dict[str, Any]) -> None:
    with pytest.raises(Exception, match="action|event|channel"):
        openclaw.handle(vault, bad)


def test_same_turn_through_gateway_and_backend_is_stored_once(vault_root: Path, tmp_path: Path) -> None:
    """The gateway sees the message, then drives Claude Code, whose hooks see it again.

    Gateway captures have a scope of their own unless its owner puts them in
    ``user`` (docs/agents.md); then both captures meet there and are stored once.
    """
    lexical_only(vault_root)
    set_config(vault_root, "openclaw", 'capture_scope = "user"')
    project = tmp_path / "shop-api"
    (project / ".git").mkdir(parents=True)
    received = fixture("openclaw", "message_received.json")
    gateway = run_hook("openclaw", json.dumps(received), vault_root)
    assert gateway.returncode == 0 and gateway.stderr == ""
    assert json.loads(gateway.stdout)["captured"]["status"] == "created"
    # Claude Code as the gateway's backend: same words, its own session and provenance.
    prompt = fixture("claude-code", "UserPromptSubmit.json", cwd=str(project), transcript=str(tmp_path / "t.jsonl"))
    prompt["prompt"] = received["context"]["content"]
    backend = run_hook("claude-code", json.dumps(prompt), vault_root)
    assert backend.returncode == 0 and backend.stderr == ""
    transcript = copy_transcript("claude-code", "transcript.jsonl", tmp_path / "t.jsonl", str(project))
    stop = fixture("claude-code", "Stop.json", cwd=str(project), transcript=str(transcript))
    assert run_hook("claude-code", json.dumps(stop), vault_root).returncode == 0
    sent = run_hook("openclaw", json.dumps(fixture("openclaw", "message_sent.json")), vault_root)
    assert sent.returncode == 0
    with Vault(vault_root) as vault:
        stored = [h for h in vault.list() if "blue-green releases on Fridays" in h.body]
        assert len(stored) == 1, [(h.source, h.session) for h in stored]
        assert stored[0].source == "openclaw"  # the first writer's provenance is kept


def test_capture_scope_is_configurable(vault_root: Path, fake_embedder: Any, tmp_path: Path) -> None:
    set_config(vault_root, "agents", 'capture_scope = "agent:ops"')
    set_config(vault_root, "openclaw", 'capture_scope = "agent:ops"')  # the gateway's own setting
    with Vault(vault_root, embedder=fake_embedder) as vault:
        out = finish(openclaw.handle(vault, fixture("openclaw", "message_received.json")))
        assert vault.get(out["captured"]["id"]).meta["scope"] == "agent:ops"
        assert hooks.AgentSettings.of(vault).capture_scope == "agent:ops"
