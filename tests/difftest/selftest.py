#!/usr/bin/env python3
"""selftest.py - tests of the differential tester itself, without the compiler under test.

  * the generator: a seed gives the same graph twice, every graph of a seed range passes ONNX's
    checker and strict shape inference, stays within MAX_ELEMS per tensor, and the range covers
    the operator mix the tester promises (docs/DIFFTEST.md);
  * the classification: a planted difference is a mismatch at each tolerance, within it a pass,
    a NaN pattern difference a mismatch, an abort a crash keyed by its assertion;
  * the int8 calibration sample: an int8 target calibrates on the case's own inputs, a graph of
    several inputs through a directory holding a file per input named as npuc expects;
  * the minimiser, against a fake npuc (this script, with --fake-npuc) that aborts when the model
    holds a grouped or depthwise Conv: a seed whose graph has one must minimise to a graph whose
    only node is such a Conv, and its repro.sh must reproduce the abort.
Exits non-zero on the first failure."""
import collections
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import check  # noqa: E402
import gen_graph  # noqa: E402
import minimise  # noqa: E402


def fake_npuc(argv):
    """Stands in for npuc: ref/run write nothing, compile aborts on a Conv with group > 1."""
    cmd = argv[0]

    def arg(flag):
        return argv[argv.index(flag) + 1]
    if cmd == "ref":
        os.makedirs(arg("--output-dir"), exist_ok=True)
    elif cmd == "compile":
        m = onnx.load(argv[1])
        for n in m.graph.node:
            g = [a.i for a in n.attribute if a.name == "group"]
            if n.op_type == "Conv" and g and g[0] > 1:
                sys.stderr.write("npuc internal error: planted\n  assertion `false` failed at "
                                 "../npu/Fake.cpp:7\n")
                sys.stderr.flush()
                os.abort()
        open(arg("-o"), "w").close()
    elif cmd == "run":
        os.makedirs(arg("--output-dir"), exist_ok=True)
        with open(arg("--report"), "w") as f:
            f.write('{"ops": []}')


def expect(cond, what):
    if not cond:
        sys.exit(f"FAIL: {what}")
    print(f"ok: {what}")


def test_generator():
    a, _ = gen_graph.generate(7)
    b, _ = gen_graph.generate(7)
    expect(a.text() == b.text(), "a seed gives the same graph twice")
    ops = collections.Counter()
    npu_only = 0
    for seed in range(60):
        spec, _ = gen_graph.generate(seed)
        m = spec.model()
        onnx.checker.check_model(m)
        onnx.shape_inference.infer_shapes(m, check_type=True, strict_mode=True)
        big = [v for v, s in spec.shapes.items() if int(np.prod(s)) > gen_graph.MAX_ELEMS]
        expect(not big, f"seed {seed}: no tensor above {gen_graph.MAX_ELEMS} elements")
        ops.update(n["op"] for n in spec.nodes)
        npu_only += all(n["op"] not in ("Softmax", "LayerNormalization", "Erf")
                        for n in spec.nodes)
        grouped = any(n["op"] == "Conv" and n["attrs"]["group"] > 1 for n in spec.nodes)
        ops["grouped conv"] += grouped
    for op in ["Conv", "BatchNormalization", "Add", "Mul", "Concat", "Split", "Transpose",
               "Reshape", "MatMul", "ReduceMean", "MaxPool", "Softmax", "Relu", "grouped conv"]:
        expect(ops[op] > 0, f"seeds 0-59 use {op}")
    expect(npu_only >= 20, "seeds 0-59 include graphs of NPU-kernel operators only")


def test_classification():
    def verdict(x, y, dtype):
        return check.close(np.asarray(x, np.float32), np.asarray(y, np.float32), dtype)[0]
    y = np.array([[1.0, -2.0, 0.5]], np.float32)
    expect(verdict(y, y, "fp32") == "pass", "identical outputs pass")
    expect(verdict(y + 3e-4, y, "fp32") == "mismatch", "fp32: 1.5e-4 of the range is a mismatch")
    expect(verdict(y + 3e-2, y, "fp16") == "pass", "fp16: 1.5e-2 of the range passes")
    expect(verdict(y + 5e-2, y, "fp16") == "mismatch", "fp16: 2.5e-2 of the range is a mismatch")
    expect(verdict(y[:, :2], y, "fp16") == "mismatch", "a shape difference is a mismatch")
    big = np.array([1e5, 1.0], np.float32)
    expect(verdict([np.inf, 1.0], big, "fp16") == "fp16-range",
           "fp16: a reference beyond 65504 is fp16-range")
    expect(verdict([np.inf, 1.0], big, "fp32") == "mismatch", "fp32: an inf is a mismatch")
    expect(verdict([np.inf, 1.0], [np.inf, 1.0], "fp32") == "pass", "equal infinities pass")
    n = y.copy()
    n[0, 1] = np.nan
    expect(verdict(n, y, "fp16") == "mismatch", "a NaN where the reference has none: mismatch")
    r = np.random.default_rng(0).standard_normal(200).astype(np.float32) * 4
    noise = np.random.default_rng(1).standard_normal(200).astype(np.float32)
    expect(verdict(r + 0.05, r, "int8") == "pass", "int8: within 2e-2 of the range passes")
    # noise 0.3: max error ~0.9 > 2e-2 of the range (~0.25), cosine ~0.997
    expect(verdict(r + 0.3 * noise, r, "int8") == "pass", "int8: cosine >= 0.99 passes")
    # noise 1.2: cosine ~0.96
    expect(verdict(r + 1.2 * noise, r, "int8") == "int8-drift",
           "int8: cosine in [0.9, 0.99) is int8-drift")
    expect(verdict(-r, r, "int8") == "mismatch", "int8: a negated output is a mismatch")
    res = check.classify_failure("compile", -6, "assertion `x` failed at ../npu/A.cpp:12\n")
    expect(res.cls == "crash" and res.key == "crash@A.cpp:12", "an abort is a crash keyed A.cpp:12")
    expect(check.classify_failure("compile", 1, "npuc: error: x.onnx: no") is None,
           "a clear npuc: error is not a crash")
    expect(check.classify_failure("compile", 1, "npuc: error: internal error: bad_alloc").cls
           == "crash", "an internal error is a crash")
    expect(check.classify_failure("run", "timeout", "").cls == "hang", "a timeout is a hang")


def test_calibration_sample():
    work = tempfile.mkdtemp(prefix="difftest-self-")
    try:
        a, b = np.arange(3, dtype=np.float32), np.ones((2, 2), np.float32)
        np.save(os.path.join(work, "in_a.npy"), a)
        np.save(os.path.join(work, "in_b:1.npy"), b)
        comp, _ = check.commands("npuc", ROOT, work, "npu-int8", os.path.join(work, "out"))
        sample = comp[comp.index("--calibrate") + 1]
        expect(sorted(os.listdir(sample)) == ["a.npy", "b_1.npy"] and
               np.array_equal(np.load(os.path.join(sample, "b_1.npy")), b),
               "int8, two inputs: calibrated on a directory of the inputs, named as npuc does")
        comp, _ = check.commands("npuc", ROOT, work, "npu-base", os.path.join(work, "out"))
        expect("--calibrate" not in comp, "fp16: no calibration set")
        os.remove(os.path.join(work, "in_b:1.npy"))
        comp, _ = check.commands("npuc", ROOT, work, "npu-int8", os.path.join(work, "out"))
        expect(comp[comp.index("--calibrate") + 1] == os.path.join(work, "in_a.npy"),
               "int8, one input: calibrated on the input file")
    finally:
        shutil.rmtree(work)


def test_minimiser():
    seed = next(s for s in range(200) if len(gen_graph.generate(s)[0].nodes) >= 6 and any(
        n["op"] == "Conv" and n["attrs"]["group"] > 1 for n in gen_graph.generate(s)[0].nodes))
    work = tempfile.mkdtemp(prefix="difftest-self-")
    fake = os.path.join(work, "npuc")
    with open(fake, "w") as f:
        f.write(f"#!/bin/sh\nexec {sys.executable} {os.path.abspath(__file__)} --fake-npuc "
                '"$@"\n')
    os.chmod(fake, 0o755)
    root = os.path.dirname(os.path.dirname(HERE))
    case = os.path.join(work, "case")
    gen_graph.write_case(gen_graph.generate(seed)[0], case)
    expect(check.run_ref(fake, case, work, 60) is None, "the fake reference runs")
    r = check.check_target(fake, root, case, "npu-base", work, 60)
    expect(r.cls == "crash" and r.key == "crash@Fake.cpp:7", f"seed {seed} crashes the fake npuc")
    out = os.path.join(work, "finding")
    # A relative output directory, as `--findings` defaults to: repro.sh must not depend on it.
    minimise.minimise(fake, root, seed, "npu-base", r, os.path.relpath(out), 60)
    spec = open(os.path.join(out, "graph.txt")).read()
    nodes = [l for l in spec.splitlines() if "=" in l.split(" ")[0] or " = " in l]
    expect(len(nodes) == 1 and " = Conv(" in nodes[0] and "group=1 " not in nodes[0] + " ",
           f"seed {seed} minimises to one grouped Conv:\n{spec}")
    rc = subprocess.run(["sh", os.path.join(out, "repro.sh")], env=dict(os.environ, NPUC=fake),
                        capture_output=True, text=True, cwd="/")
    expect(rc.returncode != 0 and "Fake.cpp:7" in rc.stderr, "repro.sh reproduces the abort")
    shutil.rmtree(work)


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--fake-npuc":
        return fake_npuc(sys.argv[2:])
    test_generator()
    test_classification()
    test_calibration_sample()
    test_minimiser()
    print("PASS")


if __name__ == "__main__":
    main()
