"""ops_misc.py - single-operator cases for Pad's edge and reflect modes and negative pads, Trilu
with k computed at run time, Resize's align_corners downsampling and tf_crop_and_resize, and the
ai.onnx.preview.training optimizers (Adagrad, Adam, Momentum). Imported by make_ops.py (family
"misc"); every oracle is numpy written from the operator's definition (ONNX's Operators.md).
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper

TRAINING = "ai.onnx.preview.training"
# A generator of its own, so that these cases leave make_ops.py's shared draws (every other
# family's inputs) as they were.
_RNG = np.random.default_rng(2610)


def _rnd(*shape, lo=-2.0, hi=2.0):
    return _RNG.uniform(lo, hi, size=shape).astype(np.float32)


# ----------------------------------------------------------------------------- Pad
def _pad(x, pads, mode, value=0.0):
    """ONNX Pad: negative pads crop first, then np.pad applies the positive ones in `mode`."""
    r = x.ndim
    crop = tuple(slice(max(-pads[d], 0), x.shape[d] - max(-pads[d + r], 0)) for d in range(r))
    width = [(max(pads[d], 0), max(pads[d + r], 0)) for d in range(r)]
    kept = x[crop]
    if mode == "constant":
        return np.pad(kept, width, mode="constant", constant_values=value)
    return np.pad(kept, width, mode=mode)


# ----------------------------------------------------------------------------- Resize
def _coord(mode, x, scale, in_len, roi=None):
    """Resize's source coordinate (ONNX's reference: the resized length is scale * in_len)."""
    resized = scale * in_len
    if mode == "align_corners":
        return 0.0 if resized == 1 else x * (in_len - 1) / (resized - 1)
    if mode == "tf_crop_and_resize":
        start, end = roi
        if resized == 1:
            return (end - start) * (in_len - 1) / 2 + start * (in_len - 1)
        return x * (end - start) * (in_len - 1) / (resized - 1) + start * (in_len - 1)
    raise ValueError(mode)


def _cubic_w(t, a=-0.75):
    t = abs(t)
    if t <= 1:
        return ((a + 2) * t - (a + 3)) * t * t + 1
    if t < 2:
        return ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return 0.0


def _axis_matrix(kind, coords, in_len):
    """The (out, in) interpolation matrix of one axis: taps at clamped (edge) indices."""
    m = np.zeros((len(coords), in_len))
    for o, c in enumerate(coords):
        f = int(np.floor(c))
        if kind == "linear":
            t = c - f
            for k, w in ((f, 1 - t), (f + 1, t)):
                m[o, min(max(k, 0), in_len - 1)] += w
        elif kind == "cubic":
            for k in range(f - 1, f + 3):
                m[o, min(max(k, 0), in_len - 1)] += _cubic_w(c - k)
        else:  # nearest, round_prefer_floor
            n = f if c - f <= 0.5 else f + 1
            m[o, min(max(n, 0), in_len - 1)] = 1.0
    return m


def _resize(x, kind, mode, out_shape, scales, roi=None, extrapolation=0.0):
    """Separable resize: one interpolation matrix per axis; tf_crop_and_resize positions whose
    coordinate leaves the input along any axis are the extrapolation value."""
    y = x.astype(np.float64)
    outside = np.zeros(out_shape, bool)
    r = x.ndim
    for d in range(r):
        ax_roi = None if roi is None else (roi[d], roi[d + r])
        coords = [_coord(mode, o, scales[d], x.shape[d], ax_roi) for o in range(out_shape[d])]
        y = np.moveaxis(np.tensordot(_axis_matrix(kind, coords, x.shape[d]), np.moveaxis(y, d, 0),
                                     axes=1), 0, d)
        off = np.array([c < 0 or c > x.shape[d] - 1 for c in coords])
        shape = [1] * r
        shape[d] = out_shape[d]
        outside |= off.reshape(shape)
    return np.where(outside, extrapolation, y) if mode == "tf_crop_and_resize" else y


# ----------------------------------------------------------------------------- optimizers
def _adagrad(r, t, x, g, h, norm=0.0, eps=1e-6, decay=0.0):
    r_ = r / (1 + t * decay)
    greg = norm * x + g
    h_new = h + greg * greg
    return x - r_ * greg / (np.sqrt(h_new) + eps), h_new


def _adam(r, t, x, g, v, h, norm=0.0, post=0.0, alpha=0.9, beta=0.999, eps=1e-6):
    greg = norm * x + g
    v_new = alpha * v + (1 - alpha) * greg
    h_new = beta * h + (1 - beta) * greg * greg
    r_adj = r * np.sqrt(1 - beta ** t) / (1 - alpha ** t) if t > 0 else r
    x_new = (1 - post) * (x - r_adj * v_new / (np.sqrt(h_new) + eps))
    return x_new, v_new, h_new


def _momentum(r, t, x, g, v, norm, alpha, beta, nesterov):
    greg = norm * x + g
    v_new = alpha * v + (beta if t > 0 else 1.0) * greg
    if nesterov:
        return x - r * (greg + alpha * v_new), v_new
    return x - r * v_new, v_new


def add(case, _shared_rnd=None):
    """The cases built by make_ops.py's case(); inputs come from this module's own generator."""
    rnd = _rnd
    I = lambda *v: np.array(v, np.int64)
    # --- Pad: edge and reflect on every axis, asymmetric, with negative pads (crops) ---
    x = rnd(2, 3, 4)
    for mode, pads in (("edge", [1, 0, 2, 0, 2, 1]), ("reflect", [1, 2, 0, 0, 1, 3])):
        case(f"Pad_{mode}_all_axes", "misc", "Pad", [("x", x), ("c", I(*pads))], {"mode": mode},
             lambda a, p, m=mode, q=pads: _pad(a, q, m))
    y = rnd(3, 5, 4)
    for mode, pads in (("edge", [0, -1, 2, 1, 2, -2]), ("reflect", [2, -1, 2, 0, 1, -1]),
                       ("constant", [0, -2, 1, 1, 2, -1])):
        case(f"Pad_{mode}_negative", "misc", "Pad",
             [("x", y), ("c", I(*pads)), ("c", np.array(0.5, np.float32))], {"mode": mode},
             lambda a, p, v, m=mode, q=pads: _pad(a, q, m, 0.5))
    # Opset 2-10: pads and mode are attributes.
    case("Pad_reflect_opset10", "misc", "Pad", [("x", rnd(1, 2, 3, 4))],
         {"mode": "reflect", "pads": [0, 0, 2, 1, 0, 0, 1, 3]},
         lambda a: _pad(a, [0, 0, 2, 1, 0, 0, 1, 3], "reflect"), opset=10)
    # Integer data moves exactly.
    xi = np.arange(-7, 13, dtype=np.int32).reshape(4, 5)
    case("Pad_edge_int32", "misc", "Pad", [("t", xi), ("c", I(2, -1, 1, 2))], {"mode": "edge"},
         lambda a, p: _pad(a, [2, -1, 1, 2], "edge"), out_types=[TensorProto.INT32], exact=True)
    case("Pad_reflect_int64", "misc", "Pad", [("t", xi.astype(np.int64)), ("c", I(3, 0, 0, 4))],
         {"mode": "reflect"}, lambda a, p: _pad(a, [3, 0, 0, 4], "reflect"),
         out_types=[TensorProto.INT64], exact=True)
    # --- Trilu: k a graph input ("t") or computed by a node ("i": a Cast) ---
    m = rnd(2, 4, 5)
    for upper, k in ((1, -1), (1, 2), (0, 1), (0, -2)):
        fn = np.triu if upper else np.tril
        case(f"Trilu_{'upper' if upper else 'lower'}_runtime_k{k}", "misc", "Trilu",
             [("x", m), ("t", np.array(k, np.int64))], {"upper": upper},
             lambda a, kk, f=fn: f(a, int(kk)))
    case("Trilu_k_computed", "misc", "Trilu", [("x", rnd(3, 6)), ("i", np.array(3.0))],
         {"upper": 0}, lambda a, kk: np.tril(a, int(kk)))
    case("Trilu_int64_runtime_k", "misc", "Trilu",
         [("t", np.arange(20, dtype=np.int64).reshape(4, 5)), ("t", np.array(1, np.int64))], {},
         lambda a, kk: np.triu(a, 1), out_types=[TensorProto.INT64], exact=True)
    # --- Resize: align_corners downsampling (resized length scale * extent) ---
    r = rnd(1, 2, 3, 5)
    empty = np.zeros((0,), np.float32)
    sc = np.array([1, 1, 0.7, 0.5], np.float32)
    out = [1, 2, 2, 2]
    for kind in ("linear", "cubic"):
        case(f"Resize_{kind}_align_corners_down", "misc", "Resize",
             [("x", r), ("c", empty), ("c", sc)],
             {"mode": kind, "coordinate_transformation_mode": "align_corners"},
             lambda a, roi, s, k=kind: _resize(a, k, "align_corners", out, s.astype(np.float64)))
    # --- Resize: tf_crop_and_resize, some positions outside the input ---
    t = rnd(1, 1, 4, 5)
    roi = np.array([0, 0, 0.2, 0.1, 1, 1, 0.9, 1.3], np.float32)
    sizes = I(1, 1, 3, 4)
    for kind in ("linear", "nearest", "cubic"):
        case(f"Resize_{kind}_tf_crop_and_resize", "misc", "Resize",
             [("x", t), ("c", roi), None, ("c", sizes)],
             {"mode": kind, "coordinate_transformation_mode": "tf_crop_and_resize",
              "extrapolation_value": 2.5},
             lambda a, ro, sz, k=kind: _resize(
                 a, k, "tf_crop_and_resize", list(sz), np.array(sz) / np.array(a.shape),
                 ro.astype(np.float64), 2.5))


def _optimizer_model(outdir, name, op, attrs, arrays, outputs, expect):
    """A model of one ai.onnx.preview.training node reading every array as a graph input
    (R float32 scalar, T int64 scalar, then the groups); expect holds the expected outputs."""
    d = os.path.join(outdir, name)
    os.makedirs(d, exist_ok=True)
    names = [f"i{k}" for k in range(len(arrays))]
    types = {np.dtype(np.float32): TensorProto.FLOAT, np.dtype(np.float64): TensorProto.DOUBLE,
             np.dtype(np.int64): TensorProto.INT64}
    ins = [helper.make_tensor_value_info(n, types[a.dtype], list(a.shape))
           for n, a in zip(names, arrays)]
    outs = [f"y{k}" for k in range(outputs)]
    node = helper.make_node(op, names, outs, name=name, domain=TRAINING, **attrs)
    gouts = [helper.make_tensor_value_info(o, types[arrays[2].dtype], None) for o in outs]
    graph = helper.make_graph([node], name, ins, gouts)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid(TRAINING, 1)])
    model.ir_version = 8
    onnx.save(model, os.path.join(d, "model.onnx"))
    for n, a in zip(names, arrays):
        np.save(os.path.join(d, f"in_{n}.npy"), a)
    for o, e in zip(outs, expect):
        np.save(os.path.join(d, f"exp_{o}.npy"), np.asarray(e, np.float32))
    return dict(name=name, family="misc", op=op, inputs=names, oracle=True)


def models(outdir):
    """The optimizer cases: two tensor groups of different shapes each, T = 0 and T > 0."""
    rnd = _rnd
    f64 = lambda a: a.astype(np.float64)
    x1, x2 = rnd(3), rnd(2, 3)
    g1, g2 = rnd(3), rnd(2, 3)
    v1, v2 = rnd(3), rnd(2, 3)
    h1, h2 = rnd(3, lo=0.1, hi=2.0), rnd(2, 3, lo=0.1, hi=2.0)
    r = np.array(0.05, np.float32)
    meta = []
    for t in (0, 3):
        T = np.array(t, np.int64)
        at = dict(norm_coefficient=0.01, epsilon=1e-3, decay_factor=0.1)
        e = [_adagrad(0.05, t, f64(x), f64(g), f64(h), 0.01, 1e-3, 0.1)
             for x, g, h in ((x1, g1, h1), (x2, g2, h2))]
        meta.append(_optimizer_model(outdir, f"Adagrad_t{t}", "Adagrad", at,
                                     [r, T, x1, x2, g1, g2, h1, h2], 4,
                                     [e[0][0], e[1][0], e[0][1], e[1][1]]))
        at = dict(norm_coefficient=0.02, norm_coefficient_post=0.1, alpha=0.8, beta=0.95,
                  epsilon=1e-2)
        e = [_adam(0.05, t, f64(x), f64(g), f64(v), f64(h), 0.02, 0.1, 0.8, 0.95, 1e-2)
             for x, g, v, h in ((x1, g1, v1, h1), (x2, g2, v2, h2))]
        meta.append(_optimizer_model(outdir, f"Adam_t{t}", "Adam", at,
                                     [r, T, x1, x2, g1, g2, v1, v2, h1, h2], 6,
                                     [e[0][0], e[1][0], e[0][1], e[1][1], e[0][2], e[1][2]]))
        for mode in ("standard", "nesterov"):
            at = dict(norm_coefficient=0.01, alpha=0.9, beta=0.7, mode=mode)
            e = [_momentum(0.05, t, f64(x), f64(g), f64(v), 0.01, 0.9, 0.7, mode == "nesterov")
                 for x, g, v in ((x1, g1, v1), (x2, g2, v2))]
            meta.append(_optimizer_model(outdir, f"Momentum_{mode}_t{t}", "Momentum", at,
                                         [r, T, x1, x2, g1, g2, v1, v2], 4,
                                         [e[0][0], e[1][0], e[0][1], e[1][1]]))
    # Double tensors with a float R: the update computes in X's type.
    e = _momentum(0.05, 1, f64(x1), f64(g1), f64(v1), 0.0, 0.5, 0.25, True)
    meta.append(_optimizer_model(outdir, "Momentum_double", "Momentum",
                                 dict(norm_coefficient=0.0, alpha=0.5, beta=0.25, mode="nesterov"),
                                 [r, np.array(1, np.int64), f64(x1), f64(g1), f64(v1)], 2, list(e)))
    # Adam's defaults (alpha 0.9, beta 0.999, epsilon 1e-6, no norms), one group.
    e = _adam(0.05, 2, f64(x2), f64(g2), f64(v2), f64(h2))
    meta.append(_optimizer_model(outdir, "Adam_defaults", "Adam", {},
                                 [r, np.array(2, np.int64), x2, g2, v2, h2], 3, list(e)))
    return meta
