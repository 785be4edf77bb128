#!/usr/bin/python3
"""cli_typed_cases.py - CLI tests of integer tensors end to end: `npuc ref` reads typed inputs,
checks them against the model's input types and writes outputs in the declared types, exactly
beyond 2^24; compiled packages convert integer inputs at the boundary and fail with a message
naming the input or value, never a wrong answer, where fp32 cannot give ONNX's integer result.
Expected values are numpy's. Run through cli_check.py (`cli_check.py CASE ...`).
"""
import os

import numpy as np

from cli_check import SKIP  # noqa: F401  (the runner's skip code)


def _model(path, op, in_type, out_type, attrs=None, const=None):
    import onnx
    from onnx import helper, numpy_helper
    ins = [helper.make_tensor_value_info("x", in_type, [3])]
    names, inits = ["x"], []
    if const is not None:
        inits.append(numpy_helper.from_array(const, "c"))
        names.append("c")
    else:
        ins.append(helper.make_tensor_value_info("s", in_type, [3]))
        names.append("s")
    node = helper.make_node(op, names, ["y"], name="n0", **(attrs or {}))
    g = helper.make_graph([node], "typed", ins, [helper.make_tensor_value_info("y", out_type, [3])],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def case_typed_messages(c):
    from onnx import TensorProto
    big = 1 << 40
    add = c.w("add_i64.onnx")
    _model(add, "Add", TensorProto.INT64, TensorProto.INT64, const=np.array(1, np.int64))
    x = c.w("x.npy")
    np.save(x, np.array([big, 1, -5], np.int64))
    # ref: exact int64 beyond fp32's range, written as int64.
    out = c.w("ref")
    c.expect_ok(["ref", add, "--input", "x=" + x, "--output-dir", out])
    y = np.load(os.path.join(out, "y.npy"))
    assert y.dtype == np.int64 and y.tolist() == [big + 1, 2, -4], y
    # A float32 file for an int64 input names the input, the file and both types.
    xf = c.w("xf.npy")
    np.save(xf, np.array([1, 2, 3], np.float32))
    c.expect_fail(["ref", add, "--input", "x=" + xf, "--output-dir", c.w("bad")],
                  ["--input x: " + xf + " holds f32 values but the model's input 'x' is i64"],
                  [c.w("bad")])
    # Compiled for the CPU: small integers run and come back as int64; 2^40 is an error.
    pkg = c.w("add.npub")
    c.expect_ok(["compile", add, "--target", "cpu", "-o", pkg])
    small = c.w("small.npy")
    np.save(small, np.array([7, -3, 0], np.int64))
    run_out = c.w("run")
    c.expect_ok(["run", pkg, "--input", "x=" + small, "--output-dir", run_out])
    y = np.load(os.path.join(run_out, "y.npy"))
    assert y.dtype == np.int64 and y.tolist() == [8, -2, 1], y
    c.expect_fail(["run", pkg, "--input", "x=" + x, "--output-dir", c.w("run_big")],
                  ["input 'x' (i64): element 0 is 1099511627776, beyond 2^24"], [c.w("run_big")])
    # An int8 target calibrates on a default input: zeros for the int64 input, and the integer
    # group stays on the CPU, exact.
    pkgq = c.w("add_int8.npub")
    c.expect_ok(["compile", add, "--target", os.path.join(c.root, "configs", "npu-int8.yaml"),
                 "-o", pkgq])
    run_q = c.w("run_q")
    c.expect_ok(["run", pkgq, "--input", "x=" + small, "--output-dir", run_q])
    y = np.load(os.path.join(run_q, "y.npy"))
    assert y.dtype == np.int64 and y.tolist() == [8, -2, 1], y
    # uint8 wrap-around: ref wraps (np.uint8(200) + np.uint8(100) == 44); the compiled fp32
    # code cannot, and says so naming the value.
    u8 = c.w("add_u8.onnx")
    _model(u8, "Add", TensorProto.UINT8, TensorProto.UINT8)
    a, b = c.w("a.npy"), c.w("b.npy")
    np.save(a, np.array([200, 1, 2], np.uint8))
    np.save(b, np.array([100, 1, 2], np.uint8))
    ref8 = c.w("ref8")
    c.expect_ok(["ref", u8, "--input", "x=" + a, "--input", "s=" + b, "--output-dir", ref8])
    y = np.load(os.path.join(ref8, "y.npy"))
    assert y.dtype == np.uint8 and y.tolist() == [44, 2, 4], y
    pkg8 = c.w("u8.npub")
    c.expect_ok(["compile", u8, "--target", c.target, "-o", pkg8])
    c.expect_fail(["run", pkg8, "--input", "x=" + a, "--input", "s=" + b, "--output-dir",
                   c.w("run8")],
                  ["value 'y' (u8): element 0 computed as 300, which is not a u8 value"],
                  [c.w("run8")])
    # BitShift compiles to a power-of-two scaling: exact while the result stays in the type's
    # range, and a left shift past it is a run-time error naming the value, never a wrap.
    sh = c.w("shift.onnx")
    _model(sh, "BitShift", TensorProto.UINT8, TensorProto.UINT8, {"direction": "LEFT"})
    refsh, by = c.w("refsh"), c.w("by.npy")
    np.save(by, np.array([1, 1, 2], np.uint8))
    c.expect_ok(["ref", sh, "--input", "x=" + a, "--input", "s=" + by, "--output-dir", refsh])
    y = np.load(os.path.join(refsh, "y.npy"))
    assert y.dtype == np.uint8 and y.tolist() == [144, 2, 8], y  # np.uint8(200) << 1 == 144
    pkgsh = c.w("shift.npub")
    c.expect_ok(["compile", sh, "--target", "cpu", "-o", pkgsh])
    c.expect_fail(["run", pkgsh, "--input", "x=" + a, "--input", "s=" + by, "--output-dir",
                   c.w("runsh")],
                  ["value 'y' (u8): element 0 computed as 400, which is not a u8 value"],
                  [c.w("runsh")])
    ok, runok = c.w("ok.npy"), c.w("runok")
    np.save(ok, np.array([100, 1, 63], np.uint8))
    c.expect_ok(["run", pkgsh, "--input", "x=" + ok, "--input", "s=" + by, "--output-dir", runok])
    y = np.load(os.path.join(runok, "y.npy"))
    assert y.dtype == np.uint8 and y.tolist() == [200, 2, 252], y


def case_declared_shapes(c):
    """A graph output's declared shape against two inferences (npuc's and ONNX's): ONNX 1.12's
    STFT schema ignores onesided and contradicts a correctly declared [1, 15, 9, 2]; npuc agrees
    with the declaration, so the model imports and runs (numpy's rfft is the oracle). A declared
    shape that both inferences contradict stays an error."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    sig = np.sin(np.arange(128, dtype=np.float32) / 5).reshape(1, 128, 1).astype(np.float32)
    inits = [numpy_helper.from_array(np.array(8, np.int64), "step"),
             numpy_helper.from_array(np.array(16, np.int64), "length")]
    node = helper.make_node("STFT", ["x", "step", "", "length"], ["y"], name="stft")
    g = helper.make_graph([node], "stft", [helper.make_tensor_value_info("x", TensorProto.FLOAT,
                                                                         [1, 128, 1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 15, 9, 2])],
                          inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    path, x, out = c.w("stft.onnx"), c.w("x.npy"), c.w("out")
    onnx.save(m, path)
    np.save(x, sig)
    c.expect_ok(["ref", path, "--input", "x=" + x, "--output-dir", out])
    frames = np.stack([sig[0, f * 8:f * 8 + 16, 0] for f in range(15)])
    spec = np.fft.rfft(frames.astype(np.float64), axis=1)
    want = np.stack([spec.real, spec.imag], axis=-1)[None]
    got = np.load(os.path.join(out, "y.npy"))
    assert got.shape == want.shape and np.allclose(got, want, rtol=1e-4, atol=1e-4), \
        np.max(np.abs(got - want))
    # Declared [2, 4] for a Relu of [2, 3]: both inferences say [2, 3].
    relu = helper.make_graph(
        [helper.make_node("Relu", ["a"], ["b"], name="r")], "relu",
        [helper.make_tensor_value_info("a", TensorProto.FLOAT, [2, 3])],
        [helper.make_tensor_value_info("b", TensorProto.FLOAT, [2, 4])])
    m = helper.make_model(relu, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    bad = c.w("relu.onnx")
    onnx.save(m, bad)
    c.expect_fail(["ref", bad, "--input", "a=" + x, "--output-dir", c.w("out2")],
                  ["ONNX shape inference failed", "Inferred shape and existing shape differ"],
                  [c.w("out2")])
