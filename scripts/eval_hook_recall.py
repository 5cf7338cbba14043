#!/usr/bin/env python3
"""What a prompt hook injects, by the way it is answered: recall of the hook's own answer.

    .venv/bin/python scripts/eval_hook_recall.py                              # the eval sets
    .venv/bin/python scripts/eval_hook_recall.py --locomo /tmp/locomo/locomo10.zip --half report
    .venv/bin/python scripts/eval_hook_recall.py --json

A ``UserPromptSubmit`` hook (Claude Code's, memex/agents/hooks.py) is
answered one of three ways (docs/agents.md, "How a hook stays out of the
agent's way"):

- ``lexical``: BM25 only, no model (what a prompt that found no warm server
  got before its vector came from a child process, and what it still gets
  when that vector does not come);
- ``in_process``: hybrid, the hook's own process searching with the
  prompt's vector as its child process hands it over (a vault opened per
  prompt without a model, as a hook process that found no server opens it;
  the vector made here with the same model);
- ``warm``: hybrid, answered by the warm server's code
  (:func:`memex.agents.hook_run.answer`: its vault kept open between prompts).

Each prompt is sent as a hook event of a new session (nothing is held back
as shown earlier) with no project (every memory is in scope ``user``), and
what the answer's ``<relevant-memories>`` block shows is compared with the
prompt's evidence: after the recall gate, the ``recall_limit`` and the
agent's block size, exactly what the agent would get. Figures per group:
``hit`` (questions whose injected set holds a memory that answers them),
``relevant`` / ``injected`` (memories injected for questions, and how many
of those answer it), and ``unrelated`` (prompts nothing answers that get
anything injected). Decay is off (the sets' dates are months old) and so is
keyword capture (no prompt changes the vault).

Vaults: those of scripts/eval_recall.py (its sampled ones with --sampled),
and with --locomo the conversations of LoCoMo's ``--half`` (scripts/locomo.py;
``report`` for figures), one memory per turn, each question a prompt.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

import eval_public  # noqa: E402
import eval_search  # noqa: E402
import locomo  # noqa: E402
from eval_recall import EvalVault, eval_vaults  # noqa: E402

from memex.agents import claude_code, hook_io, hook_run, hooks  # noqa: E402
from memex.agents.query_child import ChildEmbedder  # noqa: E402
from memex.context.inject import block_ids  # noqa: E402
from memex.embedding import embed  # noqa: E402
from memex.text import recall_query  # noqa: E402
from memex.vault import Vault  # noqa: E402

MODES = ("lexical", "in_process", "warm")
# What the eval's vaults set in their config: no decay, no capture.
EVAL_CONFIG = {"decay": "rate = 0.0", "context": "auto_capture = false"}

Ask = Callable[[Path, dict[str, Any]], dict[str, Any]]


def _event(prompt: str) -> dict[str, Any]:
    return {"session_id": str(uuid.uuid4()), "hook_event_name": "UserPromptSubmit", "prompt": prompt}


def _in_vault(vault: Vault, event: dict[str, Any]) -> dict[str, Any]:
    try:
        return claude_code.handle(vault, event).answer
    finally:
        vault.close()


def askers(embedder: embed.Embedder, setting: str) -> dict[str, Ask]:
    """How each mode answers one event for the vault at a root: the hook's JSON answer."""
    return {
        "lexical": lambda root, event: _in_vault(hook_io.hook_vault(str(root), lexical=True), event),
        "in_process": lambda root, event: _in_vault(_first_turn_vault(root, embedder, setting, event["prompt"]), event),
        "warm": lambda root, event: hook_run.answer(
            root, embedder, setting, {"agent": "claude-code", "event": event}, True)[0].get("answer", {}),
    }


def _first_turn_vault(root: Path, embedder: embed.Embedder, setting: str, prompt: str) -> Vault:
    """The vault as a hook process that found no server opens it: no model, the
    prompt's vector from its child (memex/agents/query_child.py, here made in this process)."""
    vault = hook_io.hook_vault(str(root), lexical=True)
    query = recall_query(prompt)
    vector = [float(x) for x in embed.query_vector(embedder, query)]
    vault.set_embedder(ChildEmbedder(embedder.model_id, embedder.dim, setting, query, vector))
    return vault


def injected(answer: dict[str, Any]) -> list[str]:
    context = answer.get("hookSpecificOutput", {}).get("additionalContext", "")
    return block_ids(context)


def _prepare(vault: Vault) -> Path:
    config = vault.paths.config
    text = config.read_text(encoding="utf-8")
    for table, line in EVAL_CONFIG.items():
        header = f"\n[{table}]\n"
        text = text.replace(header, f"{header}{line}\n", 1) if header in text else f"{text}{header}{line}\n"
    config.write_text(text, encoding="utf-8")
    vault.close()
    return vault.root


def locomo_vaults(path: Path, half: str, embedder: embed.Embedder, tmp: Path) -> Iterator[EvalVault]:
    for conv in locomo.select(path, half):
        memories = [{**m, "scope": "user"} for m in eval_public.memories_of(conv)]
        questions = eval_public.questions_of(conv)
        with eval_search.build_vault(tmp / f"locomo{conv.id}", memories, embedder) as vault:
            yield EvalVault(f"locomo{conv.id}", f"locomo-{half}", len(memories), vault,
                            [(q["query"], frozenset(q["relevant"])) for q in questions])


def measure(sets: Iterator[EvalVault], ask: dict[str, Ask], progress: Callable[[str], None]) -> dict[str, Any]:
    """Per mode and group: hit / questions, relevant / injected, unrelated recalling / unrelated;
    and per group how many prompts the two hybrid modes answered differently."""
    out: dict[str, dict[str, dict[str, int]]] = {mode: {} for mode in ask}
    differ: dict[str, int] = {}
    for ev in sets:
        root = _prepare(ev.vault)
        progress(f"{ev.name}: {len(ev.prompts)} prompts")
        for prompt, evidence in ev.prompts:
            shown: dict[str, list[str]] = {}
            for mode, answer in ask.items():
                ids = injected(answer(root, _event(prompt)))
                shown[mode] = ids
                g = out[mode].setdefault(ev.group, {"questions": 0, "hit": 0, "injected": 0, "relevant": 0,
                                                    "unrelated": 0, "unrelated_recalling": 0})
                if evidence:
                    g["questions"] += 1
                    g["hit"] += bool(set(ids) & evidence)
                    g["injected"] += len(ids)
                    g["relevant"] += len(set(ids) & evidence)
                else:
                    g["unrelated"] += 1
                    g["unrelated_recalling"] += bool(ids)
            if "in_process" in shown and "warm" in shown:
                differ[ev.group] = differ.get(ev.group, 0) + (shown["in_process"] != shown["warm"])
        hook_run.close(root)
    return {"modes": out, "hybrid_answers_differing": differ}


def print_table(result: dict[str, Any]) -> None:
    modes = result["modes"]
    groups = list(next(iter(modes.values())))
    print("hit: questions whose injected memories hold evidence; relevant/injected: memories injected for "
          "questions; unrelated: prompts nothing answers that got anything injected")
    print(f"{'group':16s} {'mode':11s} {'hit':>13s} {'relevant/injected':>20s} {'unrelated':>13s}")
    for g in groups:
        for mode, per in modes.items():
            m = per[g]
            hit = f"{m['hit']}/{m['questions']}" + (f" {m['hit'] / m['questions']:.2f}" if m["questions"] else "")
            rel = f"{m['relevant']}/{m['injected']}" + (
                f" {m['relevant'] / m['injected']:.2f}" if m["injected"] else "")
            unrel = f"{m['unrelated_recalling']}/{m['unrelated']}" if m["unrelated"] else "-"
            print(f"{g:16s} {mode:11s} {hit:>13s} {rel:>20s} {unrel:>13s}")
    print("prompts the two hybrid modes answered differently:", result["hybrid_answers_differing"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="auto", help="[embedding] model setting (default: auto, MiniLM)")
    parser.add_argument("--locomo", type=Path, help="LoCoMo (a folder, the zip or locomo10.json): its --half too")
    parser.add_argument("--half", choices=("choose", "report", "all"), default="report")
    parser.add_argument("--only-locomo", action="store_true", help="leave out the eval sets (with --locomo)")
    parser.add_argument("--sampled", action="store_true", help="also eval_recall's sampled small vaults")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    args = parser.parse_args()
    embedder = embed.load_embedder(args.model)
    if embedder is None:
        raise SystemExit(f"no embedding model for --model {args.model}: {embed.why_no_embedder(args.model)}")
    ask = askers(embedder, args.model)

    def sets(tmp: Path) -> Iterator[EvalVault]:
        if not args.only_locomo:
            yield from eval_vaults(embedder, tmp, sampled=args.sampled, flat=True)
        if args.locomo is not None:
            yield from locomo_vaults(args.locomo, args.half, embedder, tmp)

    with tempfile.TemporaryDirectory() as tmp:
        result = measure(sets(Path(tmp)), ask, lambda line: print(line, file=sys.stderr))
    result["model"] = embedder.model_id
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print_table(result)


if __name__ == "__main__":
    main()
