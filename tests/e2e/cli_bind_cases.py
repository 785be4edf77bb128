#!/usr/bin/python3
"""cli_bind_cases.py - CLI tests of `--bind NAME=FILE.npy` (a graph input made a constant before
import, so that operands which set output shapes may come from graph inputs) on compile, ref,
graph-opt and tune, and of the message for a shape operand that is a run-time tensor. Run
through cli_check.py (`cli_check.py CASE ...`), which provides the Case fixture; the models need
the `onnx` package (skipped without it).
"""
import os
import struct

from cli_check import SKIP, write_npy


def _reshape_model(c):
    """y = Reshape(x[2, 3], shape), `shape` an int64 graph input; and z = Resize(x4, scales) with
    `scales` a float graph input (a shape operand that passes the float-only input check)."""
    try:
        import onnx
        from onnx import TensorProto, helper
    except ImportError:
        print("SKIP: no onnx module")
        raise SystemExit(SKIP)
    g = helper.make_graph(
        [helper.make_node("Reshape", ["x", "shape"], ["y"], name="r")], "bind",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3]),
         helper.make_tensor_value_info("shape", TensorProto.INT64, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    path = c.w("reshape.onnx")
    onnx.save(m, path)
    g = helper.make_graph(
        [helper.make_node("Resize", ["x", "", "scales"], ["y"], name="rs")], "resize",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 2, 2]),
         helper.make_tensor_value_info("scales", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    resize = c.w("resize.onnx")
    onnx.save(m, resize)
    return path, resize


def _read_npy(path):
    with open(path, "rb") as f:
        data = f.read()
    hlen = struct.unpack("<H", data[8:10])[0]
    body = data[10 + hlen:]
    return list(struct.unpack("<%df" % (len(body) // 4), body))


def case_bind(c):
    """--bind on compile (cpu and npu-base), ref and graph-opt: the bound input is a constant,
    the model compiles, and the outputs are x's values in the new shape (a reshape keeps the
    order)."""
    model, _ = _reshape_model(c)
    x, shape = c.w("x.npy"), c.w("shape.npy")
    values = [float(i) for i in range(6)]
    write_npy(x, (2, 3), values=values)
    write_npy(shape, (2,), dtype="<i8", values=[3, -1])
    for target in ["cpu", c.target]:
        pkg = c.w("m.npub")
        c.expect_ok(["compile", model, "--target", target, "-o", pkg, "--bind", "shape=" + shape])
        out = c.w("out")
        c.expect_ok(["run", pkg, "--input", "x=" + x, "--output-dir", out])
        assert _read_npy(os.path.join(out, "y.npy")) == values
        # The package no longer has the input: giving it is an error.
        c.expect_fail(["run", pkg, "--input", "x=" + x, "--input", "shape=" + x,
                       "--output-dir", c.w("out2")], ["'shape'"], [c.w("out2")])
    ref = c.w("ref")
    text = c.expect_ok(["ref", model, "--input", "x=" + x, "--bind", "shape=" + shape,
                        "--output-dir", ref])
    assert "y: 3x2" in text, text
    assert _read_npy(os.path.join(ref, "y.npy")) == values
    text = c.expect_ok(["graph-opt", model, "--bind", "shape=" + shape])
    assert "input %x: f32[2x3]" in text and "input %shape" not in text, text
    assert "f32[3x2]" in text, text


def case_bind_errors(c):
    """Every misuse of --bind is an error naming the argument, before any output is written."""
    model, resize = _reshape_model(c)
    x, shape, f32, long3 = c.w("x.npy"), c.w("shape.npy"), c.w("f32.npy"), c.w("long3.npy")
    write_npy(x, (2, 3))
    write_npy(shape, (2,), dtype="<i8", values=[3, 2])
    write_npy(f32, (2,), values=[3.0, 2.0])
    write_npy(long3, (3,), dtype="<i8", values=[3, 2, 1])
    pkg, out = c.w("m.npub"), c.w("out")
    compile_ = ["compile", model, "--target", "cpu", "-o", pkg]
    c.expect_fail(compile_ + ["--bind", "nope=" + shape],
                  ["--bind nope=" + shape + ": the model has no input 'nope' (its inputs: 'x', "
                   "'shape')"], [pkg])
    c.expect_fail(compile_ + ["--bind", "shape=" + shape, "--bind", "shape=" + long3],
                  ["--bind: input 'shape' bound twice"], [pkg])
    c.expect_fail(compile_ + ["--bind", "shape=" + f32],
                  ["--bind shape=" + f32 + ": input 'shape' is INT64 in the model, the file "
                   "holds FLOAT ('<f4')"], [pkg])
    c.expect_fail(compile_ + ["--bind", "shape=" + long3],
                  ["--bind shape=" + long3 + ": the file's shape 3 does not match input "
                   "'shape' (2)"], [pkg])
    c.expect_fail(compile_ + ["--bind", "shape=" + shape, "--input-shape", "shape=2"],
                  ["input 'shape' is also pinned with --input-shape"], [pkg])
    c.expect_fail(compile_ + ["--bind", "shape"], ["--bind 'shape': expected NAME=FILE.npy"],
                  [pkg])
    c.expect_fail(compile_ + ["--bind", "shape=" + c.w("missing.npy")], ["missing.npy"], [pkg])
    c.expect_fail(["ref", model, "--input", "x=" + x, "--input", "shape=" + shape, "--bind",
                   "shape=" + shape, "--output-dir", out],
                  ["input 'shape' is given with --input and bound with --bind shape=" + shape],
                  [out])
    c.expect_fail(["graph-opt", model, "--bind", "nope=" + shape], ["the model has no input 'nope'"],
                  [])
    log = c.w("t.jsonl")
    c.expect_fail(["tune", model, "--target", c.target, "--trials", "1", "--log", log,
                   "--bind", "nope=" + shape], ["the model has no input 'nope'"], [log])
    # Without --bind, a shape operand that is a graph input says so and how to pin it.
    c.expect_fail(["compile", resize, "--target", "cpu", "-o", pkg],
                  ["node 'rs' (Resize): scales (input 2) sets the output shape, and npuc compiles "
                   "static shapes: it must be a constant, but it is graph input 'scales'; pin it "
                   "with --bind scales=FILE.npy"], [pkg])
