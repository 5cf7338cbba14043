"""A head start for the embedding model of a process that will need it soon.

Loading the model (about 0.2 s, most of it onnxruntime building its session,
which runs outside the GIL) and importing the rest of memex (which holds the
GIL) can overlap: a thread loads the model while the process imports. The
caller waits until the thread has imported the model's libraries (numpy,
onnxruntime, the tokenizer): two threads importing share one GIL, and the
session should build beside the caller's imports, not after them. The vault
later asks :func:`memex.embedding.embed.load_embedder` for the same setting,
which returns the model or waits for this thread (its lock). Any failure
here is ignored: the vault then loads the model itself, or says why it
cannot. ``MEMEX_PRELOAD=0`` turns it off.

Used by a hook process that found no warm server (memex/agents/hook_run.py).
"""

from __future__ import annotations

import os
import threading

# Seconds the caller waits for the thread's imports: a bound for a stuck
# thread, far above the 0.1-0.5 s they take.
READY_WAIT = 5.0


def start(setting: str) -> threading.Thread | None:
    """Load ``setting``'s model on a thread; returns once its libraries are imported."""
    # numpy is about to load OpenBLAS, which starts a thread per core and
    # gives each its buffers (10-15 ms of CPU) for arrays too small for BLAS
    # to use them. Read once, when the library loads; a value set stays.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    if setting == "none" or os.environ.get("MEMEX_PRELOAD") == "0":
        return None
    ready = threading.Event()

    def load() -> None:
        try:
            from memex.embedding import embed

            embed.prepare(setting)
            ready.set()
            embed.load_embedder(setting)
        except Exception:  # a head start only: the vault reports real problems
            return
        finally:
            ready.set()

    # Not a daemon: a model half built when the interpreter tears down is not
    # worth the risk (a hook that fails early still lets it end).
    thread = threading.Thread(target=load, name="memex-model-head-start")
    thread.start()
    ready.wait(READY_WAIT)
    return thread


def save_graph_ahead(setting: str) -> bool:
    """Save the bundled model's optimized graph in the user's cache now, unless
    it is saved already (memex/embedding/prebuilt.py); whether it saved it.

    `memex install claude-code | codex` calls it. Otherwise the first
    session's warm server saves it, about 1 s of CPU before it can answer,
    while that session's first prompt loads the model in its hook on the
    other core: on a 2-core machine the first turn waited for both. Only
    the bundled model (``auto``) has such a graph; failures are ignored (the
    warm server saves it later, as before).
    """
    if setting != "auto":
        return False
    try:
        from importlib.metadata import version

        from memex.embedding import embed, prebuilt
        from memex.embedding.onnx import wanted

        if not wanted():
            return False
        model_dir = embed._bundled_model_dir()
        # Found without importing onnxruntime: an install run again costs nothing.
        if model_dir is None or prebuilt.find(model_dir / "model.onnx", version("onnxruntime")) is not None:
            return False
        model = embed.load_embedder(setting)
        save = getattr(model, "save_graph", None)
        if save is None:
            return False
        save()
        return True
    except Exception:  # noqa: BLE001 - a speed-up only; the warm server saves it later
        return False
