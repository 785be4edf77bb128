"""ops_control.py - control flow (If, Loop, Scan), which npuc resolves at import into the flat
graph: a constant If condition inlines a branch, a run-time one selects between both with Where,
Loop and Scan are unrolled. Imported by make_ops.py (family "control"); every oracle is numpy
that executes the control flow as ONNX defines it (a Python if/for over the iterations), never
npuc's unrolled form.
"""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = TensorProto.FLOAT
I64 = TensorProto.INT64
B = TensorProto.BOOL


def _vi(name, t=F, shape=None):
    return helper.make_tensor_value_info(name, t, shape)


def _c(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def models(outdir, rnd):
    meta = []

    def model(name, op, nodes, inputs, outputs, inits=(), opset=16):
        """inputs: [(name, array)] float graph inputs; outputs: [(name, expected array)]."""
        d = os.path.join(outdir, name)
        os.makedirs(d, exist_ok=True)
        g = helper.make_graph(nodes, name, [_vi(n, F, list(a.shape)) for n, a in inputs],
                              [_vi(n, F, None) for n, _ in outputs], list(inits))
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        onnx.save(m, os.path.join(d, "model.onnx"))
        for n, a in inputs:
            np.save(os.path.join(d, f"in_{n}.npy"), a.astype(np.float32))
        for n, e in outputs:
            np.save(os.path.join(d, f"exp_{n}.npy"), np.asarray(e, np.float32))
        meta.append(dict(name=name, family="control", op=op, inputs=[n for n, _ in inputs],
                         oracle=True))

    x = rnd(2, 3)

    # --- If -------------------------------------------------------------------------------
    # Branches read the outer graph input i0 and initializer w, and have initializers of their
    # own: then = i0 * w + k_then, else = i0 - k_else (k_* live inside the branch).
    w = rnd(2, 3)
    k_then, k_else = rnd(3), rnd(2, 3)

    def branches(suffix=""):
        then_g = helper.make_graph(
            [helper.make_node("Mul", ["i0", "w"], ["tm" + suffix]),
             helper.make_node("Add", ["tm" + suffix, "k_then" + suffix], ["t_out" + suffix])],
            "then" + suffix, [], [_vi("t_out" + suffix, F, [2, 3])], [_c("k_then" + suffix, k_then)])
        else_g = helper.make_graph(
            [helper.make_node("Sub", ["i0", "k_else" + suffix], ["e_out" + suffix])],
            "else" + suffix, [], [_vi("e_out" + suffix, F, [2, 3])], [_c("k_else" + suffix, k_else)])
        return then_g, else_g

    then_v = lambda a: a * w + k_then
    else_v = lambda a: a - k_else
    for flag in (True, False):
        t, e = branches()
        model(f"If_const_{str(flag).lower()}", "If",
              [helper.make_node("If", ["cond"], ["y0"], name="if", then_branch=t, else_branch=e)],
              [("i0", x)], [("y0", then_v(x) if flag else else_v(x))],
              [_c("w", w), _c("cond", np.array(flag))])
    # A run-time condition (Greater(i1, 0), shape [1]): both branches run, Where selects.
    for c in (0.5, -0.5):
        t, e = branches()
        model(f"If_runtime_{'then' if c > 0 else 'else'}", "If",
              [helper.make_node("Greater", ["i1", "zero"], ["cond"]),
               helper.make_node("If", ["cond"], ["y0"], name="if", then_branch=t, else_branch=e)],
              [("i0", x), ("i1", np.array([c], np.float32))],
              [("y0", then_v(x) if c > 0 else else_v(x))],
              [_c("w", w), _c("zero", np.float32(0))])
    # Nested If: the outer then branch holds an If on a second run-time condition, whose
    # branches read the outer graph input and the outer branch's own value.
    inner_then = helper.make_graph([helper.make_node("Add", ["i0", "h"], ["it_out"])],
                                   "inner_then", [], [_vi("it_out", F, [2, 3])])
    inner_else = helper.make_graph([helper.make_node("Mul", ["h", "h"], ["ie_out"])],
                                   "inner_else", [], [_vi("ie_out", F, [2, 3])])
    outer_then = helper.make_graph(
        [helper.make_node("Relu", ["i0"], ["h"]),
         helper.make_node("If", ["c2"], ["ot_out"], name="inner", then_branch=inner_then,
                          else_branch=inner_else)],
        "outer_then", [], [_vi("ot_out", F, [2, 3])])
    outer_else = helper.make_graph([helper.make_node("Neg", ["i0"], ["oe_out"])], "outer_else",
                                   [], [_vi("oe_out", F, [2, 3])])
    relu = np.maximum(x, 0)
    for c1, c2 in ((1.0, 1.0), (1.0, -1.0), (-1.0, 1.0)):
        expect = (x + relu if c2 > 0 else relu * relu) if c1 > 0 else -x
        model(f"If_nested_{'t' if c1 > 0 else 'e'}{'t' if c2 > 0 else 'e'}", "If",
              [helper.make_node("Greater", ["i1", "zero"], ["c1"]),
               helper.make_node("Greater", ["i2", "zero"], ["c2"]),
               helper.make_node("If", ["c1"], ["y0"], name="outer", then_branch=outer_then,
                                else_branch=outer_else)],
              [("i0", x), ("i1", np.array(c1, np.float32)), ("i2", np.array(c2, np.float32))],
              [("y0", expect)], [_c("zero", np.float32(0))])

    # --- Loop -----------------------------------------------------------------------------
    # M = 4 (an initializer), no condition; carried acc: acc' = 0.5 acc + i0 + iter; scan output
    # acc' + 1, stacked to [4, 2, 3].
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Mul", ["acc", "half"], ["h"]),
         helper.make_node("Add", ["h", "i0"], ["s"]),
         helper.make_node("Cast", ["it"], ["itf"], to=F),
         helper.make_node("Add", ["s", "itf"], ["acc_out"]),
         helper.make_node("Add", ["acc_out", "one"], ["scan_out"])],
        "body", [_vi("it", I64, []), _vi("cond_in", B, []), _vi("acc", F, [2, 3])],
        [_vi("cond_out", B, []), _vi("acc_out", F, [2, 3]), _vi("scan_out", F, [2, 3])],
        [_c("half", np.float32(0.5)), _c("one", np.float32(1))])
    acc, rows = np.zeros((2, 3), np.float32), []
    for it in range(4):
        acc = 0.5 * acc + x + it
        rows.append(acc + 1)
    model("Loop_carried_scan", "Loop",
          [helper.make_node("Loop", ["M", "", "i1"], ["y0", "y1"], name="loop", body=body)],
          [("i0", x), ("i1", np.zeros((2, 3), np.float32))], [("y0", acc), ("y1", np.stack(rows))],
          [_c("M", np.int64(4))])
    # M from a Constant node (10), a constant-true cond, and a body condition iter + 1 < 3 that
    # folds once the iteration is known: 3 iterations. carried p: p' = p * i0; scan: iter as f32.
    body = helper.make_graph(
        [helper.make_node("Add", ["it", "one"], ["nx"]),
         helper.make_node("Less", ["nx", "three"], ["cond_out"]),
         helper.make_node("Mul", ["p", "i0"], ["p_out"]),
         helper.make_node("Cast", ["it"], ["scan_out"], to=F)],
        "body", [_vi("it", I64, []), _vi("cond_in", B, []), _vi("p", F, [2, 3])],
        [_vi("cond_out", B, []), _vi("p_out", F, [2, 3]), _vi("scan_out", F, [])],
        [_c("one", np.int64(1)), _c("three", np.int64(3))])
    p, its = np.ones((2, 3), np.float32), []
    for it in range(10):
        p = p * x
        its.append(it)
        if not it + 1 < 3:
            break
    model("Loop_const_M_folded_cond", "Loop",
          [helper.make_node("Constant", [], ["M"], value=_c("Mv", np.int64(10))),
           helper.make_node("Loop", ["M", "t", "ones"], ["y0", "y1"], name="loop", body=body)],
          [("i0", x)], [("y0", p), ("y1", np.array(its, np.float32))],
          [_c("t", np.array(True)), _c("ones", np.ones((2, 3), np.float32))])

    # M = 0: no iteration; the carried value is its initial one and the scan output is empty
    # ([0, 2, 3]: its row shape from the body).
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Add", ["acc", "i0"], ["acc_out"]),
         helper.make_node("Mul", ["acc_out", "i0"], ["scan_out"])],
        "body", [_vi("it", I64, []), _vi("cond_in", B, []), _vi("acc", F, [2, 3])],
        [_vi("cond_out", B, []), _vi("acc_out", F, [2, 3]), _vi("scan_out", F, [2, 3])])
    model("Loop_zero_trips", "Loop",
          [helper.make_node("Loop", ["M", "", "i1"], ["y0", "y1"], name="loop", body=body)],
          [("i0", x), ("i1", x + 1)], [("y0", x + 1), ("y1", np.zeros((0, 2, 3), np.float32))],
          [_c("M", np.int64(0))])

    # --- Scan -----------------------------------------------------------------------------
    # One state s [2, 3]; scan input a [2, 4, 3] along axis 1 in reverse, b [3, 4] along axis -1
    # forward; s' = s + a_t * b_t; scan output s' stacked along axis 1 in reverse ([2, 4, 3]) and
    # a_t - s' stacked along axis 2 forward ([2, 3, 4]).
    a, b = rnd(2, 4, 3), rnd(3, 4)
    body = helper.make_graph(
        [helper.make_node("Mul", ["at", "bt"], ["ab"]),
         helper.make_node("Add", ["s", "ab"], ["s_out"]),
         helper.make_node("Identity", ["s_out"], ["o1"]),
         helper.make_node("Sub", ["at", "s_out"], ["o2"])],
        "body", [_vi("s", F, [2, 3]), _vi("at", F, [2, 3]), _vi("bt", F, [3])],
        [_vi("s_out", F, [2, 3]), _vi("o1", F, [2, 3]), _vi("o2", F, [2, 3])])
    s = np.zeros((2, 3), np.float32)
    o1 = np.zeros((2, 4, 3), np.float32)
    o2 = np.zeros((2, 3, 4), np.float32)
    for t in range(4):
        at = a[:, 3 - t, :]
        s = s + at * b[:, t]
        o1[:, 3 - t, :] = s
        o2[:, :, t] = at - s
    model("Scan_reverse_axes", "Scan",
          [helper.make_node("Scan", ["i0", "i1", "i2"], ["y0", "y1", "y2"], name="scan", body=body,
                            num_scan_inputs=2, scan_input_axes=[1, -1],
                            scan_input_directions=[1, 0], scan_output_axes=[1, -1],
                            scan_output_directions=[1, 0])],
          [("i0", np.zeros((2, 3), np.float32)), ("i1", a), ("i2", b)],
          [("y0", s), ("y1", o1), ("y2", o2)])
    # Two state variables: a running sum and a running max over the rows of x [5, 3]; the scan
    # output is their difference per step.
    xs = rnd(5, 3)
    body = helper.make_graph(
        [helper.make_node("Add", ["sum", "row"], ["sum_out"]),
         helper.make_node("Max", ["mx", "row"], ["mx_out"]),
         helper.make_node("Sub", ["sum_out", "mx_out"], ["d"])],
        "body", [_vi("sum", F, [3]), _vi("mx", F, [3]), _vi("row", F, [3])],
        [_vi("sum_out", F, [3]), _vi("mx_out", F, [3]), _vi("d", F, [3])])
    sm, mx, ds = np.zeros(3, np.float32), np.full(3, -10, np.float32), []
    for t in range(5):
        sm, mx = sm + xs[t], np.maximum(mx, xs[t])
        ds.append(sm - mx)
    model("Scan_two_states", "Scan",
          [helper.make_node("Scan", ["i0", "i1", "i2"], ["y0", "y1", "y2"], name="scan", body=body,
                            num_scan_inputs=1)],
          [("i0", np.zeros(3, np.float32)), ("i1", np.full(3, -10, np.float32)), ("i2", xs)],
          [("y0", sm), ("y1", mx), ("y2", np.stack(ds))])
    # Scan of opset 8: a leading batch axis on every input and output, scan inputs scanned along
    # axis 1, directions reversing input 0; batch entries are independent.
    init8, x8 = rnd(2, 3), rnd(2, 4, 3)
    body = helper.make_graph(
        [helper.make_node("Add", ["acc", "row"], ["acc_out"]),
         helper.make_node("Mul", ["acc_out", "row"], ["o"])],
        "body", [_vi("acc", F, [3]), _vi("row", F, [3])],
        [_vi("acc_out", F, [3]), _vi("o", F, [3])])
    fin8, outs8 = np.zeros((2, 3), np.float32), np.zeros((2, 4, 3), np.float32)
    for b in range(2):
        acc = init8[b]
        for t in range(4):
            row = x8[b, 3 - t]
            acc = acc + row
            outs8[b, t] = acc * row
        fin8[b] = acc
    model("Scan_opset8_batch2_reverse", "Scan",
          [helper.make_node("Scan", ["", "i0", "i1"], ["y0", "y1"], name="scan", body=body,
                            num_scan_inputs=1, directions=[1])],
          [("i0", init8), ("i1", x8)], [("y0", fin8), ("y1", outs8)], opset=8)
    return meta
