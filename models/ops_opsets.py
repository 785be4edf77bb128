"""ops_opsets.py - single-operator cases for the opsets at both ends of npuc's range (9-10 and
18), where ONNX moved attributes to inputs or changed defaults. Imported by make_ops.py (family
"opsets"); every oracle is numpy or hand-computed from the operator's definition at that opset.
"""
import numpy as np


def _upsample_linear_asymmetric(x, scales):
    """Upsample-9 / Resize-10 'linear': x_in = x_out / scale (asymmetric), clamped at the edge."""
    out_shape = [int(np.floor(d * s)) for d, s in zip(x.shape, scales)]
    out = np.zeros(out_shape, np.float64)
    for idx in np.ndindex(*out_shape):
        lo, hi, w = [], [], []
        for d, i in enumerate(idx):
            c = min(i / scales[d], x.shape[d] - 1)
            f = int(np.floor(c))
            lo.append(f)
            hi.append(min(f + 1, x.shape[d] - 1))
            w.append(c - f)
        acc = 0.0
        for corner in range(1 << len(idx)):
            src, wt = [], 1.0
            for d in range(len(idx)):
                up = (corner >> d) & 1
                src.append(hi[d] if up else lo[d])
                wt *= w[d] if up else 1 - w[d]
            acc += wt * x[tuple(src)]
        out[idx] = acc
    return out


def add(case, rnd):
    x = rnd(2, 3, 4)
    # --- opset 9 / 10: parameters as attributes ---
    case("Slice_opset9_attrs", "opsets", "Slice", [("x", x)],
         {"starts": [0, 1, -3], "ends": [2, 3, 100], "axes": [0, 1, 2]},
         lambda a: a[0:2, 1:3, 1:4], opset=9)
    case("Clip_opset9_attrs", "opsets", "Clip", [("x", x)], {"min": -0.5, "max": 0.75},
         lambda a: np.clip(a, -0.5, 0.75), opset=9)
    case("Pad_opset10_attrs", "opsets", "Pad", [("x", x)],
         {"pads": [0, 1, 2, 0, 0, 1], "value": 1.5},
         lambda a: np.pad(a, [(0, 0), (1, 0), (2, 1)], constant_values=1.5), opset=10)
    case("ReduceMean_opset9_attr", "opsets", "ReduceMean", [("x", x)],
         {"axes": [0, 2], "keepdims": 0}, lambda a: a.mean(axis=(0, 2)), opset=9)
    case("Squeeze_opset10_attr", "opsets", "Squeeze", [("x", rnd(2, 1, 3))], {"axes": [1]},
         lambda a: a[:, 0, :], opset=10)
    case("Split_opset9_attr", "opsets", "Split", [("x", rnd(2, 7))], {"axis": 1, "split": [2, 5]},
         lambda a: [a[:, :2], a[:, 2:]], outs=2, opset=9)
    case("Softmax_opset9_axis1", "opsets", "Softmax", [("x", rnd(3, 5))], {},
         lambda a: np.exp(a) / np.exp(a).sum(axis=1, keepdims=True), opset=9)
    # Upsample-9 nearest repeats elements (the ONNX reference: np.repeat by the integer scale).
    u = rnd(1, 2, 2, 3)
    case("Upsample_opset9_nearest", "opsets", "Upsample",
         [("x", u), ("c", np.array([1, 1, 2, 3], np.float32))], {"mode": "nearest"},
         lambda a, s: np.repeat(np.repeat(a, 2, axis=2), 3, axis=3), opset=9)
    case("Upsample_opset9_linear", "opsets", "Upsample",
         [("x", u), ("c", np.array([1, 1, 2, 2.5], np.float32))], {"mode": "linear"},
         lambda a, s: _upsample_linear_asymmetric(a.astype(np.float64), s), opset=9)
    # Resize-10: (X, scales); asymmetric coordinates, nearest rounds down.
    case("Resize_opset10_nearest", "opsets", "Resize",
         [("x", u), ("c", np.array([1, 1, 3, 2], np.float32))], {"mode": "nearest"},
         lambda a, s: np.repeat(np.repeat(a, 3, axis=2), 2, axis=3), opset=10)
    # A non-integer nearest scale: 3 -> 4 along W, x_in = floor(x / (4/3)) = 0, 0, 1, 2.
    case("Resize_opset10_nearest_fractional", "opsets", "Resize",
         [("x", u), ("c", np.array([1, 1, 1, 4 / 3], np.float32))], {"mode": "nearest"},
         lambda a, s: a[:, :, :, [0, 0, 1, 2]], opset=10)
    # --- opset 18: axes as inputs, new attributes ---
    I = lambda *v: np.array(v, np.int64)
    case("ReduceMax_opset18_axes_input", "opsets", "ReduceMax", [("x", x), ("c", I(-1))],
         {"keepdims": 1}, lambda a, ax: a.max(axis=-1, keepdims=True), opset=18)
    case("ReduceL2_opset18_noop_empty_axes", "opsets", "ReduceL2",
         [("x", x), ("c", np.zeros((0,), np.int64))], {"noop_with_empty_axes": 1},
         lambda a, ax: a, opset=18)
    case("ReduceMean_opset18_all_axes", "opsets", "ReduceMean", [("x", x)], {"keepdims": 0},
         lambda a: np.array(a.mean()), opset=18)
    case("Split_opset18_num_outputs_uneven", "opsets", "Split", [("x", rnd(2, 7))],
         {"axis": 1, "num_outputs": 3}, lambda a: [a[:, 0:3], a[:, 3:6], a[:, 6:7]], outs=3,
         opset=18)
    case("Pad_opset18_axes", "opsets", "Pad",
         [("x", x), ("c", I(2, 1)), ("c", np.array(-1.0, np.float32)), ("c", I(-1))], {},
         lambda a, p, v, ax: np.pad(a, [(0, 0), (0, 0), (2, 1)], constant_values=-1.0), opset=18)
    r = rnd(1, 2, 4, 5)
    empty_f = np.zeros((0,), np.float32)
    # axes=[2, 3] with scales (2, 2), half_pixel/round_prefer_floor: x_in = (x+.5)/2-.5 rounds to
    # x // 2, i.e. every element repeated twice.
    case("Resize_opset18_axes_scales", "opsets", "Resize",
         [("x", r), ("c", empty_f), ("c", np.array([2, 2], np.float32))],
         {"mode": "nearest", "axes": [2, 3]},
         lambda a, roi, s: np.repeat(np.repeat(a, 2, axis=2), 2, axis=3), opset=18)
    # keep_aspect_ratio_policy=not_larger, sizes (7, 100) for H=4, W=5: one scale
    # min(7/4, 100/5) = 1.75 -> output 7 x round(8.75) = 9; asymmetric/floor: x_in = floor(x/1.75).
    idx_h = [int(np.floor(i / 1.75)) for i in range(7)]
    idx_w = [min(int(np.floor(i / 1.75)), 4) for i in range(9)]
    case("Resize_opset18_not_larger", "opsets", "Resize",
         [("x", r), ("c", empty_f), None, ("c", I(7, 100))],
         {"mode": "nearest", "axes": [2, 3], "keep_aspect_ratio_policy": "not_larger",
          "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
         lambda a, roi, sz: a[:, :, idx_h][:, :, :, idx_w], opset=18)
    # not_smaller, sizes (2, 3) for H=4, W=5: scale max(2/4, 3/5) = .6 -> 2 x 3;
    # x_in = floor(x / .6) = 0, 1 (H) and 0, 1, 3 (W).
    case("Resize_opset18_not_smaller", "opsets", "Resize",
         [("x", r), ("c", empty_f), None, ("c", I(2, 3))],
         {"mode": "nearest", "axes": [2, 3], "keep_aspect_ratio_policy": "not_smaller",
          "coordinate_transformation_mode": "asymmetric", "nearest_mode": "floor"},
         lambda a, roi, sz: a[:, :, [0, 1]][:, :, :, [0, 1, 3]], opset=18)
