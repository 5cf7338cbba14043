"""memex in the real OpenClaw, end to end: real turns of the `openclaw` CLI
(pinned by scripts/openclaw_env.sh), one-shot (`openclaw agent --local`) and
through a gateway, against the fake model server (tests/fake_model_server.py),
with memex installed the documented way (`memex install openclaw`) into a
throwaway HOME.

Everything is asserted from outside: what the model was sent (the server's
recorded requests), what the vault holds afterwards, and the client's own
output. Nothing here calls the engine's methods: OpenClaw decides what runs.

Slow by nature (an OpenClaw turn takes 20-60 s on a loaded 2-core machine):
one gateway serves the gateway tests of this module, in file order.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from memex import context
from memex.context import archive
from memex.vault import Vault
from tests.fake_model_server import FakeModelServer, Rule, latest_user_input
from tests.hook_helpers import MEMEX
from tests.node_tools import node, openclaw_package

pytestmark = pytest.mark.model  # the engine process loads the real embedding model

ANSI = re.compile(r"\x1b\[[0-9;]*m")
TIMEOUT = 600
# What memex can cause in OpenClaw's output, and what the issue saw: the
# engine set aside, a fail-open warning, a handler left pending at shutdown.
PROBLEM = re.compile(r"degraded to|fail open|quarantin|drain timed out|still pending|Traceback|"
                     r"memex[^\n]*(error|failed|timed out)|context.engine[^\n]*(error|failed)", re.IGNORECASE)


def problems(output: str) -> list[str]:
    return [line for line in ANSI.sub("", output).splitlines() if PROBLEM.search(line)]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class OpenClaw:
    """A throwaway HOME with OpenClaw pointed at the fake server and memex installed."""

    root: Path
    server: FakeModelServer
    port: int
    vault: Path = field(init=False)
    home: Path = field(init=False)
    env: dict[str, str] = field(init=False)

    def __post_init__(self) -> None:
        package, _ = openclaw_package()
        self.cli = [node(), str(package / "openclaw.mjs")]
        self.home = self.root / "home"
        self.vault = self.root / "vault"
        (self.home / ".openclaw").mkdir(parents=True)
        subprocess.run([MEMEX, "init", str(self.vault)], check=True, capture_output=True, timeout=120)
        config = {
            "models": {"providers": {"fake": {
                "baseUrl": f"{self.server.url}/v1", "api": "openai-completions", "apiKey": "offline",
                "models": [{"id": "fake-model", "name": "fake", "contextWindow": 128000, "maxTokens": 4096}]}}},
            "agents": {"defaults": {"model": {"primary": "fake/fake-model"}}},
            "gateway": {"mode": "local", "port": self.port, "bind": "loopback", "auth": {"mode": "none"}},
        }
        (self.home / ".openclaw" / "openclaw.json").write_text(json.dumps(config, indent=2), encoding="utf-8")
        keep = {k: v for k, v in os.environ.items() if not k.startswith(("OPENCLAW_", "MEMEX_VAULT"))}
        self.env = {**keep, "HOME": str(self.home), "PATH": f"{Path(node()).parent}:/usr/bin:/bin",
                    "OPENCLAW_NO_UPDATE_CHECK": "1", "OPENCLAW_DISABLE_BONJOUR": "1", "NO_COLOR": "1",
                    "MEMEX_WARM": "0"}
        # The documented way (docs/openclaw.md, "Install").
        done = subprocess.run([MEMEX, "--vault", str(self.vault), "install", "openclaw", "--json"], env=self.env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self.cli, *args], cwd=self.root, env=self.env, capture_output=True, text=True,
                              timeout=TIMEOUT)

    def agent(self, key: str, message: str, local: bool) -> str:
        """One real turn; the client's whole output (checked for problems)."""
        proc = self.run("agent", *(["--local"] if local else []), "--session-key", key, "-m", message)
        output = proc.stdout + proc.stderr
        assert proc.returncode == 0, output[-4000:]
        assert problems(output) == [], problems(output)
        return output

    def requests_about(self, words: str) -> list[str]:
        """Bodies of the chat requests whose user input contains ``words``."""
        return [r.text for r in self.server.of("chat") if words in latest_user_input("chat", r.body)[0]]

    def memories(self) -> list[Any]:
        with Vault(self.vault) as vault:
            return list(vault.list())

    def wait_for_memory(self, words: str, seconds: float = 120) -> Any:
        deadline = time.monotonic() + seconds
        while True:
            found = [m for m in self.memories() if words in m.body]
            if found or time.monotonic() > deadline:
                assert found, f"no memory with {words!r}: {[m.body for m in self.memories()]}"
                return found[0]
            time.sleep(0.5)


def tool_results(oc: OpenClaw, tool: str) -> list[str]:
    """The tool results sent back to the model for calls of memex's ``tool``."""
    return [str(m.get("content")) for r in oc.server.of("chat") for m in r.body.get("messages", [])
            if m.get("role") == "tool" and f"openclaw:memex:{tool}" in str(m.get("content"))]


def seed(oc: OpenClaw, text: str) -> str:
    with Vault(oc.vault) as vault:
        return vault.add(text, scope="agent:openclaw").id


def turns_of(oc: OpenClaw, key: str) -> list[dict[str, Any]]:
    with Vault(oc.vault) as vault:
        return archive.read_turns(vault, context.session_id(session_key=key))


@pytest.fixture
def local(tmp_path: Path) -> Iterator[OpenClaw]:
    with FakeModelServer() as server:
        yield OpenClaw(tmp_path, server, free_port())


def test_local_turns_recall_and_archive_each_turn_once(local: OpenClaw) -> None:
    """`openclaw agent --local`: memex is the engine of a real turn (not the
    legacy fallback), the memory reaches the model, the turn is committed
    once, and the user's request to remember is stored at once."""
    seed(local, "The billing service ships with blue-green releases every Friday.")
    key = "agent:main:e2e-local"
    local.agent(key, "When does the billing service ship? Also, remember that integration tests need docker.",
                local=True)
    [sent] = local.requests_about("When does the billing service ship")
    assert "<relevant-memories>" in sent and "blue-green releases every Friday" in sent
    [turn] = turns_of(local, key)
    assert turn["key"] and [m["role"] for m in turn["messages"]] == ["user", "assistant"]
    captured = local.wait_for_memory("integration tests need docker", seconds=5)
    assert captured.scope == "agent:openclaw" and captured.source == "openclaw"
    # The next one-shot continues the conversation: recalled again, one more turn archived.
    local.agent(key, "And which day was the billing release again?", local=True)
    [again] = local.requests_about("which day was the billing release")
    assert "blue-green releases every Friday" in again and "integration tests need docker" in again
    first, second = turns_of(local, key)
    assert first["key"] != second["key"] and first == turn


# --- one gateway for the rest of the module ------------------------------------------------


@dataclass
class Gateway:
    oc: OpenClaw
    proc: subprocess.Popen[str]
    log: Path

    def output(self) -> str:
        return ANSI.sub("", self.log.read_text(encoding="utf-8", errors="replace"))

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return self.proc.wait(timeout=120)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    root = tmp_path_factory.mktemp("openclaw-gateway")
    with FakeModelServer() as server:
        oc = OpenClaw(root, server, free_port())
        log = root / "gateway.log"
        with open(log, "w", encoding="utf-8") as sink:
            proc = subprocess.Popen([*oc.cli, "gateway", "--port", str(oc.port), "--bind", "loopback"],
                                    cwd=root, env=oc.env, stdout=sink, stderr=subprocess.STDOUT, text=True)
        gw = Gateway(oc, proc, log)
        try:
            deadline = time.monotonic() + TIMEOUT
            while not re.search(r"\[gateway\] ready$", gw.output(), re.MULTILINE):
                assert proc.poll() is None, gw.output()[-4000:]
                assert time.monotonic() < deadline, gw.output()[-4000:]
                time.sleep(1)
            yield gw
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=60)


def test_gateway_turn_recalls_and_memory_search_reads_memex(gateway: Gateway) -> None:
    oc = gateway.oc
    memory_id = seed(oc, "The office plants are watered on Mondays by the facilities team.")
    oc.agent("agent:main:e2e-gw", "Who waters the office plants?", local=False)
    [sent] = oc.requests_about("Who waters the office plants")
    assert "<relevant-memories>" in sent and "watered on Mondays" in sent
    assert len(turns_of(oc, "agent:main:e2e-gw")) == 1
    # OpenClaw's own memory search (the gateway's memory.search) reads memex: memex holds the memory slot.
    proc = oc.run("gateway", "call", "memory.search", "--params", json.dumps({"query": "office plants watered"}),
                  "--json", "--timeout", "60000")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    answer = json.loads(proc.stdout)
    assert answer["provider"] == "memex"
    assert [r["citation"] for r in answer["results"]][:1] == [memory_id]
    assert "watered on Mondays" in answer["results"][0]["snippet"]


def test_tools_store_then_recall_then_forget(gateway: Gateway) -> None:
    """The model calls memex's tools through OpenClaw (Tool Search's tool_call,
    OpenClaw's default surface); the gateway's memex process answers."""
    oc = gateway.oc
    fact = "The staging database is called heron."
    oc.server.add(Rule(when="note the staging database", tool="tool_call", text="",
                       arguments={"id": "memex_store", "args": {"text": fact}}))
    oc.agent("agent:main:e2e-tools-1", "Please note the staging database name for later: heron.", local=False)
    stored = oc.wait_for_memory("called heron", seconds=5)
    assert stored.scope == "agent:openclaw" and stored.source == "tool"
    assert any(stored.id in t for t in tool_results(oc, "memex_store")), "the tool's answer went back to the model"

    # Another conversation: the model asks memex to recall, the stored fact comes back to it.
    oc.server.add(Rule(when="what is staging called", tool="tool_call", text="",
                       arguments={"id": "memex_recall", "args": {"query": "staging database name"}}))
    oc.agent("agent:main:e2e-tools-2", "Quick one: what is staging called?", local=False)
    assert any("heron" in t and "<relevant-memories>" in t for t in tool_results(oc, "memex_recall")), (
        "memex_recall's answer, holding the stored fact, reached the model")

    # Forget through the tool: gone as `memex erase` leaves it, from every file of the vault.
    oc.server.add(Rule(when="forget the staging", tool="tool_call", text="",
                       arguments={"id": "memex_forget", "args": {"id": stored.id, "reason": "user asked"}}))
    oc.agent("agent:main:e2e-tools-2", "Please forget the staging database name.", local=False)
    assert all("called heron" not in m.body for m in oc.memories())
    holding = [p for p in oc.vault.rglob("*") if p.is_file() and b"called heron" in p.read_bytes()]
    assert holding == [], holding
    assert stored.id in (oc.vault / ".memex" / "erasure.log").read_text(encoding="utf-8")


def test_session_end_commits_the_decision_within_the_shutdown_drain(gateway: Gateway) -> None:
    """A decision said in a short conversation is a memory after the session:
    OpenClaw runs session_end at gateway shutdown and gives its handlers 2 s;
    memex answers at once and commits in its own process."""
    oc = gateway.oc
    key = "agent:main:e2e-decision"
    oc.agent(key, "We decided to use pnpm for the monorepo. Can you set up the workspace file?", local=False)
    assert not [m for m in oc.memories() if "pnpm" in m.body], "no commit before the session ends"
    assert gateway.stop() == 0, gateway.output()[-4000:]
    out = gateway.output()
    assert problems(out) == [], problems(out)
    assert "completed cleanly" in out
    decision = oc.wait_for_memory("We decided to use pnpm for the monorepo.")
    assert decision.session == context.session_id(session_key=key) and decision.scope == "agent:openclaw"


def test_the_fake_server_reads_past_openclaws_runtime_context() -> None:
    """OpenClaw sends its runtime context as a user message after the prompt
    (and after a tool's result): a rule must see the prompt, and a tool's
    result must still read as one (else the tool would be called again)."""
    context_note = {"role": "user", "content": [{"type": "text", "text": (
        "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>\nActive exec sessions: none\n<<<END_OPENCLAW_INTERNAL_CONTEXT>>>")}]}
    prompt = {"role": "user", "content": "[Thu 2026-12-03 13:35 UTC] Please note the staging database."}
    assert latest_user_input("chat", {"messages": [prompt, context_note]}) == (prompt["content"], False)
    called = {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function",
                                                   "function": {"name": "tool_call", "arguments": "{}"}}]}
    answered = {"role": "tool", "tool_call_id": "c1", "content": "{}"}
    assert latest_user_input("chat", {"messages": [prompt, called, answered, context_note]}) == ("", True)
