"""One hook event run with memex loaded: in the hook's process, or in the warm server.

:mod:`memex.agents.hook_client` decides where an event runs and imports
this module only when it must run it here; the warm server imports it to
answer the events hook processes send it. Either way the same adapter
(:mod:`memex.agents.claude_code`, :mod:`memex.agents.codex`,
:mod:`memex.agents.openclaw`, or a plug-in's: memex/agents/integrations.py)
answers, so an answer does not depend on where it was computed.
"""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memex.agents import hook_io, warm_client
from memex.agents.hook_event import CONTEXT_EVENTS, SYNC_ENV, WARM_AGENTS, Payload
from memex.agents.hook_io import HookResult

if TYPE_CHECKING:
    from memex.agents.query_child import QueryChild
    from memex.embedding.embed import Embedder
    from memex.vault import Vault


def _handler(agent: str) -> Callable[[Vault, Payload], HookResult]:
    """The agent integration's handler (memex/agents/integrations.py: memex's own or a plug-in's)."""
    from memex.agents import integrations

    return integrations.hook_handler(agent)


def run_here(
    agent: str, vault_path: str | None, event: Payload, no_server: bool = False, query: QueryChild | None = None,
    hybrid: bool = False,
) -> int:
    """Answer ``event`` in this process (no warm server answered); exit status 0.

    A session's events start the vault's warm server when it is not up, so
    that the next ones are answered by it: SessionStart before its own work
    (the server loads beside it, and the session's first prompt, often sent
    at once by a scripted agent, is more likely to find it up); a prompt, whose
    server stopped after ``warm_seconds`` idle in a long session, once its
    answer is out (not competing with it for the CPU).

    ``no_server``: no server listens for the vault (none was found, or its
    socket was left by a dead one). Until the one started here is up, the
    event is answered without the model when :func:`answers_lexically`
    says so: BM25 only, in this process, which then loads neither numpy
    nor the model (docs/agents.md, "How a hook stays out of the agent's way").

    ``query``: the child forked at the front door that embeds the prompt
    (:mod:`memex.agents.query_child`). With it a prompt gets the hybrid
    answer, server or not; without its vector (it failed, or took too
    long), the answer is lexical while a server is on its way, else the
    model is loaded here. A prompt asking to remember something loads the
    model here anyway (its memory is stored with a vector): its child is
    stopped. ``hybrid``: a prompt the front door wants answered with the
    model although no server answered: without a child (no core to spare,
    no fork), the model is loaded here.
    """
    opened: list[Vault] = []
    name = event.get("hook_event_name") if agent in WARM_AGENTS else None
    if query is not None and remember_request(event):
        query.close()
        query = None
    lexical = not hybrid and query is None and no_server and answers_lexically(vault_path, event)
    if name == "UserPromptSubmit" and not lexical and query is None:
        # A prompt is always embedded; SessionStart only when the project has
        # too few memories of its own, so it loads the model only then.
        _model_head_start(vault_path)

    def handler() -> HookResult:
        if query is not None:
            vault = _vault_with_query(vault_path, query, lexical_without=no_server)
        else:
            vault = hook_io.hook_vault(vault_path, warm=not lexical, lexical=lexical)
        opened.append(vault)
        if name == "SessionStart":
            _start_warm_server(vault)
        result = _handler(agent)(vault, event)
        if lexical and result.deferred is not None:
            result.deferred = _with_model(vault, result.deferred)
        return result

    try:
        code = hook_io.run_hook(agent, handler, vault_path=vault_path)
    finally:
        if query is not None:
            query.close()
    for vault in opened:
        if name == "UserPromptSubmit":
            _start_warm_server(vault)
        vault.close()
    return code


def answers_lexically(vault_path: str | None, event: Payload) -> bool:
    """Whether an event that found no warm server is answered without the model.

    Only while a server is on its way: SessionStart and UserPromptSubmit
    start one unless ``MEMEX_WARM=0`` or ``[agents] warm_seconds = 0``, and
    the session's later events get the hybrid search from it. With the
    server turned off no server ever comes, so every event loads the model
    (the price of hybrid recall without a server). A prompt's vector comes
    from its child process (memex/agents/query_child.py): this decides for
    a prompt only when the child gave none. A
    prompt asking to remember something is stored at once, and a memory is
    stored with its vector and checked against its near-duplicates by
    meaning (memex/dedup/pipeline.py): that prompt loads the model too.
    """
    from memex.agents.hook_event import default_vault_path
    from memex.config import load_config

    if event.get("hook_event_name") not in CONTEXT_EVENTS or warm_client.turned_off() or remember_request(event):
        return False
    root = Path(vault_path).expanduser() if vault_path else default_vault_path()
    try:
        return warm_client.configured_idle(load_config(root)) > 0
    except Exception:  # noqa: BLE001 - the hook's own vault opening says what is wrong
        return False


def remember_request(event: Payload) -> bool:
    """Whether the event is a prompt asking to remember something (stored at once, with its vector)."""
    from memex.context.extract import is_remember_request
    from memex.text import strip_blocks

    prompt = event.get("prompt")
    return event.get("hook_event_name") == "UserPromptSubmit" and isinstance(prompt, str) and \
        is_remember_request(strip_blocks(prompt))


def _vault_with_query(vault_path: str | None, query: QueryChild, lexical_without: bool) -> Vault:
    """The hook's vault, searching with the child's vector of the prompt.

    Without the vector, lexical when ``lexical_without`` (a server is on its
    way), else with the model loaded here; the hook log says which and why.
    """
    vault = hook_io.hook_vault(vault_path, lexical=True)
    from memex.agents.hooks import switch

    if not switch(vault, "auto_recall"):  # nothing will be searched: neither wait nor load
        query.close()
        return vault
    import numpy  # noqa: F401 - the vector search's, imported here while the child still embeds

    setting = vault.config.embedding_model
    embedder = query.embedder(setting)
    if embedder is not None:
        vault.set_embedder(embedder)
    elif setting != "none":
        how = "answered lexically" if lexical_without else "loading the model in the hook"
        hook_io.log_line(vault, f"UserPromptSubmit: no vector of the prompt ({query.why_not}): {how}")
        if not lexical_without:
            vault.set_embedder("config")
    return vault


def _with_model(vault: Vault, work: Callable[[], object]) -> Callable[[], object]:
    """``work`` done with the vault's model (through the warm server when one
    answers by then): what an event leaves for after its lexical answer
    writes memories (SessionStart commits the sessions its agent left), and
    a memory is stored with its vector."""
    def run() -> object:
        from memex.agents import warm

        vault.set_embedder(warm.connect(vault) or "config")
        return work()

    return run


def _start_warm_server(vault: Vault) -> None:
    try:
        warm_client.start(vault)
    except Exception:  # noqa: BLE001 - only a speed-up for later events
        pass


def _model_head_start(vault_path: str | None) -> None:
    """The prompt will be embedded: load the model beside the imports
    (memex/embedding/headstart.py), unless the vault has no model."""
    from memex.agents.hook_event import default_vault_path
    from memex.config import load_config
    from memex.embedding import headstart
    from memex.layout import is_vault

    root = Path(vault_path).expanduser() if vault_path else default_vault_path()
    try:
        setting = load_config(root).embedding_model if is_vault(root) else None
    except Exception:  # noqa: BLE001 - the hook says what is wrong with the config
        setting = None
    if setting is not None:
        headstart.start(setting)


def run_detached(agent: str, vault_path: str | None, event: Payload) -> None:
    """The work of an event the agent does not wait for, in a process it no
    longer waits on (:func:`memex.agents.hook_client.detach`): inline, with
    any failure in the vault's hook log instead of a stderr nobody reads."""
    os.environ[SYNC_ENV] = "1"  # this process is already detached: no second fork
    vault: Vault | None = None
    try:
        vault = hook_io.hook_vault(vault_path, warm=True)
        result = _handler(agent)(vault, event)
        if result.deferred is not None:
            result.deferred()
    except Exception as exc:  # noqa: BLE001 - nobody is left to tell but the log
        hook_io.log_line(vault, f"{agent} {event.get('hook_event_name') or 'notify'}: {type(exc).__name__}: {exc}")
    finally:
        if vault is not None:
            vault.close()


# The warm server's open vault, kept between events: a search in a
# long-lived process reuses what it loaded (the vector matrix, the term
# statistics; docs/benchmarks.md), and opening and closing the index cost
# every event about 10 ms. Reopened when the config or the index file is
# replaced (a rebuilt index.db is a new file the old connection would
# never see).
_OPEN: dict[Path, tuple[Vault, tuple[object, ...]]] = {}


def _stamp(root: Path) -> tuple[object, ...]:
    from memex.layout import VaultPaths

    paths = VaultPaths(root)
    out: list[object] = []
    for path in (paths.config, paths.index):
        try:
            info = path.stat()
        except OSError:
            out.append(None)
            continue
        out.append((info.st_ino, info.st_dev, info.st_size, info.st_mtime_ns) if path == paths.config
                   else (info.st_ino, info.st_dev))
    return tuple(out)


def server_vault(root: Path, model: Embedder | None) -> Vault:
    """The vault the warm server answers from (opened once, reopened when replaced)."""
    from memex.vault import Vault

    stamp = _stamp(root)
    held = _OPEN.get(root)
    if held is not None and held[1] == stamp:
        return held[0]
    if held is not None:
        held[0].close()
        del _OPEN[root]
    vault = Vault(root, embedder=model)
    vault.lock_wait = hook_io.HOOK_LOCK_WAIT
    _OPEN[root] = (vault, stamp)
    return vault


def close(root: Path) -> None:
    """The warm server stops: close the vault it kept open."""
    held = _OPEN.pop(root, None)
    if held is not None:
        held[0].close()


def prepare(root: Path, model: Embedder) -> None:
    """Load in the warm server, before any hook asks, what answering one takes
    (the handlers' modules, the open vault, one search's caches), so that the
    session's first prompt is not the one that pays for it.

    First it brings the index in line with the files, as the watcher does
    when it starts (docs/watching.md): memories that came without memex (a
    fresh clone of the vault, whose index git ignores; a ``git pull``; a
    restored backup) were found by no hook until someone ran ``memex
    reindex``. Only what changed is read; the server listens once it is done,
    and hooks answer on their own meanwhile."""
    _handler("claude-code")
    vault = server_vault(root, model)
    vault.reindex()
    vault.search("memex", limit=1)


def answer(
    root: Path, model: Embedder, setting: str, request: dict[str, Any], quiet: bool
) -> tuple[dict[str, Any], Callable[[], None] | None]:
    """The warm server's answer to ``{"agent", "event"}`` sent by a hook process.

    ``{"answer": {...}}`` (what the hook prints), ``{"error": line}`` (what
    it says on stderr), or ``{"declined": why}``: the hook then runs the
    event itself. Only events whose answer the agent waits for come here.
    With the reply comes the event's work to do after it (a new session
    commits the sessions its agent left, memex/agents/hooks.py), or None:
    the server does it once the hook has its answer.
    ``setting`` is the embedding model the server loaded (``[embedding] model``).
    ``quiet``: this process's stderr is nobody's, so what the handler says
    there goes back to the hook to print (the dedicated warm server; not
    the watcher, whose stderr is a terminal).
    """
    agent, event = request.get("agent"), request.get("event")
    if agent not in ("claude-code", "codex") or not isinstance(event, dict):
        return {"declined": "not a Claude Code or Codex event"}, None
    if event.get("hook_event_name") not in CONTEXT_EVENTS:
        return {"declined": "only SessionStart and UserPromptSubmit are answered here"}, None
    said = io.StringIO()
    try:
        vault = server_vault(root, model)
        if vault.config.embedding_model != setting:  # the config changed since the server loaded its model
            return {"declined": "the vault now uses another embedding model"}, None
        with contextlib.redirect_stderr(said) if quiet else contextlib.nullcontext():
            result = _handler(str(agent))(vault, event)
        out: dict[str, Any] = {"answer": result.answer}
        then = None if result.deferred is None else _logged(vault, f"{agent} {event.get('hook_event_name')}",
                                                            result.deferred)
    except Exception as exc:  # noqa: BLE001 - the hook's fail-open contract, from afar
        close(root)  # whatever went wrong, the next event starts afresh
        out, then = {"error": hook_io.one_line(exc, str(root))}, None
    if said.getvalue():
        out["stderr"] = said.getvalue()
    return out, then


def _logged(vault: Vault, label: str, work: Callable[[], object]) -> Callable[[], None]:
    """``work``, its failure written to the vault's hook log (nobody reads the server's stderr)."""
    def run() -> None:
        try:
            work()
        except Exception as exc:  # noqa: BLE001 - as a detached hook's child does
            hook_io.log_line(vault, f"{label}: {type(exc).__name__}: {exc}")

    return run
