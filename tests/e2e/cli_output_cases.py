#!/usr/bin/python3
"""cli_output_cases.py - CLI tests of a model's outputs as `npuc ref` and `npuc run` write them:
each under the name the model declares, whatever the passes did to the node that produced it.
Run through cli_check.py (`cli_check.py CASE ...`), which provides the Case fixture.
"""
import os
import sys

from cli_check import SKIP


def conv2d(x, w, pad):
    """Cross-correlation of NCHW x with OIHW w, stride 1, symmetric zero padding (numpy)."""
    import numpy as np
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    oh, ow = h + 2 * pad - kh + 1, wd + 2 * pad - kw + 1
    y = np.zeros((n, o, oh, ow))
    for i in range(kh):
        for j in range(kw):
            y += np.einsum("nchw,oc->nohw", xp[:, :, i:i + oh, j:j + ow], w[:, :, i, j])
    return y


def case_output_names(c):
    """Difftest finding F3: outputs whose producer compilation removes (a BatchNormalization
    folded into its Conv, a zero Pad, an Identity of the graph input, two Identities of a value
    that is an output itself) are written under their declared names on every kind of target,
    with the values numpy computes."""
    try:
        import numpy as np
        import onnx
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        print("SKIP: python onnx/numpy not available")
        sys.exit(SKIP)
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 2, 4, 4)).astype(np.float32)
    w = (0.5 * rng.standard_normal((3, 2, 3, 3))).astype(np.float32)
    scale, bias, mean = (rng.standard_normal(3).astype(np.float32) for _ in range(3))
    var = rng.uniform(0.5, 1.5, 3).astype(np.float32)
    inits = [numpy_helper.from_array(a, n) for a, n in
             [(w, "w"), (scale, "s"), (bias, "t"), (mean, "m"), (var, "v"),
              (np.zeros(8, np.int64), "zeros")]]
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("BatchNormalization", ["c", "s", "t", "m", "v"], ["bn"]),
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("Pad", ["r", "zeros"], ["p"]),
        helper.make_node("Identity", ["x"], ["id"]),
        helper.make_node("Tanh", ["x"], ["th"]),
        helper.make_node("Identity", ["th"], ["t1"]),
        helper.make_node("Identity", ["th"], ["t2"]),
    ]
    shapes = {"bn": [1, 3, 4, 4]}
    names = ["bn", "p", "id", "t1", "t2", "th"]
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shapes.get(n, [1, 2, 4, 4]))
            for n in names]
    graph = helper.make_graph(nodes, "outs",
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
                              outs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    path, inp = c.w("outs.onnx"), c.w("x.npy")
    onnx.save(model, path)
    np.save(inp, x)

    xd = x.astype(np.float64)
    k = scale / np.sqrt(var.astype(np.float64) + 1e-5)
    want = {"bn": conv2d(xd, w.astype(np.float64), 1) * k[None, :, None, None]
            + (bias - mean * k)[None, :, None, None],
            "p": np.maximum(xd, 0), "id": xd, "t1": np.tanh(xd), "t2": np.tanh(xd),
            "th": np.tanh(xd)}

    def check(outdir, tol, what):
        files = sorted(f for f in os.listdir(outdir) if f.endswith(".npy"))
        assert files == sorted(n + ".npy" for n in names), (what, files)
        for n in names:
            got = np.load(os.path.join(outdir, n + ".npy")).astype(np.float64)
            assert got.shape == want[n].shape, (what, n, got.shape)
            err = np.abs(got - want[n]).max()
            bound = tol * max(1.0, np.abs(want[n]).max())
            assert err <= bound, (what, n, err, bound)
        print("ok:", what)

    c.expect_ok(["ref", path, "--input", "x=" + inp, "--output-dir", c.w("ref")])
    check(c.w("ref"), 1e-5, "ref")
    for target, tol in [("cpu", 1e-4), ("npu-base", 2e-2), ("npu-int8", 5e-2)]:
        pkg = c.w(target + ".npub")
        opts = ["--target", "cpu"] if target == "cpu" else \
            ["--target", os.path.join(c.root, "configs", target + ".yaml")]
        if target == "npu-int8":
            opts += ["--calibrate", inp]
        c.expect_ok(["compile", path, "-o", pkg] + opts)
        c.expect_ok(["run", pkg, "--input", "x=" + inp, "--output-dir", c.w(target)])
        check(c.w(target), tol, target)
