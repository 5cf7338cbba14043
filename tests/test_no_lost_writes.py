"""No write is dropped however many agents write at once: parallel tool calls
on one `memex mcp` session (through the official SDK client over stdio, as an
agent makes them), and `memex add` processes and hooks while `memex watch` runs."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from memex.agents import warm as warm_server
from memex.vault import Vault
from memex.watch import state as watch_state
from tests.hook_helpers import MEMEX, fixture, isolated_home, lexical_only, set_config
from tests.watchkit import TIMEOUT, found, index_matches_disk, wait_for

CALLS = 100


def _word(i: int) -> str:
    return f"zq{i}parallelx"


async def _parallel(vault_root: Path, home: Path) -> tuple[list[Any], list[Any]]:
    env = {"HOME": str(home), "MEMEX_CACHE_DIR": os.environ["MEMEX_CACHE_DIR"], "MEMEX_WARM": "0"}
    params = StdioServerParameters(command=MEMEX, args=["--vault", str(vault_root), "mcp"], env=env)
    adds: list[Any] = [None] * CALLS
    searches: list[Any] = [None] * CALLS
    async with Client(params, read_timeout_seconds=300) as client:

        async def add(i: int) -> None:
            adds[i] = await client.call_tool("memory_add", {
                "text": f"Fact number {i} of the parallel agent is recorded under {_word(i)}",
                "session": "parallel"})

        async def search(i: int) -> None:
            searches[i] = await client.call_tool("memory_search", {"query": f"fact {_word(i)}"})

        async with anyio.create_task_group() as tg:
            for i in range(CALLS):
                tg.start_soon(add, i)
                tg.start_soon(search, i)
    return adds, searches


def _text(result: Any) -> str:
    return " ".join(getattr(c, "text", "") for c in result.content)


@pytest.mark.model
def test_a_hundred_parallel_adds_and_searches_on_one_session_store_a_hundred(
    vault_root: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    adds, searches = anyio.run(_parallel, vault_root, home)
    failed = [_text(r) for r in adds + searches if r.is_error]
    assert failed == []
    data = [r.structured_content or json.loads(_text(r)) for r in adds]
    assert sorted(d["status"] for d in data) == ["created"] * CALLS
    with Vault(vault_root, embedder=None) as vault:
        assert len(vault.list(limit=1000)) == CALLS
        for i in range(CALLS):
            assert vault.search(_word(i), limit=1)[0].id == data[i]["id"]


ADDERS = 8
HOOKS = 8
HAND = 4
ENDS = 4


def _transcript(path: Path, i: int) -> Path:
    """A Claude Code transcript whose user states one decision (extracted at SessionEnd)."""
    lines = [
        {"type": "user", "uuid": f"u{i}", "message": {"role": "user", "content":
            f"We decided that release train number {i} is named endword{i} from now on."}},
        {"type": "assistant", "uuid": f"a{i}", "message": {"role": "assistant", "content":
            [{"type": "text", "text": "Understood."}]}},
    ]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize("warm", [False, pytest.param(True, marks=pytest.mark.model)], ids=["lexical", "warm-server"])
def test_adds_and_hooks_while_the_watcher_runs_lose_nothing(vault_root: Path, tmp_path: Path, warm: bool) -> None:
    """Lexical: every process on its own (no model to load in each). With the
    model and an agent session's warm server up: the hooks' events and the
    adds' embeddings go to it at once, past what it takes at a time."""
    project = tmp_path / "shop-api"
    (project / ".git").mkdir(parents=True)
    env = {k: v for k, v in os.environ.items() if k not in ("MEMEX_VAULT", "MEMEX_WARM")}
    env.update(MEMEX_VAULT=str(vault_root), HOME=str(isolated_home(vault_root)), MEMEX_HOOK_SYNC="1")
    server = None
    if warm:
        set_config(vault_root, "agents", "warm_seconds = 120")  # it exits on its own after the test too
        server = subprocess.Popen([sys.executable, "-m", "memex.agents.warm", str(vault_root)], env=env,
                                  stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with Vault(vault_root, embedder=None) as probe:
            wait_for(lambda: warm_server.connect(probe), 120, "the warm server to answer")
    else:
        lexical_only(vault_root)
        env["MEMEX_WARM"] = "0"
    watcher = subprocess.Popen([MEMEX, "watch", "--reconcile-seconds", "3600"], env=env, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: watcher.poll() is not None
                 or watch_state.watcher_info(vault_root / ".memex")["pid"] == watcher.pid,
                 what="the watcher to start")
        assert watcher.poll() is None
        events: list[tuple[str, dict[str, Any]]] = []
        for i in range(HOOKS):
            payload = fixture("claude-code", "UserPromptSubmit.json", cwd=str(project),
                              transcript=str(project / "none.jsonl"))
            payload.update(session_id=f"session-{i}", prompt=f"Remember that the staging host {i} is called hookword{i}.")
            events.append((f"prompt {i}", payload))
        for i in range(ENDS):  # a session ends: its turns are extracted and committed at once
            payload = fixture("claude-code", "SessionEnd.json", cwd=str(project),
                              transcript=str(_transcript(tmp_path / f"t{i}.jsonl", i)))
            payload.update(session_id=f"ending-{i}")
            events.append((f"end {i}", payload))
        procs: list[tuple[str, subprocess.Popen[str]]] = []
        for i in range(ADDERS):
            add = [MEMEX, "add", f"The build server number {i} is named adderword{i}", "--json"]
            procs.append((f"add {i}", subprocess.Popen(add, env=env, text=True, stdout=subprocess.PIPE,
                                                        stderr=subprocess.PIPE)))
            for name, payload in events[i::ADDERS]:  # the hooks fire among the adds
                event = tmp_path / f"{name}.json"
                event.write_text(json.dumps(payload), encoding="utf-8")
                with event.open("rb") as stdin:
                    hook = subprocess.Popen([MEMEX, "hook", "claude-code"], env=env, text=True, stdin=stdin,
                                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                procs.append((name, hook))
            if i < HAND:  # hand edits in the same moments, for the watcher
                (vault_root / "memories" / f"hand{i}.md").write_text(f"A note by hand: handword{i}\n")
        for name, proc in procs:
            out, err = proc.communicate(timeout=300)
            assert proc.returncode == 0, (name, err)
            for bad in ("not captured", "locked", "Traceback", "skipped", "timed out"):  # a hook fails open: it says so
                assert bad not in err, (name, err)
            if name.startswith("add"):
                assert json.loads(out)["status"] == "created", (name, out)
        with Vault(vault_root, embedder=None) as vault:
            wait_for(lambda: index_matches_disk(vault), timeout=60, what="the index to settle")
            for word, count in (("adderword", ADDERS), ("hookword", HOOKS), ("handword", HAND), ("endword", ENDS)):
                for i in range(count):
                    assert found(vault, f"{word}{i}"), f"{word}{i} was lost"
            assert len(vault.list(limit=1000)) == ADDERS + HOOKS + HAND + ENDS
        assert watcher.poll() is None, "the watcher is still running"
    finally:
        watcher.send_signal(signal.SIGTERM)
        _, err = watcher.communicate(timeout=TIMEOUT * 3)
        if server is not None:
            server.terminate()
            server.wait(TIMEOUT * 3)
    assert "Traceback" not in err and "ERROR" not in err and "locked" not in err.lower(), err
