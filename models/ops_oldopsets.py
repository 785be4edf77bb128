"""ops_oldopsets.py - single-operator cases below opset 9, which npuc brings to opset 9 with ONNX's
own version converter before import (frontend/OnnxUpgrade.cpp): legacy attributes
(consumed_inputs, is_test, broadcast/axis, BatchNormalization's spatial), attributes that later
became inputs (Reshape's shape, Upsample's scales) and changed defaults (Concat's axis). Family
"oldopsets". Family "operands": operands ONNX allows as run-time tensors where no output shape
depends on them (Clip's min/max, Pad's constant_value), given as graph inputs.
Imported by make_ops.py; every oracle is numpy, from the operator's definition at that opset.
"""
import numpy as np

from ops_opsets import _upsample_linear_asymmetric


def _batchnorm(x, s, b, m, v, eps):
    shape = (1, -1) + (1,) * (x.ndim - 2)
    return (x - m.reshape(shape)) / np.sqrt(v.reshape(shape) + eps) * s.reshape(shape) + \
        b.reshape(shape)


def _softmax_flattened(x, axis):
    """Softmax before opset 13: the input is flattened to 2-D at `axis`, normalised per row."""
    rows = int(np.prod(x.shape[:axis]))
    f = x.reshape(rows, -1).astype(np.float64)
    e = np.exp(f - f.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).reshape(x.shape)


def add(case, rnd):
    x = rnd(2, 3, 4)
    # --- legacy attributes the converter drops ---
    case("Relu_opset1_consumed_inputs", "oldopsets", "Relu", [("x", x)], {"consumed_inputs": [0]},
         lambda a: np.maximum(a, 0), opset=1)
    case("LeakyRelu_opset1_consumed_inputs", "oldopsets", "LeakyRelu", [("x", x)],
         {"alpha": 0.1, "consumed_inputs": [0]}, lambda a: np.where(a < 0, 0.1 * a, a), opset=1)
    case("Dropout_opset6_is_test", "oldopsets", "Dropout", [("x", x)], {"is_test": 1},
         lambda a: a, opset=6)
    bn = [("x", rnd(2, 3, 4, 5)), ("c", rnd(3)), ("c", rnd(3)), ("c", rnd(3)),
          ("c", rnd(3, lo=0.5, hi=2.0))]
    case("BatchNormalization_opset6_is_test", "oldopsets", "BatchNormalization", bn,
         {"epsilon": 1e-3, "is_test": 1, "momentum": 0.9},
         lambda *v: _batchnorm(*v, 1e-3), opset=6)
    case("BatchNormalization_opset7_spatial", "oldopsets", "BatchNormalization", bn,
         {"epsilon": 1e-5, "spatial": 1}, lambda *v: _batchnorm(*v, 1e-5), opset=7)
    # --- broadcast=1 with axis: B is aligned with A's dimensions from `axis` on ---
    case("Add_opset6_broadcast_axis1", "oldopsets", "Add", [("x", rnd(2, 3, 4, 5)), ("c", rnd(3))],
         {"broadcast": 1, "axis": 1}, lambda a, b: a + b[None, :, None, None], opset=6)
    case("Sub_opset1_broadcast_axis0", "oldopsets", "Sub", [("x", x), ("c", rnd(2, 3))],
         {"broadcast": 1, "axis": 0}, lambda a, b: a - b[:, :, None], opset=1)
    case("Mul_opset6_broadcast_suffix", "oldopsets", "Mul", [("x", x), ("c", rnd(4))],
         {"broadcast": 1}, lambda a, b: a * b, opset=6)
    case("Div_opset6_broadcast_axis1_2d", "oldopsets", "Div",
         [("x", rnd(2, 3, 4, 5)), ("c", rnd(3, 4, lo=0.5, hi=2.0))], {"broadcast": 1, "axis": 1},
         lambda a, b: a / b[None, :, :, None], opset=6)
    case("Gemm_opset6_broadcast_c", "oldopsets", "Gemm",
         [("x", rnd(2, 3)), ("c", rnd(4, 3)), ("c", rnd(4))],
         {"broadcast": 1, "transB": 1, "alpha": 0.5, "beta": 2.0},
         lambda a, b, c: 0.5 * a @ b.T + 2.0 * c, opset=6)
    # --- attributes that later became inputs, changed defaults ---
    case("Reshape_opset4_shape_attr", "oldopsets", "Reshape", [("x", x)], {"shape": [4, -1]},
         lambda a: a.reshape(4, -1), opset=4)
    case("Concat_opset3_default_axis", "oldopsets", "Concat", [("x", rnd(2, 3)), ("x", rnd(2, 2))],
         {}, lambda a, b: np.concatenate([a, b], axis=1), opset=3)
    u = rnd(1, 2, 2, 3)
    case("Upsample_opset7_nearest", "oldopsets", "Upsample", [("x", u)],
         {"scales": [1.0, 1.0, 2.0, 3.0], "mode": "nearest"},
         lambda a: np.repeat(np.repeat(a, 2, axis=2), 3, axis=3), opset=7)
    case("Upsample_opset7_linear", "oldopsets", "Upsample", [("x", u)],
         {"scales": [1.0, 1.0, 2.0, 2.5], "mode": "linear"},
         lambda a: _upsample_linear_asymmetric(a.astype(np.float64), [1, 1, 2, 2.5]), opset=7)
    case("Clip_opset6_attrs", "oldopsets", "Clip", [("x", x)], {"min": -0.5, "max": 0.75},
         lambda a: np.clip(a, -0.5, 0.75), opset=6)
    case("Pad_opset2_attrs", "oldopsets", "Pad", [("x", x)], {"pads": [0, 1, 2, 0, 0, 1],
                                                                "value": -1.5},
         lambda a: np.pad(a, [(0, 0), (1, 0), (2, 1)], constant_values=-1.5), opset=2)
    case("Sum_opset6", "oldopsets", "Sum", [("x", x), ("x", rnd(2, 3, 4)), ("x", rnd(2, 3, 4))],
         {}, lambda a, b, c: a + b + c, opset=6)
    case("Softmax_opset1_axis1", "oldopsets", "Softmax", [("x", x)], {"axis": 1},
         lambda a: _softmax_flattened(a, 1), opset=1)
    case("MaxPool_opset1", "oldopsets", "MaxPool", [("x", rnd(1, 2, 4, 6))],
         {"kernel_shape": [2, 3], "strides": [2, 3]},
         lambda a: a.reshape(1, 2, 2, 2, 2, 3).max(axis=(3, 5)), opset=1)

    # --- run-time operands (family "operands") ---
    lo, hi = np.array(-0.5, np.float32), np.array(0.75, np.float32)
    case("Clip_runtime_min_max", "operands", "Clip", [("x", x), ("x", lo), ("x", hi)], {},
         lambda a, l, h: np.minimum(np.maximum(a, l), h))
    case("Clip_runtime_min", "operands", "Clip", [("x", x), ("x", lo)], {},
         lambda a, l: np.maximum(a, l))
    case("Clip_runtime_max_const_min", "operands", "Clip",
         [("x", x), ("c", np.array(-1.0, np.float32)), ("x", hi)], {},
         lambda a, l, h: np.clip(a, -1.0, 0.75))
    case("Clip_runtime_min_const_max", "operands", "Clip", [("x", x), ("x", lo), ("c", hi)], {},
         lambda a, l, h: np.clip(a, -0.5, 0.75))
    # min > max: numpy.clip (and ONNX's reference) gives max everywhere.
    case("Clip_runtime_crossed", "operands", "Clip",
         [("x", x), ("x", np.array(0.5, np.float32)), ("x", np.array(-0.5, np.float32))], {},
         lambda a, l, h: np.full_like(a, -0.5))
    case("Pad_runtime_value", "operands", "Pad",
         [("x", x), ("c", np.array([0, 1, 2, 0, 0, 1], np.int64)),
          ("x", np.array(2.5, np.float32))], {},
         lambda a, p, v: np.pad(a, [(0, 0), (1, 0), (2, 1)], constant_values=2.5))
