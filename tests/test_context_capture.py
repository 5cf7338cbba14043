"""after_turn, commit, compact, keyword capture and the session archive."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from memex.context import (
    after_turn, archive_expand, archive_search, capture_keyword, commit_session, compact,
)
from memex.context import archive
from memex.context.extract import extract_rules, is_remember_request
from memex.context.inject import render_memories_block
from memex.errors import InvalidArgument, MemoryNotFound
from memex.vault import Vault
from memex.erase.steps import erase
from tests.fakes import HashEmbedder
from tests.watchkit import wait_for

DATA = Path(__file__).parent / "data" / "context"


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def configured(root: Path, toml: str) -> Vault:
    (root / ".memex" / "config.toml").write_text(toml, encoding="utf-8")
    return Vault(root, embedder=HashEmbedder())


def test_after_turn_archives_only_new_messages_without_injected_blocks(vault: Vault) -> None:
    hit = vault.add("Old memory about tabs")
    block = render_memories_block(vault.search("tabs"))
    msgs = [user("first"), assistant("first answer")]
    r1 = after_turn(vault, "s1", msgs, 0, commit="none")
    assert r1["archived"] == 2 and r1["archive_id"].endswith("#1")
    msgs += [user(f"{block}\n\nsecond question"), assistant("second answer"), user(block)]
    r2 = after_turn(vault, "s1", msgs, 2, commit="none")
    assert r2["archived"] == 2  # the block-only message left nothing to keep
    stored = archive_expand(vault, r2["archive_id"])
    assert stored == [user("second question"), assistant("second answer")]
    assert r2["pending_tokens"] > r1["pending_tokens"] > 0
    assert not r2["committed"] and hit.id not in json.dumps(stored)
    files = sorted(p.name for p in (vault.root / "sessions" / "s1").iterdir())
    assert files == ["state.json", "turns.jsonl"]


def test_after_turn_validates_input(vault: Vault) -> None:
    with pytest.raises(InvalidArgument, match="pre_prompt_count"):
        after_turn(vault, "s", [user("x")], 2)
    with pytest.raises(InvalidArgument, match="commit"):
        after_turn(vault, "s", [user("x")], 0, commit="later")
    with pytest.raises(InvalidArgument, match="session"):
        after_turn(vault, " ", [user("x")], 0)


def test_session_folder_is_a_safe_name(vault: Vault) -> None:
    res = after_turn(vault, "../../etc/passwd", [user("hello there")], 0, commit="none")
    folders = list((vault.root / "sessions").iterdir())
    assert len(folders) == 1 and folders[0].parent == vault.root / "sessions"
    assert ".." not in folders[0].name and "/" not in folders[0].name
    assert archive_expand(vault, res["archive_id"]) == [user("hello there")]


def test_commit_runs_when_pending_tokens_pass_threshold(vault_root: Path) -> None:
    with configured(vault_root, "[context]\ncommit_token_threshold = 60\n") as v:
        msgs = [user("We decided to deploy with Kamal."), assistant("OK.")]
        small = after_turn(v, "s", msgs, 0, source="codex", scope="project:web", commit="sync")
        assert not small["committed"] and small["memories"] == []
        msgs += [user("I prefer short commit messages. " + "More context here. " * 20), assistant("Noted.")]
        done = after_turn(v, "s", msgs, 2, source="claude-code", scope="project:web", commit="sync")
        assert done["committed"] and done["pending_tokens"] == 0
        bodies = {v.get(m["id"]).body.strip(): v.get(m["id"]).meta for m in done["memories"]}
        assert set(bodies) == {"We decided to deploy with Kamal.", "I prefer short commit messages."}
        meta = bodies["We decided to deploy with Kamal."]
        # Source, scope and source_ref come from the archived turn it was said in.
        assert meta["source"] == "codex" and meta["session"] == "s"
        assert meta["scope"] == "project:web" and meta["category"] == "decision"
        assert meta["source_ref"] == "sessions/s/turns.jsonl#1"  # erasure follows this path
        assert archive_expand(v, meta["source_ref"])[0]["content"] == "We decided to deploy with Kamal."
        later = bodies["I prefer short commit messages."]
        assert later["source"] == "claude-code" and later["source_ref"] == "sessions/s/turns.jsonl#2"
        assert later["category"] == "preference"
        assert archive.load_state(v, "s").committed_seq == 2
        # A second commit with nothing pending extracts nothing again.
        assert commit_session(v, "s")["memories"] == []


def test_background_commit_runs_detached(vault_root: Path) -> None:
    (vault_root / ".memex" / "config.toml").write_text(
        '[embedding]\nmodel = "none"\n[context]\ncommit_token_threshold = 5\n', encoding="utf-8"
    )
    with Vault(vault_root) as v:
        res = after_turn(v, "bg", [user("We decided to use Caddy as the proxy.")], 0)
        assert res["commit_pid"] > 0 and not res["committed"]
        wait_for(lambda: archive.load_state(v, "bg").committed_seq >= 1, 60, "the detached commit")
        assert archive.load_state(v, "bg").committed_seq == 1
        assert [h.body for h in v.list(session="bg")] == ["We decided to use Caddy as the proxy."]


def test_auto_capture_off(vault_root: Path) -> None:
    with configured(vault_root, "[context]\nauto_capture = false\n") as v:
        res = after_turn(v, "s", [user("remember that x is y")], 0)
        assert res["archived"] == 0 and not (vault_root / "sessions").exists()
        assert capture_keyword(v, "s", "remember that we use fish shell") is None


def test_compact_commits_and_reports_tokens(vault_root: Path) -> None:
    with configured(vault_root, "[context]\ncommit_keep_recent_count = 2\n") as v:
        msgs: list[dict[str, Any]] = []
        for i in range(4):
            before = len(msgs)
            msgs += [user(f"Step {i}: we must never skip the migration check {i}. " + "detail " * 100),
                     assistant(f"Done with step {i}. " + "log line " * 100)]
            after_turn(v, "c", msgs, before, commit="none")
        res = compact(v, "c", 100_000, 5_000)
        assert res["tokens_before"] == 5_000 and 0 < res["tokens_after"] < 5_000
        assert res["compacted_upto"] == 6
        assert len(res["memories"]) == 4 and all(m["status"] == "created" for m in res["memories"])
        assert "Step 0" in res["summary"] and "Done with step 3" in res["summary"]
        assert (vault_root / "sessions" / "c" / "summary.md").read_text().startswith("- user (turn 1)")
        with pytest.raises(InvalidArgument, match="token_budget"):
            compact(v, "c", 0, 10)


def test_extract_command_is_used_and_falls_back(vault_root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "request.json"
    monkeypatch.setenv("FAKE_EXTRACTOR_LOG", str(log))
    cmd = f"{sys.executable} {DATA / 'fake_extractor.py'}"
    # A command runs as the user: only this machine's own settings may name it (memex/config_trust.py).
    (vault_root / ".memex" / "config.local.toml").write_text(f"[context]\nextract_command = {json.dumps(cmd)}\n")
    with configured(vault_root, "") as v:
        after_turn(v, "x", [user("KEEP Releases are cut on Tuesdays"), assistant("ok")], 0, commit="none")
        res = commit_session(v, "x")
        assert res["extractor"] == "command" and res["summary"] == "2 messages discussed"
        assert [v.get(m["id"]).body.strip() for m in res["memories"]] == ["Releases are cut on Tuesdays"]
        request = json.loads(log.read_text())
        assert request["task"] == "commit" and request["session"] == "x" and len(request["messages"]) == 2
        monkeypatch.setenv("FAKE_EXTRACTOR_FAIL", "1")
        after_turn(v, "x", [user("We decided to freeze merges on Fridays.")], 0, commit="none")
        res = commit_session(v, "x")
        assert res["extractor"].startswith("rules (extract_command:") and "exited 3" in res["extractor"]
        assert [m["status"] for m in res["memories"]] == ["created"]


# -- rule-based extraction ---------------------------------------------------


@pytest.mark.parametrize(
    "text, category",
    [
        ("We decided to use PostgreSQL for billing.", "decision"),
        ("Let's go with Redis for the queue.", "decision"),
        ("Never commit secrets to the repository.", "constraint"),
        ("You must run the linter before pushing.", "constraint"),
        ("I prefer dark mode in every editor.", "preference"),
        ("我们决定用 SQLite 做本地索引。", "decision"),
        ("代码注释必须用英文写。", "constraint"),
        ("不要在周五部署到生产环境。", "constraint"),
        ("我喜欢用 Vim 写代码。", "preference"),
        ("提交信息总是用英文。", "constraint"),
        ("永远不要强制推送到主分支。", "constraint"),
    ],
)
def test_rules_find_explicit_statements(text: str, category: str) -> None:
    found = extract_rules([user(f"Some chatter first. {text}")])
    assert [(f.text, f.category) for f in found] == [(text, category)]


@pytest.mark.parametrize(
    "text",
    [
        "Should we always use tabs?",           # a question
        "What did we decide about the database?",
        "Thanks, looks good.",                   # no statement
        "never",                                 # too short
        "```\n# we must always do x\n```",      # code
    ],
)
def test_rules_skip_questions_chatter_and_code(text: str) -> None:
    assert extract_rules([user(text)]) == []


def test_rules_ignore_assistant_and_tool_output() -> None:
    msgs = [
        assistant("We decided to use MySQL."),
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t", "content": "You must never do this."},
            {"type": "text", "text": "I prefer pnpm over npm."},
        ]},
    ]
    assert [f.text for f in extract_rules(msgs)] == ["I prefer pnpm over npm."]


# -- keyword capture ---------------------------------------------------------


@pytest.mark.parametrize(
    "prompt, wanted",
    [
        ("Remember that the staging DB is on port 5433.", True),
        ("please remember: deploy keys live in 1Password", True),
        ("Don't forget we ship on Thursdays.", True),
        # A request about the task at hand, not a memory (tests/test_remember_to.py).
        ("Fix the bug. Also, remember to run the migrations first.", False),
        ("Fix the bug. Also, remember to always run the migrations first.", True),
        ("Can you remember that I use fish shell?", True),
        ("记住：测试数据库在 5433 端口。", True),
        ("别忘了周四发布。", True),
        ("Do you remember what we decided?", False),
        ("I can't remember the port.", False),
        ("Fix the remembering logic in cache.py", False),
    ],
)
def test_remember_requests(prompt: str, wanted: bool) -> None:
    assert is_remember_request(prompt) is wanted


def test_capture_keyword_stores_the_request_verbatim_once(vault: Vault) -> None:
    prompt = "Remember that the staging DB is on port 5433."
    first = capture_keyword(vault, "s", prompt)
    assert first is not None and first["status"] == "created"
    memory = vault.get(first["id"])
    assert memory.body.strip() == "the staging DB is on port 5433"
    assert memory.meta["source"] == "keyword" and memory.meta["session"] == "s"
    again = capture_keyword(vault, "s", prompt)
    assert again is not None and again["status"] == "duplicate" and again["existing_id"] == first["id"]
    assert capture_keyword(vault, "s", "How do I run tests?") is None


def test_capture_keyword_stores_the_request_not_the_whole_prompt(vault: Vault) -> None:
    """Found in a trial with the real clients: the whole prompt became one
    memory holding two facts, beside the decision extracted at session end."""
    prompt = "We decided to use pnpm for packages. Also, remember that integration tests need docker."
    found = capture_keyword(vault, "s", prompt)
    assert found is not None and found["status"] == "created"
    assert [m.body.strip() for m in vault.list()] == ["integration tests need docker"]
    # The rest goes through the session's extraction, as any turn does.
    after_turn(vault, "s", [user(prompt), assistant("Noted.")], 0, commit="none")
    committed = commit_session(vault, "s")
    assert [m["status"] for m in committed["memories"]] == ["created"]
    assert sorted(m.body.strip() for m in vault.list()) == [
        "We decided to use pnpm for packages.", "integration tests need docker"]


@pytest.mark.parametrize("prompt, facts", [
    ("Always remember to run tests before committing.", ["Always run tests before committing"]),
    ("From now on, remember to write commit messages in English.",
     ["From now on, write commit messages in English"]),
    ("Can you remember that I use fish shell?", ["I use fish shell"]),
    ("Remember that the API lives at api.example.com.", ["the API lives at api.example.com"]),
    ("记住：测试数据库在 5433 端口。然后修复这个错误。", ["测试数据库在 5433 端口"]),
    ("We deploy on Fridays. Remember that.", ["We deploy on Fridays"]),
    ("Remember this:\n- use pnpm\n- tests need docker\n\nNow fix the bug.", ["- use pnpm\n- tests need docker"]),
    ("Keep in mind that the CI cache expires after 7 days; also remember that builds use Node 22.",
     ["the CI cache expires after 7 days", "builds use Node 22"]),
    ("Remember to run the migrations first. And remember that prod runs Postgres 16.", ["prod runs Postgres 16"]),
])
def test_each_request_stores_what_it_asks_for(vault: Vault, prompt: str, facts: list[str]) -> None:
    found = capture_keyword(vault, "s", prompt)
    assert found is not None
    stored = [found, *found.get("more", [])]
    assert [vault.get(f["id"]).body.strip() for f in stored] == facts


def test_capture_keyword_ignores_injected_block(vault: Vault) -> None:
    vault.add("Remember that the old port was 5432.")
    block = render_memories_block(vault.search("port"))
    assert capture_keyword(vault, "s", f"{block}\n\nwhat port is staging on?") is None


# -- archive search ----------------------------------------------------------


def test_archive_search_and_expand(vault: Vault) -> None:
    after_turn(vault, "a", [user("The flaky test is test_upload_retry"), assistant("I will look.")], 0, commit="none")
    after_turn(vault, "a", [user("Now check the nginx config"), assistant("nginx config has a typo in upstream")], 0, commit="none")
    after_turn(vault, "other", [user("nginx nginx nginx")], 0, commit="none")
    hits = archive_search(vault, "a", "nginx upstream typo")
    assert [h["archive_id"] for h in hits] == ["a#2", "a#2"]
    assert hits[0]["role"] == "assistant" and hits[0]["score"] == 1.0
    assert archive_expand(vault, "a#1")[0]["content"] == "The flaky test is test_upload_retry"
    assert archive_search(vault, "a", "kubernetes") == []
    for bad in ("a#9", "a", "../x#1", "#1"):
        with pytest.raises(InvalidArgument, match="archive_id"):
            archive_expand(vault, bad)


def test_torn_last_line_is_skipped(vault: Vault) -> None:
    after_turn(vault, "t", [user("first turn text")], 0, commit="none")
    with open(vault.root / "sessions" / "t" / "turns.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"id": "t#2", "seq": 2, "messa')
    assert [t["seq"] for t in archive.read_turns(vault, "t")] == [1]


def test_long_prompt_keeps_only_the_request_verbatim(vault: Vault) -> None:
    log = "\n".join(f"ERROR line {i}: connection refused" for i in range(100))
    prompt = f"{log}\nAlso, please remember that the DB password rotates monthly. Thanks!"
    res = capture_keyword(vault, "s", prompt)
    assert res is not None
    body = vault.get(res["id"]).body.strip()
    assert body == "the DB password rotates monthly"


def test_concurrent_after_turns_of_one_session_do_not_collide(vault: Vault) -> None:
    import threading

    def worker(k: int) -> None:
        for i in range(8):
            after_turn(vault, "busy", [user(f"writer {k} turn {i}")], 0, commit="none")

    # Each thread needs its own connection only for search; archiving uses files and locks.
    threads = [threading.Thread(target=worker, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    turns = archive.read_turns(vault, "busy")
    assert sorted(t["seq"] for t in turns) == list(range(1, 25))
    assert archive.load_state(vault, "busy").turns == 24


def test_compact_of_a_short_or_empty_session_replaces_nothing(vault: Vault) -> None:
    empty = compact(vault, "nothing-yet", 100_000, 1_234)
    assert empty["tokens_after"] == 1_234 and empty["summary"] == "" and empty["memories"] == []
    after_turn(vault, "short", [user("We decided to use uv."), assistant("ok")], 0, commit="none")
    short = compact(vault, "short", 100_000, 500)  # 2 messages <= commit_keep_recent_count (10)
    assert short["compacted_upto"] == 0 and short["tokens_after"] == 500
    assert [m["status"] for m in short["memories"]] == ["created"]


def test_erasing_a_session_takes_its_archive_and_extracted_memories(vault_root: Path) -> None:
    with configured(vault_root, "[context]\ncommit_token_threshold = 1\n") as v:
        done = after_turn(v, "gone", [user("We decided to store card numbers in Vault.")], 0, commit="sync")
        extracted = done["memories"][0]["id"]
        kept = v.add("An unrelated memory from elsewhere.", session="other").id
        erase(v, session="gone", reason="test")
        assert not list((vault_root / "sessions").rglob("turns.jsonl"))
        assert [h.id for h in v.list()] == [kept]
        with pytest.raises(MemoryNotFound):
            v.get(extracted)
