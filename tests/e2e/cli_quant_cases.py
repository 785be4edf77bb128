#!/usr/bin/python3
"""cli_quant_cases.py - CLI tests of the quantisation operators' user errors: a bad axis, a scale
whose shape does not match the axis, a zero point of another type than its tensor, a per-channel
zero point of the wrong length, and an integer product that compiled targets cannot sum exactly
in fp32 (refused at compile time naming the node; `npuc ref` computes it). Run through
cli_check.py (`cli_check.py quant_errors ...`).
"""
import os

import numpy as np

from cli_check import SKIP  # noqa: F401  (the runner's skip code)


def _model(path, op, inputs, inits, out_type, attrs=None):
    """inputs: (name, onnx type, shape) graph inputs; inits: (name, array) initializers; the
    node reads them in that order."""
    import onnx
    from onnx import helper, numpy_helper
    ins = [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs]
    names = [n for n, _, _ in inputs] + [n for n, _ in inits]
    node = helper.make_node(op, names, ["y"], name="q0", **(attrs or {}))
    g = helper.make_graph([node], "quant", ins, [helper.make_tensor_value_info("y", out_type, None)],
                          [numpy_helper.from_array(a, n) for n, a in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def case_quant_errors(c):
    from onnx import TensorProto as TP
    f32 = np.float32
    x = c.w("x.npy")
    np.save(x, np.zeros((2, 3, 4), f32))

    def fails(name, op, inputs, inits, out_type, attrs, message):
        path = c.w(name + ".onnx")
        _model(path, op, inputs, inits, out_type, attrs)
        c.expect_fail(["ref", path, "--input", "x=" + x, "--output-dir", c.w(name)], [message],
                      [c.w(name)])

    fails("bad_axis", "QuantizeLinear", [("x", TP.FLOAT, [2, 3, 4])],
          [("s", np.array([1, 2, 3], f32)), ("z", np.array([0, 0, 0], np.uint8))], TP.UINT8,
          {"axis": 3}, "node 'q0' (QuantizeLinear): axis 3 out of range for rank 3")
    fails("scale_shape", "QuantizeLinear", [("x", TP.FLOAT, [2, 3, 4])],
          [("s", np.array([1, 2, 3, 4], f32))], TP.UINT8, {"axis": 1},
          "node 'q0' (QuantizeLinear): input 1 (y_scale) has shape [4]; it must be a scalar or "
          "[3] (one per element along axis 1 of input 0, shape [2, 3, 4])")
    fails("zero_point_shape", "DequantizeLinear", [("x", TP.UINT8, [2, 3, 4])],
          [("s", np.array([1, 2, 3], f32)), ("z", np.array(1, np.uint8))], TP.FLOAT, {"axis": 1},
          "node 'q0' (DequantizeLinear): input 2 (x_zero_point) has shape [] but the scale has "
          "shape [3]; they must match")
    fails("zero_point_type", "DequantizeLinear", [("x", TP.UINT8, [2, 3, 4])],
          [("s", np.array(0.5, f32)), ("z", np.array(1, np.int8))], TP.FLOAT, {},
          "node 'q0' (DequantizeLinear): input 2 (x_zero_point) is i8 but input 0 (x) is u8; "
          "they must have one type")
    fails("matmul_zero_point_type", "MatMulInteger", [("x", TP.UINT8, [2, 3, 4])],
          [("b", np.ones((4, 2), np.uint8)), ("az", np.array(1, np.int8))], TP.INT32, {},
          "node 'q0' (MatMulInteger): input 2 (a_zero_point) is i8 but input 0 (A) is u8; a zero "
          "point has its operand's type")
    fails("conv_w_zero_point_len", "ConvInteger", [("x", TP.UINT8, [2, 3, 4, 4])],
          [("w", np.ones((5, 3, 1, 1), np.uint8)), ("xz", np.array(1, np.uint8)),
           ("wz", np.array([1, 2], np.uint8))], TP.INT32, {},
          "node 'q0' (ConvInteger): input 3 (w_zero_point) has shape [2]; it must be a scalar or "
          "[5] (one per output channel)")

    # K = 300 products of up to 255 * 255: sums up to 19.5M > 2^24. Compiled targets refuse the
    # node; `npuc ref` computes it exactly (int64 sums, numpy's result).
    big = c.w("big.onnx")
    _model(big, "MatMulInteger", [("x", TP.UINT8, [1, 300]), ("b", TP.UINT8, [300, 1])], [],
           TP.INT32)
    c.expect_fail(["compile", big, "--target", "cpu", "-o", c.w("big.npub")],
                  ["node 'q0' (MatMulInteger): compiled targets sum its 300 products per output "
                   "in fp32, exact only up to 2^24, and its operands allow sums up to 19507500"],
                  [c.w("big.npub")])
    xa, xb = c.w("a.npy"), c.w("b.npy")
    a = np.full((1, 300), 255, np.uint8)
    b = np.full((300, 1), 255, np.uint8)
    b[7, 0] = 254
    np.save(xa, a)
    np.save(xb, b)
    out = c.w("ref")
    c.expect_ok(["ref", big, "--input", "x=" + xa, "--input", "b=" + xb, "--output-dir", out])
    y = np.load(os.path.join(out, "y.npy"))
    want = a.astype(np.int64) @ b.astype(np.int64)
    assert y.dtype == np.int32 and y.tolist() == want.tolist(), (y, want)

    # The same reduction against a constant b whose values lie near its zero point: the bound
    # from b's sums (300 * 3 * 255) is far below 2^24, so the CPU target compiles and runs it,
    # matching numpy exactly.
    small = c.w("small.onnx")
    bc = (np.arange(300) % 7 + 125).astype(np.uint8).reshape(300, 1)
    _model(small, "MatMulInteger", [("x", TP.UINT8, [1, 300])],
           [("b", bc), ("az", np.array(0, np.uint8)), ("bz", np.array(128, np.uint8))], TP.INT32)
    pkg = c.w("small.npub")
    c.expect_ok(["compile", small, "--target", "cpu", "-o", pkg])
    run_out = c.w("run")
    c.expect_ok(["run", pkg, "--input", "x=" + xa, "--output-dir", run_out])
    y = np.load(os.path.join(run_out, "y.npy"))
    want = a.astype(np.int64) @ (bc.astype(np.int64) - 128)
    assert y.dtype == np.int32 and y.tolist() == want.tolist(), (y, want)
