"""Claude Code hooks: every event from its documented JSON, in process and through the CLI."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memex import context
from memex.agents import claude_code, hook_io
from memex.vault import Vault
from tests.hook_helpers import copy_transcript, fixture, isolated_home, lexical_only, run_hook, set_config
from tests.watchkit import wait_for

SESSION = "5f0c2b9e-8a41-4c7d-9e3b-2d1f6a7b8c90"  # the fixtures' id, lower-cased



pytestmark = pytest.mark.usefixtures("no_warm_server")

@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "shop-api"
    (root / ".git").mkdir(parents=True)
    (root / "src").mkdir()
    return root


def event(name: str, project: Path, transcript: Path | None = None, **changes: Any) -> dict[str, Any]:
    data = fixture("claude-code", f"{name}.json", cwd=str(project / "src"),
                   transcript=str(transcript or project / "none.jsonl"))
    data.update(changes)
    return data


def answer(vault: Vault, payload: dict[str, Any]) -> dict[str, Any]:
    result = claude_code.handle(vault, payload)
    if result.deferred is not None:
        result.deferred()
    return result.answer


def context_of(out: dict[str, Any], name: str) -> str:
    spec = out["hookSpecificOutput"]
    assert spec["hookEventName"] == name
    text: str = spec["additionalContext"]
    return text


def test_project_scope_is_the_git_root_folder(project: Path) -> None:
    assert hook_io.project_scope(str(project / "src")) == "project:shop-api"
    assert hook_io.project_scope(None) is None


def test_user_prompt_captures_the_request_and_hands_off(vault: Vault, project: Path) -> None:
    payload = event("UserPromptSubmit", project)
    out = answer(vault, payload)
    stored = vault.list(source="keyword")
    assert payload["prompt"] == "Remember that this project deploys with blue-green releases on Fridays."
    assert [h.body for h in stored] == ["this project deploys with blue-green releases on Fridays"]
    assert stored[0].session == SESSION and stored[0].scope == "user"
    text = context_of(out, "UserPromptSubmit")
    assert stored[0].id in text and "do not save these again" in text
    # Recall ran before the capture, so the prompt is not echoed back as a memory.
    assert "<relevant-memories" not in text
    # The same prompt again (a retry) stores nothing new.
    answer(vault, payload)
    assert len(vault.list(source="keyword")) == 1


def test_user_prompt_recalls_earlier_memories(vault: Vault, project: Path) -> None:
    first = vault.add("The staging database is postgres 16 on port 5433", scope="project:shop-api")
    vault.add("Grandma's birthday is in May", scope="project:other")
    out = answer(vault, event("UserPromptSubmit", project, prompt="which port does the staging database use?"))
    text = context_of(out, "UserPromptSubmit")
    assert "<relevant-memories" in text and first.id in text
    assert "Grandma" not in text
    assert vault.list(source="keyword") == []  # a question is not a request to remember


def test_session_start_injects_project_and_user_memories(vault: Vault, project: Path) -> None:
    mine = vault.add("Use ruff, never black, in shop-api", scope="project:shop-api")
    me = vault.add("The user prefers short answers", scope="user")
    other = vault.add("The legacy app uses tabs", scope="project:legacy")
    text = context_of(answer(vault, event("SessionStart", project)), "SessionStart")
    assert SESSION in text  # the agent learns its session id for the MCP tools
    assert mine.id in text and me.id in text and other.id not in text
    assert text.index(mine.id) < text.index(me.id)  # the project's memories come first


def test_session_start_limit_zero_injects_no_memories(vault_root: Path, fake_embedder: Any, project: Path) -> None:
    set_config(vault_root, "agents", "session_start_limit = 0")
    with Vault(vault_root, embedder=fake_embedder) as vault:
        vault.add("The user prefers short answers", scope="user")
        text = context_of(answer(vault, event("SessionStart", project)), "SessionStart")
    assert "<relevant-memories" not in text


def test_stop_archives_only_new_transcript_lines(vault: Vault, project: Path, tmp_path: Path) -> None:
    transcript = copy_transcript("claude-code", "transcript.jsonl", tmp_path / "t.jsonl", str(project))
    payload = event("Stop", project, transcript)
    result = claude_code.handle(vault, payload)
    assert result.answer == {} and result.deferred is not None  # nothing to say; work after answering
    first = result.deferred()
    assert first["archived"] == 4  # user, assistant (two streamed blocks joined), tool result, assistant
    hits = context.archive_search(vault, SESSION, "kubectl blue-green")
    assert hits, "the turn must be searchable in the session archive"
    messages = [m for h in hits for m in context.archive_expand(vault, h["archive_id"])]
    assert not any("sub-agent chatter" in json.dumps(m) for m in messages)
    # Nothing new: nothing archived twice.
    assert claude_code.handle(vault, payload).deferred() == {"archived": 0}  # type: ignore[misc]
    with open(transcript, "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"type": "user", "message": {"role": "user", "content": "and on Mondays?"}}) + "\n")
        fh.write('{"type": "assistant", "message": {"role": "assist')  # half-written line: read next time
    again = claude_code.handle(vault, payload).deferred()  # type: ignore[misc]
    assert again["archived"] == 1


def test_a_transcript_line_nested_too_deeply_is_skipped_not_fatal(vault: Vault, project: Path, tmp_path: Path) -> None:
    """Found from outside: one transcript line nested past Python's recursion
    limit (a tool result holding deep JSON) raised RecursionError out of Stop,
    every time, so nothing after it in the session was ever archived."""
    transcript = tmp_path / "t.jsonl"
    with open(transcript, "w", encoding="utf-8") as fh:
        fh.write(json.dumps({"type": "user", "message": {"role": "user", "content": "we deploy with helm"}}) + "\n")
        fh.write('{"type": "user", "message": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
        fh.write('{"type": "user", "n": ' + "9" * 5000 + "}\n")
        fh.write(json.dumps({"type": "user", "message": {"role": "user", "content": "and roll back with argo"}}) + "\n")
    done = claude_code.handle(vault, event("Stop", project, transcript)).deferred()  # type: ignore[misc]
    assert done["archived"] == 2


def test_a_transcript_line_holding_half_an_emoji_is_archived(vault: Vault, project: Path, tmp_path: Path) -> None:
    """Found from outside: a transcript line with a lone surrogate (Claude Code
    is a JavaScript program: a string cut mid-emoji is written as "\\ud83d")
    raised UnicodeEncodeError out of Stop every time, so that session's turns
    from there on were never archived. It reads as U+FFFD."""
    transcript = tmp_path / "t.jsonl"
    with open(transcript, "w", encoding="utf-8") as fh:
        fh.write('{"type": "user", "message": {"role": "user", "content": "the otter pool \\ud83d opens at nine"}}\n')
        fh.write(json.dumps({"type": "user", "message": {"role": "user", "content": "and closes at five"}}) + "\n")
    done = claude_code.handle(vault, event("Stop", project, transcript)).deferred()  # type: ignore[misc]
    assert done["archived"] == 2
    hits = context.archive_search(vault, SESSION, "otter pool")
    assert hits and "\ufffd" in json.dumps(context.archive_expand(vault, hits[0]["archive_id"]), ensure_ascii=False)


def test_remember_that_with_half_an_emoji_is_captured(lexical_root: Path, project: Path) -> None:
    """Found from outside: "remember that ..." in a prompt holding a lone
    surrogate was not captured ("memex: not captured: text: not valid Unicode
    text"): the user's explicit request was lost for half an emoji."""
    payload = json.dumps(event("UserPromptSubmit", project)).replace(
        json.dumps(event("UserPromptSubmit", project)["prompt"]),
        '"remember that the otter pool \\ud83d opens at nine"')
    proc = run_hook("claude-code", payload, lexical_root)
    assert proc.returncode == 0 and "not captured" not in proc.stdout + proc.stderr, proc.stderr
    with Vault(lexical_root) as vault:
        assert [m.body for m in vault.list(source="keyword")] == ["the otter pool \ufffd opens at nine"]


def test_stop_with_a_transcript_path_of_the_wrong_type_is_an_error_naming_it(vault: Vault, project: Path) -> None:
    # A transcript file that does not exist yet is normal (tests/test_hooks_limits.py).
    payload = event("Stop", project, transcript_path=42)
    with pytest.raises(Exception, match="transcript_path"):
        claude_code.handle(vault, payload)


def test_pre_compact_and_session_end(vault: Vault, project: Path, tmp_path: Path) -> None:
    transcript = copy_transcript("claude-code", "transcript.jsonl", tmp_path / "t.jsonl", str(project))
    result = claude_code.handle(vault, event("PreCompact", project, transcript))
    assert result.answer == {}
    compacted = result.deferred()  # type: ignore[misc]
    assert {"summary", "tokens_before", "tokens_after"} <= set(compacted)
    assert context.archive_search(vault, SESSION, "kubectl"), "pending lines are archived before compacting"
    end = claude_code.handle(vault, event("SessionEnd", project, transcript))
    assert end.answer == {} and end.deferred is not None
    end.deferred()


def test_unknown_event_gets_no_answer(vault: Vault, project: Path) -> None:
    result = claude_code.handle(vault, event("Stop", project, hook_event_name="Notification"))
    assert result.answer == {} and result.deferred is None


# -- through the CLI: protocol on stdout, fail open -------------------------------


@pytest.fixture
def lexical_root(vault_root: Path) -> Path:
    lexical_only(vault_root)
    return vault_root


def test_cli_every_event_exits_zero_with_documented_output(lexical_root: Path, project: Path, tmp_path: Path) -> None:
    transcript = copy_transcript("claude-code", "transcript.jsonl", tmp_path / "t.jsonl", str(project))
    for name in ("SessionStart", "UserPromptSubmit", "Stop", "PreCompact", "SessionEnd"):
        proc = run_hook("claude-code", json.dumps(event(name, project, transcript)), lexical_root)
        assert proc.returncode == 0, proc.stderr
        assert proc.stderr == "", f"{name}: {proc.stderr}"
        if name in ("SessionStart", "UserPromptSubmit"):
            context_of(json.loads(proc.stdout), name)
        else:
            assert proc.stdout == ""
    with Vault(lexical_root) as vault:
        assert len(vault.list(source="keyword")) == 1
    assert not (isolated_home(lexical_root) / ".memex-vault").exists()  # $MEMEX_VAULT was used


@pytest.mark.parametrize("stdin", [
    "{not json", "", "[1, 2]", '{"session_id": "x"}',
    # Found from outside: both were a traceback and exit status 1, not failing open.
    "[" * 100_000 + "]" * 100_000,  # nested past Python's recursion limit
    '{"hook_event_name": "UserPromptSubmit", "n": ' + "9" * 5000 + "}",  # past int()'s digit limit
])
def test_cli_fails_open_on_bad_input(lexical_root: Path, stdin: str) -> None:
    proc = run_hook("claude-code", stdin, lexical_root)
    assert proc.returncode == 0
    assert proc.stdout == ""
    assert proc.stderr.startswith("memex hook claude-code: ") and len(proc.stderr.splitlines()) == 1


def test_cli_fails_open_on_missing_vault(tmp_path: Path, project: Path) -> None:
    missing = tmp_path / "no-such-vault"
    proc = run_hook("claude-code", json.dumps(event("UserPromptSubmit", project)), missing)
    assert proc.returncode == 0 and proc.stdout == ""
    assert str(missing) in proc.stderr
    assert not missing.exists()  # a mistyped vault is reported, never created


def test_cli_default_vault_is_created_in_home(tmp_path: Path, project: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    proc = run_hook("claude-code", json.dumps(event("UserPromptSubmit", project)), None,
                    env={"HOME": str(home)})
    assert proc.returncode == 0, proc.stderr
    assert (home / ".memex-vault" / ".memex").is_dir()
    assert list((home / ".memex-vault" / "memories").rglob("*.md"))


def test_cli_stop_works_in_the_background(lexical_root: Path, project: Path, tmp_path: Path) -> None:
    transcript = copy_transcript("claude-code", "transcript.jsonl", tmp_path / "t.jsonl", str(project))
    proc = run_hook("claude-code", json.dumps(event("Stop", project, transcript)), lexical_root, sync=False)
    assert proc.returncode == 0 and proc.stdout == "" and proc.stderr == ""
    def archived() -> bool:
        with Vault(lexical_root) as vault:
            return bool(context.archive_search(vault, SESSION, "kubectl"))

    wait_for(archived, 30, "the background Stop to archive the turn (its log: .memex/cache/hooks.log)")


def test_remembered_in_one_session_shown_in_the_next(lexical_root: Path, project: Path, tmp_path: Path) -> None:
    """The issue's "done when": ask to remember in one session, see it at the start of the next."""
    transcript = copy_transcript("claude-code", "transcript.jsonl", tmp_path / "t.jsonl", str(project))
    for name in ("SessionStart", "UserPromptSubmit", "Stop", "SessionEnd"):
        assert run_hook("claude-code", json.dumps(event(name, project, transcript)), lexical_root).stderr == ""
    second = event("SessionStart", project, transcript, session_id="0b7d5c1e-0000-4000-8000-000000000002")
    proc = run_hook("claude-code", json.dumps(second), lexical_root)
    text = context_of(json.loads(proc.stdout), "SessionStart")
    assert "0b7d5c1e-0000-4000-8000-000000000002" in text
    assert "blue-green releases on Fridays" in text and "<relevant-memories" in text


def _turn(path: Path, said: str, reply: str) -> None:
    with path.open("a", encoding="utf-8") as out:
        for role, kind, text in (("user", "user", said), ("assistant", "assistant", reply)):
            content: object = text if role == "user" else [{"type": "text", "text": text}]
            out.write(json.dumps({"type": kind, "isSidechain": False, "message": {"role": role, "content": content}}) + "\n")


@pytest.mark.usefixtures("no_warm_server")
def test_a_decision_said_in_a_short_session_is_a_memory_when_it_ends(vault: Vault, tmp_path: Path) -> None:
    """Found from outside: in a four-turn Claude Code session the user said
    "We decided to store invoices as PDF in the S3 bucket shop-invoices and
    keep them seven years". SessionEnd archived the turn but never extracted
    it (a commit waits for 20,000 pending tokens, which a short session never
    reaches, and the next session is another session), so the next session's
    "How long do we keep invoices?" found nothing. SessionEnd now commits
    what is pending before consolidating."""
    from memex.agents import claude_code

    project = tmp_path / "shop"
    (project / ".git").mkdir(parents=True)
    transcript = tmp_path / "session.jsonl"
    transcript.write_text("", encoding="utf-8")
    decision = "We decided to store invoices as PDF in the S3 bucket shop-invoices and keep them seven years."
    base = {"session_id": "11111111-1111-4111-8111-111111111111", "transcript_path": str(transcript),
            "cwd": str(project), "permission_mode": "default"}

    def send(name: str, **fields: object) -> None:
        result = claude_code.handle(vault, {**base, "hook_event_name": name, **fields})
        if result.deferred is not None:
            result.deferred()

    send("SessionStart", source="startup")
    for said, reply in (("Please add a retry to the Stripe webhook handler.", "Added, five attempts."),
                        (decision, "Understood, s3://shop-invoices with a seven year rule.")):
        send("UserPromptSubmit", prompt=said)
        _turn(transcript, said, reply)
        send("Stop", stop_hook_active=False, last_assistant_message=reply)
    assert not [m for m in vault.list() if "shop-invoices" in m.body], "a short session commits nothing before it ends"
    send("SessionEnd", reason="other")
    kept = [m for m in vault.list() if "shop-invoices" in m.body]
    assert len(kept) == 1 and kept[0].category == "decision"
    assert kept[0].session == base["session_id"]
    # Ending it again (a resumed session that ends twice) stores nothing twice.
    send("SessionEnd", reason="other")
    assert len([m for m in vault.list() if "shop-invoices" in m.body]) == 1
