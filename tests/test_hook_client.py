"""The hook's front door (memex/agents/hook_client.py): what a hook process
loads, who answers, and that the answer does not depend on it.

Found with the real clients: every hook process imported most of memex
(numpy, SQLite, the CLI's helpers) before reading its event, so the warm
server saved nothing a hook paid for, and Stop and SessionEnd held the agent
a second or more. Which modules a hook imports is behaviour, pinned here;
how long it takes is measured in scripts/bench_hooks.py (docs/benchmarks.md).
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memex import context
from memex.agents import claude_code, hook_client, hook_run, warm, warm_client, warm_requests, warm_server
from memex.vault import Vault
from tests.fakes import HashEmbedder
from tests.hook_helpers import (
    additional_context, copy_transcript, fixture, hook_with_modules, lexical_only, project_event, run_hook, set_config,
)
from tests.watchkit import wait_for

HEAVY = ("numpy", "apsw", "memex.vault", "click", "onnxruntime", "memex.cli._common")
SESSION = "5f0c2b9e-8a41-4c7d-9e3b-2d1f6a7b8c90"  # the fixtures' id, lower-cased


_hook = hook_with_modules


_event = project_event
_context = additional_context


@pytest.fixture
def served(vault_root: Path, fake_embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """The vault's warm server (in a thread here, with the fast fake model),
    answering hook events; yields the id of a memory about the staging port."""
    monkeypatch.delenv("MEMEX_WARM", raising=False)
    monkeypatch.setattr(warm.embed, "load_embedder", lambda setting: fake_embedder)
    set_config(vault_root, "agents", "warm_seconds = 3")
    with Vault(vault_root, embedder=fake_embedder) as vault:
        port = vault.add("The staging database is postgres 16 on port 5433", scope="project:shop-api").id
    server = threading.Thread(target=warm_server.serve, args=(vault_root,), daemon=True)
    server.start()
    with Vault(vault_root) as vault:
        wait_for(lambda: warm.connect(vault), 30, "the warm server to answer")
    yield port
    server.join(30)  # idle for warm_seconds, it stops
    assert not server.is_alive()


def test_the_hook_client_loads_nothing_heavy() -> None:
    code = "import sys, memex.agents.hook_client, memex.console; print(' '.join(sorted(sys.modules)))"
    loaded = set(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                check=True, timeout=60).stdout.split())
    assert not loaded & {*HEAVY, "memex.agents.hook_io", "memex.agents.warm", "memex.config"}


def test_a_prompt_answered_by_the_warm_server_loads_no_numpy_nor_sqlite(
    vault_root: Path, served: str, project: Path, fake_embedder: HashEmbedder
) -> None:
    done, modules = _hook(vault_root, _event("UserPromptSubmit", project, prompt="which port does staging use?"))
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert served in _context(done.stdout)
    assert not modules & set(HEAVY), modules & set(HEAVY)
    # The same event answered here, by the adapter itself, says the same.
    with Vault(vault_root, embedder=fake_embedder) as vault:
        alone = claude_code.handle(vault, _event("UserPromptSubmit", project, prompt="which port does staging use?",
                                                 session_id="another"))
    assert alone.answer == json.loads(done.stdout)


def test_session_start_through_the_server_and_its_errors_as_one_line(
    vault_root: Path, served: str, project: Path
) -> None:
    done, modules = _hook(vault_root, _event("SessionStart", project))
    assert served in _context(done.stdout) and "numpy" not in modules
    bad = _event("UserPromptSubmit", project)
    del bad["session_id"]
    done, modules = _hook(vault_root, bad)
    assert done.returncode == 0 and done.stdout == "" and "numpy" not in modules
    assert done.stderr.strip() == (
        "memex hook claude-code: session_id: missing from the hook event (memex skipped; the agent continues)")


def test_stop_returns_at_once_and_its_work_is_done_detached(
    vault_root: Path, project: Path, tmp_path: Path
) -> None:
    lexical_only(vault_root)
    transcript = copy_transcript("claude-code", "transcript.jsonl", tmp_path / "t.jsonl", str(project))
    stop = fixture("claude-code", "Stop.json", cwd=str(project), transcript=str(transcript))
    done, modules = _hook(vault_root, stop)
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""
    assert not modules & set(HEAVY)

    def archived() -> bool:
        with Vault(vault_root) as vault:
            return bool(context.archive_search(vault, SESSION, "kubectl"))

    wait_for(archived, 60, "the detached Stop to archive the turn (its log: .memex/cache/hooks.log)")


def test_a_detached_failure_goes_to_the_hook_log(vault_root: Path, project: Path) -> None:
    lexical_only(vault_root)
    (vault_root / ".memex" / "config.toml").write_text("[agents]\ncontext_window = 5\n", encoding="utf-8")
    done, _ = _hook(vault_root, _event("SessionEnd", project))
    assert done.returncode == 0 and done.stderr == ""
    log = vault_root / ".memex" / "cache" / "hooks.log"
    wait_for(lambda: log.exists() and "context_window" in log.read_text(encoding="utf-8"), 60,
             "the detached SessionEnd to log its error")


def _fake_server(path: Path, reply: dict[str, Any]) -> threading.Thread:
    """A server at the vault's socket that answers every request with ``reply``."""
    path.parent.mkdir(mode=0o700, exist_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(1)

    def serve() -> None:
        with listener:
            conn, _ = listener.accept()
            with conn:
                conn.recv(1 << 16)
                conn.sendall(json.dumps(reply).encode() + b"\n")
        path.unlink()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("reply", [{"declined": "embeddings only"}, {"vectors": []}])
def test_a_server_that_declines_leaves_the_event_to_the_hook(
    lexical_root: Path, project: Path, monkeypatch: pytest.MonkeyPatch, reply: dict[str, Any]
) -> None:
    monkeypatch.delenv("MEMEX_WARM", raising=False)
    path = warm_client.socket_path(lexical_root)
    assert path is not None
    server = _fake_server(path, reply)
    done, modules = _hook(lexical_root, _event("SessionStart", project))
    server.join(10)
    assert done.returncode == 0 and SESSION in _context(done.stdout) and "memex.vault" in modules


def test_what_the_server_said_is_said_by_the_hook(lexical_root: Path, project: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMEX_WARM", raising=False)
    path = warm_client.socket_path(lexical_root)
    assert path is not None
    answer = {"hookSpecificOutput": {"hookEventName": "UserPromptSubmit", "additionalContext": "from the server"}}
    server = _fake_server(path, {"answer": answer, "stderr": "memex: not captured: too big\n"})
    done, modules = _hook(lexical_root, _event("UserPromptSubmit", project))
    server.join(10)
    assert json.loads(done.stdout) == answer and done.stderr == "memex: not captured: too big\n"
    assert "memex.vault" not in modules


def test_a_socket_left_by_a_dead_server_costs_nothing(lexical_root: Path, project: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMEX_WARM", raising=False)
    path = warm_client.socket_path(lexical_root)
    assert path is not None
    path.parent.mkdir(mode=0o700, exist_ok=True)
    path.write_text("left behind")
    try:
        done, _ = _hook(lexical_root, _event("SessionStart", project))
    finally:
        path.unlink()
    assert done.returncode == 0 and done.stderr == "" and SESSION in _context(done.stdout)


@pytest.fixture
def lexical_root(vault_root: Path) -> Path:
    lexical_only(vault_root)
    return vault_root


@pytest.mark.parametrize("argv, parsed", [
    (["hook", "claude-code"], ("claude-code", None, None)),
    (["--vault", "/v", "hook", "codex", "{}"], ("codex", "/v", "{}")),
    (["hook", "codex", "--vault=/v"], ("codex", "/v", None)),
    (["hook", "openclaw"], ("openclaw", None, None)),
    (["hook", "--help"], None),
    (["hook", "cursor"], None),
    (["hook"], None),
    (["search", "hook", "claude-code"], None),
    (["--vault", "/a", "hook", "codex", "--vault", "/b"], None),
    (["hook", "codex", "{}", "extra"], None),
])
def test_which_command_lines_the_client_takes(argv: list[str], parsed: tuple[str, str | None, str | None] | None
                                              ) -> None:
    assert hook_client.parse_argv(argv) == parsed


def test_the_servers_dispatcher_declines_hook_events_it_cannot_answer(fake_embedder: HashEmbedder) -> None:
    """An embeddings-only server (`memex watch`'s) declines; a malformed event is declined, not an error."""
    info = {"model_id": fake_embedder.model_id, "dim": fake_embedder.dim, "setting": "auto"}
    for dispatcher, event, wanted in (
        (warm_requests.Dispatcher(fake_embedder, info), {"agent": "claude-code", "event": {}}, "declined"),
        (warm_requests.Dispatcher(fake_embedder, info, lambda e: hook_run.answer(Path("/nowhere"), fake_embedder,
                                                                                  "auto", e, True)),
         {"agent": "cursor", "event": []}, "declined"),
    ):
        ours, theirs = socket.socketpair()
        with ours, theirs:
            theirs.sendall(json.dumps({"hook": event}).encode() + b"\n")
            dispatcher.answer(ours)
            assert wanted in json.loads(theirs.recv(1 << 16))


LEFTOVER = """\
import atexit, os, threading, time
atexit.register(lambda: open(os.environ["MEMEX_TEST_ATEXIT"], "w").write("ran"))
# A thread that outlives the hook's answer, as a model head start nobody
# needed any more does: the interpreter's teardown would wait for it.
threading.Thread(target=time.sleep, args=(600,), name="leftover").start()
"""


def test_a_hook_process_ends_once_its_answer_is_out_without_waiting_for_leftover_threads(
    vault_root: Path, project: Path, tmp_path: Path,
) -> None:
    """Found timing hooks on an idle machine: after a prompt's answer was
    written, the interpreter's teardown held the agent another 30-80 ms.
    The console script now ends the process at once (memex/console.py),
    still running the atexit functions."""
    lexical_only(vault_root)
    with Vault(vault_root) as vault:
        vault.add("The staging database is postgres 16 on port 5433", scope="project:shop-api")
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(LEFTOVER, encoding="utf-8")
    marker = tmp_path / "atexit-ran"
    event = _event("UserPromptSubmit", project, prompt="which port does the staging database use?")
    done = run_hook("claude-code", json.dumps(event), vault_root, sync=False, env={
        "PYTHONPATH": str(site), "MEMEX_TEST_ATEXIT": str(marker)})
    assert done.returncode == 0, done.stderr
    assert "port 5433" in _context(done.stdout)
    assert marker.read_text() == "ran"


def test_the_warm_server_indexes_memories_that_came_without_memex_before_it_answers(
    vault_root: Path, project: Path, fake_embedder: HashEmbedder, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Found trying a vault as a new clone has it: the memory files came
    through git, the index (git-ignored) did not, and every hook of the
    session recalled nothing until someone ran `memex reindex`. The warm
    server now catches up with the files when it starts, as the watcher does."""
    monkeypatch.delenv("MEMEX_WARM", raising=False)
    monkeypatch.setattr(warm.embed, "load_embedder", lambda setting: fake_embedder)
    set_config(vault_root, "agents", "warm_seconds = 3")
    with Vault(vault_root, embedder=fake_embedder) as vault:
        port = vault.add("The staging database is postgres 16 on port 5433", scope="project:shop-api").id
    for index_file in (vault_root / ".memex").glob("index.db*"):
        index_file.unlink()
    server = threading.Thread(target=warm_server.serve, args=(vault_root,), daemon=True)
    server.start()
    with Vault(vault_root) as vault:
        wait_for(lambda: warm.connect(vault), 30, "the warm server to answer")
    done, _ = _hook(vault_root, _event("UserPromptSubmit", project, prompt="which port does staging use?"))
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert port in _context(done.stdout)
    server.join(30)
    assert not server.is_alive()
