#!/usr/bin/python3
"""cli_check.py - CLI tests of `npuc`: each case builds its bad input at test time, runs npuc,
and asserts the exit status (1), the `npuc: error:` message substring(s), and that no output file
was left behind. The "flow" case checks the happy path of compile/run/disasm/inspect/ref.

usage: cli_check.py CASE --npuc PATH --root REPO_ROOT --work SCRATCH_DIR
Only the standard library is used for fixtures (.npy files are written by hand); the
unsupported-op model needs the `onnx` package and the case is skipped (exit 77) without it.
"""
import argparse
import json
import os
import shutil
import struct
import subprocess
import sys

SKIP = 77


def write_npy(path, shape, dtype="<f4", values=None):
    """Writes a C-order .npy (format 1.0) with the given dtype descriptor."""
    n = 1
    for d in shape:
        n *= d
    dims = ", ".join("%d" % d for d in shape) + ("," if len(shape) == 1 else "")
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (dtype, dims)
    total = 10 + len(header) + 1
    header += " " * ((64 - total % 64) % 64) + "\n"
    fmt = {"<f4": "f", "<f8": "d", "<i8": "q"}[dtype]
    values = values if values is not None else [0.25 * (i % 7) for i in range(n)]
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
        f.write(struct.pack("<%d%s" % (n, fmt), *values))


def run(npuc, args, env=None):
    p = subprocess.run([npuc] + args, capture_output=True, text=True, env=env)
    return p.returncode, p.stdout, p.stderr


class Case:
    def __init__(self, a):
        self.npuc, self.root, self.work = a.npuc, a.root, a.work
        shutil.rmtree(self.work, ignore_errors=True)
        os.makedirs(self.work)
        self.target = os.path.join(self.root, "configs", "npu-base.yaml")
        self.model = os.path.join(self.root, "models", "tinycnn.onnx")
        # npuc run keeps machine code it compiles in a cache: the case's own, not the user's.
        self.env = dict(os.environ, NPUC_CACHE_DIR=self.w("code-cache"))

    def w(self, name):
        return os.path.join(self.work, name)

    def require(self, *paths):
        for p in paths:
            if not os.path.exists(p):
                print("SKIP: missing bundled file", p)
                sys.exit(SKIP)

    def expect_fail(self, args, substrings, outputs):
        rc, out, err = run(self.npuc, args, self.env)
        msg = "args: %s\nrc=%d\nstdout:\n%s\nstderr:\n%s" % (args, rc, out, err)
        assert rc == 1, "expected exit status 1\n" + msg
        assert err.startswith("npuc: error: "), "stderr must start with 'npuc: error: '\n" + msg
        for s in substrings:
            assert s in err, "stderr lacks %r\n%s" % (s, msg)
        for o in outputs:
            assert not os.path.exists(o), "output %s left behind\n%s" % (o, msg)
        print("ok:", err.strip())

    def expect_ok(self, args):
        rc, out, err = run(self.npuc, args, self.env)
        assert rc == 0, "args: %s\nrc=%d\nstdout:\n%s\nstderr:\n%s" % (args, rc, out, err)
        return out

    def compile_tinycnn(self):
        self.require(self.model, self.target)
        pkg = self.w("tinycnn.npub")
        self.expect_ok(["compile", self.model, "--target", self.target, "-o", pkg])
        return pkg

    def edited_target(self, edit):
        self.require(self.target)
        with open(self.target) as f:
            lines = f.read().split("\n")
        out = edit(lines)
        path = self.w("edited.yaml")
        with open(path, "w") as f:
            f.write("\n".join(out))
        return path


def case_missing_model(c):
    c.require(c.target)
    out = c.w("out.npub")
    c.expect_fail(["compile", c.w("no_such_model.onnx"), "--target", c.target, "-o", out],
                  ["no_such_model.onnx"], [out])


def case_truncated_onnx(c):
    c.require(c.model, c.target)
    with open(c.model, "rb") as f:
        data = f.read()
    bad = c.w("truncated.onnx")
    with open(bad, "wb") as f:
        f.write(data[: len(data) // 2])
    out = c.w("out.npub")
    c.expect_fail(["compile", bad, "--target", c.target, "-o", out], ["truncated.onnx"], [out])


def first_scalar_key(lines, pred):
    """Index and key of the first 'key: value' line whose value satisfies pred."""
    for i, line in enumerate(lines):
        s = line.split("#")[0].rstrip()
        if ":" in s and not s.lstrip().startswith("-"):
            key, _, val = s.strip().partition(":")
            if pred(val.strip()):
                return i, key
    raise AssertionError("no suitable field in the target YAML")


def is_number(v):
    try:
        float(v)
        return True
    except ValueError:
        return False


def case_target_missing_field(c):
    # Drop the first top-level scalar field (e.g. the target's name or word size).
    def edit(lines):
        i, key = first_scalar_key([l if not l.startswith(" ") else "" for l in lines],
                                  lambda v: v != "")
        case_target_missing_field.key = key
        return lines[:i] + lines[i + 1:]
    target = c.edited_target(edit)
    c.require(c.model)
    out = c.w("out.npub")
    c.expect_fail(["compile", c.model, "--target", target, "-o", out],
                  ["edited.yaml", case_target_missing_field.key], [out])


def case_target_bad_type(c):
    # Replace the first numeric field's value by a word.
    def edit(lines):
        i, key = first_scalar_key(lines, is_number)
        case_target_bad_type.key = key
        indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
        lines[i] = "%s%s: lots" % (indent, key)
        return lines
    target = c.edited_target(edit)
    c.require(c.model)
    out = c.w("out.npub")
    c.expect_fail(["compile", c.model, "--target", target, "-o", out],
                  ["edited.yaml", case_target_bad_type.key], [out])


def case_input_wrong_shape(c):
    pkg = c.compile_tinycnn()
    npy = c.w("x.npy")
    write_npy(npy, (1, 3, 16, 16))
    outdir = c.w("out")
    c.expect_fail(["run", pkg, "--input", "input=" + npy, "--output-dir", outdir,
                   "--report", c.w("r.json")],
                  ["input 'input'", "1x3x32x32", "1x3x16x16"], [outdir, c.w("r.json")])


def case_input_wrong_dtype(c):
    pkg = c.compile_tinycnn()
    npy = c.w("x64.npy")
    write_npy(npy, (1, 3, 32, 32), "<f8")
    outdir = c.w("out")
    c.expect_fail(["run", pkg, "--input", "input=" + npy, "--output-dir", outdir],
                  ["x64.npy"], [outdir])


def case_unknown_input(c):
    pkg = c.compile_tinycnn()
    npy = c.w("x.npy")
    write_npy(npy, (1, 3, 32, 32))
    outdir = c.w("out")
    c.expect_fail(["run", pkg, "--input", "image=" + npy, "--output-dir", outdir],
                  ["unknown input 'image'"], [outdir])


def case_truncated_package(c):
    pkg = c.compile_tinycnn()
    with open(pkg, "rb") as f:
        data = f.read()
    bad = c.w("cut.npub")
    with open(bad, "wb") as f:
        f.write(data[: len(data) // 2])
    npy = c.w("x.npy")
    write_npy(npy, (1, 3, 32, 32))
    outdir = c.w("out")
    c.expect_fail(["run", bad, "--input", "input=" + npy, "--output-dir", outdir],
                  ["cut.npub", "npuc package"], [outdir])
    c.expect_fail(["disasm", c.model], ["tinycnn.onnx: not an npuc package"], [])


def case_unsupported_op(c):
    try:
        import onnx
        from onnx import TensorProto, helper
    except ImportError:
        print("SKIP: python onnx package not available")
        sys.exit(SKIP)
    c.require(c.target)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])
    node = helper.make_node("MeanVarianceNormalization", ["x"], ["y"], name="odd_op")
    model = helper.make_model(helper.make_graph([node], "g", [x], [y]),
                              opset_imports=[helper.make_opsetid("", 13)])
    path = c.w("mvn.onnx")
    onnx.save(model, path)
    out = c.w("out.npub")
    c.expect_fail(["compile", path, "--target", c.target, "-o", out],
                  ["MeanVarianceNormalization"], [out])


def onnx_or_skip():
    try:
        import numpy
        import onnx
        from onnx import helper
        return onnx, helper, numpy
    except ImportError:
        print("SKIP: python onnx or numpy package not available")
        sys.exit(SKIP)


def case_bad_window_attrs(c):
    """A zero stride (once SIGFPE in ONNX's shape inference) and a zero pooling window (once
    compiled) are errors naming the node and attribute, in compile (NPU and CPU) and ref."""
    onnx, helper, np = onnx_or_skip()
    from onnx import TensorProto, numpy_helper
    c.require(c.target)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 16, 16])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    w = numpy_helper.from_array(np.ones((8, 4, 3, 3), np.float32), "w")
    cases = [("conv_s0", helper.make_node("Conv", ["x", "w"], ["y"], name="c0", strides=[0, 0]),
              "node 'c0' (Conv): attribute strides = [0, 0] must be at least 1 in every entry"),
             ("pool_k0", helper.make_node("MaxPool", ["x"], ["y"], name="p0",
                                          kernel_shape=[0, 0]),
              "node 'p0' (MaxPool): attribute kernel_shape = [0, 0] must be at least 1 in every "
              "entry")]
    for name, node, want in cases:
        path = c.w(name + ".onnx")
        onnx.save(helper.make_model(helper.make_graph([node], "g", [x], [y], [w]),
                                    opset_imports=[helper.make_opsetid("", 13)]), path)
        out = c.w(name + ".npub")
        for target in (c.target, "cpu"):
            c.expect_fail(["compile", path, "--target", target, "-o", out], [want], [out])
        c.expect_fail(["ref", path, "--output-dir", c.w("ref")], [want], [])


def case_gather_index(c):
    """An out-of-range Gather index, constant or computed at run time (Cast of an input), is a
    run-time error naming the node on the NPU target (Gather runs on its CPU fallback) and on
    --target cpu, as in ref, instead of a clamped result and exit 0; in-range indices run."""
    onnx, helper, np = onnx_or_skip()
    from onnx import TensorProto, numpy_helper
    c.require(c.target)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 8, 4])
    i = helper.make_tensor_value_info("i", TensorProto.FLOAT, [3])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    relu = helper.make_node("Relu", ["x"], ["r"], name="r")
    const = helper.make_model(helper.make_graph(
        [relu, helper.make_node("Gather", ["r", "idx"], ["y"], name="g0", axis=1)], "g", [x], [y],
        [numpy_helper.from_array(np.array([0, 5, 17], np.int64), "idx")]),
        opset_imports=[helper.make_opsetid("", 13)])
    computed = helper.make_model(helper.make_graph(
        [relu, helper.make_node("Cast", ["i"], ["ii"], name="cast", to=TensorProto.INT64),
         helper.make_node("Gather", ["r", "ii"], ["y"], name="g0", axis=1)], "g", [x, i], [y]),
        opset_imports=[helper.make_opsetid("", 13)])
    xs = c.w("x.npy")
    np.save(xs, np.arange(32, dtype=np.float32).reshape(1, 8, 4))
    bad, good = c.w("bad.npy"), c.w("good.npy")
    np.save(bad, np.array([0, 5, 17], np.float32))
    np.save(good, np.array([0, 5, -1], np.float32))
    want = "node 'g0' (Gather): index 17 out of range [0, 8)"
    for name, model, extra in (("const", const, []), ("computed", computed, ["i=" + bad])):
        path = c.w(name + ".onnx")
        onnx.save(model, path)
        c.expect_fail(["ref", path, "--input", "x=" + xs] + (["--input"] + extra if extra else [])
                      + ["--output-dir", c.w("ref")], [want], [])
        for target in (c.target, "cpu"):
            pkg = c.w(name + ".npub")
            c.expect_ok(["compile", path, "--target", target, "-o", pkg])
            outdir = c.w("out_" + name)
            c.expect_fail(["run", pkg, "--input", "x=" + xs] + (["--input"] + extra if extra else [])
                          + ["--output-dir", outdir], [want], [os.path.join(outdir, "y.npy")])
    # In range (a negative index counts from the end): the package runs and gathers rows 0, 5, 7.
    path = c.w("computed.onnx")
    for target in (c.target, "cpu"):
        pkg = c.w("good.npub")
        c.expect_ok(["compile", path, "--target", target, "-o", pkg])
        outdir = c.w("out_good")
        c.expect_ok(["run", pkg, "--input", "x=" + xs, "--input", "i=" + good,
                     "--output-dir", outdir])
        got = np.load(os.path.join(outdir, "y.npy"))
        want_y = np.arange(32, dtype=np.float32).reshape(1, 8, 4)[:, [0, 5, 7], :]
        assert np.array_equal(got, want_y), "in-range gather on %s: %s" % (target, got)
        print("ok: in-range gather on", target)


def case_index_ops(c):
    """GatherND, ScatterElements, ScatterND, ReverseSequence and the losses' labels read indices
    from a tensor: an out-of-range one computed at run time (a Cast of an input) is an error
    naming the node in `ref` and in the compiled package on the NPU target and on --target cpu,
    never a clamped result. NonZero of a run-time tensor (an output shape that depends on values) is a
    compile-time error."""
    onnx, helper, np = onnx_or_skip()
    from onnx import TensorProto
    c.require(c.target)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    xs = c.w("x.npy")
    np.save(xs, np.arange(12, dtype=np.float32).reshape(3, 4))
    cases = [  # (op, index shape, bad indices, attrs, extra inputs, message)
        ("GatherND", [2, 2], [[0, 1], [2, 4]], {}, [],
         "node 'op' (GatherND): index 4 out of range [0, 4) on data axis 1"),
        ("ScatterElements", [1, 4], [[0, 1, -4, 2]], {"axis": 0}, ["u"],
         "node 'op' (ScatterElements): index -1 out of range [0, 3) on data axis 0"),
        ("ScatterND", [1, 1], [[3]], {}, ["u"],
         "node 'op' (ScatterND): index 3 out of range [0, 3) on data axis 0"),
        ("ReverseSequence", [4], [1, 2, 5, 0], {"batch_axis": 1, "time_axis": 0}, [],
         "node 'op' (ReverseSequence): sequence length 5 out of range [0, 3]"),
        # class labels of the losses: in [0, C) or ignore_index (graph::checkIndexOperand)
        ("NegativeLogLikelihoodLoss", [3], [0, 4, 1], {}, [],
         "node 'op' (NegativeLogLikelihoodLoss): label 4 is not an integer in [0, 4)"),
        ("SoftmaxCrossEntropyLoss", [3], [0, -2, 1], {"ignore_index": -1}, [],
         "node 'op' (SoftmaxCrossEntropyLoss): label -2 is not an integer in [0, 4) nor "
         "ignore_index")]
    for op, ishape, bad, attrs, extra, want in cases:
        i = helper.make_tensor_value_info("i", TensorProto.FLOAT, ishape)
        u = helper.make_tensor_value_info("u", TensorProto.FLOAT, [1, 4])
        nodes = [helper.make_node("Relu", ["x"], ["r"], name="relu"),
                 helper.make_node("Cast", ["i"], ["ii"], name="cast", to=TensorProto.INT64),
                 helper.make_node(op, ["r", "ii"] + extra, ["y"], name="op", **attrs)]
        ins = [x, i] + ([u] if extra else [])
        path = c.w(op + ".onnx")
        onnx.save(helper.make_model(helper.make_graph(nodes, "g", ins, [y]),
                                    opset_imports=[helper.make_opsetid("", 16)]), path)
        feeds = ["--input", "x=" + xs, "--input", "i=" + c.w(op + "_i.npy")]
        np.save(c.w(op + "_i.npy"), np.array(bad, np.float32))
        if extra:
            np.save(c.w("u.npy"), np.ones((1, 4), np.float32))
            feeds += ["--input", "u=" + c.w("u.npy")]
        c.expect_fail(["ref", path, *feeds, "--output-dir", c.w("ref")], [want], [])
        for target in (c.target, "cpu"):
            pkg = c.w(op + ".npub")
            c.expect_ok(["compile", path, "--target", target, "-o", pkg])
            outdir = c.w("out_" + op)
            c.expect_fail(["run", pkg, *feeds, "--output-dir", outdir], [want],
                          [os.path.join(outdir, "y.npy")])
    nz = c.w("nonzero.onnx")
    onnx.save(helper.make_model(helper.make_graph(
        [helper.make_node("NonZero", ["x"], ["y"], name="nz")], "g", [x],
        [helper.make_tensor_value_info("y", TensorProto.INT64, None)]),
        opset_imports=[helper.make_opsetid("", 13)]), nz)
    want = ("node 'nz' (NonZero): output shape depends on the values of input 0 ('x'); npuc "
            "compiles static shapes")
    c.expect_fail(["compile", nz, "--target", "cpu", "-o", c.w("nz.npub")], [want],
                  [c.w("nz.npub")])
    c.expect_fail(["ref", nz, "--input", "x=" + xs, "--output-dir", c.w("ref")], [want], [])
def case_rnn_sequence_lens(c):
    """An LSTM's sequence length outside [0, seq_length], constant or computed at run time
    (Cast of an input), is an error naming the node: at import for a constant, in ref and at
    run time in a compiled package (the CPU kernel clamps) for a computed one; in range, the
    package runs."""
    onnx, helper, np = onnx_or_skip()
    from onnx import TensorProto, numpy_helper
    c.require(c.target)
    S, B, I, H = 3, 2, 2, 2
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [S, B, I])
    lens = helper.make_tensor_value_info("lens", TensorProto.FLOAT, [B])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    inits = [numpy_helper.from_array(np.full((1, 4 * H, I), 0.1, np.float32), "W"),
             numpy_helper.from_array(np.full((1, 4 * H, H), 0.2, np.float32), "R")]
    lstm = lambda seq: helper.make_node("LSTM", ["x", "W", "R", "", seq], ["y"], name="l0",
                                        hidden_size=H)
    const = helper.make_model(helper.make_graph(
        [lstm("seq")], "g", [x], [y],
        inits + [numpy_helper.from_array(np.array([3, 4], np.int32), "seq")]),
        opset_imports=[helper.make_opsetid("", 14)])
    computed = helper.make_model(helper.make_graph(
        [helper.make_node("Cast", ["lens"], ["seq"], name="cast", to=TensorProto.INT32),
         lstm("seq")], "g", [x, lens], [y], inits), opset_imports=[helper.make_opsetid("", 14)])
    xs, bad, good = c.w("x.npy"), c.w("bad.npy"), c.w("good.npy")
    np.save(xs, np.ones((S, B, I), np.float32))
    np.save(bad, np.array([2, 4], np.float32))
    np.save(good, np.array([2, 0], np.float32))
    path = c.w("const.onnx")
    onnx.save(const, path)
    c.expect_fail(["compile", path, "--target", "cpu", "-o", c.w("const.npub")],
                  ["node 'l0' (LSTM): sequence_lens[1] = 4 is not a length in [0, 3]"],
                  [c.w("const.npub")])
    path = c.w("computed.onnx")
    onnx.save(computed, path)
    want = "node 'l0' (LSTM): sequence_lens[1] = 4 is not a length in [0, 3]"
    args = ["--input", "x=" + xs, "--input", "lens=" + bad]
    c.expect_fail(["ref", path] + args + ["--output-dir", c.w("ref")], [want], [])
    for target in (c.target, "cpu"):
        pkg = c.w("computed.npub")
        c.expect_ok(["compile", path, "--target", target, "-o", pkg])
        outdir = c.w("out_bad")
        c.expect_fail(["run", pkg] + args + ["--output-dir", outdir], [want],
                      [os.path.join(outdir, "y.npy")])
        c.expect_ok(["run", pkg, "--input", "x=" + xs, "--input", "lens=" + good,
                     "--output-dir", c.w("out_good")])
        y_out = np.load(os.path.join(c.w("out_good"), "y.npy"))
        assert np.all(y_out[2:, 0] == 0) and np.all(y_out[:, 0, 1] == 0), y_out


def case_non_finite(c):
    """NaN and Inf inputs (docs/SIMULATOR.md, "Non-finite values"): an fp16 target propagates
    them through a depthwise conv exactly where `ref` has NaN or Inf; an int8 target saturates,
    so its outputs are finite, NaN counting as 0 and +Inf as the int8 range's top."""
    onnx, helper, np = onnx_or_skip()
    from onnx import TensorProto, numpy_helper
    int8 = os.path.join(c.root, "configs", "npu-int8.yaml")
    c.require(c.target, int8)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 4, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    conv = helper.make_node("Conv", ["x", "w"], ["y"], name="dw", group=4, pads=[1, 1, 1, 1])
    path = c.w("dw.onnx")
    onnx.save(helper.make_model(helper.make_graph(
        [conv], "g", [x], [y], [numpy_helper.from_array(np.ones((4, 1, 3, 3), np.float32), "w")]),
        opset_imports=[helper.make_opsetid("", 13)]), path)
    xv = np.full((1, 4, 4, 4), 0.5, np.float32)
    xv[0, 0, 0, 0], xv[0, 1, 1, 1], xv[0, 2, 2, 2] = np.nan, np.inf, -np.inf
    xs = c.w("x.npy")
    np.save(xs, xv)
    c.expect_ok(["ref", path, "--input", "x=" + xs, "--output-dir", c.w("ref")])
    ref = np.load(c.w("ref/y.npy"))
    assert np.isnan(ref).any() and np.isposinf(ref).any() and np.isneginf(ref).any(), ref
    outs = {}
    for name, target in (("fp16", c.target), ("int8", int8)):
        pkg = c.w(name + ".npub")
        c.expect_ok(["compile", path, "--target", target, "-o", pkg])
        c.expect_ok(["run", pkg, "--input", "x=" + xs, "--output-dir", c.w(name)])
        outs[name] = np.load(c.w(name + "/y.npy"))
    got = outs["fp16"]
    for cls in (np.isnan, np.isposinf, np.isneginf):
        assert np.array_equal(cls(got), cls(ref)), "fp16 %s differs:\n%s\n%s" % (cls, got, ref)
    fin = np.isfinite(ref)
    assert np.allclose(got[fin], ref[fin], rtol=1e-2), (got, ref)
    q = outs["int8"]
    assert np.isfinite(q).all(), "int8 outputs are saturated, hence finite: %s" % q
    # Channel 1's +Inf saturates to the top of the input's int8 range, far above the other
    # inputs (0.5): every window holding it sums to more than any window without it.
    inf = np.isposinf(ref[0, 1])
    assert q[0, 1][inf].min() > q[0, 1][~inf].max(), q[0, 1]
    print("ok: fp16 propagates NaN/Inf as ref; int8 saturates to finite values")


def case_loop_nest(c):
    """`npuc inspect` reports, per group the loop-nest kernel (emit-npu) runs, the instructions
    it emitted by kind and that nothing stayed scalar; a group it refuses keeps its CPU reason."""
    try:
        import onnx
        from onnx import TensorProto, helper
    except ImportError:
        print("SKIP: python onnx package not available")
        sys.exit(SKIP)
    c.require(c.target)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [7, 13, 5])
    t = helper.make_tensor_value_info("t", TensorProto.FLOAT, [5, 7, 13])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [5, 7, 13])
    # The Relus around the Transpose keep it a copy between NPU kernels: with the host on either
    # side, the host would write its input or read its output in the layout that cancels it.
    nodes = [helper.make_node("Relu", ["x"], ["a"], name="pre"),
             helper.make_node("Transpose", ["a"], ["t"], name="tr", perm=[2, 0, 1]),
             helper.make_node("Relu", ["t"], ["u"], name="post"),
             helper.make_node("Softmax", ["u"], ["y"], name="sm", axis=-1)]
    # `t` is a graph output too, which ends its group.
    model = helper.make_model(helper.make_graph(nodes, "g", [x], [t, y]),
                              opset_imports=[helper.make_opsetid("", 13)])
    path = c.w("tr.onnx")
    onnx.save(model, path)
    pkg = c.w("tr.npub")
    c.expect_ok(["compile", path, "--target", c.target, "-o", pkg])
    text = c.expect_ok(["inspect", pkg])
    lines = text.split("\n")
    at = next(i for i, l in enumerate(lines) if l.startswith("  group ") and "'tr'" in l)
    assert lines[at].endswith("Transpose on npu"), text
    tiling = lines[at + 1]
    assert tiling.startswith("    tiling: loop-nest kernel (emit-npu): "), text
    assert " vector, " in tiling and " dma (2 staging), 0 matmul instructions; 0 scalar;" in tiling, \
        text
    at = next(i for i, l in enumerate(lines) if l.startswith("  group ") and "'sm'" in l)
    assert lines[at].endswith("Softmax on cpu"), text
    assert "; loop-nest kernel: " in lines[at + 1] and "stay scalar" in lines[at + 1], text


def case_attention(c):
    """A small attention block (Q, K, V projections, heads split by Reshape/Transpose, scaled
    scores, Softmax on the CPU of npu-base, context, output projection) through compile + run:
    both activation x activation MatMuls run on the tensor unit (`npuc inspect`), and the output
    matches `npuc ref`. Tolerance: every stored intermediate is rounded to fp16 (2^-11 relative)
    and there are 8 stages, so the error stays within 16 * 2^-11 of the output's largest
    magnitude; a wrong index or transpose is off by O(1). On npu-transformer the same block's
    attention is one fused group, bit for bit the three groups' output; a small attention
    between CPU-only ops runs as one merged group on the CPU."""
    try:
        import numpy as np
        import onnx
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        print("SKIP: python onnx/numpy not available")
        sys.exit(SKIP)
    c.require(c.target)
    S, D, H = 24, 32, 2
    hd = D // H
    rng = np.random.default_rng(7)
    inits = []

    def const(name, arr):
        inits.append(numpy_helper.from_array(np.asarray(arr), name))
        return name

    nodes = []
    for w in "qkv":
        const("W" + w, (rng.standard_normal((D, D)) / np.sqrt(D)).astype(np.float32))
        const("b" + w, (0.1 * rng.standard_normal(D)).astype(np.float32))
        nodes += [helper.make_node("MatMul", ["input", "W" + w], [w + "_mm"], name=w + "_proj"),
                  helper.make_node("Add", [w + "_mm", "b" + w], [w], name=w + "_bias"),
                  helper.make_node("Reshape", [w, "heads"], [w + "_r"], name=w + "_split")]
    const("heads", np.array([S, H, hd], dtype=np.int64))
    const("merged", np.array([S, D], dtype=np.int64))
    const("scale", np.array(1.0 / np.sqrt(hd), dtype=np.float32))
    const("Wo", (rng.standard_normal((D, D)) / np.sqrt(D)).astype(np.float32))
    nodes += [
        helper.make_node("Transpose", ["q_r"], ["q_t"], name="q_heads", perm=[1, 0, 2]),
        helper.make_node("Transpose", ["k_r"], ["k_t"], name="k_heads_t", perm=[1, 2, 0]),
        helper.make_node("Transpose", ["v_r"], ["v_t"], name="v_heads", perm=[1, 0, 2]),
        helper.make_node("MatMul", ["q_t", "k_t"], ["scores"], name="scores"),
        helper.make_node("Mul", ["scores", "scale"], ["scaled"], name="scaled"),
        helper.make_node("Softmax", ["scaled"], ["probs"], name="softmax", axis=-1),
        helper.make_node("MatMul", ["probs", "v_t"], ["ctx"], name="context"),
        helper.make_node("Transpose", ["ctx"], ["ctx_t"], name="ctx_merge", perm=[1, 0, 2]),
        helper.make_node("Reshape", ["ctx_t", "merged"], ["ctx_m"], name="ctx_flat"),
        helper.make_node("MatMul", ["ctx_m", "Wo"], ["output"], name="out_proj"),
    ]
    x = helper.make_tensor_value_info("input", TensorProto.FLOAT, [S, D])
    y = helper.make_tensor_value_info("output", TensorProto.FLOAT, [S, D])
    model = helper.make_model(helper.make_graph(nodes, "attn", [x], [y], inits),
                              opset_imports=[helper.make_opsetid("", 13)])
    path, inp = c.w("attn.onnx"), c.w("input.npy")
    onnx.save(model, path)
    np.save(inp, rng.standard_normal((S, D)).astype(np.float32))
    pkg = c.w("attn.npub")
    c.expect_ok(["compile", path, "--target", c.target, "-o", pkg])
    text = c.expect_ok(["inspect", pkg])
    lines = text.split("\n")
    for name in ["scores", "context"]:
        at = next(i for i, l in enumerate(lines) if l.startswith("  group ") and
                  "'%s'" % name in l)
        assert lines[at].endswith(" on npu"), text
        assert lines[at + 1].startswith("    tiling: batched matmul on the tensor unit"), text
    # V's head split feeds only the CPU's side (scores x V runs after the Softmax): the host reads
    # it in the layout that cancels the Transpose, so the run below checks a segment output in a
    # permuted layout through the package and the runtime.
    at = next(i for i, l in enumerate(lines) if l.startswith("  group ") and "'v_split'" in l)
    assert "layout: transforms cancel against a chosen layout" in lines[at + 2], text
    c.expect_ok(["run", pkg, "--input", "input=" + inp, "--output-dir", c.w("npu")])
    c.expect_ok(["ref", path, "--input", "input=" + inp, "--output-dir", c.w("ref")])
    got = np.load(os.path.join(c.w("npu"), "output.npy")).astype(np.float64)
    want = np.load(os.path.join(c.w("ref"), "output.npy")).astype(np.float64)
    assert got.shape == want.shape, (got.shape, want.shape)
    err = np.abs(got - want).max()
    bound = 16 * 2.0 ** -11 * np.abs(want).max()
    cos = float((got * want).sum() / np.linalg.norm(got) / np.linalg.norm(want))
    print("attention: max abs error %.3g (bound %.3g), cosine %.6f" % (err, bound, cos))
    assert err <= bound and cos >= 0.9999, (err, bound, cos)

    # On npu-transformer (exp on the vector unit) the scores' product, Softmax and the context
    # product are one group, the fused attention kernel, with the scores on chip; its output is
    # bit for bit the three groups' (`--no-fused-attention`).
    tr = os.path.join(c.root, "configs", "npu-transformer.yaml")
    for fused in (True, False):
        pkg = c.w("attn_tr%d.npub" % fused)
        c.expect_ok(["compile", path, "--target", tr, "-o", pkg] +
                    ([] if fused else ["--no-fused-attention"]))
        text = c.expect_ok(["inspect", pkg])
        assert ("MatMul+Mul+Softmax+MatMul on npu" in text) == fused, text
        assert ("tiling: fused attention" in text) == fused, text
        c.expect_ok(["run", pkg, "--input", "input=" + inp, "--output-dir", c.w("tr%d" % fused)])
    one = np.load(os.path.join(c.w("tr1"), "output.npy"))
    three = np.load(os.path.join(c.w("tr0"), "output.npy"))
    assert np.array_equal(one, three), np.abs(one - three).max()
    assert np.abs(one.astype(np.float64) - want).max() <= bound

    # Between CPU groups (Sin before, Cos after: no NPU kernel) a small attention costs less on
    # the CPU than its device crossings, and the CPU backend runs the merged group whole.
    shape = [1, 2, 8, 16]
    ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT, shape) for n in "qkv"]
    quarter = numpy_helper.from_array(np.array(0.25, np.float32), "quarter")
    wrap = [helper.make_node("Sin", ["q"], ["qs"], name="sin"),
            helper.make_node("Transpose", ["k"], ["kt"], name="kt", perm=[0, 1, 3, 2]),
            helper.make_node("MatMul", ["qs", "kt"], ["s"], name="scores"),
            helper.make_node("Mul", ["s", "quarter"], ["ss"], name="scaled"),
            helper.make_node("Softmax", ["ss"], ["p"], name="softmax", axis=-1),
            helper.make_node("MatMul", ["p", "v"], ["ctx"], name="context"),
            helper.make_node("Cos", ["ctx"], ["output"], name="cos")]
    out = helper.make_tensor_value_info("output", TensorProto.FLOAT, shape)
    model = helper.make_model(helper.make_graph(wrap, "attn_cpu", ins, [out], [quarter]),
                              opset_imports=[helper.make_opsetid("", 13)])
    cpath, cpkg = c.w("attn_cpu.onnx"), c.w("attn_cpu.npub")
    onnx.save(model, cpath)
    feeds = []
    for n in "qkv":
        np.save(c.w(n + ".npy"), rng.standard_normal(shape).astype(np.float32))
        feeds += ["--input", "%s=%s" % (n, c.w(n + ".npy"))]
    c.expect_ok(["compile", cpath, "--target", tr, "-o", cpkg])
    text = c.expect_ok(["inspect", cpkg])
    assert "MatMul+Mul+Softmax+MatMul on cpu" in text, text
    c.expect_ok(["run", cpkg, "--output-dir", c.w("cpu")] + feeds)
    c.expect_ok(["ref", cpath, "--output-dir", c.w("cpuref")] + feeds)
    got = np.load(os.path.join(c.w("cpu"), "output.npy")).astype(np.float64)
    want = np.load(os.path.join(c.w("cpuref"), "output.npy")).astype(np.float64)
    assert np.abs(got - want).max() <= 1e-4, np.abs(got - want).max()


def case_bad_arguments(c):
    c.expect_fail(["compile"], [], [])
    c.expect_fail(["frobnicate"], [], [])
    c.require(c.model, c.target)
    out = c.w("o.npub")
    c.expect_fail(["compile", c.model, "--target", c.target, "-o", out,
                   "--input-shape", "input=1,x"], ["--input-shape", "not an integer"], [out])


def case_no_partial_outputs(c):
    """A failure after some outputs were written (the report's directory does not exist) must
    remove those outputs and the output directory the command created."""
    pkg = c.compile_tinycnn()
    inp = os.path.join(c.root, "models", "tinycnn_input.npy")
    outdir = c.w("fresh/out")
    c.expect_fail(["run", pkg, "--input", "input=" + inp, "--output-dir", outdir,
                   "--report", c.w("no_such_dir/r.json")],
                  ["no_such_dir"], [os.path.join(outdir, "output.npy"), outdir, c.w("fresh")])


def case_sim_program(c):
    """asm + sim of a hand-written relu program; data and expected bytes derived by hand."""
    c.require(c.target)
    src = c.w("relu.s")
    with open(src, "w") as f:
        f.write("# engines: load=0 feed=1 tensor=2 vector=3 store=4\n"
                "ld push=8 src_addr=0 dst_space=l1 dst_addr=0 elem_bytes=2 n0=4 n1=1 n2=1"
                " src_s0=1 dst_s0=1\n"
                "vop pop=1 push=16 op=relu dst_space=l1 dst_addr=0x100 dst_dtype=fp16"
                " src1_space=l1 src1_addr=0 src1_dtype=fp16 n0=4 n1=1 n2=1 dst_s0=1 src1_s0=1\n"
                "st pop=8 src_space=l1 src_addr=0x100 dst_addr=0x200 elem_bytes=2 n0=4 n1=1 n2=1"
                " src_s0=1 dst_s0=1\n"
                "finish\n")
    # fp16 bit patterns of 1.0, -2.0, 0.5, -0.25; relu keeps the positives and zeroes the rest.
    data = c.w("data.bin")
    with open(data, "wb") as f:
        f.write(struct.pack("<4H", 0x3C00, 0xC000, 0x3800, 0xB400))
    expected = struct.pack("<4H", 0x3C00, 0x0000, 0x3800, 0x0000)
    binf = c.w("relu.bin")
    c.expect_ok(["asm", src, "--target", c.target, "-o", binf])
    assert os.path.getsize(binf) % 64 == 0 and os.path.getsize(binf) > 0
    for prog in (src, binf):
        dump, rep, trace = c.w("dump.bin"), c.w("r.json"), c.w("t.json")
        text = c.expect_ok(["sim", prog, "--target", c.target, "--dram-init", data + "@0",
                            "--dump", "0x200:8=" + dump, "--report", rep, "--trace", trace])
        with open(dump, "rb") as f:
            got = f.read()
        assert got == expected, (prog, got.hex(), expected.hex())
        with open(rep) as f:
            r = json.load(f)
        assert r["total_cycles"] > 0 and r["instructions"] == 4, r
        assert r["dram_bytes_read"] == 8 and r["dram_bytes_written"] == 8, r
        assert "total NPU cycles" in text
    bad = c.w("bad.s")
    with open(bad, "w") as f:
        f.write("finish\nfrobnicate x=1\n")
    c.expect_fail(["sim", bad, "--target", c.target, "--report", c.w("bad.json")],
                  ["bad.s", "frobnicate"], [c.w("bad.json")])


def case_demo(c):
    c.require(c.model, c.target)
    text = c.expect_ok(["demo", "--root", c.root])
    assert "PASS" in text and "FAIL" not in text, text


def case_flow(c):
    """The happy path: compile, run (outputs, report, trace), disasm, inspect, ref."""
    pkg = c.compile_tinycnn()
    inp = os.path.join(c.root, "models", "tinycnn_input.npy")
    c.require(inp)
    outdir, rep, trace = c.w("out"), c.w("report.json"), c.w("trace.json")
    text = c.expect_ok(["run", pkg, "--input", "input=" + inp, "--output-dir", outdir,
                        "--report", rep, "--trace", trace])
    assert "MAC utilisation" in text and "roofline" in text, text
    assert os.path.exists(os.path.join(outdir, "output.npy"))
    with open(rep) as f:
        r = json.load(f)
    for k in ["target", "total_cycles", "peak_macs_per_cycle", "macs", "mac_utilization",
              "roofline_cycles", "dram_bytes_read", "dram_bytes_written",
              "bank_conflict_stall_cycles", "engines", "cpu_ms_total", "crossing_ms_total",
              "cpu_overhead_ms_total", "ops"]:
        assert k in r, "report lacks " + k
    with open(trace) as f:
        assert json.load(f)["traceEvents"]
    dis = c.expect_ok(["disasm", pkg])
    assert "# ===== segment 0" in dis and "# --- group" in dis, dis[:2000]
    ins = c.expect_ok(["inspect", pkg, "--tir"])
    assert "tiling:" in ins and "tir:" in ins, ins[:2000]
    refdir = c.w("ref")
    c.expect_ok(["ref", c.model, "--input", "input=" + inp, "--output-dir", refdir])
    assert os.path.exists(os.path.join(refdir, "output.npy"))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--npuc", required=True)
    ap.add_argument("--root", required=True)
    ap.add_argument("--work", required=True)
    a = ap.parse_args()
    fn = globals().get("case_" + a.case)
    if fn is None:  # the compile-option, hostile-input and output cases live in their own files
        import cli_bind_cases
        import cli_control_cases
        import cli_option_cases
        import cli_output_cases
        import cli_quant_cases
        import cli_robust_cases
        import cli_seq_cases
        import cli_typed_cases

        fn = getattr(cli_option_cases, "case_" + a.case, None) or \
            getattr(cli_robust_cases, "case_" + a.case, None) or \
            getattr(cli_typed_cases, "case_" + a.case, None) or \
            getattr(cli_bind_cases, "case_" + a.case, None) or \
            getattr(cli_control_cases, "case_" + a.case, None) or \
            getattr(cli_output_cases, "case_" + a.case, None) or \
            getattr(cli_seq_cases, "case_" + a.case, None) or \
            getattr(cli_quant_cases, "case_" + a.case, None)
    if fn is None:
        print("unknown case", a.case)
        return 2
    fn(Case(a))
    return 0


if __name__ == "__main__":
    sys.exit(main())
