"""The bundled model's graph optimized once and kept in the user's cache.

The int8 all-MiniLM-L6-v2 stores each weight matrix as int8 with a Cast and
a Mul in front of its MatMul. An unoptimized onnxruntime session repeats
that dequantization in every run, and its first run also allocates and fills
the float copies (about 90 MB): about 50 ms of CPU for the first run of a
one-shot ``memex search`` and 10 ms for each later one. Building the
optimized session instead (constant folding turns those copies into
constants, operators are fused) costs about 0.8 s of CPU: worth it for a
reindex, not for one query.

So a process that builds the optimized session anyway also saves the
optimized graph (onnxruntime's own ``optimized_model_filepath``), with its
weights in a separate file that onnxruntime maps into memory when it loads
the graph (external initializers). Loading that copy costs about as much as
building the unoptimized session, and a run then takes 4-5 ms, the first
one included; the process maps the weights instead of allocating them
(peak 103 MB against 177). The vectors are bit for bit those of the
optimized session, which the index's stored vectors come from
(tests/test_embed_onnx.py). Measured: docs/benchmarks.md, "Start-up".

Where and which: ``optimized-KEY/`` (``model.onnx`` + ``model.data``) in the
model's cache folder (memex/embedding/embed.py), KEY a hash of the source
model file's resolved path, size and modification time and of onnxruntime's
version, so a new model file or a new onnxruntime never loads a copy made
from another. It is saved at level ``ORT_ENABLE_EXTENDED``: the highest
level that onnxruntime saves without hardware-specific layouts (its vectors
equal those of ``ORT_ENABLE_ALL``). A copy appears whole or not at all
(written in a temporary folder, then renamed); one that fails to load is
removed and the unoptimized path used, and the next optimized session saves
it again.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path
from typing import Any

from memex.embedding import cachedir

PREFIX = "optimized-"
GRAPH = "model.onnx"
WEIGHTS = "model.data"
# A temporary folder older than this was left by a killed process.
STALE_SECONDS = 3600.0


def _key(model_path: Path, runtime_version: str) -> str | None:
    try:
        real = model_path.resolve()
        stat = real.stat()
    except OSError:
        return None
    stamp = f"{real}\t{stat.st_size}\t{stat.st_mtime_ns}\t{runtime_version}"
    return hashlib.sha256(stamp.encode("utf-8")).hexdigest()[:16]


def folder(model_path: Path, runtime_version: str) -> Path | None:
    """Where the optimized copy of ``model_path`` lives (whether or not it exists)."""
    key = _key(model_path, runtime_version)
    return None if key is None else model_path.parent / f"{PREFIX}{key}"


def find(model_path: Path, runtime_version: str) -> Path | None:
    """The saved optimized graph of ``model_path``, or None."""
    where = folder(model_path, runtime_version)
    if where is None:
        return None
    graph = where / GRAPH
    return graph if graph.is_file() and (where / WEIGHTS).is_file() else None


def discard(graph: Path) -> None:
    """Remove a saved copy that failed to load (the next optimized session saves it again)."""
    shutil.rmtree(graph.parent, ignore_errors=True)


def build(ort: Any, model_path: Path, options: Any) -> Any:
    """The optimized session of ``model_path``, its graph saved for later processes.

    ``ort`` is the onnxruntime module, ``options`` the session's options
    (threads, spinning); the optimization level is set here. When the copy
    cannot be saved (a read-only cache, a full disk), the session is built
    all the same.
    """
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
    where = folder(model_path, ort.__version__)
    if where is None:
        return _session(ort, model_path, options)
    tmp = where.with_name(f"{where.name}.tmp-{os.getpid()}-{time.monotonic_ns()}")
    try:
        _sweep(model_path.parent)
        tmp.mkdir()
    except OSError:
        return _session(ort, model_path, options)
    try:
        options.optimized_model_filepath = str(tmp / GRAPH)
        options.add_session_config_entry("session.optimized_model_external_initializers_file_name", WEIGHTS)
        # The weights go to the mapped file; small constants (shapes, axes)
        # must stay in the graph, where onnxruntime's shape inference reads them.
        options.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "1024")
        try:
            session = _session(ort, model_path, options)
        except Exception:
            # Saving failed (the session itself is built the same way below,
            # and raises there if it really cannot be built).
            options.optimized_model_filepath = ""
            return _session(ort, model_path, options)
        _publish(tmp, where)
        return session
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _session(ort: Any, model_path: Path, options: Any) -> Any:
    return ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"], sess_options=options)


def _publish(tmp: Path, where: Path) -> None:
    """Rename the finished copy into place; another process's copy may have won."""
    if not ((tmp / GRAPH).is_file() and (tmp / WEIGHTS).is_file()):
        return
    try:
        os.rename(tmp, where)
    except OSError:  # already there (another process saved it first): keep theirs
        return
    # Copies made from an older model file or onnxruntime are never loaded again.
    for old in where.parent.glob(f"{PREFIX}*"):
        if old != where and ".tmp-" not in old.name:
            shutil.rmtree(old, ignore_errors=True)


def _sweep(parent: Path) -> None:
    cachedir.sweep_stale(parent, PREFIX, STALE_SECONDS)
