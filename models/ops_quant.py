"""ops_quant.py - single-operator cases of the quantisation operators (family "quant"):
QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, ConvInteger, MatMulInteger, QLinearConv
and QLinearMatMul, per tensor and per axis, uint8 and int8 (negative zero points), saturation,
rounding ties (halves to even), batched/broadcast MatMulInteger, grouped/strided/padded/dilated
ConvInteger and QLinearConv. Imported by make_ops.py. Every oracle is numpy, written from the
ONNX operator definitions (float32 arithmetic where the definition divides or scales, exact
integer products), saved in the declared types and compared exactly. Integer products stay
below 2^24, where the compiled targets' fp32 sums are exact.
"""
import numpy as np
from onnx import TensorProto as TP

U8 = (0, 255, np.uint8)
I8 = (-128, 127, np.int8)


def _sat(v, dtype):
    lo, hi = (0, 255) if dtype == np.uint8 else (-128, 127)
    return np.clip(v, lo, hi).astype(dtype)


def _along(v, axis, rank):
    """A 1-D per-axis parameter reshaped to broadcast along `axis` of a rank-`rank` tensor."""
    v = np.asarray(v)
    if v.size == 1:
        return v.reshape(())
    return v.reshape([-1] + [1] * (rank - axis - 1))


def quantize(x, scale, zp, axis=1, dtype=None):
    """ONNX QuantizeLinear: saturate(round_half_even(x / scale) + zero_point)."""
    dtype = dtype or (zp.dtype.type if zp is not None else np.uint8)
    ax = axis % max(x.ndim, 1)
    q = np.rint(x.astype(np.float32) / _along(scale, ax, x.ndim).astype(np.float32))
    if zp is not None:
        q = q + _along(zp, ax, x.ndim).astype(np.float32)
    return _sat(q, dtype)


def dequantize(x, scale, zp, axis=1):
    """ONNX DequantizeLinear: (x - zero_point) * scale."""
    ax = axis % max(x.ndim, 1)
    v = x.astype(np.float32)
    if zp is not None:
        v = v - _along(zp, ax, x.ndim).astype(np.float32)
    return (v * _along(scale, ax, x.ndim)).astype(np.float32)


def dynamic_quantize(x):
    """ONNX DynamicQuantizeLinear (uint8): the range widened to hold 0, float32 throughout."""
    f = np.float32
    mn, mx = min(f(0), x.min()), max(f(0), x.max())
    scale = f((mx - mn) / f(255))
    zp = np.uint8(np.rint(np.clip(f(0) - mn / scale, 0, 255)))
    y = _sat(np.rint(x / scale) + f(zp), np.uint8)
    return y, np.array(scale, np.float32), np.array(zp, np.uint8)


def matmul_integer(a, b, azp=None, bzp=None):
    """ONNX MatMulInteger: int32 (a - a_zp) @ (b - b_zp); a 1-D a_zp is per row."""
    A = a.astype(np.int64)
    B = b.astype(np.int64)
    if azp is not None:
        z = np.asarray(azp).astype(np.int64)
        A = A - (z.reshape(-1, 1) if z.ndim == 1 else z)
    if bzp is not None:
        B = B - np.asarray(bzp).astype(np.int64)
    return np.matmul(A, B).astype(np.int32)


def conv_integer(x, w, xzp=None, wzp=None, strides=(1, 1), pads=(0, 0, 0, 0), dil=(1, 1),
                 group=1):
    """ONNX ConvInteger over 2 spatial axes: padding holds the zero point (contributes 0)."""
    X = x.astype(np.int64) - (0 if xzp is None else int(np.asarray(xzp).reshape(-1)[0]))
    W = w.astype(np.int64)
    if wzp is not None:
        W = W - np.asarray(wzp).astype(np.int64).reshape(-1, 1, 1, 1)
    N, C, H, Wd = X.shape
    M, cpg, kh, kw = W.shape
    Xp = np.zeros((N, C, H + pads[0] + pads[2], Wd + pads[1] + pads[3]), np.int64)
    Xp[:, :, pads[0]:pads[0] + H, pads[1]:pads[1] + Wd] = X
    oh = (Xp.shape[2] - dil[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (Xp.shape[3] - dil[1] * (kw - 1) - 1) // strides[1] + 1
    out = np.zeros((N, M, oh, ow), np.int64)
    mpg = M // group
    for m in range(M):
        g = m // mpg
        for i in range(oh):
            for j in range(ow):
                patch = Xp[:, g * cpg:(g + 1) * cpg,
                           i * strides[0]:i * strides[0] + dil[0] * (kh - 1) + 1:dil[0],
                           j * strides[1]:j * strides[1] + dil[1] * (kw - 1) + 1:dil[1]]
                out[:, m, i, j] = (patch * W[m]).sum(axis=(1, 2, 3))
    return out.astype(np.int32)


def requantize(acc, mult, yzp):
    """The QLinear ops' output: saturate(round_half_even(acc * multiplier) + y_zero_point)."""
    real = acc.astype(np.float32) * mult.astype(np.float32)
    return _sat(np.rint(real) + np.asarray(yzp).astype(np.float32), np.asarray(yzp).dtype.type)


def add(case, rnd):
    rng = np.random.default_rng(2026)
    f32 = np.float32

    def c(name, op, inputs, attrs, expect, out_types, opset=17, outs=1):
        case("Quant_" + name, "quant", op, inputs, attrs, expect, outs=outs, out_types=out_types,
             opset=opset, exact=True)

    # QuantizeLinear. Halves: x / 2 = k + 0.5 round to even; large values saturate.
    ties = np.array([[1, 3, 5, 7, -1, -3], [-5, 9, 600, -600, 254, 0.2]], f32)
    c("QuantizeLinear_u8_ties_saturate", "QuantizeLinear",
      [("x", ties), ("c", np.array(2.0, f32)), ("c", np.array(3, np.uint8))], {},
      lambda x, s, z: quantize(x, s, z), [TP.UINT8])
    c("QuantizeLinear_no_zero_point", "QuantizeLinear",
      [("x", ties), ("c", np.array(2.0, f32))], {},
      lambda x, s: quantize(x, s, None), [TP.UINT8])
    x3 = rnd(2, 3, 4, lo=-60, hi=60)
    s3 = np.array([0.5, 0.25, 2.0], f32)
    z3 = np.array([-20, 0, 17], np.int8)
    c("QuantizeLinear_i8_per_axis", "QuantizeLinear", [("x", x3), ("c", s3), ("c", z3)],
      {"axis": 1}, lambda x, s, z: quantize(x, s, z, 1), [TP.INT8])
    s4 = np.array([0.5, 1.0, 0.125, 4.0], f32)
    z4 = np.array([250, 0, 128, 3], np.uint8)
    c("QuantizeLinear_u8_last_axis_runtime_scale", "QuantizeLinear",
      [("x", x3), ("x", s4), ("c", z4)], {"axis": -1},
      lambda x, s, z: quantize(x, s, z, -1), [TP.UINT8])
    xi = np.array([[-300, -7, 0, 7], [9, 100, 1000, 255]], np.int32)
    c("QuantizeLinear_int32_input", "QuantizeLinear",
      [("t", xi), ("c", np.array(4.0, f32)), ("c", np.array(-3, np.int8))], {},
      lambda x, s, z: quantize(x, s, z), [TP.INT8])
    c("QuantizeLinear_opset10", "QuantizeLinear",
      [("x", ties), ("c", np.array(0.5, f32)), ("c", np.array(-1, np.int8))], {},
      lambda x, s, z: quantize(x, s, z), [TP.INT8], opset=10)

    # DequantizeLinear.
    q8 = rng.integers(0, 256, size=(2, 3, 4)).astype(np.uint8)
    c("DequantizeLinear_u8", "DequantizeLinear",
      [("t", q8), ("c", np.array(0.03, f32)), ("c", np.array(128, np.uint8))], {},
      lambda x, s, z: dequantize(x, s, z), [TP.FLOAT])
    qi8 = rng.integers(-128, 128, size=(3, 2, 4)).astype(np.int8)
    c("DequantizeLinear_i8_axis0", "DequantizeLinear",
      [("t", qi8), ("c", np.array([0.5, 0.1, 2.0], f32)), ("c", np.array([-5, 0, 100], np.int8))],
      {"axis": 0}, lambda x, s, z: dequantize(x, s, z, 0), [TP.FLOAT])
    qi32 = np.array([[-100000, -1, 0], [1, 77, 1 << 20]], np.int32)
    c("DequantizeLinear_int32_no_zero_point", "DequantizeLinear",
      [("t", qi32), ("c", np.array(0.001, f32))], {},
      lambda x, s: dequantize(x, s, None), [TP.FLOAT])

    # DynamicQuantizeLinear: mixed signs, all positive (min widened to 0), all negative.
    for name, x in (("mixed", rnd(3, 4, lo=-3, hi=5)), ("positive", rnd(2, 5, lo=0.5, hi=9)),
                    ("negative", rnd(4, 3, lo=-7, hi=-0.1))):
        c("DynamicQuantizeLinear_" + name, "DynamicQuantizeLinear", [("x", x)], {},
          dynamic_quantize, [TP.UINT8, TP.FLOAT, TP.UINT8], outs=3)

    # MatMulInteger: 2-D uint8 with scalar zero points; batched broadcast int8 x uint8 with
    # per-row and per-column zero points; no zero points.
    a2 = rng.integers(0, 256, size=(4, 5)).astype(np.uint8)
    b2 = rng.integers(0, 256, size=(5, 3)).astype(np.uint8)
    c("MatMulInteger_u8", "MatMulInteger",
      [("t", a2), ("t", b2), ("c", np.array(12, np.uint8)), ("c", np.array(200, np.uint8))], {},
      matmul_integer, [TP.INT32])
    ab = rng.integers(-128, 128, size=(2, 1, 3, 4)).astype(np.int8)
    bb = rng.integers(0, 256, size=(5, 4, 6)).astype(np.uint8)
    c("MatMulInteger_batched_per_row_col", "MatMulInteger",
      [("t", ab), ("t", bb), ("c", np.array([-7, 0, 100], np.int8)),
       ("c", np.array([0, 1, 128, 255, 3, 90], np.uint8))], {}, matmul_integer, [TP.INT32])
    c("MatMulInteger_no_zero_points_const_b", "MatMulInteger",
      [("t", ab[0]), ("c", bb[1])], {}, matmul_integer, [TP.INT32])

    # ConvInteger: padded uint8 with zero points; grouped, strided, dilated int8 with per-channel
    # weight zero points; no zero points.
    x = rng.integers(0, 256, size=(1, 2, 5, 5)).astype(np.uint8)
    w = rng.integers(0, 256, size=(3, 2, 3, 3)).astype(np.uint8)
    c("ConvInteger_u8_padded", "ConvInteger",
      [("t", x), ("c", w), ("c", np.array(7, np.uint8)), ("c", np.array(131, np.uint8))],
      {"pads": [1, 1, 1, 1]},
      lambda x, w, xz, wz: conv_integer(x, w, xz, wz, pads=(1, 1, 1, 1)), [TP.INT32])
    xg = rng.integers(-128, 128, size=(2, 4, 7, 6)).astype(np.int8)
    wg = rng.integers(-128, 128, size=(6, 2, 3, 2)).astype(np.int8)
    wz = np.array([-3, 0, 5, -128, 127, 1], np.int8)
    c("ConvInteger_i8_group_stride_dilation", "ConvInteger",
      [("t", xg), ("t", wg), ("c", np.array(-9, np.int8)), ("c", wz)],
      {"group": 2, "strides": [2, 1], "pads": [1, 0, 2, 1], "dilations": [1, 2]},
      lambda x, w, xz, wz: conv_integer(x, w, xz, wz, (2, 1), (1, 0, 2, 1), (1, 2), 2),
      [TP.INT32])
    c("ConvInteger_no_zero_points_same_upper", "ConvInteger",
      [("t", x), ("c", w)], {"auto_pad": "SAME_UPPER", "strides": [2, 2]},
      lambda x, w: conv_integer(x, w, strides=(2, 2), pads=(1, 1, 1, 1)), [TP.INT32])

    # QLinearConv: grouped/strided/padded, per-channel weight scales and zero points, int32 bias,
    # int8 output with a negative zero point; multipliers that make halves (ties) common.
    xs, ys = np.array(0.5, f32), np.array(8.0, f32)
    ws = np.array([1.0, 0.5, 2.0, 0.25, 1.0, 4.0], f32)
    bias = np.array([100, -3000, 7, 0, 12345, -1], np.int32)
    yz = np.array(-10, np.int8)

    def qconv(x, xs, xz, w, ws, wz, ys, yz, b):
        acc = conv_integer(x, w, xz, wz, (2, 1), (1, 0, 2, 1), (1, 2), 2)
        acc = acc.astype(np.int64) + b.reshape(1, -1, 1, 1)
        mult = (xs * ws / ys).astype(f32).reshape(1, -1, 1, 1)
        return requantize(acc, mult, yz)
    c("QLinearConv_i8_group_per_channel_bias", "QLinearConv",
      [("t", xg), ("c", xs), ("c", np.array(-9, np.int8)), ("c", wg), ("c", ws), ("c", wz),
       ("c", ys), ("c", yz), ("c", bias)],
      {"group": 2, "strides": [2, 1], "pads": [1, 0, 2, 1], "dilations": [1, 2]}, qconv,
      [TP.INT8])

    def qconv_u8(x, xs, xz, w, ws, wz, ys, yz):
        acc = conv_integer(x, w, xz, wz, pads=(1, 1, 1, 1))
        return requantize(acc, np.float32(xs * ws / ys), yz)
    c("QLinearConv_u8_padded", "QLinearConv",
      [("t", x), ("c", np.array(0.02, f32)), ("c", np.array(7, np.uint8)), ("c", w),
       ("c", np.array(0.01, f32)), ("c", np.array(131, np.uint8)), ("c", np.array(0.5, f32)),
       ("c", np.array(100, np.uint8))], {"pads": [1, 1, 1, 1]}, qconv_u8, [TP.UINT8])

    # QLinearMatMul: 2-D per tensor (uint8); 3-D batched with per-row a and y parameters and
    # per-column b parameters (int8 output).
    def qmm(a, asc, az, b, bsc, bz, ysc, yz):
        acc = matmul_integer(a, b, az, bz)
        row = lambda v: np.asarray(v).reshape(-1, 1) if np.asarray(v).size > 1 else np.asarray(v)
        mult = (row(asc) * np.asarray(bsc) / row(ysc)).astype(f32)
        return requantize(acc, mult, row(yz))
    c("QLinearMatMul_2d_u8", "QLinearMatMul",
      [("t", a2), ("c", np.array(0.0125, f32)), ("c", np.array(12, np.uint8)), ("t", b2),
       ("c", np.array(0.5, f32)), ("c", np.array(200, np.uint8)), ("c", np.array(4.0, f32)),
       ("c", np.array(90, np.uint8))], {}, qmm, [TP.UINT8])
    a3 = rng.integers(-128, 128, size=(2, 3, 4)).astype(np.int8)
    b3 = rng.integers(-128, 128, size=(2, 4, 5)).astype(np.int8)
    c("QLinearMatMul_3d_per_row_col_i8", "QLinearMatMul",
      [("t", a3), ("c", np.array([0.5, 0.25, 1.0], f32)), ("c", np.array([-3, 0, 4], np.int8)),
       ("t", b3), ("c", np.array([1.0, 0.5, 0.125, 2.0, 1.0], f32)),
       ("c", np.array([0, -1, 2, -128, 127], np.int8)), ("c", np.array([64.0, 32.0, 16.0], f32)),
       ("c", np.array([-5, 0, 5], np.int8))], {}, qmm, [TP.INT8])
