#!/usr/bin/python3
"""Writes a chain of N operators as an ONNX model, to measure how compile time grows with graph
size (bench/scale/run.sh, docs/PERFORMANCE.md "Compile time against graph size").

Kinds:
  relu  N ReLUs on a 1x64 float tensor;
  mix   N elementwise ops cycling through Add (constant), Mul (constant), Sigmoid, ReLU;
  conv  N 3x3 convolutions, 8 -> 8 channels on 1x8x8x8 (pad 1), each followed by nothing else.
Constants are deterministic (a seeded generator), so a given (kind, N) always gives the same file.
Usage: make_chain.py KIND N OUT.onnx [--input OUT_INPUT.npy]
"""
import argparse

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def chain(kind, n):
    rng = np.random.default_rng(n)
    nodes, inits = [], []
    if kind == "conv":
        shape = [1, 8, 8, 8]
    else:
        shape = [1, 64]
    prev = "x"
    for i in range(n):
        out = "y" if i == n - 1 else f"t{i}"
        if kind == "relu":
            nodes.append(helper.make_node("Relu", [prev], [out], name=f"relu{i}"))
        elif kind == "mix":
            op = ("Add", "Mul", "Sigmoid", "Relu")[i % 4]
            if op in ("Add", "Mul"):
                # Scales near 1 and small offsets keep the values bounded over thousands of ops.
                value = rng.uniform(0.9, 1.1) if op == "Mul" else rng.uniform(-0.1, 0.1)
                c = f"c{i}"
                inits.append(numpy_helper.from_array(np.array(value, dtype=np.float32), c))
                nodes.append(helper.make_node(op, [prev, c], [out], name=f"{op.lower()}{i}"))
            else:
                nodes.append(helper.make_node(op, [prev], [out], name=f"{op.lower()}{i}"))
        elif kind == "conv":
            w = f"w{i}"
            # Weights scaled so that each conv roughly preserves the activations' magnitude.
            weights = rng.normal(0, 1 / np.sqrt(8 * 9), (8, 8, 3, 3)).astype(np.float32)
            inits.append(numpy_helper.from_array(weights, w))
            nodes.append(helper.make_node("Conv", [prev, w], [out], name=f"conv{i}",
                                          kernel_shape=[3, 3], pads=[1, 1, 1, 1]))
        else:
            raise SystemExit(f"unknown kind '{kind}'")
        prev = out
    graph = helper.make_graph(
        nodes, f"{kind}_chain_{n}",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    model.ir_version = 8
    return model, shape


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("kind", choices=["relu", "mix", "conv"])
    ap.add_argument("n", type=int)
    ap.add_argument("out")
    ap.add_argument("--input", help="also write a deterministic input .npy here")
    args = ap.parse_args()
    if args.n < 1:
        raise SystemExit("N must be at least 1")
    model, shape = chain(args.kind, args.n)
    onnx.save(model, args.out)
    if args.input:
        np.save(args.input, np.random.default_rng(0).normal(0, 1, shape).astype(np.float32))


if __name__ == "__main__":
    main()
