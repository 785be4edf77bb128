#!/usr/bin/python3
"""cli_control_cases.py - CLI tests of control flow that npuc cannot resolve at compile time (If,
Loop and Scan are inlined or unrolled at import, frontend/OnnxControl.cpp): each is a user error
naming the node and saying why, and where a graph input decides it, how to pin it with --bind.
Run through cli_check.py (`cli_check.py CASE ...`), which provides the Case fixture; the models
need the `onnx` package (skipped without it).
"""
import os
import struct

from cli_check import SKIP, write_npy


def _onnx():
    try:
        import onnx
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        print("SKIP: no onnx module")
        raise SystemExit(SKIP)
    return onnx, TensorProto, helper, numpy_helper


def _loop_body(helper, TensorProto, cond_nodes, cond_name):
    """acc' = acc + x (x from the outer scope); the condition output is `cond_name`."""
    F, B, I64 = TensorProto.FLOAT, TensorProto.BOOL, TensorProto.INT64
    return helper.make_graph(
        cond_nodes + [helper.make_node("Add", ["acc", "x"], ["acc_out"])], "body",
        [helper.make_tensor_value_info("it", I64, []),
         helper.make_tensor_value_info("c_in", B, []),
         helper.make_tensor_value_info("acc", F, [3])],
        [helper.make_tensor_value_info(cond_name, B, []),
         helper.make_tensor_value_info("acc_out", F, [3])])


def _save(c, onnx, helper, name, nodes, inputs, outputs, inits=()):
    g = helper.make_graph(nodes, name, inputs, outputs, list(inits))
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 16)])
    path = c.w(name + ".onnx")
    onnx.save(m, path)
    return path


def _read_f32(path):
    with open(path, "rb") as f:
        data = f.read()
    hlen = struct.unpack("<H", data[8:10])[0]
    body = data[10 + hlen:]
    return list(struct.unpack("<%df" % (len(body) // 4), body))


def case_control_errors(c):
    """Runtime trip count (then bound with --bind: it compiles and sums M times), an early exit
    on a run-time condition, If branches of different shapes under a run-time condition, a loop
    too large to unroll and one whose condition never turns false."""
    onnx, TensorProto, helper, numpy_helper = _onnx()
    import numpy as np
    F, I64 = TensorProto.FLOAT, TensorProto.INT64
    vi = helper.make_tensor_value_info
    x = vi("x", F, [3])
    y = vi("y", F, None)
    zeros = numpy_helper.from_array(np.zeros(3, np.float32), "z")
    body = _loop_body(helper, TensorProto, [helper.make_node("Identity", ["c_in"], ["c_out"])],
                      "c_out")
    # 1. The trip count is a graph input.
    runtime_m = _save(c, onnx, helper, "runtime_m",
                      [helper.make_node("Loop", ["M", "", "z"], ["y"], name="lp", body=body)],
                      [x, vi("M", I64, [])], [y], [zeros])
    pkg, out = c.w("m.npub"), c.w("out")
    c.expect_fail(["compile", runtime_m, "--target", "cpu", "-o", pkg],
                  ["node 'lp' (Loop): the trip count M (input 0) is read at compile time: it must "
                   "be a constant, but it is graph input 'M'; pin it with --bind M=FILE.npy"],
                  [pkg])
    m_file, x_file = c.w("M.npy"), c.w("x.npy")
    write_npy(m_file, (), dtype="<i8", values=[3])
    write_npy(x_file, (3,), values=[1.0, 2.0, -0.5])
    for target in ["cpu", c.target]:
        c.expect_ok(["compile", runtime_m, "--target", target, "-o", pkg, "--bind",
                     "M=" + m_file])
        c.expect_ok(["run", pkg, "--input", "x=" + x_file, "--output-dir", out])
        assert _read_f32(os.path.join(out, "y.npy")) == [3.0, 6.0, -1.5]
    # 2. The body's condition depends on x: an early exit at run time. In iteration 0 it reads
    # only the constant initial acc (zeros) and folds; from iteration 1 on it reads x.
    body = _loop_body(helper, TensorProto,
                      [helper.make_node("ReduceSum", ["acc"], ["s"], keepdims=0),
                       helper.make_node("Less", ["s", "ten"], ["c_out"])], "c_out")
    early = _save(c, onnx, helper, "early_exit",
                  [helper.make_node("Loop", ["M", "", "z"], ["y"], name="lp", body=body)], [x],
                  [y], [zeros, numpy_helper.from_array(np.int64(5), "M"),
                        numpy_helper.from_array(np.float32(10), "ten")])
    pkg = c.w("bad.npub")  # m.npub holds the package compiled above
    c.expect_fail(["compile", early, "--target", "cpu", "-o", pkg],
                  ["node 'lp' (Loop): its condition (body output 'c_out') is computed at run time "
                   "in iteration 1: npuc unrolls loops at compile time and cannot exit early on a "
                   "run-time value; it is computed from graph input(s) 'x': pin them with --bind "
                   "x=FILE.npy"], [pkg])
    # 3. If on a run-time condition whose branches give different shapes.
    then_g = helper.make_graph([helper.make_node("Identity", ["x"], ["t"])], "then", [],
                               [vi("t", F, [3])])
    else_g = helper.make_graph([helper.make_node("ReduceSum", ["x"], ["e"], keepdims=1)], "else",
                               [], [vi("e", F, [1])])
    mismatch = _save(c, onnx, helper, "if_shapes",
                     [helper.make_node("If", ["flag"], ["y"], name="sel", then_branch=then_g,
                                       else_branch=else_g)],
                     [x, vi("flag", TensorProto.BOOL, [])], [y])
    c.expect_fail(["ref", mismatch, "--input", "x=" + x_file, "--output-dir", out + "2"],
                  ["node 'sel' (If): output 0 ('y') is f32[3] from then_branch but f32[1] from "
                   "else_branch; a run-time condition computes both branches and selects",
                   "pin them with --bind flag=FILE.npy"], [out + "2"])
    # 4. A trip count too large to unroll, refused before any node is built.
    body = _loop_body(helper, TensorProto, [helper.make_node("Identity", ["c_in"], ["c_out"])],
                      "c_out")
    huge = _save(c, onnx, helper, "huge",
                 [helper.make_node("Loop", ["M", "", "z"], ["y"], name="lp", body=body)], [x],
                 [y], [zeros, numpy_helper.from_array(np.int64(10 ** 9), "M")])
    c.expect_fail(["compile", huge, "--target", "cpu", "-o", pkg],
                  ["node 'lp' (Loop): unrolling 1000000000 iterations of a 2-node body makes more "
                   "than 100000 nodes"], [pkg])
    # 5. No trip count and a condition that stays true: a body of Identity nodes (removed at
    # import) adds no node, so the iteration limit ends it.
    F, B = TensorProto.FLOAT, TensorProto.BOOL
    body = helper.make_graph(
        [helper.make_node("Identity", ["c_in"], ["c_out"]),
         helper.make_node("Identity", ["acc"], ["acc_out"])], "body",
        [vi("it", I64, []), vi("c_in", B, []), vi("acc", F, [3])],
        [vi("c_out", B, []), vi("acc_out", F, [3])])
    forever = _save(c, onnx, helper, "forever",
                    [helper.make_node("Loop", ["", "t", "x"], ["y"], name="lp", body=body)], [x],
                    [y], [numpy_helper.from_array(np.array(True), "t")])
    c.expect_fail(["compile", forever, "--target", "cpu", "-o", pkg],
                  ["node 'lp' (Loop): unrolling it takes more than 100000 iterations"], [pkg])
