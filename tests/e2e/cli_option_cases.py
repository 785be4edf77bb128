#!/usr/bin/python3
"""cli_option_cases.py - CLI tests of `npuc compile`'s options that change how a model is
compiled (int8 calibration, bank-aware placement, L1 residency, batch splitting): each is
accepted, shows in `npuc inspect` and the report, and keeps the outputs right. Run through
cli_check.py (`cli_check.py CASE ...`), which provides the Case fixture.
"""
import json
import math
import os
import sys

from cli_check import SKIP, onnx_or_skip, run, write_npy


def case_int8_calibrate(c):
    """int8 targets: --calibrate sets the activation scales (inspect names the file, the default
    is a seeded normal input); a calibration file of the wrong shape is an error naming it."""
    target = os.path.join(c.root, "configs", "npu-int8.yaml")
    inp = os.path.join(c.root, "models", "tinycnn_input.npy")
    c.require(c.model, target, inp)
    pkg = c.w("int8.npub")
    c.expect_ok(["compile", c.model, "--target", target, "-o", pkg, "--calibrate", inp])
    ins = c.expect_ok(["inspect", pkg])
    assert "int8 quantisation" in ins, ins[:2000]
    assert "calibrated on 1 sample from " + inp + ", method max" in ins, ins[:2000]
    assert " on npu" in ins, ins[:2000]
    outdir = c.w("out")
    rep = c.w("r.json")
    c.expect_ok(["run", pkg, "--input", "input=" + inp, "--output-dir", outdir, "--report", rep])
    assert os.path.exists(os.path.join(outdir, "output.npy"))
    with open(rep) as f:
        assert json.load(f)["int8_calibration"] == "1 sample from " + inp + ", method max"
    dflt = c.w("default.npub")
    c.expect_ok(["compile", c.model, "--target", target, "-o", dflt])
    assert "fixed-seed standard-normal" in c.expect_ok(["inspect", dflt])
    bad, badpkg = c.w("bad.npy"), c.w("bad.npub")
    write_npy(bad, (1, 3, 16, 16))
    c.expect_fail(["compile", c.model, "--target", target, "-o", badpkg, "--calibrate", bad],
                  ["--calibrate " + bad, "1x3x32x32", "1x3x16x16"], [badpkg])


def case_int8_accuracy(c):
    """--int8-accuracy keeps the most sensitive layers in fp32 on the CPU until the quantised
    reference's output meets the cosine target: inspect says the cosines and names each layer
    kept wide with its sensitivity, the package runs, and a target int8 meets keeps nothing."""
    import re
    import numpy as np
    target = os.path.join(c.root, "configs", "npu-int8.yaml")
    inp = os.path.join(c.root, "models", "tinycnn_input.npy")
    want = os.path.join(c.root, "models", "tinycnn_expected.npy")
    c.require(c.model, target, inp, want)
    pkg = c.w("wide.npub")
    c.expect_ok(["compile", c.model, "--target", target, "-o", pkg, "--int8-accuracy",
                 "0.9999999"])
    ins = c.expect_ok(["inspect", pkg])
    m = re.search(r"mixed precision: --int8-accuracy 0\.9999999: cosine against fp32 "
                  r"([0-9.]+) with every NPU group in int8, ([0-9.]+) with (\d+) group\(s\) "
                  r"kept wide \(", ins)
    assert m, ins[:3000]
    before, after, kept = float(m.group(1)), float(m.group(2)), int(m.group(3))
    assert before < 0.9999999 <= after and kept >= 1, m.group(0)
    assert ins.count("kept wide (fp32 on the CPU) for --int8-accuracy 0.9999999: alone in int8 "
                     "it takes the output's cosine against fp32 to ") == kept, ins[:3000]
    out = c.w("out")
    c.expect_ok(["run", pkg, "--input", "input=" + inp, "--output-dir", out])
    got = np.load(os.path.join(out, "output.npy"))
    assert _cosine(got, np.load(want)) > 0.9999, _cosine(got, np.load(want))
    easy = c.w("easy.npub")
    c.expect_ok(["compile", c.model, "--target", target, "-o", easy, "--int8-accuracy", "0.5"])
    ins = c.expect_ok(["inspect", easy])
    assert "with 0 group(s) kept wide" in ins and "kept wide (fp32" not in ins, ins[:3000]


def _cosine(a, b):
    import numpy as np
    a, b = a.ravel().astype(np.float64), b.ravel().astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def case_int8_calibration_set(c):
    """--calibrate takes a calibration set (files, stacks, directories; a directory per sample
    for a model of several inputs) and --calibration-method chooses each threshold; every
    method keeps TinyCNN within cosine 0.99 of `npuc ref`, and every misuse is an error naming
    the path, input or option, leaving no package."""
    import numpy as np
    target = os.path.join(c.root, "configs", "npu-int8.yaml")
    test_in = os.path.join(c.root, "models", "tinycnn_input.npy")
    c.require(c.model, target, test_in)
    rng = np.random.default_rng(5)
    cal = c.w("cal")
    os.makedirs(cal, exist_ok=True)
    for i in range(3):
        np.save(os.path.join(cal, "s%d.npy" % i), rng.standard_normal((1, 3, 32, 32)).astype("f4"))
    stack = c.w("stack.npy")
    np.save(stack, rng.standard_normal((4, 3, 32, 32)).astype("f4"))  # 4 samples, N in the batch
    ref = c.w("ref")
    c.expect_ok(["ref", c.model, "--input", "input=" + test_in, "--output-dir", ref])
    want = np.load(os.path.join(ref, "output.npy"))
    for method in ["max", "percentile", "percentile:99.9", "entropy", "mse"]:
        pkg = c.w(method + ".npub")
        c.expect_ok(["compile", c.model, "--target", target, "-o", pkg, "--calibrate",
                     cal + "," + stack, "--calibration-method", method])
        ins = c.expect_ok(["inspect", pkg])
        line = "calibrated on 7 samples from %s, %s, method %s" % (cal, stack, method)
        assert line in ins, ins[:3000]
        out = c.w("out_" + method.replace(":", "_"))
        c.expect_ok(["run", pkg, "--input", "input=" + test_in, "--output-dir", out])
        cos = _cosine(np.load(os.path.join(out, "output.npy")), want)
        assert cos >= 0.99, (method, cos)

    # A model of two inputs: a directory per sample, a file named after each input.
    import onnx
    from onnx import TensorProto as TP, helper
    two = c.w("two.onnx")
    shape = [1, 8, 4, 4]
    g = helper.make_graph(
        [helper.make_node("Add", ["a:0", "b"], ["s"], name="add"),
         helper.make_node("Relu", ["s"], ["y"], name="relu")], "two",
        [helper.make_tensor_value_info("a:0", TP.FLOAT, shape),
         helper.make_tensor_value_info("b", TP.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TP.FLOAT, shape)])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, two)
    multi = c.w("multi")
    for k in range(2):
        d = os.path.join(multi, "sample%d" % k)
        os.makedirs(d, exist_ok=True)
        np.save(os.path.join(d, "a_0.npy"), rng.standard_normal([3] + shape[1:]).astype("f4"))
        np.save(os.path.join(d, "b.npy"), rng.standard_normal([3] + shape[1:]).astype("f4"))
    pkg2 = c.w("two.npub")
    c.expect_ok(["compile", two, "--target", target, "-o", pkg2, "--calibrate", multi,
                 "--calibration-method", "entropy"])
    assert "calibrated on 6 samples from %s, method entropy" % multi in \
        c.expect_ok(["inspect", pkg2])
    os.remove(os.path.join(multi, "sample1", "b.npy"))
    bad2 = c.w("bad2.npub")
    c.expect_fail(["compile", two, "--target", target, "-o", bad2, "--calibrate", multi],
                  ["--calibrate " + os.path.join(multi, "sample1") + ": no file b.npy for input "
                   "'b' (a model of several inputs takes a directory per sample"], [bad2])
    np.save(os.path.join(multi, "sample1", "b.npy"),
            rng.standard_normal([2] + shape[1:]).astype("f4"))
    c.expect_fail(["compile", two, "--target", target, "-o", bad2, "--calibrate", multi],
                  ["b.npy holds 2 samples but the other inputs' files 3"], [bad2])
    c.expect_fail(["compile", two, "--target", target, "-o", bad2, "--calibrate", stack],
                  ["--calibrate " + stack + ": the model has 2 inputs, so a sample is a "
                   "directory holding a file named after each input"], [bad2])

    bad = c.w("bad.npub")
    def fails(args, message):
        c.expect_fail(["compile", c.model, "-o", bad] + args, [message], [bad])
    empty = c.w("empty")
    os.makedirs(empty, exist_ok=True)
    ints = c.w("ints.npy")
    np.save(ints, np.zeros((1, 3, 32, 32), np.int64))
    fails(["--target", target, "--calibration-method", "kl"],
          "--calibration-method 'kl': unknown calibration method; expected max, percentile, "
          "percentile:Q (0 < Q <= 100), entropy or mse")
    fails(["--target", target, "--calibration-method", "percentile:0"],
          "--calibration-method 'percentile:0': the quantile '0' is not a number in (0, 100]")
    fails(["--target", target, "--calibrate", empty], "--calibrate %s: no sample in it" % empty)
    fails(["--target", target, "--calibrate", c.w("missing.npy")],
          "--calibrate %s: no such file or directory" % c.w("missing.npy"))
    fails(["--target", target, "--calibrate", ints],
          "--calibrate %s: the file holds i64 values but the model's input 'input' is f32" % ints)
    fails(["--target", os.path.join(c.root, "configs", "npu-base.yaml"), "--calibrate", cal],
          "--calibrate and --calibration-method set int8 scales; target 'npu-base' has fp16 "
          "operands")
    fails(["--target", "cpu", "--calibration-method", "mse"],
          "--calibrate, --calibration-method and --int8-accuracy set int8 scales and layers; "
          "--target cpu has no int8 operands")
    fails(["--target", os.path.join(c.root, "configs", "npu-base.yaml"), "--int8-accuracy",
           "0.99"],
          "--int8-accuracy keeps layers of an int8 model wide; target 'npu-base' has fp16 "
          "operands")
    fails(["--target", target, "--int8-accuracy", "1.5"],
          "--int8-accuracy 1.5: a cosine similarity target, in (0, 1]")


def case_bank_aware(c):
    """--no-bank-aware is accepted, shows in `inspect`, and changes no output. The target has one
    port per L1 bank so that dwnet's depthwise gathers conflict and the placement has work."""
    model = os.path.join(c.root, "models", "dwnet.onnx")
    inp = os.path.join(c.root, "models", "dwnet_input.npy")
    c.require(model, inp)

    def one_port(lines):
        out = [l.replace("alignment: 64, ports: 2}", "alignment: 64, ports: 1}")
               if "{name: l1," in l else l for l in lines]
        assert out != lines, "npu-base's L1 line changed"
        return out
    target = c.edited_target(one_port)
    texts, outputs = {}, {}
    for mode, flags in [("on", []), ("off", ["--no-bank-aware"])]:
        pkg = c.w(mode + ".npub")
        c.expect_ok(["compile", model, "--target", target, "-o", pkg] + flags)
        texts[mode] = c.expect_ok(["inspect", pkg])
        outdir, rep = c.w("out_" + mode), c.w("report_" + mode + ".json")
        c.expect_ok(["run", pkg, "--input", "input=" + inp, "--output-dir", outdir,
                     "--report", rep])
        with open(os.path.join(outdir, "output.npy"), "rb") as f:
            outputs[mode] = f.read()
        with open(rep) as f:
            ops = [o for o in json.load(f)["ops"] if o["placement"] == "npu"]
        assert ops and all("bank_placement" in o for o in ops), ops
        assert all(o["bank_placement"]["ran"] == (mode == "on") for o in ops), ops
    assert "bank-aware placement on" in texts["on"], texts["on"][:2000]
    assert "banks (group simulated alone):" in texts["on"], texts["on"][:2000]
    assert "bank-aware placement off" in texts["off"], texts["off"][:2000]
    assert "banks (group simulated alone):" not in texts["off"], texts["off"][:2000]
    assert outputs["on"] == outputs["off"], "the placement changed the outputs"


def case_residency(c):
    """--no-residency is accepted and shows in `inspect`; with residency tinycnn's intermediates
    stay in L1, so the report's simulated DRAM traffic is lower and the output still matches
    `npuc ref` (both runs are checked against it, not against each other)."""
    model = os.path.join(c.root, "models", "tinycnn.onnx")
    inp = os.path.join(c.root, "models", "tinycnn_input.npy")
    c.require(model, inp)
    import numpy as np
    refdir = c.w("ref")
    c.expect_ok(["ref", model, "--input", "input=" + inp, "--output-dir", refdir])
    ref = np.load(os.path.join(refdir, "output.npy")).ravel().astype(np.float64)
    texts, dram = {}, {}
    for mode, flags in [("on", []), ("off", ["--no-residency"])]:
        pkg = c.w(mode + ".npub")
        c.expect_ok(["compile", model, "--target", c.target, "-o", pkg] + flags)
        texts[mode] = c.expect_ok(["inspect", pkg])
        outdir, rep = c.w("out_" + mode), c.w("report_" + mode + ".json")
        c.expect_ok(["run", pkg, "--input", "input=" + inp, "--output-dir", outdir,
                     "--report", rep])
        got = np.load(os.path.join(outdir, "output.npy")).ravel().astype(np.float64)
        cos = got @ ref / np.linalg.norm(got) / np.linalg.norm(ref)
        assert cos >= 0.999 and got.argmax() == ref.argmax(), (mode, cos)
        with open(rep) as f:
            r = json.load(f)
        dram[mode] = r["dram_bytes_read"] + r["dram_bytes_written"]
    assert "L1 residency on" in texts["on"], texts["on"][:2000]
    assert "kept at l1" in texts["on"], texts["on"][:3000]
    assert "resident in L1 (no DRAM traffic)" in texts["on"], texts["on"][:3000]
    assert "L1 residency off" in texts["off"], texts["off"][:2000]
    assert "off (--no-residency)" in texts["off"], texts["off"][:2000]
    assert dram["on"] < dram["off"], dram


def case_batch_split(c):
    """Batch > 1 (a dynamic batch pinned with --input-shape): a chain of 1x1 convs whose
    16 x 96 x 96 fp16 intermediates (288 KiB per image) fit npu-base's L1 one image at a time but
    not two runs image by image; `inspect` shows the run, its sub-batch size and the DRAM bytes
    its residents save, the report lists it and moves fewer DRAM bytes than with
    --no-batch-split, and both outputs match `npuc ref`."""
    try:
        import numpy as np
        import onnx
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        print("SKIP: python onnx/numpy not available")
        sys.exit(SKIP)
    c.require(c.target)
    C, H, N = 16, 96, 2
    rng = np.random.default_rng(11)
    inits, nodes, cur = [], [], "input"
    for i in range(3):
        w = (0.3 * rng.standard_normal((C, C, 1, 1))).astype(np.float32)
        inits.append(numpy_helper.from_array(w, "w%d" % i))
        out = "output" if i == 2 else "c%d" % i
        nodes.append(helper.make_node("Conv", [cur, "w%d" % i], [out], name="conv%d" % i))
        if i < 2:
            nodes.append(helper.make_node("Relu", [out], ["r%d" % i], name="relu%d" % i))
            out = "r%d" % i
        cur = out
    x = helper.make_tensor_value_info("input", TensorProto.FLOAT, ["N", C, H, H])
    y = helper.make_tensor_value_info("output", TensorProto.FLOAT, ["N", C, H, H])
    model = helper.make_model(helper.make_graph(nodes, "chain", [x], [y], inits),
                              opset_imports=[helper.make_opsetid("", 13)])
    path, inp = c.w("chain.onnx"), c.w("input.npy")
    onnx.save(model, path)
    np.save(inp, rng.standard_normal((N, C, H, H)).astype(np.float32))
    shape = "input=%d,%d,%d,%d" % (N, C, H, H)
    c.expect_ok(["ref", path, "--input", "input=" + inp, "--input-shape", shape,
                 "--output-dir", c.w("ref")])
    want = np.load(os.path.join(c.w("ref"), "output.npy")).astype(np.float64)
    texts, dram, reports = {}, {}, {}
    # "off": no batch split, nor depth-first runs (which would take the chain image by image).
    for mode, flags in [("on", []), ("off", ["--no-batch-split", "--no-depth-first"])]:
        pkg = c.w(mode + ".npub")
        c.expect_ok(["compile", path, "--target", c.target, "--input-shape", shape, "-o", pkg] +
                    flags)
        texts[mode] = c.expect_ok(["inspect", pkg])
        rep = c.w("report_%s.json" % mode)
        c.expect_ok(["run", pkg, "--input", "input=" + inp, "--output-dir", c.w(mode),
                     "--report", rep])
        got = np.load(os.path.join(c.w(mode), "output.npy")).astype(np.float64)
        err = np.abs(got - want).max()
        assert err <= 16 * 2.0 ** -11 * np.abs(want).max(), (mode, err)
        with open(rep) as f:
            reports[mode] = json.load(f)
        dram[mode] = reports[mode]["dram_bytes_read"] + reports[mode]["dram_bytes_written"]
    on, off = texts["on"], texts["off"]
    assert "batch split on)" in on, on[:2000]
    assert "batch split: 1 run(s) executed sub-batch by sub-batch" in on, on[:3000]
    # Both intermediates, written and read once per image; the conv kernel loads its weights
    # once per image either way, so the sub-batches move no more than the whole batch.
    saved = 2 * N * C * H * H * 2 * 2
    assert ("%d DRAM bytes of intermediates kept in L1, +0 DRAM bytes more" % saved) in on, \
        on[:3000]
    assert "batch %d split into sub-batches of 1" % N in on, on[:3000]
    assert "batch split: %d sub-batches" % N in on, on
    assert "batch split off)" in off and "off (--no-batch-split)" in off, off[:2000]
    seg = [s for s in reports["on"]["segments"] if s["placement"] == "npu"][0]
    assert seg["batch_split"][0]["sub_batch"] == 1, seg
    assert [o["sub_batch"] for o in reports["on"]["ops"]] == [0, 0, 0, 1, 1, 1], \
        reports["on"]["ops"]
    assert dram["off"] - dram["on"] == saved, dram


def case_depth_first(c):
    """Batch 1 on npu-base with its DRAM at 4 bytes per cycle: a 3x3 conv to 32 channels of
    160 x 160 (1.6 MB of fp16, more than L1) then a stride-2 3x3 conv. The cost model runs the
    chain depth-first, band by band: `inspect` shows the chain and each group's bands, the report
    lists the run and a band index per group entry, the intermediate's DRAM round trip is gone,
    the whole-graph bound is the same (it leaves out the recomputed halos), and the output is
    --no-depth-first's bit for bit and matches `npuc ref`. --depth-first-rows
    forces a band height; with --no-depth-first it is refused."""
    try:
        import numpy as np
        import onnx
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        print("SKIP: python onnx/numpy not available")
        sys.exit(SKIP)
    c.require(c.target)
    with open(c.target) as f:
        text = f.read()
    starved, n = text.replace("name: npu-base", "name: npu-base-dram4", 1), 0
    lines = starved.split("\n")
    for i, line in enumerate(lines):  # the dram section's bandwidth only
        if line.startswith("dram:"):
            for k in range(i + 1, len(lines)):
                if lines[k].lstrip().startswith("bytes_per_cycle: 16"):
                    lines[k] = lines[k].replace("bytes_per_cycle: 16", "bytes_per_cycle: 4", 1)
                    n += 1
                    break
    assert n == 1, "no DRAM bandwidth to edit in " + c.target
    target = c.w("npu-base-dram4.yaml")
    with open(target, "w") as f:
        f.write("\n".join(lines))
    rng = np.random.default_rng(5)
    w1 = (0.2 * rng.standard_normal((32, 8, 3, 3))).astype(np.float32)
    w2 = (0.1 * rng.standard_normal((16, 32, 3, 3))).astype(np.float32)
    nodes = [helper.make_node("Conv", ["input", "w1"], ["a"], pads=[1, 1, 1, 1], name="conv1"),
             helper.make_node("Relu", ["a"], ["r"], name="relu1"),
             helper.make_node("Conv", ["r", "w2"], ["output"], pads=[1, 1, 1, 1],
                              strides=[2, 2], name="conv2")]
    x = helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 8, 160, 160])
    y = helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 16, 80, 80])
    model = helper.make_model(
        helper.make_graph(nodes, "chain", [x], [y], [numpy_helper.from_array(w1, "w1"),
                                                     numpy_helper.from_array(w2, "w2")]),
        opset_imports=[helper.make_opsetid("", 13)])
    path, inp = c.w("chain.onnx"), c.w("input.npy")
    onnx.save(model, path)
    np.save(inp, rng.standard_normal((1, 8, 160, 160)).astype(np.float32))
    c.expect_ok(["ref", path, "--input", "input=" + inp, "--output-dir", c.w("ref")])
    want = np.load(os.path.join(c.w("ref"), "output.npy")).astype(np.float64)
    texts, outs, reports = {}, {}, {}
    for mode, tgt, flags in [("on", target, []), ("off", target, ["--no-depth-first"]),
                             ("forced", c.target, ["--depth-first-rows", "7"])]:
        pkg = c.w(mode + ".npub")
        c.expect_ok(["compile", path, "--target", tgt, "-o", pkg] + flags)
        texts[mode] = c.expect_ok(["inspect", pkg])
        rep = c.w("report_%s.json" % mode)
        c.expect_ok(["run", pkg, "--input", "input=" + inp, "--output-dir", c.w(mode),
                     "--report", rep])
        outs[mode] = np.load(os.path.join(c.w(mode), "output.npy"))
        err = np.abs(outs[mode].astype(np.float64) - want).max()
        assert err <= 16 * 2.0 ** -11 * np.abs(want).max(), (mode, err)
        with open(rep) as f:
            reports[mode] = json.load(f)
    assert np.array_equal(outs["on"], outs["off"]) and np.array_equal(outs["on"], outs["forced"])
    on, off, forced = texts["on"], texts["off"], texts["forced"]
    assert "depth-first: 1 chain(s) executed band by band of output rows" in on, on[:3000]
    assert "depth-first: band 0 of " in on and " bands, each its own instructions" in on, on
    assert "depth-first off (--no-depth-first)" in off, off[:2000]
    assert "depth-first: off (--no-depth-first)" in off, off[:3000]
    seg = [s for s in reports["on"]["segments"] if s["placement"] == "npu"][0]
    run_ = seg["depth_first"][0]
    assert run_["rows"] == 80 and run_["bands"] > 1, run_
    assert run_["band_dram_bytes"] < run_["whole_dram_bytes"], run_
    bands = [o["band"] for o in reports["on"]["ops"]]
    assert bands == [b for b in range(run_["bands"]) for _ in range(2)], bands
    dram = {m: reports[m]["dram_bytes_read"] + reports[m]["dram_bytes_written"]
            for m in ("on", "off")}
    spilled = 2 * 32 * 160 * 160 * 2  # the intermediate written once and read once
    assert dram["off"] - dram["on"] >= spilled * 9 // 10, dram
    # The bound leaves out the work the bands recompute: the same for both schedules.
    bound = {m: reports[m]["dram_accounting"]["bound_parts_cycles"] for m in ("on", "off")}
    assert bound["on"] == bound["off"], bound
    assert run_["recomputed_macs"] > 0, run_
    seg = [s for s in reports["forced"]["segments"] if s["placement"] == "npu"][0]
    assert seg["depth_first"][0]["band_rows"] == 7 and seg["depth_first"][0]["bands"] == 12, seg
    last = reports["forced"]["ops"][-1]
    assert "depth-first: band 11 of 12, output rows [77, 80) of 80" in last["tiling"], last
    c.expect_fail(["compile", path, "--target", c.target, "-o", c.w("x.npub"),
                   "--no-depth-first", "--depth-first-rows", "3"],
                  ["--depth-first-rows 3 contradicts --no-depth-first"], [c.w("x.npub")])


def case_schedule(c):
    """--emit-schedule writes every NPU group's schedule by key; compiling with that file
    (--schedule) replays the same points (same outputs and cycles); a group edited to another
    legal point (the pointwise conv's rows per tile) compiles to that tiling and still matches
    `npuc ref`; an illegal point is an error naming the group, the decision and its legal
    values; a key that matches no group is a warning."""
    try:
        import numpy as np
    except ImportError:
        print("SKIP: python numpy package not available")
        sys.exit(SKIP)
    inp = os.path.join(c.root, "models", "tinycnn_input.npy")
    c.require(c.model, c.target, inp)
    emitted, dflt = c.w("emitted.json"), c.w("default.npub")
    c.expect_ok(["compile", c.model, "--target", c.target, "-o", dflt, "--emit-schedule", emitted])
    with open(emitted) as f:
        text = f.read()
    sched = json.loads(text)
    assert sched["version"] == 1 and len(sched["schedules"]) >= 5, text[:2000]
    by_group = {e["group"]: e for e in sched["schedules"]}
    pw = by_group["/pw/pw.0/Conv"]["schedule"]
    assert pw["strategy"] == "tensor-unit", pw
    assert set(pw["decisions"]) == {"buffers", "tic", "toc", "tk", "khg", "toh", "kouter",
                                    "rowouter"}, pw
    # The default tiles the whole 16x16 output in one tile of 16 rows (inspect's tiling text).
    assert pw["decisions"]["toh"] == 16, pw
    ins = c.expect_ok(["inspect", dflt])
    assert "tile = 16 output rows x 16 cols x 16 channels" in ins, ins[:3000]

    def run_pkg(pkg, name):
        outdir, rep = c.w("out_" + name), c.w("report_" + name + ".json")
        c.expect_ok(["run", pkg, "--input", "input=" + inp, "--output-dir", outdir,
                     "--report", rep])
        with open(rep) as f:
            cycles = json.load(f)["total_cycles"]
        return np.load(os.path.join(outdir, "output.npy")), cycles

    want_default, cycles_default = run_pkg(dflt, "default")
    replay = c.w("replay.npub")
    c.expect_ok(["compile", c.model, "--target", c.target, "-o", replay, "--schedule", emitted])
    got, cycles = run_pkg(replay, "replay")
    assert (got == want_default).all() and cycles == cycles_default, (cycles, cycles_default)

    # Another legal point: 8 output rows per tile instead of 16.
    by_group["/pw/pw.0/Conv"]["schedule"]["decisions"]["toh"] = 8
    edited, forced = c.w("edited.json"), c.w("forced.npub")
    with open(edited, "w") as f:
        json.dump(sched, f)
    c.expect_ok(["compile", c.model, "--target", c.target, "-o", forced, "--schedule", edited])
    ins = c.expect_ok(["inspect", forced])
    assert "tile = 8 output rows x 16 cols x 16 channels" in ins and \
        "(forced by the schedule file)" in ins, ins[:3000]
    got, cycles = run_pkg(forced, "forced")
    c.expect_ok(["ref", c.model, "--input", "input=" + inp, "--output-dir", c.w("ref")])
    want = np.load(os.path.join(c.w("ref"), "output.npy")).astype(np.float64)
    # Every stored intermediate is rounded to fp16 (2^-11 relative), through a few layers.
    err = np.abs(got.astype(np.float64) - want).max()
    bound = 16 * 2.0 ** -11 * np.abs(want).max()
    print("forced point: cycles %d (default %d), max abs error %.3g (bound %.3g)" %
          (cycles, cycles_default, err, bound))
    assert err <= bound, (err, bound)

    # An illegal point: 13 output channels per tile is not a multiple of the array's 16 columns.
    by_group["/pw/pw.0/Conv"]["schedule"]["decisions"]["toc"] = 13
    bad, badpkg = c.w("bad.json"), c.w("bad.npub")
    with open(bad, "w") as f:
        json.dump(sched, f)
    c.expect_fail(["compile", c.model, "--target", c.target, "-o", badpkg, "--schedule", bad],
                  ["group '/pw/pw.0/Conv'", "decision 'toc' = 13", "[16, 32"], [badpkg])

    # A key no group has: a warning, and the compile goes on.
    stray = {"version": 1, "schedules": [{"key": "0123456789abcdef-0123456789abcdef",
                                          "group": "elsewhere", "schedule": pw}]}
    path = c.w("stray.json")
    with open(path, "w") as f:
        json.dump(stray, f)
    rc, out, err = run(c.npuc, ["compile", c.model, "--target", c.target, "-o", c.w("s.npub"),
                                "--schedule", path])
    assert rc == 0 and "warning: " + path + ": key 0123456789abcdef-0123456789abcdef " \
        "(elsewhere) matches no NPU group" in err, (rc, err)


def case_crash_reproducer(c):
    """An internal error during `npuc compile` (forced with the hidden --debug-crash-at, as
    clang's `#pragma clang __debug crash`) prints what the compiler was doing, innermost first,
    and writes a reproducer directory under $TMPDIR: the failing group as graph text, a copy of
    the target and rerun.sh. Rerunning crashes the same way; the group without the crash flag
    compiles, and its package matches `npuc ref` on the same graph text. A crash between groups
    (the residency phase) reproduces with the whole segment's groups."""
    import re
    import subprocess

    try:
        import numpy as np
    except ImportError:
        print("SKIP: python numpy package not available")
        sys.exit(SKIP)
    c.require(c.model, c.target)
    tmp = c.w("tmp")
    os.makedirs(tmp)
    env = dict(os.environ, TMPDIR=tmp)

    def crash(phase):
        pkg = c.w("never.npub")
        p = subprocess.run([c.npuc, "compile", c.model, "--target", c.target, "-o", pkg,
                            "--debug-crash-at=" + phase], capture_output=True, text=True, env=env)
        msg = "rc=%d\nstderr:\n%s" % (p.returncode, p.stderr)
        assert p.returncode not in (0, 1), "an internal error is not a user error\n" + msg
        assert "crash requested by --debug-crash-at=" + phase in p.stderr, msg
        assert not os.path.exists(pkg), "no package after an internal error\n" + msg
        m = re.search(r"a reproducer is in (\S+) ", p.stderr)
        assert m and m.group(1).startswith(tmp + "/npuc-crash-"), msg
        d = m.group(1)
        for f in ("group.graph", "target.yaml", "rerun.sh"):
            assert os.path.isfile(os.path.join(d, f)), f + " missing\n" + msg
        with open(c.target) as a, open(os.path.join(d, "target.yaml")) as b:
            assert a.read() == b.read(), "the reproducer's target is a copy"
        return p.stderr, d

    err, d = crash("lower")
    assert "npuc: while lowering group 0 '/stem/stem.0/Conv' (NPU segment 0)\n" \
           "npuc: while running phase 'lower' of NPU segment 0\n" in err, err
    group = os.path.join(d, "group.graph")
    with open(group) as f:
        text = f.read()
    assert text.count(" = Conv ") == 1 and "output " in text, text[:2000]
    # rerun.sh is the same command on the reproducer: the same internal error.
    p = subprocess.run(["sh", os.path.join(d, "rerun.sh")], capture_output=True, text=True,
                       env=env)
    assert p.returncode not in (0, 1), p.stderr
    assert "crash requested by --debug-crash-at=lower" in p.stderr, p.stderr
    assert "while lowering group 0 '/stem/stem.0/Conv'" in p.stderr, p.stderr
    # Without the flag the reproducer compiles and runs like the reference on the same graph.
    pkg = c.w("group.npub")
    c.expect_ok(["compile", group, "--target", os.path.join(d, "target.yaml"), "-o", pkg])
    rng = np.random.default_rng(5)
    inp = c.w("x.npy")
    np.save(inp, rng.standard_normal((1, 3, 32, 32)).astype(np.float32))
    c.expect_ok(["run", pkg, "--input", "input=" + inp, "--output-dir", c.w("npu")])
    c.expect_ok(["ref", group, "--input", "input=" + inp, "--output-dir", c.w("ref")])
    (name,) = os.listdir(c.w("npu"))
    got, want = np.load(os.path.join(c.w("npu"), name)), np.load(os.path.join(c.w("ref"), name))
    assert got.shape == want.shape and np.allclose(got, want, rtol=2e-2, atol=2e-2), \
        float(np.abs(got - want).max())
    # A crash outside any one group's lowering: the reproducer is the segment's groups.
    err, d = crash("residency")
    assert "npuc: while running phase 'residency' of NPU segment 0\n" \
           "npuc: while compiling NPU segment 0 (groups 0, 1" in err, err
    with open(os.path.join(d, "group.graph")) as f:
        seg = f.read()
    assert seg.count(" = Conv ") > 1, seg[:2000]
    c.expect_ok(["compile", os.path.join(d, "group.graph"), "--target", c.target,
                 "-o", c.w("seg.npub")])
    print("ok: crash context, reproducer, rerun and reproducer compile")


def _run_report(c, pkg, inp, tag, extra=()):
    """Runs pkg on input `x`; returns (stdout, report, outputs by file name)."""
    import numpy as np
    outdir, rep = c.w(tag + "_out"), c.w(tag + ".json")
    out = c.expect_ok(["run", pkg, "--input", "x=" + inp, "--output-dir", outdir,
                       "--report", rep] + list(extra))
    with open(rep) as f:
        report = json.load(f)
    outs = {n: np.load(os.path.join(outdir, n)) for n in sorted(os.listdir(outdir))}
    return out, report, outs


def case_native_code(c):
    """`npuc compile` stores the CPU groups' machine code in the package (--target cpu, and an
    NPU target's fallback groups): `npuc run` links it instead of running LLVM and says so in its
    output and report, and `npuc inspect` shows it; `compile --no-native-code` leaves it out (a
    smaller package, LLVM at its first run, the code cache's object after) and `run
    --no-native-code` uses neither; a cache directory others may write is not used; the outputs
    are bit-identical every way."""
    onnx, helper, np = onnx_or_skip()
    from onnx import numpy_helper, TensorProto as TP
    target = os.path.join(c.root, "configs", "npu-base.yaml")
    c.require(target)
    # Relu runs on npu-base; Erf does not (no erf in its vector unit): a CPU fallback group.
    model = c.w("erf.onnx")
    g = helper.make_graph(
        [helper.make_node("Conv", ["x", "w"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["r"]),
         helper.make_node("Erf", ["r"], ["y"])], "erfnet",
        [helper.make_tensor_value_info("x", TP.FLOAT, [1, 4, 8, 8])],
        [helper.make_tensor_value_info("y", TP.FLOAT, [1, 8, 8, 8])],
        [numpy_helper.from_array(
            np.random.default_rng(2).standard_normal((8, 4, 3, 3)).astype("f4") * 0.3, "w")])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, model)
    inp = c.w("x.npy")
    np.save(inp, np.random.default_rng(3).standard_normal((1, 4, 8, 8)).astype("f4"))

    for tgt in ("cpu", target):
        native, plain = c.w("native.npub"), c.w("plain.npub")
        c.expect_ok(["compile", model, "--target", tgt, "-o", native])
        c.expect_ok(["compile", model, "--target", tgt, "-o", plain, "--no-native-code"])
        assert os.path.getsize(plain) < os.path.getsize(native), (tgt, os.path.getsize(plain))
        out_n, rep_n, y_n = _run_report(c, native, inp, "native")
        out_p, rep_p, y_p = _run_report(c, plain, inp, "plain")
        assert rep_n["cpu_code"]["source"] == "package", (tgt, rep_n["cpu_code"])
        assert "package_code_unused" not in rep_n["cpu_code"], rep_n["cpu_code"]
        assert "CPU code: the package's native code" in out_n, out_n
        assert rep_p["cpu_code"] == {"source": "llvm", "ms": rep_p["cpu_code"]["ms"]}, rep_p
        assert "CPU code: compiled by LLVM for this run" in out_p, out_p
        assert list(y_n) == list(y_p) == ["y.npy"], (list(y_n), list(y_p))
        assert np.array_equal(y_n["y.npy"], y_p["y.npy"]), tgt
        # What LLVM compiled went into the case's code cache: the next run links it.
        out_c, rep_c, y_c = _run_report(c, plain, inp, "cached")
        assert rep_c["cpu_code"] == {"source": "cache", "ms": rep_c["cpu_code"]["ms"]}, rep_c
        assert "CPU code: the code cache's (compiled by an earlier run)" in out_c, out_c
        assert np.array_equal(y_n["y.npy"], y_c["y.npy"]), tgt
        _, rep_i, y_i = _run_report(c, native, inp, "ignored", ["--no-native-code"])
        assert rep_i["cpu_code"] == {"source": "llvm", "ms": rep_i["cpu_code"]["ms"],
                                     "package_code_unused": "--no-native-code was given",
                                     "not_cached": "no code cache"}, rep_i
        assert np.array_equal(y_n["y.npy"], y_i["y.npy"]), tgt
        assert "CPU groups' machine code: " in c.expect_ok(["inspect", native])
        assert "CPU groups' machine code: none stored" in c.expect_ok(["inspect", plain])
        ref = np.vectorize(math.erf)(np.maximum(0, _conv3x3(np.load(inp), model))).astype("f4")
        err = float(abs(y_n["y.npy"] - ref).max())
        assert err < (2e-3 if tgt == target else 1e-5), (tgt, err)
    cached = sorted(os.listdir(c.w("code-cache")))
    assert len(cached) == 2 and all(n.endswith(".o") and len(n) == 66 for n in cached), cached
    # A damaged entry is compiled again and replaced.
    for n in cached:
        with open(os.path.join(c.w("code-cache"), n), "wb") as f:
            f.write(b"not an object")
    _, rep_d, y_d = _run_report(c, plain, inp, "damaged")
    assert rep_d["cpu_code"] == {"source": "llvm", "ms": rep_d["cpu_code"]["ms"]}, rep_d
    assert np.array_equal(y_n["y.npy"], y_d["y.npy"])
    assert _run_report(c, plain, inp, "repaired")[1]["cpu_code"]["source"] == "cache"

    # A cache directory others may write is not used (its objects would be executed): the run
    # compiles with LLVM and says why.
    shared = c.w("shared-cache")
    os.makedirs(shared)
    os.chmod(shared, 0o777)
    env = dict(c.env, NPUC_CACHE_DIR=shared)
    rep = c.w("shared.json")
    rc, out, err = run(c.npuc, ["run", plain, "--input", "x=" + inp, "--output-dir",
                                c.w("shared_out"), "--report", rep], env)
    assert rc == 0, err
    with open(rep) as f:
        note = json.load(f)["cpu_code"]["not_cached"]
    assert note == ("the code cache %s is not used: it must belong to this user and be "
                    "writable by no one else (its objects are executed)" % shared), note
    assert os.listdir(shared) == [], os.listdir(shared)


def _conv3x3(x, model):
    """The model's Conv (stride 1, pad 1), in float64, from its initializer."""
    import numpy as np
    import onnx
    from onnx import numpy_helper
    w = numpy_helper.to_array(onnx.load(model).graph.initializer[0]).astype(np.float64)
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (1, 1), (1, 1)))
    out = np.zeros((1, w.shape[0], x.shape[2], x.shape[3]))
    for kh in range(3):
        for kw in range(3):
            out += np.einsum("oc,nchw->nohw", w[:, :, kh, kw],
                             xp[:, :, kh:kh + x.shape[2], kw:kw + x.shape[3]])
    return out


def case_dram_accounting(c):
    """Batch > 1: the report's dram_accounting (compulsory bytes, the non-compulsory ones by
    cause, the whole-graph bound) on a 3x3 conv -> ReLU -> 1x1 conv of 4 images, with weight
    reuse across the batch (the default: no weight byte read twice) and without it
    (--no-batch-weight-reuse: the weights once per image). Every expected figure follows from
    the shapes; both packages' outputs match `npuc ref` and each other bit for bit."""
    try:
        import numpy as np
        import onnx
        from onnx import TensorProto, helper, numpy_helper
    except ImportError:
        print("SKIP: python onnx/numpy not available")
        sys.exit(SKIP)
    c.require(c.target)
    N, C, H, OC = 4, 256, 8, 128
    rng = np.random.default_rng(7)
    w0 = (0.05 * rng.standard_normal((C, C, 3, 3))).astype(np.float32)
    w1 = (0.05 * rng.standard_normal((OC, C, 1, 1))).astype(np.float32)
    nodes = [helper.make_node("Conv", ["input", "w0"], ["c0"], name="conv0", pads=[1, 1, 1, 1]),
             helper.make_node("Relu", ["c0"], ["r0"], name="relu0"),
             helper.make_node("Conv", ["r0", "w1"], ["output"], name="conv1")]
    x = helper.make_tensor_value_info("input", TensorProto.FLOAT, [N, C, H, H])
    y = helper.make_tensor_value_info("output", TensorProto.FLOAT, [N, OC, H, H])
    inits = [numpy_helper.from_array(w0, "w0"), numpy_helper.from_array(w1, "w1")]
    model = helper.make_model(helper.make_graph(nodes, "pair", [x], [y], inits),
                              opset_imports=[helper.make_opsetid("", 13)])
    path, inp = c.w("pair.onnx"), c.w("input.npy")
    onnx.save(model, path)
    np.save(inp, rng.standard_normal((N, C, H, H)).astype(np.float32))
    c.expect_ok(["ref", path, "--input", "input=" + inp, "--output-dir", c.w("ref")])
    want = np.load(os.path.join(c.w("ref"), "output.npy")).astype(np.float64)
    weights = (w0.size + w1.size) * 2  # fp16
    io = (N * C * H * H + N * OC * H * H) * 2
    macs = N * H * H * (C * C * 9 + OC * C)
    reports, outs = {}, {}
    for mode, flags in [("on", []), ("off", ["--no-batch-weight-reuse"])]:
        pkg = c.w(mode + ".npub")
        c.expect_ok(["compile", path, "--target", c.target, "-o", pkg] + flags)
        ins = c.expect_ok(["inspect", pkg])
        assert ("batch weight reuse off" in ins) == (mode == "off"), ins[:2000]
        assert ("images inside each output-channel block" in ins) == (mode == "on"), ins
        rep = c.w("report_%s.json" % mode)
        text = c.expect_ok(["run", pkg, "--input", "input=" + inp, "--output-dir", c.w(mode),
                            "--report", rep])
        assert "DRAM vs compulsory" in text and "whole-graph bound" in text, text
        outs[mode] = np.load(os.path.join(c.w(mode), "output.npy"))
        err = np.abs(outs[mode].astype(np.float64) - want).max()
        assert err <= 64 * 2.0 ** -11 * np.abs(want).max(), (mode, err)
        with open(rep) as f:
            reports[mode] = json.load(f)
    assert (outs["on"] == outs["off"]).all()
    for mode, r in reports.items():
        a = r["dram_accounting"]
        extra = a["non_compulsory_bytes"]
        # Compulsory: the fp16 input, output and weights (the packed weights may carry a few
        # alignment bytes).
        assert io + weights <= a["compulsory_bytes"] <= io + weights + 4096, (mode, a)
        assert a["moved_bytes"] == r["dram_bytes_read"] + r["dram_bytes_written"], a
        assert a["moved_bytes"] - sum(extra.values()) <= a["compulsory_bytes"], (mode, a)
        parts = a["bound_parts_cycles"]
        assert parts["mac"] == -(-macs // r["peak_macs_per_cycle"]), (parts, macs)
        assert a["whole_graph_bound_cycles"] == max(parts.values()), a
        assert abs(a["cycles_over_bound"] - r["total_cycles"] / max(parts.values())) < 1e-9, a
    on, off = (reports[m]["dram_accounting"]["non_compulsory_bytes"] for m in ("on", "off"))
    assert on["weights_reread"] == 0, on
    assert off["weights_reread"] >= (N - 1) * weights, off
