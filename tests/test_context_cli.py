"""``memex context ...``: JSON on stdin, JSON out (docs/context-engine.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click
import pytest
from click.testing import CliRunner, Result

from memex.cli import app

UUID = "5F0C1A2B-3C4D-4E5F-8A9B-0C1D2E3F4A5B"


@pytest.fixture(scope="module")
def cli() -> click.Group:
    return app()


@pytest.fixture
def root(vault_root: Path) -> Path:
    # Plumbing only: lexical search keeps these tests fast.
    (vault_root / ".memex" / "config.toml").write_text(
        '[embedding]\nmodel = "none"\n[context]\ncommit_token_threshold = 30\n', encoding="utf-8"
    )
    return vault_root


def run(cli: click.Group, root: Path, *args: str, data: Any = None) -> Result:
    stdin = data if isinstance(data, str) else json.dumps(data) if data is not None else ""
    return CliRunner().invoke(cli, ["--vault", str(root), "context", *args], input=stdin)


def ok(cli: click.Group, root: Path, *args: str, data: Any = None) -> Any:
    result = run(cli, root, *args, "--json", data=data)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_keyword_then_assemble_then_after_turn_then_compact(cli: click.Group, root: Path) -> None:
    kw = ok(cli, root, "keyword", data={"session_id": UUID, "prompt": "Remember that staging runs on port 5433."})
    assert kw["status"] == "created"
    msgs = [{"role": "user", "content": "Which port does staging run on?"}]
    out = ok(cli, root, "assemble", data={"session_id": UUID, "messages": msgs, "token_budget": 200000})
    assert out["mode"] == "recall" and out["injected"] == [kw["id"]]
    assert out["messages"][0]["content"].startswith("<relevant-memories>")
    turn = out["messages"] + [{"role": "assistant", "content": "Port 5433. We must never expose it publicly."}]
    turn[0]["content"] += " We decided to keep staging on a private network."
    after = ok(cli, root, "after-turn", data={
        "session_id": UUID, "messages": turn, "pre_prompt_count": 0, "source": "claude-code", "commit": "sync",
    })
    session = UUID.lower()
    assert after["archive_id"] == f"{session}#1" and after["committed"]
    assert [m["status"] for m in after["memories"]] == ["created"]  # the assistant's "must" is not mined
    assert (root / "sessions" / session / "turns.jsonl").exists()
    found = ok(cli, root, "search", "--session", UUID, "private network")
    assert found[0]["archive_id"] == f"{session}#1"
    expanded = ok(cli, root, "expand", f"{session}#1")
    assert "relevant-memories" not in json.dumps(expanded)
    done = ok(cli, root, "compact", data={"session": session, "token_budget": 100000, "current_tokens": 900})
    assert done["tokens_before"] == 900 and done["tokens_after"] <= 900 and "summary" in done


def test_session_key_is_hashed(cli: click.Group, root: Path) -> None:
    res = ok(cli, root, "after-turn", data={
        "session_key": "agent:main:telegram:42", "messages": [{"role": "user", "content": "hi"}],
        "pre_prompt_count": 0, "commit": "none",
    })
    folders = [p.name for p in (root / "sessions").iterdir()]
    assert len(folders) == 1 and len(folders[0]) == 64 and res["archive_id"].startswith(folders[0])


def test_human_output_is_a_table(cli: click.Group, root: Path) -> None:
    result = run(cli, root, "assemble", data={"session": "s", "messages": [], "token_budget": 1000})
    assert result.exit_code == 0 and "mode" in result.output and "skipped" in result.output


@pytest.mark.parametrize(
    "args, data, message",
    [
        (("assemble",), "{not json", "stdin: is not JSON"),
        (("assemble",), [1, 2], "stdin: must be a JSON object"),
        (("assemble",), {"session": "s", "messages": []}, "missing key(s): token_budget"),
        (("assemble",), {"messages": [], "token_budget": 10}, "session"),
        (("assemble",), {"session": "s", "messages": [], "token_budget": "big"}, "token_budget: must be an integer"),
        (("after-turn",), {"session": "s", "messages": [{"role": "x"}], "pre_prompt_count": 0}, "messages[0].role"),
        (("expand", "nope"), None, "archive_id"),
        # Found from outside: a RecursionError traceback.
        (("assemble",), "[" * 100_000 + "]" * 100_000, "stdin: is not JSON"),
    ],
)
def test_bad_input_is_one_line_error(cli: click.Group, root: Path, args: tuple[str, ...], data: Any, message: str) -> None:
    result = run(cli, root, *args, "--json", data=data)
    assert result.exit_code == 1
    assert message in result.output and "Traceback" not in result.output


def test_a_message_holding_half_an_emoji_is_read_not_a_traceback(cli: click.Group, root: Path) -> None:
    """Found from outside: a message holding a lone surrogate (JSON "\\ud83d": a
    JavaScript runtime cut an emoji in half) made `memex context assemble` print
    a traceback (UnicodeEncodeError hashing it for the token count) and the
    bundled tokenizer raise. It reads as U+FFFD, and the turn is archived."""
    text = '{"session": "s", "messages": [{"role": "user", "content": "deploys on fridays \\ud83d ok?"}], '
    assembled = run(cli, root, "assemble", "--json", data=text + '"token_budget": 1000}')
    assert assembled.exit_code == 0, assembled.output
    assert json.loads(assembled.stdout)["messages"][0]["content"] == "deploys on fridays \ufffd ok?"
    archived = run(cli, root, "after-turn", "--json", data=text + '"pre_prompt_count": 0}')
    assert archived.exit_code == 0, archived.output
    assert json.loads(archived.stdout)["archived"] == 1


def test_remember_that_with_half_an_emoji_is_stored(cli: click.Group, root: Path) -> None:
    """Found from outside: `memex context keyword` given "remember that ..."
    with a lone surrogate answered `skipped: text: not valid Unicode text`."""
    result = run(cli, root, "keyword", "--json",
                 data='{"session": "s", "prompt": "remember that the otter pool \\ud83d opens at nine"}')
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["status"] != "skipped", result.stdout


def _tree(root: Path) -> set[str]:
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if "index.db" not in p.name and "writers" not in p.parts}


def test_an_unknown_session_is_named_and_nothing_is_made_for_it(cli: click.Group, root: Path) -> None:
    """Found from outside: `memex context commit --session TYPO` answered
    `turns: 0`, exit 0, and made sessions/TYPO/state.json and
    .memex/session-TYPO.lock; compact did the same; search answered
    "no matches" as if the session were there and only said nothing."""
    ok(cli, root, "keyword", data={"session_id": "s-real", "prompt": "Remember that the cache is warm."})
    before = _tree(root)
    for args in (("commit", "--session", "s-typo"), ("search", "--session", "s-typo", "cache")):
        result = run(cli, root, *args)
        assert result.exit_code == 1, result.output
        assert "Error: session: 's-typo' has no archive in this vault" in result.output
        assert "Traceback" not in result.output
    # A runtime's compact of a session it never archived: the same answer as before, nothing written.
    out = ok(cli, root, "compact", data={"session_id": "s-typo", "token_budget": 1000, "current_tokens": 10})
    assert out["tokens_after"] == 10 and out["memories"] == [] and out["compacted_upto"] == 0
    assert _tree(root) == before
