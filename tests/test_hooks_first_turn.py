"""A session's first prompt gets the hybrid answer before the warm server is up.

Measured before: with no server up, a prompt was answered from BM25 alone,
and a memory that matches the prompt by meaning only was never injected
(scripts/eval_hook_recall.py: 67 of 100 hand-written questions found their
evidence lexically, 99 of 100 with the hybrid answer). Now a child process
forked at the hook's front door embeds the prompt while the hook loads the
rest (memex/agents/query_child.py). Which process loads what is behaviour,
pinned here; how long it takes is measured by scripts/bench_hooks.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from memex.agents import claude_code, hook_run, query_child, warm
from memex.embedding import embed
from memex.text import recall_query
from memex.vault import Vault
from tests.hook_helpers import additional_context, hook_with_modules, project_event, set_config
from tests.watchkit import wait_for

pytestmark = pytest.mark.model

MODEL = {"onnxruntime", "tokenizers", "fastembed", "memex.cli"}  # what only the child loads
CACHING = "Product pages are kept in Redis for five minutes before they are rebuilt"
PROMPT = "how do we handle caching in this project?"  # no word in common with CACHING


@pytest.fixture
def caching(vault_root: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A vault whose one answer to PROMPT shares no word with it; the warm
    server on (2 s idle). Waits for the server a test's hooks started to exit."""
    monkeypatch.delenv("MEMEX_WARM", raising=False)
    # The child, whatever the machine's load (by default it needs a spare core).
    monkeypatch.setenv(query_child.ENV, "1")
    set_config(vault_root, "agents", "warm_seconds = 2")
    with Vault(vault_root) as vault:
        found = vault.add(CACHING, scope="user").id
        vault.add("The staging database is postgres 16 on port 5433", scope="user")
    yield found
    path = warm.socket_path(vault_root)
    assert path is not None
    wait_for(lambda: warm.server_status(vault_root) is None and not path.exists(), 90, "the warm server to exit")


def _answers(vault_root: Path, prompt: dict[str, object]) -> tuple[dict[str, object], dict[str, object]]:
    """What the adapter answers over the index without a model, and with it."""
    other = {**prompt, "session_id": "another"}
    with Vault(vault_root, embedder=None) as lexical:
        without = claude_code.handle(lexical, other).answer
    with Vault(vault_root) as hybrid:
        with_model = claude_code.handle(hybrid, {**other, "session_id": "a third"}).answer
    return without, with_model


def test_the_first_prompt_gets_the_hybrid_answer_before_the_server_is_up(
    vault_root: Path, caching: str, project: Path
) -> None:
    prompt = project_event("UserPromptSubmit", project, prompt=PROMPT)
    without, with_model = _answers(vault_root, prompt)
    assert caching not in json.dumps(without)  # BM25 alone finds nothing
    done, modules = hook_with_modules(vault_root, prompt)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert caching in additional_context(done.stdout)
    assert json.loads(done.stdout) == with_model
    # The hook's own process searched with the vector; the model ran in its child.
    assert "numpy" in modules and not modules & MODEL, modules & MODEL
    # It started the warm server, which answers the session's next prompt
    # and does not show the memory again.
    wait_for(lambda: warm.server_status(vault_root), 90, "the warm server the prompt started")
    again, modules = hook_with_modules(vault_root, prompt)
    assert again.returncode == 0 and again.stderr == "", again.stderr
    assert "memex.vault" not in modules and caching not in again.stdout


def test_without_a_core_to_spare_the_first_prompt_loads_the_model_itself_for_the_same_answer(
    vault_root: Path, caching: str, project: Path
) -> None:
    prompt = project_event("UserPromptSubmit", project, prompt=PROMPT)
    done, modules = hook_with_modules(vault_root, prompt, env={query_child.ENV: "0"})
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert caching in additional_context(done.stdout) and "onnxruntime" in modules
    assert json.loads(done.stdout) == _answers(vault_root, prompt)[1]
    wait_for(lambda: warm.server_status(vault_root), 90, "the warm server the prompt started")


def test_the_child_is_forked_only_with_a_core_to_spare(monkeypatch: pytest.MonkeyPatch) -> None:
    assert query_child.spare_core(1.5, 2) and not query_child.spare_core(2.0, 2)
    monkeypatch.setenv(query_child.ENV, "0")
    assert not query_child.wanted()
    monkeypatch.setenv(query_child.ENV, "1")
    assert query_child.wanted()


def test_the_child_embeds_the_query_recall_makes_of_the_prompt(
    vault_root: Path, caching: str, project: Path
) -> None:
    """A prompt carrying a block memex wrote (a session summary a client echoes)
    is searched without the block: the child embeds that same text, so the
    hook still loads no model."""
    block = "<session-summary>\nThe user asked about deploys.\n</session-summary>\n"
    prompt = project_event("UserPromptSubmit", project, prompt=block + PROMPT)
    assert recall_query(block + PROMPT) == PROMPT
    done, modules = hook_with_modules(vault_root, prompt)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert caching in additional_context(done.stdout) and not modules & MODEL, modules & MODEL


def _child(write: Callable[[int], None]) -> query_child.QueryChild:
    """A real child process that does ``write`` with its pipe's write end, then exits."""
    read, end = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            os.close(read)
            write(end)
        except BaseException:  # noqa: BLE001 - a child never returns into pytest
            code = 1
        finally:
            os._exit(code)
    os.close(end)
    return query_child.QueryChild(pid, read)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_a_child_that_ends_without_a_vector_gives_none_and_says_why() -> None:
    child = _child(lambda fd: None)
    assert child.embedder("auto") is None
    assert child.why_not == "the child ended without a vector"
    child = _child(lambda fd: os.write(fd, b'{"none": "embeddings are turned off"}\n') and None)
    assert child.embedder("auto") is None and child.why_not == "embeddings are turned off"
    child = _child(lambda fd: os.write(fd, b"not json\n") and None)
    assert child.embedder("auto") is None and child.why_not == "the child's answer is not JSON"


def test_a_slow_child_is_not_waited_for_past_the_bound_and_is_stopped() -> None:
    child = _child(lambda fd: time.sleep(60))
    pid = child.pid
    started = time.monotonic()
    assert child.reply(wait=0.3) is None
    assert time.monotonic() - started < 30  # bounded (the bound is 0.3 s; generous for a loaded machine)
    assert child.why_not == "no vector within 0.3 s" and _gone(pid)


def test_a_vector_for_another_model_is_not_used() -> None:
    reply = {"setting": "multilingual", "model_id": "e5", "dim": 2, "query": "q", "vector": [1.0, 0.0]}
    child = _child(lambda fd: os.write(fd, json.dumps(reply).encode() + b"\n") and None)
    assert child.embedder("auto") is None and child.why_not == "the child loaded another model"


def test_without_the_vector_the_prompt_is_lexical_while_a_server_comes_else_the_model_loads_here(
    vault_root: Path
) -> None:
    vault = hook_run._vault_with_query(str(vault_root), _child(lambda fd: None), lexical_without=True)
    try:
        assert vault.embedder is None
    finally:
        vault.close()
    log = (vault_root / ".memex" / "cache" / "hooks.log").read_text(encoding="utf-8")
    assert "no vector of the prompt (the child ended without a vector): answered lexically" in log
    vault = hook_run._vault_with_query(str(vault_root), _child(lambda fd: None), lexical_without=False)
    try:
        assert vault.embedder is not None and vault.embedder.model_id == embed.DEFAULT_MODEL_ID
    finally:
        vault.close()


def test_with_recall_off_the_hook_neither_waits_for_the_child_nor_loads_the_model(vault_root: Path) -> None:
    set_config(vault_root, "context", "auto_recall = false")
    child = _child(lambda fd: time.sleep(60))
    pid = child.pid
    vault = hook_run._vault_with_query(str(vault_root), child, lexical_without=False)
    try:
        assert vault.embedder is None and _gone(pid)
    finally:
        vault.close()


def test_the_child_embedder_has_the_prompts_vector_and_embeds_anything_else_here() -> None:
    model = embed.load_embedder("auto")
    assert model is not None
    mine = [0.5] * model.dim
    child = query_child.ChildEmbedder(model.model_id, model.dim, "auto", PROMPT, mine)
    assert child.embed_query([PROMPT]).tolist() == [mine]
    other = ["which port does staging use?"]
    assert np.array_equal(child.embed_query(other), embed.embed_queries(model, other))
    assert np.array_equal(child.embed([CACHING]), model.embed([CACHING]))


def test_the_childs_vector_is_the_models_own(vault_root: Path) -> None:
    """What the child hands over is the vector the model gives in a process
    (forked from a process of its own: this one may hold a model's threads)."""
    code = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from memex.agents import query_child\n"
        "child = query_child.start(Path(sys.argv[1]), sys.argv[2])\n"
        "got = child.embedder('auto')\n"
        "print(json.dumps([got.query, got.embed_query([got.query]).tolist()]))\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(vault_root), "  " + PROMPT + "  "],
                          capture_output=True, text=True, timeout=120, env={**os.environ, query_child.ENV: "1"})
    assert done.returncode == 0, done.stderr
    query, vectors = json.loads(done.stdout)
    model = embed.load_embedder("auto")
    assert model is not None and query == PROMPT
    assert np.allclose(vectors, embed.embed_queries(model, [PROMPT]), atol=1e-6)
