#!/usr/bin/env python3
"""make_ops.py - writes one tiny single-operator ONNX model per test case of the ops suite.

Each case directory holds model.onnx, one in_<name>.npy per graph input and, where the case has
an independent oracle, exp_<output>.npy: numpy (or torch, for the conv/pool/resize/normalisation
families) computed here from the operator's ONNX definition, never from npuc. tests/ops/
check_ops.py compiles each model with npuc, runs it, and compares `npuc run` with `npuc ref` and
`npuc ref` with the oracle.  Usage: make_ops.py OUTDIR   (writes OUTDIR/<case>/..., cases.json)
"""
import json
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.backend.test.case.node import resize as onnx_resize

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ops_dataops  # noqa: E402  (gathers/scatters, Einsum, Det, signal ops, folded ops)
import ops_opsets  # noqa: E402  (cases for opsets 9-10 and 18)
import ops_rnn  # noqa: E402  (RNN, GRU, LSTM)
import ops_convnd  # noqa: E402  (1-D/3-D conv and pool, opset-17 NN ops)
import ops_typed  # noqa: E402  (integer, bool and double tensors)
import ops_oldopsets  # noqa: E402  (opsets 1-8, run-time operands)
import ops_misc  # noqa: E402  (Pad modes, run-time Trilu k, Resize crops, training optimizers)
import ops_control  # noqa: E402  (If, Loop, Scan)
import ops_seq  # noqa: E402  (sequence and optional operators, resolved at import)
import ops_quant  # noqa: E402  (quantisation operators)

CASES = []
RNG = np.random.default_rng(1234)
F = TensorProto.FLOAT
NP2ONNX = {np.dtype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[t]): t
           for t in (F, TensorProto.DOUBLE, TensorProto.FLOAT16, TensorProto.INT8,
                     TensorProto.INT16, TensorProto.INT32, TensorProto.INT64, TensorProto.UINT8,
                     TensorProto.UINT16, TensorProto.UINT32, TensorProto.UINT64, TensorProto.BOOL)}


def rnd(*shape, lo=-2.0, hi=2.0):
    return RNG.uniform(lo, hi, size=shape).astype(np.float32)


def case(name, family, op, inputs, attrs=None, expect=None, outs=1, out_types=None, opset=17,
         pre=None, post=None, placement=None, exact=False, tensor_ops=None):
    """inputs: list of ("x", array) graph inputs (float32), ("b", array) graph inputs turned into
    bool by Greater(x, 0) first, ("i", int array) graph inputs Cast to int64 first (indices
    computed at run time), ("t", array) graph inputs of the array's own dtype (int64, uint8,
    bool, float64, ...), ("c", array) initializers, or None for an omitted input.
    expect(*values) returns the expected output(s) (values: the arrays, bools for "b").
    placement: "npu"/"cpu" when check_ops.py must also find every group of the model there.
    exact: the oracle is saved in the outputs' declared types, and check_ops.py compares integer
    and bool outputs exactly, types included.
    tensor_ops: op types every group holding one of which must run on the NPU's tensor unit."""
    CASES.append(dict(name=name, family=family, op=op, inputs=inputs, attrs=attrs or {},
                      expect=expect, outs=outs, out_types=out_types, opset=opset,
                      placement=placement, exact=exact, tensor_ops=tensor_ops))


def build(c, outdir):
    d = os.path.join(outdir, c["name"])
    os.makedirs(d, exist_ok=True)
    nodes, ginputs, inits, names, vals = [], [], [], [], []
    for i, item in enumerate(c["inputs"]):
        if item is None:
            names.append("")
            vals.append(None)
            continue
        kind, arr = item
        nm = f"i{i}"
        if kind == "t":
            ginputs.append(helper.make_tensor_value_info(nm, NP2ONNX[arr.dtype], list(arr.shape)))
            np.save(os.path.join(d, f"in_{nm}.npy"), arr)
            names.append(nm)
            vals.append(arr)
            continue
        if kind == "i":  # an int64 tensor computed at run time: a float input Cast to int64
            ginputs.append(helper.make_tensor_value_info(nm, F, list(arr.shape)))
            np.save(os.path.join(d, f"in_{nm}.npy"), arr.astype(np.float32))
            nodes.append(helper.make_node("Cast", [nm], [nm + "_i"], to=TensorProto.INT64))
            names.append(nm + "_i")
            vals.append(arr)
            continue
        if kind in ("x", "b"):
            ginputs.append(helper.make_tensor_value_info(nm, F, list(arr.shape)))
            np.save(os.path.join(d, f"in_{nm}.npy"), arr.astype(np.float32))
            if kind == "b":
                zero = helper.make_tensor(nm + "_zero", F, [], [0.0])
                inits.append(zero)
                nodes.append(helper.make_node("Greater", [nm, nm + "_zero"], [nm + "_b"]))
                names.append(nm + "_b")
                vals.append(arr > 0)
                continue
            names.append(nm)
        else:
            inits.append(numpy_helper.from_array(arr, nm))
            names.append(nm)
        vals.append(arr)
    outs = [f"y{k}" for k in range(c["outs"])]
    nodes.append(helper.make_node(c["op"], names, outs, name=c["name"], **c["attrs"]))
    types = c["out_types"] or [F] * c["outs"]
    gouts = [helper.make_tensor_value_info(o, t, None) for o, t in zip(outs, types)]
    graph = helper.make_graph(nodes, c["name"], ginputs, gouts, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", c["opset"])])
    model.ir_version = 8
    onnx.save(model, os.path.join(d, "model.onnx"))
    if c["expect"] is not None:
        res = c["expect"](*[v for v in vals if v is not None])
        if not isinstance(res, (list, tuple)):
            res = [res]
        onp = {v: k for k, v in NP2ONNX.items()}
        for o, r, t in zip(outs, res, types):
            np.save(os.path.join(d, f"exp_{o}.npy"),
                    np.asarray(r).astype(onp[t] if c["exact"] else np.float32))
    meta = dict(name=c["name"], family=c["family"], op=c["op"],
                inputs=[f"i{i}" for i, it in enumerate(c["inputs"]) if it and it[0] in "xbit"],
                oracle=c["expect"] is not None)
    if c["placement"]:
        meta["placement"] = c["placement"]
    if c["tensor_ops"]:
        meta["tensor_ops"] = c["tensor_ops"]
    return meta


# ----------------------------------------------------------------------------- elementwise
verf = np.vectorize(math.erf)
X = rnd(2, 3, 4)
POS = rnd(2, 3, 4, lo=0.1, hi=3.0)
UNIT = rnd(2, 3, 4, lo=-0.9, hi=0.9)
unary = {
    "Abs": (X, np.abs, {}), "Neg": (X, np.negative, {}), "Sqrt": (POS, np.sqrt, {}),
    "Log": (POS, np.log, {}), "Erf": (X, verf, {}), "Reciprocal": (POS, lambda x: 1 / x, {}),
    "Floor": (X * 3, np.floor, {}), "Ceil": (X * 3, np.ceil, {}),
    "Round": (np.array([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.4, -0.6, 1.2], np.float32), np.round,
              {}),
    "Sin": (X, np.sin, {}), "Cos": (X, np.cos, {}), "Tan": (UNIT, np.tan, {}),
    "Asin": (UNIT, np.arcsin, {}), "Acos": (UNIT, np.arccos, {}), "Atan": (X, np.arctan, {}),
    "Sinh": (X, np.sinh, {}), "Cosh": (X, np.cosh, {}), "Asinh": (X, np.arcsinh, {}),
    "Acosh": (POS + 1, np.arccosh, {}), "Atanh": (UNIT, np.arctanh, {}),
    "Sign": (np.array([-2, 0, 3, -0.5, 0], np.float32), np.sign, {}),
    "Softplus": (X * 5, lambda x: np.log1p(np.exp(x.astype(np.float64))), {}),
    "Softsign": (X, lambda x: x / (1 + np.abs(x)), {}),
    "LeakyRelu": (X, lambda x: np.where(x < 0, 0.2 * x, x), {"alpha": 0.2}),
    "Elu": (X, lambda x: np.where(x < 0, 0.7 * (np.exp(x) - 1), x), {"alpha": 0.7}),
    "Selu": (X, lambda x: np.where(x > 0, 1.0507009873554805 * x,
                                   1.0507009873554805 * 1.6732632423543772 * (np.exp(x) - 1)), {}),
    "Celu": (X, lambda x: np.maximum(0, x) + np.minimum(0, 1.5 * (np.exp(x / 1.5) - 1)),
             {"alpha": 1.5}),
    "HardSigmoid": (X * 4, lambda x: np.clip(0.2 * x + 0.5, 0, 1), {}),
    "HardSwish": (X * 4, lambda x: x * np.clip(x / 6 + 0.5, 0, 1), {}),
    "ThresholdedRelu": (X, lambda x: np.where(x > 0.5, x, 0), {"alpha": 0.5}),
    "Shrink": (X, lambda x: np.where(x < -0.5, x + 0.1, np.where(x > 0.5, x - 0.1, 0)),
               {"lambd": 0.5, "bias": 0.1}),
    "Relu": (X, lambda x: np.maximum(x, 0), {}), "Sigmoid": (X, lambda x: 1 / (1 + np.exp(-x)), {}),
    "Tanh": (X, np.tanh, {}), "Exp": (X, np.exp, {}),
    "Identity": (X, lambda x: x, {}),
}
for op, (x, f, attrs) in unary.items():
    case(op, "unary", op, [("x", x)], attrs, f)
# Non-default alpha/beta: the NPU path lowers HardSigmoid to Mul/Add/Clip, which must carry them.
case("HardSigmoid_ab", "unary", "HardSigmoid", [("x", X * 4)], {"alpha": 0.3, "beta": 0.4},
     lambda x: np.clip(0.3 * x + 0.4, 0, 1))
case("Gelu", "unary", "Gelu", [("x", X)], {}, lambda x: 0.5 * x * (1 + verf(x / math.sqrt(2))),
     opset=17)
case("Gelu_tanh", "unary", "Gelu", [("x", X)], {"approximate": "tanh"},
     lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))))
case("Not", "logic", "Not", [("b", X)], {}, np.logical_not, out_types=[TensorProto.BOOL])
case("IsNaN", "logic", "IsNaN", [("x", np.array([1.0, np.nan, -np.inf, 0], np.float32))], {},
     np.isnan, out_types=[TensorProto.BOOL])
case("IsInf", "logic", "IsInf", [("x", np.array([1.0, np.inf, -np.inf, 0], np.float32))],
     {"detect_negative": 0}, lambda x: np.isposinf(x), out_types=[TensorProto.BOOL])
case("Clip", "unary", "Clip", [("x", X), ("c", np.array(-0.5, np.float32)),
                                ("c", np.array(1.0, np.float32))], {},
     lambda x, lo, hi: np.clip(x, lo, hi))
case("Dropout", "unary", "Dropout", [("x", X)], {}, lambda x: x)

A, B = rnd(2, 3, 4), rnd(3, 1)
binary = {
    "Add": np.add, "Sub": np.subtract, "Mul": np.multiply, "Div": np.divide,
    "Max": np.maximum, "Min": np.minimum, "PRelu": lambda a, b: np.where(a < 0, a * b, a),
    "Equal": lambda a, b: a == b, "Less": np.less, "Greater": np.greater,
    "LessOrEqual": np.less_equal, "GreaterOrEqual": np.greater_equal,
}
for op, f in binary.items():
    b = np.round(B) if op == "Equal" else B
    a = np.round(A) if op == "Equal" else A
    bt = [TensorProto.BOOL] if op in ("Equal", "Less", "Greater", "LessOrEqual",
                                      "GreaterOrEqual") else None
    case(op, "binary", op, [("x", a), ("x", b)], {}, f, out_types=bt)
case("Pow", "binary", "Pow", [("x", POS), ("x", rnd(4, lo=-1.5, hi=2.0))], {}, np.power)
case("Mod_fmod", "binary", "Mod", [("x", A * 3), ("c", np.array([1.5, -0.7, 2.0, 1.1],
                                                                  np.float32))], {"fmod": 1},
     np.fmod)
for op, f in {"And": np.logical_and, "Or": np.logical_or, "Xor": np.logical_xor}.items():
    case(op, "logic", op, [("b", A), ("b", B)], {}, f, out_types=[TensorProto.BOOL])
case("Where", "logic", "Where", [("b", B), ("x", A), ("x", rnd(4))], {}, np.where)
case("Sum", "binary", "Sum", [("x", A), ("x", B), ("x", rnd(4))], {}, lambda a, b, c: a + b + c)
case("Mean", "binary", "Mean", [("x", A), ("x", B), ("x", rnd(4))], {},
     lambda a, b, c: (a + b + c) / 3)
case("Max_variadic", "binary", "Max", [("x", A), ("x", B), ("x", rnd(4))], {},
     lambda a, b, c: np.maximum(np.maximum(a, b), c))

# ----------------------------------------------------------------------------- reductions
R = rnd(2, 3, 4, 5)
red = {"ReduceMean": np.mean, "ReduceMax": np.max, "ReduceMin": np.min,
       "ReduceProd": np.prod, "ReduceL1": lambda x, axis, keepdims: np.sum(np.abs(x), axis=axis,
                                                                          keepdims=keepdims),
       "ReduceL2": lambda x, axis, keepdims: np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdims)),
       "ReduceSumSquare": lambda x, axis, keepdims: np.sum(x * x, axis=axis, keepdims=keepdims),
       "ReduceLogSumExp": lambda x, axis, keepdims: np.log(np.sum(np.exp(x), axis=axis,
                                                                 keepdims=keepdims))}
for op, f in red.items():
    case(op, "reduce", op, [("x", R)], {"axes": [1, -1], "keepdims": 1},
         lambda x, f=f: f(x, axis=(1, 3), keepdims=True))
case("ReduceLogSum", "reduce", "ReduceLogSum", [("x", np.abs(R) + 0.1)], {"axes": [2],
                                                                          "keepdims": 0},
     lambda x: np.log(np.sum(x, axis=2)))
case("ReduceSum", "reduce", "ReduceSum", [("x", R), ("c", np.array([0, 2], np.int64))],
     {"keepdims": 0}, lambda x, a: np.sum(x, axis=(0, 2)))
case("ReduceMean_all", "reduce", "ReduceMean", [("x", R)], {"keepdims": 0},
     lambda x: np.mean(x))
case("ArgMax", "reduce", "ArgMax", [("x", R)], {"axis": 2, "keepdims": 0},
     lambda x: np.argmax(x, axis=2), out_types=[TensorProto.INT64])
TIE = np.array([[1, 3, 3, 0], [2, 2, -1, 2]], np.float32)
case("ArgMin_last", "reduce", "ArgMin", [("x", -TIE)], {"axis": 1, "select_last_index": 1},
     lambda x: (x.shape[1] - 1 - np.argmin(x[:, ::-1], axis=1))[:, None],
     out_types=[TensorProto.INT64])
case("ArgMax_first", "reduce", "ArgMax", [("x", TIE)], {"axis": -1},
     lambda x: np.argmax(x, axis=1)[:, None], out_types=[TensorProto.INT64])
case("TopK", "reduce", "TopK", [("x", R), ("c", np.array([3], np.int64))], {"axis": 2},
     lambda x, k: (-np.sort(-x, axis=2, kind="stable")[:, :, :3],
                   np.argsort(-x, axis=2, kind="stable")[:, :, :3]), outs=2,
     out_types=[F, TensorProto.INT64])
case("TopK_smallest_ties", "reduce", "TopK", [("x", TIE), ("c", np.array([3], np.int64))],
     {"largest": 0}, lambda x, k: (np.sort(x, axis=1, kind="stable")[:, :3],
                                   np.argsort(x, axis=1, kind="stable")[:, :3]), outs=2,
     out_types=[F, TensorProto.INT64])


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


case("Softmax", "norm", "Softmax", [("x", R)], {"axis": 1}, lambda x: softmax(x, 1))
case("LogSoftmax", "norm", "LogSoftmax", [("x", R)], {"axis": -1},
     lambda x: np.log(softmax(x.astype(np.float64), 3)))
case("Hardmax", "norm", "Hardmax", [("x", TIE)], {"axis": 1},
     lambda x: np.eye(4, dtype=np.float32)[np.argmax(x, axis=1)])
# No axis attribute: opset 13 made the last axis the default (and before it, axis 1 of the input
# flattened to 2-D), not 0.
case("LogSoftmax_default_axis", "norm", "LogSoftmax", [("x", R)], {},
     lambda x: np.log(softmax(x.astype(np.float64), 3)))
case("Hardmax_default_axis", "norm", "Hardmax", [("x", TIE)], {},
     lambda x: np.eye(4, dtype=np.float32)[np.argmax(x, axis=1)])
# Before opset 13 the three flattened the input to 2-D at `axis` (default 1).
case("Softmax_opset11_flatten", "norm", "Softmax", [("x", R)], {"axis": 1},
     lambda x: softmax(x.reshape(2, -1), 1).reshape(x.shape), opset=11)
case("LogSoftmax_opset11_default_axis", "norm", "LogSoftmax", [("x", R)], {},
     lambda x: np.log(softmax(x.astype(np.float64).reshape(2, -1), 1)).reshape(x.shape),
     opset=11)
case("Hardmax_opset11_axis0", "norm", "Hardmax", [("x", TIE)], {"axis": 0},
     lambda x: np.eye(8, dtype=np.float32)[np.argmax(x.reshape(1, -1), axis=1)].reshape(x.shape),
     opset=11)
case("CumSum", "norm", "CumSum", [("x", R), ("c", np.array(2, np.int64))], {},
     lambda x, a: np.cumsum(x, axis=2))
case("CumSum_excl_rev", "norm", "CumSum", [("x", R), ("c", np.array(-1, np.int64))],
     {"exclusive": 1, "reverse": 1},
     lambda x, a: np.flip(np.cumsum(np.flip(x, 3), axis=3) - np.flip(x, 3), 3))
case("LpNormalization", "norm", "LpNormalization", [("x", R)], {"axis": 1, "p": 2},
     lambda x: x / np.sqrt(np.sum(x * x, axis=1, keepdims=True)))
case("LpNormalization_p1", "norm", "LpNormalization", [("x", R)], {"axis": -1, "p": 1},
     lambda x: x / np.sum(np.abs(x), axis=-1, keepdims=True))


def layernorm(x, s, b, axis, eps):
    ax = tuple(range(axis, x.ndim))
    m = x.mean(axis=ax, keepdims=True)
    v = ((x - m) ** 2).mean(axis=ax, keepdims=True)
    return (x - m) / np.sqrt(v + eps) * s + b


case("LayerNormalization", "norm", "LayerNormalization",
     [("x", R), ("c", rnd(5)), ("c", rnd(5))], {"axis": -1, "epsilon": 1e-5},
     lambda x, s, b: layernorm(x, s, b, 3, 1e-5))
case("LayerNormalization_2axes", "norm", "LayerNormalization",
     [("x", R), ("c", rnd(4, 5))], {"axis": 2}, lambda x, s: layernorm(x, s, 0, 2, 1e-5))


def layernorm_stats(x, axis, eps):
    """LayerNormalization's optional outputs: Mean and InvStdDev over [axis, rank), kept."""
    ax = tuple(range(axis, x.ndim))
    x64 = x.astype(np.float64)
    m = x64.mean(axis=ax, keepdims=True)
    return m, 1 / np.sqrt(((x64 - m) ** 2).mean(axis=ax, keepdims=True) + eps)


case("LayerNormalization_stats", "norm", "LayerNormalization",
     [("x", R), ("c", rnd(4, 5)), ("c", rnd(4, 5))], {"axis": -2, "epsilon": 1e-3},
     lambda x, s, b: (layernorm(x, s, b, 2, 1e-3),) + layernorm_stats(x, 2, 1e-3), outs=3)
case("InstanceNormalization", "norm", "InstanceNormalization",
     [("x", R), ("c", rnd(3)), ("c", rnd(3))], {"epsilon": 1e-3},
     lambda x, s, b: layernorm(x, 1, 0, 2, 1e-3) * s[:, None, None] + b[:, None, None])


FLAT_RNG = np.random.default_rng(64961)


def flat_rnd(*shape):
    return FLAT_RNG.uniform(-2.0, 2.0, size=shape).astype(np.float32)


def flat_rows(shape, value, row):
    """Random rows of `row` elements with every other row constant (variance 0): the output of a constant row is
    (x - mean) / sqrt(eps), so an fp32 running mean (an ulp or more off `value` for 60 terms)
    is amplified ~300x (random-graph seed 64961); the oracle's statistics are float64. Drawn
    from a generator of its own, so that the cases after these keep their data."""
    x = flat_rnd(*shape)
    x.reshape(-1, row)[::2] = value
    return x


def norm64(x, axis, eps):
    m, inv = layernorm_stats(x, axis, eps)
    return (x.astype(np.float64) - m) * inv


case("LayerNormalization_flat_rows", "norm", "LayerNormalization",
     [("x", flat_rows((2, 3, 60), 6.637, 60)), ("c", flat_rnd(60)), ("c", flat_rnd(60))],
     {"axis": -1},
     lambda x, s, b: norm64(x, 2, 1e-5) * s + b)
case("InstanceNormalization_flat_plane", "norm", "InstanceNormalization",
     [("x", flat_rows((1, 4, 6, 10), 6.637, 60)), ("c", flat_rnd(4)), ("c", flat_rnd(4))], {},
     lambda x, s, b: norm64(x, 2, 1e-5) * s[:, None, None] + b[:, None, None])


case("BatchNormalization", "norm", "BatchNormalization",
     [("x", R), ("c", rnd(3)), ("c", rnd(3)), ("c", rnd(3)), ("c", rnd(3, lo=0.5, hi=2))], {},
     lambda x, s, b, m, v: (x - m[:, None, None]) / np.sqrt(v[:, None, None] + 1e-5) *
     s[:, None, None] + b[:, None, None])
# Parameters computed at run time (graph inputs) and training mode (batch statistics; running
# mean and variance outputs): BatchNormalization as elementwise nodes at import.
case("BatchNormalization_runtime_params", "norm", "BatchNormalization",
     [("x", R), ("x", rnd(3)), ("x", rnd(3)), ("x", rnd(3)), ("x", rnd(3, lo=0.5, hi=2))],
     {"epsilon": 1e-3},
     lambda x, s, b, m, v: (x - m[:, None, None]) / np.sqrt(v[:, None, None] + 1e-3) *
     s[:, None, None] + b[:, None, None])


def bn_training(x, s, b, m, v, eps=1e-5, momentum=0.9):
    bm, bv = x.mean(axis=(0, 2, 3)), x.var(axis=(0, 2, 3))
    y = (x - bm[:, None, None]) / np.sqrt(bv[:, None, None] + eps) * s[:, None, None] + \
        b[:, None, None]
    return y, m * momentum + bm * (1 - momentum), v * momentum + bv * (1 - momentum)


case("BatchNormalization_training", "norm", "BatchNormalization",
     [("x", R), ("c", rnd(3)), ("c", rnd(3)), ("c", rnd(3)), ("c", rnd(3, lo=0.5, hi=2))],
     {"training_mode": 1, "momentum": 0.8},
     lambda x, s, b, m, v: bn_training(x, s, b, m, v, momentum=0.8), outs=3, opset=15)


def lrn(x, size, alpha, beta, bias):
    sq = np.zeros_like(x)
    C = x.shape[1]
    for c in range(C):
        lo, hi = max(0, c - (size - 1) // 2), min(C - 1, c + math.ceil((size - 1) / 2))
        sq[:, c] = (x[:, lo:hi + 1] ** 2).sum(axis=1)
    return x / (bias + alpha / size * sq) ** beta


case("LRN", "norm", "LRN", [("x", rnd(1, 6, 3, 3))], {"size": 4, "alpha": 0.5, "beta": 0.75,
                                                       "bias": 2.0},
     lambda x: lrn(x, 4, 0.5, 0.75, 2.0))


def window(x, k, s, p, d, fn, init):
    """Naive 2-D window over explicitly padded input (pads: t, l, b, r); fn(values, padded
    count) gives the result."""
    N, C, H, W = x.shape
    OH = (H + p[0] + p[2] - (d[0] * (k[0] - 1) + 1)) // s[0] + 1
    OW = (W + p[1] + p[3] - (d[1] * (k[1] - 1) + 1)) // s[1] + 1
    out = np.zeros((N, C, OH, OW), np.float64)
    for oh in range(OH):
        for ow in range(OW):
            vals = []
            for kh in range(k[0]):
                for kw in range(k[1]):
                    ih, iw = oh * s[0] - p[0] + kh * d[0], ow * s[1] - p[1] + kw * d[1]
                    if 0 <= ih < H and 0 <= iw < W:
                        vals.append(x[:, :, ih, iw])
            out[:, :, oh, ow] = fn(np.stack(vals), k[0] * k[1])
    return out


PX = rnd(1, 2, 5, 6)
case("LpPool", "pool", "LpPool", [("x", PX)], {"kernel_shape": [2, 3], "strides": [2, 1],
                                               "pads": [1, 0, 0, 1], "p": 2},
     lambda x: window(x, [2, 3], [2, 1], [1, 0, 0, 1], [1, 1],
                      lambda v, n: np.sqrt((v.astype(np.float64) ** 2).sum(0)), 0))
case("LpPool_p1_same", "pool", "LpPool", [("x", PX)], {"kernel_shape": [3, 3], "strides": [2, 2],
                                                       "auto_pad": "SAME_UPPER", "p": 1},
     # out = ceil(5/2)=3 x ceil(6/2)=3; total pad = (3-1)*2+3-5 = 2 -> 1/1 and (3-1)*2+3-6=1
     # -> 0 before, 1 after (SAME_UPPER puts the odd one at the end)
     lambda x: window(x, [3, 3], [2, 2], [1, 0, 1, 1], [1, 1],
                      lambda v, n: np.abs(v).sum(0), 0))
case("MaxPool_same_lower", "pool", "MaxPool", [("x", PX)],
     {"kernel_shape": [2, 2], "strides": [2, 2], "auto_pad": "SAME_LOWER"},
     # out 3x3; total pad (3-1)*2+2-5 = 1 (H: 1 before), (3-1)*2+2-6 = 0 (W)
     lambda x: window(x, [2, 2], [2, 2], [1, 0, 0, 0], [1, 1], lambda v, n: v.max(0), 0))
case("AveragePool_same_upper", "pool", "AveragePool", [("x", PX)],
     {"kernel_shape": [2, 2], "strides": [2, 2], "auto_pad": "SAME_UPPER"},
     lambda x: window(x, [2, 2], [2, 2], [0, 0, 1, 0], [1, 1], lambda v, n: v.mean(0), 0))
case("AveragePool_include_pad", "pool", "AveragePool", [("x", PX)],
     {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "count_include_pad": 1},
     lambda x: window(x, [3, 3], [2, 2], [1, 1, 1, 1], [1, 1], lambda v, n: v.sum(0) / n, 0))
case("GlobalMaxPool", "pool", "GlobalMaxPool", [("x", PX)], {},
     lambda x: x.max(axis=(2, 3), keepdims=True))
case("GlobalLpPool", "pool", "GlobalLpPool", [("x", PX)], {"p": 3},
     lambda x: (np.abs(x.astype(np.float64)) ** 3).sum(axis=(2, 3), keepdims=True) ** (1 / 3))
case("GlobalAveragePool", "pool", "GlobalAveragePool", [("x", PX)], {},
     lambda x: x.mean(axis=(2, 3), keepdims=True))

# ----------------------------------------------------------------------------- data movement
S = rnd(2, 3, 4, 5)
case("Slice", "shape", "Slice", [("x", S), ("c", np.array([1, -4, 0], np.int64)),
                                 ("c", np.array([3, 1000, -1], np.int64)),
                                 ("c", np.array([1, 3, 2], np.int64)),
                                 ("c", np.array([1, 2, 1], np.int64))], {},
     lambda x, *a: x[:, 1:3, :, 1::2][:, :, 0:-1])
case("Slice_negstep", "shape", "Slice", [("x", S), ("c", np.array([-1], np.int64)),
                                         ("c", np.array([-9223372036854775807], np.int64)),
                                         ("c", np.array([3], np.int64)),
                                         ("c", np.array([-2], np.int64))], {},
     lambda x, *a: x[:, :, :, ::-2])
# Starts past the end: an empty output (the NPU leaves such a group to the CPU).
case("Slice_empty", "shape", "Slice", [("x", S), ("c", np.array([1000], np.int64)),
                                       ("c", np.array([1000], np.int64)),
                                       ("c", np.array([1], np.int64))], {},
     lambda x, *a: x[:, 1000:])
case("Split", "shape", "Split", [("x", S), ("c", np.array([2, 3], np.int64))], {"axis": -1},
     lambda x, s: (x[..., :2], x[..., 2:]), outs=2)
case("Split_equal", "shape", "Split", [("x", S)], {"axis": 2},
     lambda x: (x[:, :, :2], x[:, :, 2:]), outs=2)
case("Expand", "shape", "Expand", [("x", rnd(3, 1)), ("c", np.array([2, 1, 4], np.int64))], {},
     lambda x, s: np.broadcast_to(x, (2, 3, 4)))
case("Tile", "shape", "Tile", [("x", rnd(2, 3)), ("c", np.array([2, 3], np.int64))], {},
     lambda x, r: np.tile(x, (2, 3)))
case("DepthToSpace_DCR", "shape", "DepthToSpace", [("x", rnd(1, 8, 2, 3))], {"blocksize": 2},
     lambda x: x.reshape(1, 2, 2, 2, 2, 3).transpose(0, 3, 4, 1, 5, 2).reshape(1, 2, 4, 6))
case("DepthToSpace_CRD", "shape", "DepthToSpace", [("x", rnd(1, 8, 2, 3))],
     {"blocksize": 2, "mode": "CRD"},
     lambda x: x.reshape(1, 2, 2, 2, 2, 3).transpose(0, 1, 4, 2, 5, 3).reshape(1, 2, 4, 6))
case("SpaceToDepth", "shape", "SpaceToDepth", [("x", rnd(1, 2, 4, 6))], {"blocksize": 2},
     lambda x: x.reshape(1, 2, 2, 2, 3, 2).transpose(0, 3, 5, 1, 2, 4).reshape(1, 8, 2, 3))
GI = np.array([[0, 2, -1], [1, 0, 0]], np.int64)
case("GatherElements", "shape", "GatherElements", [("x", rnd(2, 3)), ("c", GI)], {"axis": 1},
     lambda x, i: np.take_along_axis(x, np.where(i < 0, i + 3, i), axis=1))
case("Gather", "shape", "Gather", [("x", S), ("c", np.array([[2, 0], [-1, 1]], np.int64))],
     {"axis": 2}, lambda x, i: np.take(x, np.where(i < 0, i + 4, i), axis=2))
case("Trilu", "shape", "Trilu", [("x", rnd(2, 4, 5)), ("c", np.array(1, np.int64))], {},
     lambda x, k: np.triu(x, 1))
case("Trilu_lower", "shape", "Trilu", [("x", rnd(4, 5))], {"upper": 0},
     lambda x: np.tril(x))
case("Transpose", "shape", "Transpose", [("x", S)], {"perm": [0, 2, 3, 1]},
     lambda x: x.transpose(0, 2, 3, 1))
case("Concat", "shape", "Concat", [("x", S), ("x", rnd(2, 1, 4, 5))], {"axis": 1},
     lambda a, b: np.concatenate([a, b], 1))
case("Pad", "shape", "Pad", [("x", S), ("c", np.array([0, 1, 0, 2, 0, 0, 1, 1], np.int64)),
                             ("c", np.array(0.5, np.float32))], {},
     lambda x, p, v: np.pad(x, [(0, 0), (1, 0), (0, 1), (2, 1)], constant_values=0.5))
case("Reshape", "shape", "Reshape", [("x", S), ("c", np.array([0, -1, 5], np.int64))], {},
     lambda x, s: x.reshape(2, 12, 5))
case("Flatten", "shape", "Flatten", [("x", S)], {"axis": 2}, lambda x: x.reshape(6, 20))
case("Squeeze", "shape", "Squeeze", [("x", rnd(2, 1, 3, 1)), ("c", np.array([3], np.int64))],
     {}, lambda x, a: x.reshape(2, 1, 3))
case("Unsqueeze", "shape", "Unsqueeze", [("x", rnd(2, 3)), ("c", np.array([0, -1], np.int64))],
     {}, lambda x, a: x.reshape(1, 2, 3, 1))
case("Cast_bool", "shape", "Cast", [("x", np.array([0, 1.5, -2, 0], np.float32))],
     {"to": TensorProto.BOOL}, lambda x: x != 0, out_types=[TensorProto.BOOL])
case("Cast_int", "shape", "Cast", [("x", np.array([0.5, 1.7, -2.7, 3], np.float32))],
     {"to": TensorProto.INT64}, lambda x: np.trunc(x), out_types=[TensorProto.INT64])
case("EyeLike", "shape", "EyeLike", [("x", rnd(3, 4))], {"k": 1},
     lambda x: np.eye(3, 4, k=1))


# ----------------------------------------------------------------------------- conv family
def torch_cases():
    import torch
    import torch.nn.functional as tf
    T = torch.from_numpy
    x = rnd(1, 4, 5, 5)
    w = rnd(4, 3, 3, 3)
    b = rnd(6)
    case("ConvTranspose", "conv", "ConvTranspose", [("x", x), ("c", w), ("c", b)],
         {"strides": [2, 2], "pads": [1, 0, 1, 0], "output_padding": [1, 0], "group": 2},
         lambda x, w, b: tf.conv_transpose2d(T(x), T(w), T(b), stride=2, padding=(1, 0),
                                             output_padding=(1, 0), groups=2).numpy())
    w2 = rnd(4, 2, 2, 3)
    case("ConvTranspose_dilated", "conv", "ConvTranspose", [("x", x), ("c", w2)],
         {"dilations": [2, 1], "strides": [1, 2]},
         lambda x, w: tf.conv_transpose2d(T(x), T(w), stride=(1, 2), dilation=(2, 1)).numpy())
    case("Conv", "conv", "Conv", [("x", x), ("c", rnd(6, 2, 3, 3)), ("c", b)],
         {"pads": [1, 1, 1, 1], "group": 2, "strides": [2, 1]},
         lambda x, w, b: tf.conv2d(T(x), T(w), T(b), stride=(2, 1), padding=1, groups=2).numpy())
    case("Conv_same_upper", "conv", "Conv", [("x", x), ("c", rnd(3, 4, 2, 2))],
         {"auto_pad": "SAME_UPPER", "strides": [2, 2]},
         # out 3x3, total pad (3-1)*2+2-5 = 1 -> 0 before, 1 after on both axes
         lambda x, w: tf.conv2d(tf.pad(T(x), (0, 1, 0, 1)), T(w), stride=2).numpy())
    case("MaxPool_ceil", "pool", "MaxPool", [("x", PX)],
         {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1},
         lambda x: tf.max_pool2d(T(x), 3, 2, 1, ceil_mode=True).numpy())
    case("AveragePool_ceil", "pool", "AveragePool", [("x", PX)],
         {"kernel_shape": [2, 2], "strides": [2, 2], "ceil_mode": 1},
         lambda x: tf.avg_pool2d(T(x), 2, 2, ceil_mode=True, count_include_pad=False).numpy())
    case("AveragePool_ceil_include_pad", "pool", "AveragePool", [("x", PX)],
         {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1,
          "count_include_pad": 1},
         lambda x: tf.avg_pool2d(T(x), 3, 2, 1, ceil_mode=True, count_include_pad=True).numpy())
    case("Gemm", "conv", "Gemm", [("x", rnd(3, 5)), ("c", rnd(4, 5)), ("c", rnd(4))],
         {"transB": 1, "alpha": 0.5, "beta": 2.0},
         lambda a, b, c: 0.5 * a @ b.T + 2.0 * c)
    case("MatMul", "conv", "MatMul", [("x", rnd(2, 3, 5)), ("x", rnd(5, 4))], {},
         lambda a, b: a @ b)
    # Resize: torch's interpolate is the oracle for the modes it implements.
    rx = rnd(1, 2, 3, 4)
    sc = np.array([1, 1, 2, 1.5], np.float32)
    empty = np.zeros((0,), np.float32)
    case("Resize_nearest_asym_floor", "resize", "Resize", [("x", rx), ("c", empty), ("c", sc)],
         {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
          "nearest_mode": "floor"},
         lambda x, r, s: tf.interpolate(T(x), scale_factor=(2, 1.5), mode="nearest").numpy())
    sizes = np.array([1, 2, 7, 5], np.int64)
    case("Resize_nearest_half_pixel_ceil", "resize", "Resize",
         [("x", rx), None, None, ("c", sizes)],
         {"mode": "nearest", "coordinate_transformation_mode": "half_pixel",
          "nearest_mode": "round_prefer_ceil"},
         lambda x, s: tf.interpolate(T(x), size=(7, 5), mode="nearest-exact").numpy())
    case("Resize_linear_align_corners", "resize", "Resize", [("x", rx), None, None,
                                                             ("c", sizes)],
         {"mode": "linear", "coordinate_transformation_mode": "align_corners"},
         lambda x, s: tf.interpolate(T(x), size=(7, 5), mode="bilinear",
                                     align_corners=True).numpy())
    case("Resize_linear_pytorch_half_pixel", "resize", "Resize", [("x", rx), ("c", empty),
                                                                  ("c", sc)],
         {"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"},
         lambda x, r, s: tf.interpolate(T(x), scale_factor=(2, 1.5), mode="bilinear",
                                        align_corners=False).numpy())
    case("Resize_linear_half_pixel", "resize", "Resize", [("x", rx), ("c", empty),
                                                          ("c", np.array([1, 1, 2, 2], np.float32))],
         {"mode": "linear"},
         lambda x, r, s: tf.interpolate(T(x), scale_factor=2, mode="bilinear",
                                        align_corners=False).numpy())
    # Hand-computed 1-D cases for the modes torch lacks (input [0, 10, 20, 30] along W).
    line = np.array([[[[0, 10, 20, 30]]]], np.float32)
    # asymmetric linear, 4 -> 6 (scale 1.5): x_in = x/1.5 = 0, .667, 1.333, 2, 2.667, 3.333->3
    case("Resize_linear_asymmetric", "resize", "Resize",
         [("x", line), None, None, ("c", np.array([1, 1, 1, 6], np.int64))],
         {"mode": "linear", "coordinate_transformation_mode": "asymmetric"},
         lambda x, s: np.array([[[[0, 20 / 3, 40 / 3, 20, 80 / 3, 30]]]]))
    # tf_half_pixel_for_nn, 4 -> 3 (scale .75): x_in = (x + .5)/.75 = .667, 2, 3.333
    # round_prefer_floor -> 1, 2, 3
    case("Resize_nearest_tf_half_pixel", "resize", "Resize",
         [("x", line), None, None, ("c", np.array([1, 1, 1, 3], np.int64))],
         {"mode": "nearest", "coordinate_transformation_mode": "tf_half_pixel_for_nn"},
         lambda x, s: np.array([[[[10, 20, 30]]]]))
    # half_pixel, round_prefer_floor, 4 -> 8: x_in = (x+.5)/2-.5 = -.25,.25,.75,1.25,1.75,...
    # -> 0,0,1,1,2,2,3,3 ; and 4 -> 2: x_in = (x+.5)*2-.5 = .5 (tie -> floor 0), 2.5 (-> 2)
    case("Resize_nearest_half_pixel_floor_tie", "resize", "Resize",
         [("x", line), None, None, ("c", np.array([1, 1, 1, 2], np.int64))],
         {"mode": "nearest"}, lambda x, s: np.array([[[[0, 20]]]]))
    # [1,1,2,1] -> [1,1,4,2] (difftest finding F4: the NPU's loop-nest kernel took the float
    # source index for an integer one and compile aborted; such a group runs on the CPU). H 2 ->
    # 4, half_pixel: x_in = (y + .5) / 2 - .5 = -.25, .25, .75, 1.25; W 1 -> 2: -.25, .25.
    # nearest round_prefer_floor -> rows 0, 0, 1, 1; linear (clamped to the edge) -> 1, 1.25,
    # 1.75, 2; asymmetric floor: y / 2 = 0, .5, 1, 1.5 -> 0, 0, 1, 1.
    col = np.array([[[[1], [2]]]], np.float32)
    to42 = ("c", np.array([1, 1, 4, 2], np.int64))
    rows = lambda *r: np.array([[[[v, v] for v in r]]])
    case("Resize_nearest_2x1_to_4x2", "resize", "Resize", [("x", col), None, None, to42],
         {"mode": "nearest"}, lambda x, s: rows(1, 1, 2, 2))
    case("Resize_linear_2x1_to_4x2", "resize", "Resize", [("x", col), None, None, to42],
         {"mode": "linear"}, lambda x, s: rows(1, 1.25, 1.75, 2))
    case("Resize_nearest_asym_2x1_to_4x2", "resize", "Resize", [("x", col), None, None, to42],
         {"mode": "nearest", "coordinate_transformation_mode": "asymmetric",
          "nearest_mode": "floor"}, lambda x, s: rows(1, 1, 2, 2))
    case("LRN_torch", "norm", "LRN", [("x", rnd(1, 5, 2, 2))], {"size": 3},
         lambda x: tf.local_response_norm(T(x), 3, alpha=1e-4, beta=0.75, k=1.0).numpy())
    # Cubic Resize: torch's bicubic is Keys' kernel with A = -0.75 and clamped edge taps; ONNX's
    # own numpy reference (onnx.backend.test.case.node.resize) checks exclude_outside and A.
    case("Resize_cubic_half_pixel", "resize", "Resize", [("x", rx), None, None, ("c", sizes)],
         {"mode": "cubic"},
         lambda x, s: tf.interpolate(T(x), size=(7, 5), mode="bicubic",
                                     align_corners=False).numpy())
    case("Resize_cubic_align_corners", "resize", "Resize", [("x", rx), None, None,
                                                            ("c", sizes)],
         {"mode": "cubic", "coordinate_transformation_mode": "align_corners"},
         lambda x, s: tf.interpolate(T(x), size=(7, 5), mode="bicubic",
                                     align_corners=True).numpy())
    down = np.array([1, 1, 2, 0.6], np.float32)
    case("Resize_cubic_exclude_outside", "resize", "Resize", [("x", rx), ("c", empty),
                                                              ("c", down)],
         {"mode": "cubic", "cubic_coeff_a": -0.5, "exclude_outside": 1},
         lambda x, r, s: onnx_resize.interpolate_nd(
             x, lambda ratio: onnx_resize.cubic_coeffs(ratio, A=-0.5), scale_factors=s,
             exclude_outside=True))


# ----------------------------------------------------------------------------- NPU layout
def npu_layout_cases():
    """Concat along every axis of the NPU's layouts (4-D NHWC: axis 1 is the innermost channel
    axis; 2-D/3-D row-major) and binary ops with a per-channel or scalar tensor operand (the
    squeeze-excitation gate): these run on the NPU on npu-base, which the cases assert. Added
    last so that the random data of the earlier cases does not change."""
    cat = lambda axis: lambda *xs: np.concatenate(xs, axis)
    npu = dict(placement="npu")
    case("Concat_axis1_3_13", "shape", "Concat", [("x", rnd(1, 3, 5, 7)), ("x", rnd(1, 13, 5, 7))],
         {"axis": 1}, cat(1), **npu)
    case("Concat_axis1_13_40_3", "shape", "Concat",
         [("x", rnd(2, 13, 3, 5)), ("x", rnd(2, 40, 3, 5)), ("x", rnd(2, 3, 3, 5))], {"axis": 1},
         cat(1), **npu)
    case("Concat_axis2", "shape", "Concat", [("x", rnd(1, 4, 3, 5)), ("x", rnd(1, 4, 6, 5))],
         {"axis": 2}, cat(2), **npu)
    case("Concat_axis3_neg", "shape", "Concat", [("x", rnd(2, 3, 4, 5)), ("x", rnd(2, 3, 4, 2))],
         {"axis": -1}, cat(3), **npu)
    case("Concat_axis0", "shape", "Concat", [("x", rnd(1, 3, 2, 5)), ("x", rnd(2, 3, 2, 5))],
         {"axis": 0}, cat(0), **npu)
    case("Concat_2d", "shape", "Concat", [("x", rnd(3, 5)), ("x", rnd(3, 7))], {"axis": 1},
         cat(1), **npu)
    case("Concat_3d_const", "shape", "Concat", [("x", rnd(2, 3, 5)), ("c", rnd(2, 4, 5))],
         {"axis": 1}, cat(1), **npu)
    case("Mul_bcast_channel", "binary", "Mul", [("x", rnd(1, 37, 5, 7)), ("x", rnd(1, 37, 1, 1))],
         {}, np.multiply, **npu)
    case("Sub_bcast_channel_first", "binary", "Sub",
         [("x", rnd(37, 1, 1)), ("x", rnd(2, 37, 3, 5))], {}, np.subtract, **npu)
    case("Add_bcast_scalar", "binary", "Add", [("x", rnd(1, 6, 3, 5)), ("x", rnd(1, 1, 1, 1))], {},
         np.add, **npu)
    case("Mul_bcast_last_axis", "binary", "Mul", [("x", rnd(4, 37)), ("x", rnd(37))], {},
         np.multiply, **npu)


# ----------------------------------------------------------------------------- transformer ops
def transformer_cases():
    """The transformer and modern-convnet operators that must run on the NPU of
    configs/npu-transformer.yaml (its vector unit has exp, div, sqrt and erf, and its DMAs fill
    fp32 accumulators): check_ops.py runs the family on that target and asserts the placement.
    Added last so that the random data of the earlier cases does not change."""
    npu = dict(placement="npu")
    case("LayerNormalization_npu", "transformer", "LayerNormalization",
         [("x", rnd(2, 7, 96)), ("c", rnd(96)), ("c", rnd(96))], {"axis": -1, "epsilon": 1e-5},
         lambda x, s, b: layernorm(x, s, b, 2, 1e-5), **npu)
    case("Softmax_npu", "transformer", "Softmax", [("x", rnd(3, 5, 40, lo=-6, hi=6))],
         {"axis": -1}, lambda x: softmax(x, 2), **npu)
    case("Erf_npu", "transformer", "Erf", [("x", rnd(4, 33))], {}, verf, **npu)
    # 3136 rows: more fp32 accumulators than a DMA's two pads can fill (EmitNpu.cpp dmaForm).
    case("ReduceMean_last_axis_3136_rows_npu", "transformer", "ReduceMean",
         [("x", rnd(1, 3136, 4))], {"axes": [2], "keepdims": 1},
         lambda x: x.astype(np.float64).mean(axis=2, keepdims=True), opset=13, **npu)
    # A Linear layer on a channels-last [N, H, W, C] tensor (graph/ChannelsLast.h).
    case("MatMul_4d_by_matrix_npu", "transformer", "MatMul",
         [("x", rnd(1, 4, 5, 16)), ("c", rnd(16, 8))], {},
         lambda x, w: x.astype(np.float64) @ w, tensor_ops=["MatMul"], **npu)
    # A batched product by a constant: the tensor-unit kernels refuse it, a loop nest runs it and
    # the report still counts its 120 MACs (check_ops.py).
    case("MatMul_batched_constant_npu", "transformer", "MatMul",
         [("x", rnd(2, 3, 4)), ("c", rnd(2, 4, 5))], {},
         lambda x, w: x.astype(np.float64) @ w, **npu)
    # The class token h[:, 0] (Simplify.cpp: a Slice and a Reshape).
    case("Gather_constant_position_npu", "transformer", "Gather",
         [("x", rnd(2, 9, 16)), ("c", np.array(0, np.int64))], {"axis": 1},
         lambda x, i: x[:, 0], **npu)
    # Attention masks (graph/LowerActivations.h): a causal mask filled with -inf (masked_fill's
    # export, the condition already negated), and a constant per-column fill in the second branch.
    future = ~np.tril(np.ones((6, 6), bool))
    case("Where_causal_mask_npu", "transformer", "Where",
         [("c", future), ("c", np.array(-np.inf, np.float32)), ("x", rnd(2, 3, 6, 6))], {},
         lambda m, k, x: np.where(m, k, x), **npu)
    case("Where_constant_fill_second_npu", "transformer", "Where",
         [("c", ~future), ("x", rnd(3, 6, 6)), ("c", rnd(6, lo=-2, hi=2))], {},
         lambda m, x, k: np.where(m, x, k), **npu)
    # ONNX's Gelu, erf and tanh forms (lowered to Erf or Tanh arithmetic the vector unit runs).
    # Their data comes from a generator of their own, so that the cases after this family keep
    # theirs.
    g = np.random.default_rng(2121).uniform(-4, 4, (3, 40)).astype(np.float32)
    case("Gelu_npu", "transformer", "Gelu", [("x", g)], {},
         lambda x: 0.5 * x * (1 + verf(x / math.sqrt(2))), **npu)
    case("Gelu_tanh_npu", "transformer", "Gelu", [("x", g)], {"approximate": "tanh"},
         lambda x: 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3))),
         **npu)


# ----------------------------------------------------------------------------- folded ops
def folded_cases(outdir):
    """Shape-computing ops whose inputs are constants: folded at import; the model adds the
    folded value to a graph input so that something runs."""
    out = []

    def model(name, op, nodes, inits, x, expect):
        d = os.path.join(outdir, name)
        os.makedirs(d, exist_ok=True)
        g = helper.make_graph(nodes + [helper.make_node("Add", ["i0", "k"], ["y0"])], name,
                              [helper.make_tensor_value_info("i0", F, list(x.shape))],
                              [helper.make_tensor_value_info("y0", F, None)], inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
        m.ir_version = 8
        onnx.save(m, os.path.join(d, "model.onnx"))
        np.save(os.path.join(d, "in_i0.npy"), x)
        np.save(os.path.join(d, "exp_y0.npy"), expect.astype(np.float32))
        out.append(dict(name=name, family="folded", op=op, inputs=["i0"], oracle=True))

    x = rnd(2, 3)
    I = lambda n, a: numpy_helper.from_array(np.array(a, np.int64), n)
    model("Shape_ConstantOfShape", "ConstantOfShape",
          [helper.make_node("Shape", ["i0"], ["s"]),
           helper.make_node("ConstantOfShape", ["s"], ["k"],
                            value=helper.make_tensor("v", F, [1], [2.5]))], [], x, x + 2.5)
    model("Range_Cast", "Range",
          [helper.make_node("Range", ["a", "b", "c"], ["r"]),
           helper.make_node("Cast", ["r"], ["k"], to=F)],
          [I("a", 1), I("b", 7), I("c", 2)], x, x + np.array([1, 3, 5]))
    model("Size", "Size", [helper.make_node("Size", ["i0"], ["s"]),
                           helper.make_node("Cast", ["s"], ["k"], to=F)], [], x, x + 6)
    model("Constant", "Constant",
          [helper.make_node("Constant", [], ["k"], value=numpy_helper.from_array(
              np.array([1, 2, 3], np.float32)))], [], x, x + np.array([1, 2, 3]))
    model("Shape_Gather_Equal", "Equal",
          [helper.make_node("Shape", ["i0"], ["s"]),
           helper.make_node("Gather", ["s", "idx"], ["g"], axis=0),
           helper.make_node("Equal", ["g", "three"], ["e"]),
           helper.make_node("Where", ["e", "one", "zero"], ["k"])],
          [I("idx", 1), I("three", 3), numpy_helper.from_array(np.array(1, np.float32), "one"),
           numpy_helper.from_array(np.array(0, np.float32), "zero")], x, x + 1)
    # Integer Div truncates: Shape[1] = 3, (3 + 2) / 3 = 1 (not round(1.67) = 2).
    model("Shape_Div_int", "Div",
          [helper.make_node("Shape", ["i0"], ["s"]),
           helper.make_node("Gather", ["s", "idx"], ["g"], axis=0),
           helper.make_node("Add", ["g", "two"], ["a"]),
           helper.make_node("Div", ["a", "three"], ["q"]),
           helper.make_node("Cast", ["q"], ["k"], to=F)],
          [I("idx", 1), I("two", 2), I("three", 3)], x, x + 1)
    return out


def encoder_case(outdir):
    """A 2-layer torch.nn.TransformerEncoder (GELU, batch_first) exported at opset 17: the
    transformer-encoder op mix (MatMul, LayerNormalization, Softmax, Erf-GELU, Slice, Shape
    arithmetic folded at import) end to end; torch's output is the oracle."""
    import torch
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64,
                                             dropout=0.0, activation="gelu", batch_first=True)
    m = torch.nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False).eval()
    return torch_model_case(outdir, "TransformerEncoder", m, torch.randn(1, 8, 32), 17)


def torch_model_case(outdir, name, m, x, opset, **meta):
    """A `models` case from torch module m on input x: the ONNX export (input i0, output y0),
    the input, and torch's output as the oracle; meta adds check_ops.py keys (tensor_ops)."""
    import torch
    d = os.path.join(outdir, name)
    os.makedirs(d, exist_ok=True)
    torch.onnx.export(m, x, os.path.join(d, "model.onnx"), opset_version=opset,
                      input_names=["i0"], output_names=["y0"])
    np.save(os.path.join(d, "in_i0.npy"), x.numpy())
    with torch.no_grad():
        np.save(os.path.join(d, "exp_y0.npy"), m(x).numpy())
    return [dict(name=name, family="models", op="(model)", inputs=["i0"], oracle=True, **meta)]


def convnext_case(outdir):
    """ConvNeXt's channels-last blocks: torchvision's CNBlock twice (7x7 depthwise conv, Permute,
    LayerNorm, Linear, GELU, Linear, layer scale, Permute back, residual), then its LayerNorm2d
    and a 2x2 stride-2 Conv as in its downsampling, exported at opset 13 (LayerNorm as ReduceMean
    arithmetic, GELU through Erf). The Linear layers are MatMuls of [1, H, W, C] tensors, which
    must run on the tensor unit (graph/ChannelsLast.h); 20x20 tokens also exercise the folding of
    a long matrix product into image rows (PlanTensorUnit.cpp). torch's output is the oracle."""
    import torch
    from torchvision.models.convnext import CNBlock, LayerNorm2d
    torch.manual_seed(1)
    # layer_scale 0.5: torchvision's 1e-6 would leave the blocks close to the identity.
    m = torch.nn.Sequential(CNBlock(16, 0.5, 0.0), CNBlock(16, 0.5, 0.0), LayerNorm2d(16),
                            torch.nn.Conv2d(16, 32, 2, 2)).eval()
    return torch_model_case(outdir, "ConvNextBlocks", m, torch.randn(1, 16, 20, 20), 13,
                            tensor_ops=["MatMul"])


def main():
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    torch_cases()
    ops_opsets.add(case, rnd)
    ops_dataops.add(case, rnd)
    ops_rnn.add(case, rnd)
    ops_convnd.add(case, rnd)
    ops_typed.add(case, rnd)
    npu_layout_cases()
    ops_oldopsets.add(case, rnd)
    ops_misc.add(case, rnd)
    ops_quant.add(case, rnd)
    transformer_cases()
    meta = [build(c, outdir) for c in CASES]
    meta += folded_cases(outdir)
    meta += ops_dataops.folded(outdir, rnd)
    meta += encoder_case(outdir)
    meta += convnext_case(outdir)
    meta += ops_rnn.torch_cases(outdir, rnd)
    meta += ops_convnd.models(outdir)
    meta += ops_misc.models(outdir)
    meta += ops_control.models(outdir, rnd)
    meta += ops_seq.models(outdir, rnd)
    with open(os.path.join(outdir, "cases.json"), "w") as f:
        json.dump(meta, f, indent=1)
    ops = {m["op"] for m in meta if m["family"] != "models"}
    print(f"wrote {len(meta)} cases, {len(ops)} operators to {outdir}")


if __name__ == "__main__":
    main()
