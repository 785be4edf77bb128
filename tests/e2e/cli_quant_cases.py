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


def _save(path, name, nodes, inputs, outputs, inits=()):
    """An opset-17 model: inputs/outputs are (name, shape) float tensors, inits (name, array)."""
    import onnx
    from onnx import helper, numpy_helper, TensorProto as TP
    g = helper.make_graph(nodes, name,
                          [helper.make_tensor_value_info(n, TP.FLOAT, s) for n, s in inputs],
                          [helper.make_tensor_value_info(n, TP.FLOAT, s) for n, s in outputs],
                          [numpy_helper.from_array(a, n) for n, a in inits])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def _bn_model(path):
    """x -> Conv "conv" (c) -> BatchNormalization "bn" (b) -> Softmax over channels (s, on the
    CPU: no exp on the NPU) and Relu (y, on the NPU): b crosses from the NPU to the CPU, and the
    BN folds into the conv, whose own output c then no longer exists."""
    from onnx import helper
    rng = np.random.default_rng(19)
    f32 = np.float32
    inits = [("w", rng.normal(0, 0.3, (4, 3, 3, 3)).astype(f32)),
             ("scale", rng.uniform(0.5, 2, 4).astype(f32)),
             ("bias", rng.normal(0, 1, 4).astype(f32)),
             ("mean", rng.normal(0, 0.5, 4).astype(f32)),
             ("var", rng.uniform(0.5, 2, 4).astype(f32))]
    nodes = [helper.make_node("Conv", ["x", "w"], ["c"], name="conv", pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "scale", "bias", "mean", "var"], ["b"],
                              name="bn"),
             helper.make_node("Softmax", ["b"], ["s"], name="sm", axis=1),
             helper.make_node("Relu", ["b"], ["y"], name="relu")]
    _save(path, "bnnet", nodes, [("x", [1, 3, 8, 8])], [(n, [1, 4, 8, 8]) for n in "sy"], inits)


def _errors(got, ref):
    """The report's figures, computed here from the two output files."""
    got, ref = got.astype(np.float64).ravel(), ref.astype(np.float64).ravel()
    err = np.abs(got - ref)
    cos = got @ ref / np.sqrt((got @ got) * (ref @ ref))
    return err.max(), err.mean(), np.abs(ref).max(), cos, 10 * np.log10((ref @ ref) / (err @ err))


def case_compare_ref(c):
    """`npuc run --compare-ref MODEL` (issue 19's accuracy report): every value the run held on
    the host against `npuc ref`'s value of that name; the graph outputs' figures agree with the
    ones computed here from the written outputs; the folded BN's value is compared under its own
    name; a model the package was not compiled from is refused, leaving no output."""
    import json
    model, x = c.w("bnnet.onnx"), c.w("x.npy")
    _bn_model(model)
    np.save(x, np.random.default_rng(7).normal(0, 1, (1, 3, 8, 8)).astype(np.float32))
    target = os.path.join(c.root, "configs", "npu-int8.yaml")
    pkg = c.w("bnnet.npub")
    c.expect_ok(["compile", model, "--target", target, "--calibrate", x, "-o", pkg])
    out, rep, ref = c.w("out"), c.w("report.json"), c.w("ref")
    text = c.expect_ok(["run", pkg, "--input", "x=" + x, "--output-dir", out, "--report", rep,
                        "--compare-ref", model])
    c.expect_ok(["ref", model, "--input", "x=" + x, "--output-dir", ref])
    assert "accuracy against the fp32 reference" in text and "lowest SNR: " in text, text
    with open(rep) as f:
        acc = json.load(f)["accuracy"]
    byname = {t["name"]: t for t in acc["tensors"]}
    assert set(byname) >= {"b", "s", "y"} and "c" not in byname, (byname.keys(), text)
    assert byname["b"]["placement"] == "npu" and byname["s"]["placement"] == "cpu", byname
    assert byname["s"]["graph_output"] and not byname["b"]["graph_output"], byname
    for name in "sy":
        want = _errors(np.load(os.path.join(out, name + ".npy")),
                       np.load(os.path.join(ref, name + ".npy")))
        t = byname[name]
        got = (t["max_abs_err"], t["mean_abs_err"], t["ref_max_abs"], t["cosine"], t["snr_db"])
        assert np.allclose(got, want, rtol=1e-6, atol=1e-9), (name, got, want)
    # int8 with the BN folded into the conv: close, not exact (a BN left unfolded under the
    # conv's name would compare conv against conv+BN and land far from 1).
    assert 0.99 < byname["b"]["cosine"] < 1 and byname["b"]["snr_db"] > 20, byname["b"]
    other = os.path.join(c.root, "models", "tinycnn.onnx")
    c.require(other)
    c.expect_fail(["run", pkg, "--input", "x=" + x, "--output-dir", c.w("out2"), "--report",
                   c.w("r2.json"), "--compare-ref", other],
                  ["--compare-ref " + other + ": ",
                   "the package's input shape names 'x', which is not an input of the model"],
                  [c.w("out2"), c.w("r2.json")])
    # Same input name and shape, other graph: refused by its outputs.
    alt = c.w("alt.onnx")
    from onnx import helper
    _save(alt, "alt", [helper.make_node("Relu", ["x"], ["z"], name="r")], [("x", [1, 3, 8, 8])],
          [("z", [1, 3, 8, 8])])
    c.expect_fail(["run", pkg, "--input", "x=" + x, "--output-dir", c.w("out3"), "--compare-ref",
                   alt], ["no output of the package", "was the package compiled from it?"],
                  [c.w("out3")])

    # A model whose only output is its input passed through computes nothing to compare; that is
    # no sign of a foreign model.
    passthrough = c.w("pass.onnx")
    _save(passthrough, "pass", [helper.make_node("Identity", ["x"], ["id"], name="i")],
          [("x", [1, 3, 8, 8])], [("id", [1, 3, 8, 8])])
    c.expect_ok(["compile", passthrough, "--target", target, "-o", c.w("pass.npub")])
    c.expect_ok(["run", c.w("pass.npub"), "--input", "x=" + x, "--output-dir", c.w("pass"),
                 "--compare-ref", passthrough])

def case_segment_per_group(c):
    """`compile --segment-per-group` makes every NPU group a segment, so `run --compare-ref`
    compares each group's outputs; the outputs are bit for bit those of the normal package (a
    value leaves and re-enters the NPU in its storage type and scale), on fp16 and int8."""
    import json
    model, inp = c.model, os.path.join(c.root, "models", "tinycnn_input.npy")
    c.require(model, inp)
    for preset in ("npu-base", "npu-int8"):
        target = os.path.join(c.root, "configs", preset + ".yaml")
        outs = {}
        for flag in ([], ["--segment-per-group"]):
            tag = preset + ("-split" if flag else "")
            pkg, rep = c.w(tag + ".npub"), c.w(tag + ".json")
            c.expect_ok(["compile", model, "--target", target, "-o", pkg] + flag)
            c.expect_ok(["run", pkg, "--input", "input=" + inp, "--output-dir", c.w(tag),
                         "--report", rep, "--compare-ref", model])
            outs[tag] = open(os.path.join(c.w(tag), "output.npy"), "rb").read()
            with open(rep) as f:
                r = json.load(f)
            npu_groups = [op for op in r["ops"] if op["placement"] == "npu"]
            compared = [t for t in r["accuracy"]["tensors"] if t["placement"] == "npu"]
            if flag:
                assert len(r["segments"]) == len(r["ops"]), r["segments"]
                assert len(compared) == len(npu_groups), (compared, npu_groups)
                ins = c.expect_ok(["inspect", pkg])
                assert "every NPU group is a segment of its own" in ins, ins[:1000]
            else:
                assert len(compared) < len(npu_groups), (compared, npu_groups)
        assert outs[preset] == outs[preset + "-split"], preset + ": outputs differ"
