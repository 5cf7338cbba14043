#!/usr/bin/env python3
"""Measure what memex hands agents against their documented limits; print JSON.

    .venv/bin/python scripts/agent_limits.py

Runs the installed ``memex`` program (hooks and ``memex mcp`` through the
official MCP client) on a fresh lexical-only vault in a temp folder, with the
issue-13 scenarios: two 18.8k-character project memories at SessionStart,
a recall budget raised to 100,000 characters, forty 2k-character memories
searched with limit 50, ``limit: 1000000``, and a 1 MB ``memory_add``.
Limits (docs/agents.md): Claude Code keeps additionalContext up to 10,000
characters; Codex previews hook output over about 2,500 tokens; Claude Code
warns at 10,000 tokens of MCP tool output.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters

from memex.context.tokens import count_text
from memex.vault import Vault, init_vault

MEMEX = str(Path(sys.executable).with_name("memex"))


def set_config(vault: Path, table: str, line: str) -> None:
    config = vault / ".memex" / "config.toml"
    text = config.read_text(encoding="utf-8")
    header = f"\n[{table}]\n"
    text = text.replace(header, f"{header}{line}\n", 1) if header in text else f"{text}{header}{line}\n"
    config.write_text(text, encoding="utf-8")


def hook(agent: str, vault: Path, payload: dict[str, Any]) -> str:
    env = {**os.environ, "MEMEX_VAULT": str(vault), "MEMEX_HOOK_SYNC": "1", "MEMEX_WARM": "0"}
    out = subprocess.run([MEMEX, "hook", agent], input=json.dumps(payload), capture_output=True, text=True,
                         env=env, check=True).stdout
    text: str = json.loads(out)["hookSpecificOutput"]["additionalContext"] if out.strip() else ""
    return text


async def mcp_figures(vault: Path) -> dict[str, Any]:
    params = StdioServerParameters(command=MEMEX, args=["--vault", str(vault), "mcp"], env=dict(os.environ))
    async with Client(params, read_timeout_seconds=300) as client:
        page = await client.call_tool("memory_search", {"query": "deploy runbook step", "limit": 50})
        huge = await client.call_tool("memory_search", {"query": "deploy", "limit": 1000000})
        start = time.perf_counter()
        big = await client.call_tool("memory_add", {"text": "deploy " * 150_000})
        seconds = time.perf_counter() - start
    answer = page.structured_content or {}
    return {
        "search_limit50_answer_chars": len(json.dumps(answer, ensure_ascii=False)),
        "search_limit50_hits_shown": len(answer.get("hits", [])),
        "search_limit50_truncated": answer.get("truncated"),
        "search_limit_1000000": huge.content[0].text,  # type: ignore[union-attr]
        "add_1MB_refused": big.is_error, "add_1MB_seconds": round(seconds, 2),
        "add_1MB_message": big.content[0].text[:200],  # type: ignore[union-attr]
    }


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        vault = init_vault(root / "vault", git=False)
        set_config(vault, "embedding", 'model = "none"')
        set_config(vault, "recall", "recall_max_injected_chars = 100000")
        set_config(vault, "recall", "recall_score_threshold = 0.0")
        project = root / "shop-api"
        (project / ".git").mkdir(parents=True)
        with Vault(vault) as v:
            for i in range(2):
                v.add(f"Runbook {i} for shop-api: " + ("step <b> & check the canary; " * 700)[:18_800],
                      scope="project:shop-api")
            for i in range(40):
                v.add(f"Deploy runbook step {i}: " + f"check service {i} health and its canary. " * 50)
        base = {"session_id": "5f0c2b9e-8a41-4c7d-9e3b-2d1f6a7b8c90", "cwd": str(project),
                "transcript_path": str(project / "none.jsonl")}
        start = hook("claude-code", vault, {**base, "hook_event_name": "SessionStart", "source": "startup"})
        codex = hook("codex", vault, {**base, "hook_event_name": "SessionStart", "source": "startup"})
        prompt = hook("claude-code", vault, {**base, "hook_event_name": "UserPromptSubmit",
                                             "prompt": "what does the shop-api runbook say about the canary?"})
        figures = {
            "claude_session_start_chars": len(start),
            "claude_user_prompt_chars": len(prompt),
            "codex_session_start_chars": len(codex), "codex_session_start_tokens": count_text(codex),
            **anyio.run(mcp_figures, vault),
        }
    print(json.dumps(figures, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
