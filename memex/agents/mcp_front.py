"""``memex mcp``'s front door: the handshake answered before the MCP SDK loads.

An agent starts ``memex mcp`` with every session and waits for its
handshake: Claude Code first sends a ``server/discover`` probe and, when it
is not answered within a few seconds, kills the server and starts it again;
Codex leaves out of the first turn a server that has not listed its tools
(unless it is ``required``, and then the turn waits). Importing the MCP SDK
alone takes most of a second of CPU, several seconds on a loaded machine.

So the answers to the handshake's requests (``server/discover``,
``initialize``, ``tools/list`` and the other listings), which depend only on
memex's code and the SDK, are kept in the user's cache folder
(``mcp-handshake-<key>.json``, the key a digest of the code and versions
that shape them) the first time the SDK gives them. A later start answers
them from there at once, and loads the SDK on a thread when a request
needs it (or after :data:`SDK_DELAY`); every request,
the answered ones included (under ids of memex's own, their answers
dropped), reaches the SDK in order, so its session is the one the agent
believes in, and it answers everything else. Nothing the SDK says is
changed. The first start on a machine (no cache yet) waits for the SDK, as
before. Start-up figures: docs/benchmarks.md.

The wire is this process's original stdin and stdout; fd 0 and 1 are
pointed at the null device and stderr while serving, so that nothing a
tool prints can corrupt it (as the SDK's own stdio transport does).
"""

from __future__ import annotations

import hashlib
import json
import os
import queue
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from memex import jsonio

# Requests whose answer depends on nothing but the code: answered from the cache.
CACHED_METHODS = frozenset({
    "server/discover", "initialize", "tools/list", "prompts/list", "resources/list", "resources/templates/list",
})
REPLAY_PREFIX = "memex-front-"
_SOURCES = ("mcp_server.py", "mcp_start.py", "mcp_limits.py", "mcp_front.py")
_PACKAGES = ("mcp", "mcp_types", "pydantic", "pydantic_core")


def cache_key() -> str:
    """A digest of what shapes the handshake's answers: memex's MCP code, its
    version, and the installed SDK and pydantic (a change of any is a new key)."""
    import importlib.metadata
    import importlib.util

    digest = hashlib.sha256(sys.version.encode())
    here = Path(__file__).resolve().parent
    for name in _SOURCES:
        digest.update((here / name).read_bytes())
    for package in _PACKAGES:
        spec = importlib.util.find_spec(package)
        origin = Path(spec.origin) if spec is not None and spec.origin else None
        if origin is not None and origin.exists():
            info = origin.stat()
            digest.update(f"{origin}:{info.st_size}:{info.st_mtime_ns}".encode())
    try:
        from memex.distribution import DISTRIBUTION

        digest.update(importlib.metadata.version(DISTRIBUTION).encode())
    except Exception:  # noqa: BLE001 - a checkout that is not installed: its code is in the digest
        pass
    return digest.hexdigest()[:24]


# The envelope a request carries under the stateless protocol (2026-07-28).
_ENVELOPE = ("io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientCapabilities",
             "io.modelcontextprotocol/clientInfo")
# What says who the client is: the SDK's handshake answers do not depend on
# it (checked with two clients' requests: same answers), so one client's
# answers serve the next, and `memex install mcp` can fill the cache.
_CLIENT_FIELDS = ("protocolVersion", "capabilities", "clientInfo", "_meta", "cursor")


def _signature(message: dict[str, Any], session_version: str | None = None) -> str:
    """The request as far as the answer depends on it: the method, the protocol
    version asked for (or the session's, from its ``initialize``: an answer's
    shape follows the version), which envelope keys are there, the page, anything else."""
    given = message.get("params")
    params: dict[str, Any] = given if isinstance(given, dict) else {}
    found = params.get("_meta")
    meta: dict[str, Any] = found if isinstance(found, dict) else {}
    version = params.get("protocolVersion") or meta.get(_ENVELOPE[0]) or session_version
    rest = {k: v for k, v in params.items() if k not in _CLIENT_FIELDS}
    return json.dumps([message.get("method"), version, [k for k in _ENVELOPE if k in meta], params.get("cursor"), rest],
                      sort_keys=True, ensure_ascii=False)


class HandshakeCache:
    """The SDK's answers to the handshake's requests, by request (method and params)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.answers: dict[str, Any] = {}
        self._lock = threading.Lock()
        if path is not None:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                self.answers = data if isinstance(data, dict) else {}
            except (OSError, ValueError):
                self.answers = {}

    def get(self, message: dict[str, Any], session_version: str | None = None) -> Any:
        return self.answers.get(_signature(message, session_version))

    def put(self, message: dict[str, Any], result: Any, session_version: str | None = None) -> None:
        with self._lock:
            self.answers[_signature(message, session_version)] = result
            if self.path is None:
                return
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
                tmp.write_text(json.dumps(self.answers, ensure_ascii=False), encoding="utf-8")
                tmp.replace(self.path)
            except OSError:
                pass  # a cache only: the next start asks the SDK again


def _cache() -> HandshakeCache:
    from memex.embedding.cachedir import cache_root

    try:
        return HandshakeCache(cache_root() / f"mcp-handshake-{cache_key()}.json")
    except OSError:
        return HandshakeCache(None)


LISTEN = "subscriptions/listen"
ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
_SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"


def _subscription(message: dict[str, Any]) -> Any:
    """The subscription a notification belongs to (stateless protocol), or None."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return meta.get(_SUBSCRIPTION) if isinstance(meta, dict) else None


def _with_subscription(message: dict[str, Any], subscription: Any) -> dict[str, Any]:
    params = dict(message.get("params") or {})
    params["_meta"] = {**(params.get("_meta") or {}), _SUBSCRIPTION: subscription}
    return {**message, "params": params}


class Front:
    """One session: the agent's wire on one side, the SDK's pipes on the other.

    A cached request (:data:`CACHED_METHODS`) is answered here and replayed to
    the SDK under an id of memex's own, whose answer is dropped. A
    ``subscriptions/listen`` (Claude Code opens one right after its probe and
    counts the server connected once it is acknowledged) is acknowledged
    here too when the SDK's acknowledgement is cached; its replay's
    notifications reach the agent under the agent's own subscription id.
    """

    def __init__(self, wire_in: IO[bytes], wire_out: IO[bytes], cache: HandshakeCache) -> None:
        self.wire_in = wire_in
        self.wire_out = wire_out
        self.cache = cache
        self.to_sdk: queue.Queue[bytes | None] = queue.Queue()
        self._out_lock = threading.Lock()
        self._lock = threading.Lock()
        self._dropped: set[str] = set()  # replayed ids: the SDK's answers to them go nowhere
        self._recording: dict[str, tuple[dict[str, Any], str | None]] = {}  # id -> request, to cache the answer
        self._replays = 0
        self._awaiting: set[str] = set()  # the agent's requests the SDK has not answered yet
        self._subscriptions: dict[str, Any] = {}  # a replayed listen's id -> the agent's
        self._acked: set[str] = set()  # replayed listens acknowledged here already
        self.version: str | None = None  # the protocol version the session's initialize asked for
        # Set when the SDK must load now: the agent asked what the cache cannot
        # answer, or left (:func:`_run_sdk` waits for it, :data:`SDK_DELAY` at most).
        self.wanted = threading.Event()
        self.closed = False  # the agent closed its end of the wire

    def send(self, line: bytes) -> None:
        with self._out_lock:
            self.wire_out.write(line if line.endswith(b"\n") else line + b"\n")
            self.wire_out.flush()

    def _send(self, message: dict[str, Any]) -> None:
        self.send(json.dumps(message, ensure_ascii=False).encode("utf-8"))

    def _replay(self, message: dict[str, Any]) -> str:
        with self._lock:
            self._replays += 1
            replay = f"{REPLAY_PREFIX}{self._replays}"
            self._dropped.add(json.dumps(replay))
        self.to_sdk.put(json.dumps({**message, "id": replay}, ensure_ascii=False).encode("utf-8") + b"\n")
        return replay

    def from_agent(self, raw: bytes) -> None:
        """One line from the agent: answered from the cache or not, it goes on to the SDK."""
        try:
            message, replaced = jsonio.read(raw)
        except ValueError:  # not JSON, or nested past Python's stack
            message, replaced = None, False
        if replaced:
            # Half an emoji (a lone surrogate) from a JavaScript client: the SDK
            # drops such a request unanswered and the agent waits; it reads U+FFFD.
            raw = json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n"
        if not isinstance(message, dict) or "id" not in message or "method" not in message:
            self.to_sdk.put(raw)  # a notification, an answer to the SDK, or not JSON: the SDK's to judge
            return
        refusal = _malformed(message)
        if refusal is not None:
            # The SDK drops such a request unanswered, and the agent would wait for ever.
            self._send({"jsonrpc": "2.0", "id": message["id"], "error": refusal})
            return
        key, method = json.dumps(message["id"]), message["method"]
        if method == "initialize" and isinstance(message.get("params"), dict):
            version = message["params"].get("protocolVersion")
            self.version = version if isinstance(version, str) else None
        cacheable = method in CACHED_METHODS or method == LISTEN
        cached = self.cache.get(message, self.version) if cacheable else None
        if cached is None:
            with self._lock:
                if method != LISTEN:  # a subscription is answered when it ends, if ever
                    self._awaiting.add(key)
                if cacheable:
                    self._recording[key] = (message, self.version)
            self.to_sdk.put(raw)
            self.wanted.set()  # only the SDK can answer it
            return
        if method == LISTEN:
            self._send(_with_subscription(cached, message["id"]))
            replay = self._replay(message)
            with self._lock:
                self._subscriptions[replay] = message["id"]
                self._acked.add(replay)
            return
        self._send({"jsonrpc": "2.0", "id": message["id"], "result": cached})
        self._replay(message)

    def awaiting(self) -> int:
        with self._lock:
            return len(self._awaiting)

    def from_sdk(self, raw: bytes) -> None:
        """One line from the SDK: to the agent, unless it answers a replay."""
        try:
            message = json.loads(raw)
        except ValueError:
            message = None
        if isinstance(message, dict) and "method" in message and _subscription(message) is not None:
            self._subscribed(message, raw)
            return
        if isinstance(message, dict) and "id" in message and "method" not in message:
            key = json.dumps(message["id"])
            with self._lock:
                if key in self._dropped:
                    self._dropped.discard(key)
                    return
                self._awaiting.discard(key)
                request = self._recording.pop(key, None)
            if request is not None and "result" in message:
                self.cache.put(request[0], message["result"], request[1])
        self.send(raw)

    def _subscribed(self, message: dict[str, Any], raw: bytes) -> None:
        """A notification of a subscription: under the agent's id, once acknowledged."""
        subscription = _subscription(message)
        with self._lock:
            mine = self._subscriptions.get(subscription) if isinstance(subscription, str) else None
            if mine is not None and message["method"] == ACKNOWLEDGED and subscription in self._acked:
                self._acked.discard(subscription)
                return  # acknowledged here already, from the cache
            request = self._recording.pop(json.dumps(subscription), None) if message["method"] == ACKNOWLEDGED \
                else None
        if request is not None:
            self.cache.put(request[0], _with_subscription(message, None), request[1])
        if mine is not None:
            self._send(_with_subscription(message, mine))
            return
        self.send(raw)


def _pump_to_sdk(front: Front, pipe: IO[bytes]) -> None:
    try:
        while True:
            line = front.to_sdk.get()
            if line is None:
                break
            pipe.write(line if line.endswith(b"\n") else line + b"\n")
            pipe.flush()
    except OSError:  # the SDK has gone: nothing more to tell it
        pass
    finally:
        try:
            pipe.close()
        except OSError:
            pass


def _pump_from_sdk(front: Front, pipe: IO[bytes]) -> None:
    try:
        for line in pipe:
            front.from_sdk(line)
    except OSError:  # the agent has gone
        pass
    finally:
        pipe.close()


# How long a start whose handshake came from the cache waits before loading
# the SDK, unless a request needs it sooner. The SDK's import takes about a
# second of CPU (several on a loaded machine), and right after its start the
# agent runs its first hooks and its own start-up, which the agent waits
# for: loading the SDK then took a core from them (a one-shot `claude -p`
# turn, about 1.5 s, ended before it had loaded, every time). The first tool
# call comes after a model's answer; one that comes sooner loads it at once.
SDK_DELAY = 2.0
SDK_DELAY_ENV = "MEMEX_MCP_SDK_DELAY"  # seconds; tests set it


def _sdk_delay() -> float:
    try:
        return max(0.0, float(os.environ.get(SDK_DELAY_ENV, SDK_DELAY)))
    except ValueError:
        return SDK_DELAY


def _run_sdk(open_vault: Callable[[], Any], sdk_in: IO[str], sdk_out: IO[str], ready: threading.Event,
             front: Front, delay: float) -> None:
    """Load the SDK (once the front wants it, or after ``delay``) and serve
    on the pipes until the front closes its end."""
    front.wanted.wait(delay)
    if front.closed and not front.awaiting():
        # The agent left before it asked anything the SDK must answer: the
        # replayed handshake has nobody to reach.
        sdk_in.close()
        sdk_out.close()
        return
    try:
        import anyio
        from mcp.server.stdio import stdio_server

        from memex.agents import mcp_start

        server = mcp_start.build_server(open_vault)
    except BaseException as exc:  # noqa: BLE001 - said once; the agent sees the server end
        print(f"memex mcp: cannot start the MCP server: {type(exc).__name__}: {exc}", file=sys.stderr)
        sdk_in.close()
        sdk_out.close()
        return
    ready.set()

    async def run() -> None:
        stdin, stdout = anyio.wrap_file(sdk_in), anyio.wrap_file(sdk_out)
        async with stdin, stdout, stdio_server(stdin=stdin, stdout=stdout) as (read, write):
            low = server._lowlevel_server
            await low.run(read, write, low.create_initialization_options())

    try:
        anyio.run(run)
    finally:
        server.memex_tools.close()


def serve(open_vault: Callable[[], Any], wire: tuple[IO[bytes], IO[bytes]] | None = None) -> None:
    """Serve MCP on this process's stdin/stdout (or on ``wire``) until the agent closes it."""
    wire_in: IO[bytes]
    wire_out: IO[bytes]
    if wire is None:
        wire_in, wire_out = os.fdopen(os.dup(0), "rb", buffering=0), os.fdopen(os.dup(1), "wb")
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(2, 1)  # what a tool prints goes to stderr, not onto the wire
        os.close(devnull)
    else:
        wire_in, wire_out = wire
    front = Front(wire_in, wire_out, _cache())
    to_sdk_r, to_sdk_w = os.pipe()
    from_sdk_r, from_sdk_w = os.pipe()
    ready = threading.Event()
    sdk_in = open(to_sdk_r, encoding="utf-8", errors="replace", newline="\n")
    sdk_out = open(from_sdk_w, "w", encoding="utf-8", newline="\n")
    writer = threading.Thread(target=_pump_to_sdk, args=(front, os.fdopen(to_sdk_w, "wb")), name="memex-mcp-in")
    reader = threading.Thread(target=_pump_from_sdk, args=(front, os.fdopen(from_sdk_r, "rb")), name="memex-mcp-out")
    sdk = threading.Thread(target=_run_sdk, args=(open_vault, sdk_in, sdk_out, ready, front, _sdk_delay()),
                           name="memex-mcp-sdk")
    for thread in (writer, reader, sdk):
        thread.start()
    for line in iter(wire_in.readline, b""):
        if line.strip():
            front.from_agent(line)
    # The agent closed stdin. A server that never got going and owes no
    # answer has nothing to finish: end now, not once the SDK has loaded for nobody.
    if wire is None and not ready.is_set() and not front.awaiting():
        wire_out.flush()
        os._exit(0)
    front.closed = True
    front.wanted.set()
    front.to_sdk.put(None)  # ... else the SDK sees the end, answers what it has, and stops
    for thread in (writer, reader, sdk):
        thread.join()


def main(vault_path: str | None) -> None:
    """``memex [--vault PATH] mcp``: the vault named (it must exist), else the
    default one (created on first use), opened once the tools are listed."""
    import logging

    from memex.agents.hook_event import explicit_vault

    if vault_path:
        explicit_vault(vault_path)  # a mistyped vault is said now, not at the first call

    def open_vault() -> Any:
        from memex.agents import hook_io

        # Through the session's warm server when it runs (it holds the model
        # already); a server gone later is replaced by the model loaded here.
        return hook_io.hook_vault(vault_path, warm=True)

    logging.getLogger("mcp").setLevel(logging.WARNING)
    serve(open_vault)


def _malformed(request: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON-RPC error for a request the SDK would drop without an answer
    (a method that is not a string, params that are not an object), or None.
    Only for an id the agent can match an answer to (a string or an integer)."""
    rid = request["id"]
    if isinstance(rid, bool) or not isinstance(rid, (str, int)):
        return None
    if not isinstance(request["method"], str):
        return {"code": -32600, "message": "Invalid request: method must be a string"}
    if "params" in request and not isinstance(request["params"], dict):
        return {"code": -32602, "message": "Invalid params: params must be a JSON object"}
    return None
