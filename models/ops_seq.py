"""ops_seq.py - the sequence and optional operators (family "seq"), which npuc resolves at import
(frontend/OnnxSequence.cpp): small graphs that build sequences and optionals from graph inputs
and read tensors back out of them. Positions come from initializers, Constant nodes and folded
constants, negative ones included. Every oracle is numpy, from the operators' ONNX definitions.
Imported by make_ops.py.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
I64 = TensorProto.INT64
BOOL = TensorProto.BOOL


def _i64(name, v):
    return numpy_helper.from_array(np.array(v, np.int64), name)


def _model(outdir, name, op, nodes, inputs, outputs, inits=()):
    """inputs: [(name, array)] graph inputs of the arrays' types; outputs: [(name, onnx type,
    expected array)]. Writes the case and returns its cases.json entry."""
    d = os.path.join(outdir, name)
    os.makedirs(d, exist_ok=True)
    np2onnx = {np.dtype(np.float32): F, np.dtype(np.int64): I64}
    g = helper.make_graph(
        nodes, name,
        [helper.make_tensor_value_info(n, np2onnx[a.dtype], list(a.shape)) for n, a in inputs],
        [helper.make_tensor_value_info(n, t, None) for n, t, _ in outputs], list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, os.path.join(d, "model.onnx"))
    for n, a in inputs:
        np.save(os.path.join(d, f"in_{n}.npy"), a)
    onp = {F: np.float32, I64: np.int64, BOOL: np.bool_}
    for n, t, e in outputs:
        np.save(os.path.join(d, f"exp_{n}.npy"), np.asarray(e).astype(onp[t]))
    return dict(name=name, family="seq", op=op, inputs=[n for n, _ in inputs], oracle=True)


def models(outdir, rnd):
    out = []
    a, b, c = rnd(2, 3), rnd(2, 3), rnd(2, 3)
    # Insert without a position appends, at -1 goes before the last; Erase without a position
    # drops the last; positions from an initializer, a Constant node and a folded Sub.
    # [a, b] -> [a, b, c] -> [a, b, relu(a), c] -> [a, b, relu(a)] -> [b, relu(a)]
    out.append(_model(outdir, "Seq_construct_insert_erase_at", "SequenceInsert", [
        helper.make_node("SequenceConstruct", ["a", "b"], ["s1"]),
        helper.make_node("SequenceInsert", ["s1", "c"], ["s2"]),
        helper.make_node("Relu", ["a"], ["ra"]),
        helper.make_node("SequenceInsert", ["s2", "ra", "minus1"], ["s3"]),
        helper.make_node("SequenceErase", ["s3"], ["s4"]),
        helper.make_node("Constant", [], ["zero"], value=numpy_helper.from_array(np.int64(0))),
        helper.make_node("SequenceErase", ["s4", "zero"], ["s5"]),
        helper.make_node("Sub", ["one", "three"], ["minus2"]),  # folded: -2
        helper.make_node("SequenceAt", ["s5", "minus2"], ["first"]),
        helper.make_node("SequenceAt", ["s5", "one"], ["second"]),
        helper.make_node("Sub", ["first", "second"], ["y0"]),
        helper.make_node("SequenceLength", ["s5"], ["y1"]),
    ], [("a", a), ("b", b), ("c", c)],
        [("y0", F, b - np.maximum(a, 0)), ("y1", I64, np.int64(2))],
        [_i64("minus1", -1), _i64("one", 1), _i64("three", 3)]))
    # SequenceEmpty, then inserts at the end, at 0 and at 1: [y, z, x]; Concat along axis 0.
    x, y, z = rnd(2, 3), rnd(1, 3), rnd(3, 3)
    out.append(_model(outdir, "Seq_empty_insert_concat", "ConcatFromSequence", [
        helper.make_node("SequenceEmpty", [], ["s0"], dtype=F),
        helper.make_node("SequenceInsert", ["s0", "x"], ["s1"]),
        helper.make_node("SequenceInsert", ["s1", "y", "p0"], ["s2"]),
        helper.make_node("SequenceInsert", ["s2", "z", "p1"], ["s3"]),
        helper.make_node("ConcatFromSequence", ["s3"], ["y0"], axis=0),
    ], [("x", x), ("y", y), ("z", z)], [("y0", F, np.concatenate([y, z, x], axis=0))],
        [_i64("p0", 0), _i64("p1", 1)]))
    # new_axis=1: numpy.stack, at axis 1 and at axis -1 (the new last axis).
    out.append(_model(outdir, "Seq_concat_new_axis", "ConcatFromSequence", [
        helper.make_node("SequenceConstruct", ["a", "b", "c"], ["s"]),
        helper.make_node("ConcatFromSequence", ["s"], ["y0"], axis=1, new_axis=1),
        helper.make_node("ConcatFromSequence", ["s"], ["y1"], axis=-1, new_axis=1),
        helper.make_node("ConcatFromSequence", ["s"], ["y2"], axis=-1),
    ], [("a", a), ("b", b), ("c", c)],
        [("y0", F, np.stack([a, b, c], axis=1)), ("y1", F, np.stack([a, b, c], axis=-1)),
         ("y2", F, np.concatenate([a, b, c], axis=-1))]))
    # A scalar split of 3 over 7 rows: parts of 3, 3 and 1.
    w = rnd(7, 4)
    out.append(_model(outdir, "SplitToSequence_scalar_uneven", "SplitToSequence", [
        helper.make_node("SplitToSequence", ["w", "three"], ["s"]),
        helper.make_node("SequenceAt", ["s", "minus1"], ["y0"]),
        helper.make_node("SequenceAt", ["s", "one"], ["y1"]),
        helper.make_node("SequenceLength", ["s"], ["y2"]),
    ], [("w", w)], [("y0", F, w[6:7]), ("y1", F, w[3:6]), ("y2", I64, np.int64(3))],
        [_i64("three", 3), _i64("minus1", -1), _i64("one", 1)]))
    # A 1-D split list along the last axis (negative), read back by a stack of the parts' sums.
    v = rnd(2, 5)
    out.append(_model(outdir, "SplitToSequence_list_axis_neg", "SplitToSequence", [
        helper.make_node("SplitToSequence", ["v", "sizes"], ["s"], axis=-1),
        helper.make_node("SequenceAt", ["s", "one"], ["y0"]),
        helper.make_node("SequenceAt", ["s", "zero"], ["p0"]),
        helper.make_node("SequenceAt", ["s", "minus1"], ["p2"]),
        helper.make_node("Concat", ["p0", "p2"], ["y1"], axis=1),
    ], [("v", v)], [("y0", F, v[:, 1:3]), ("y1", F, np.concatenate([v[:, :1], v[:, 3:]], 1))],
        [_i64("sizes", [1, 2, 2]), _i64("one", 1), _i64("zero", 0), _i64("minus1", -1)]))
    # No split: parts of 1, squeezed with keepdims=0, kept by default.
    t = rnd(3, 2, 4)
    out.append(_model(outdir, "SplitToSequence_keepdims", "SplitToSequence", [
        helper.make_node("SplitToSequence", ["t"], ["s"], axis=1, keepdims=0),
        helper.make_node("ConcatFromSequence", ["s"], ["y0"], axis=0),
        helper.make_node("SplitToSequence", ["t"], ["k"], axis=2),
        helper.make_node("SequenceAt", ["k", "two"], ["y1"]),
        helper.make_node("SequenceLength", ["k"], ["y2"]),
    ], [("t", t)], [("y0", F, np.concatenate([t[:, 0, :], t[:, 1, :]], 0)),
                    ("y1", F, t[:, :, 2:3]), ("y2", I64, np.int64(4))], [_i64("two", 2)]))
    # Optional of a tensor: it has an element, which OptionalGetElement returns.
    out.append(_model(outdir, "Optional_tensor", "Optional", [
        helper.make_node("Optional", ["a"], ["o"]),
        helper.make_node("OptionalHasElement", ["o"], ["y1"]),
        helper.make_node("OptionalGetElement", ["o"], ["g"]),
        helper.make_node("Mul", ["g", "b"], ["y0"]),
    ], [("a", a), ("b", b)], [("y0", F, a * b), ("y1", BOOL, np.bool_(True))]))
    # An empty optional (no input): OptionalHasElement is false, and a Where on it picks -a.
    ftype = helper.make_tensor_type_proto(F, [2, 3])
    out.append(_model(outdir, "Optional_empty", "OptionalHasElement", [
        helper.make_node("Optional", [], ["o"], type=ftype),
        helper.make_node("OptionalHasElement", ["o"], ["has"]),
        helper.make_node("Neg", ["a"], ["na"]),
        helper.make_node("Where", ["has", "a", "na"], ["y0"]),
        helper.make_node("Identity", ["has"], ["y1"]),
    ], [("a", a)], [("y0", F, -a), ("y1", BOOL, np.bool_(False))]))
    # An optional holding a sequence (through an Identity of each), and int64 elements, which
    # concatenate exactly.
    ia = np.arange(6, dtype=np.int64).reshape(2, 3) - 2
    ib = np.arange(6, dtype=np.int64).reshape(2, 3) * 7
    out.append(_model(outdir, "Optional_sequence_int64", "OptionalGetElement", [
        helper.make_node("SequenceConstruct", ["ia", "ib"], ["s"]),
        helper.make_node("Identity", ["s"], ["s2"]),
        helper.make_node("Optional", ["s2"], ["o"]),
        helper.make_node("Identity", ["o"], ["o2"]),
        helper.make_node("OptionalGetElement", ["o2"], ["g"]),
        helper.make_node("ConcatFromSequence", ["g"], ["y0"], axis=0),
        helper.make_node("SequenceAt", ["g", "one"], ["y1"]),
    ], [("ia", ia), ("ib", ib)], [("y0", I64, np.concatenate([ia, ib], 0)), ("y1", I64, ib)],
        [_i64("one", 1)]))
    return out
