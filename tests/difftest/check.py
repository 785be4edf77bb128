"""check.py - one differential check: a graph on one target against `npuc ref`, classified.

Classes (docs/DIFFTEST.md):
  pass       run matches ref within the target's tolerance
  refused    compile exited non-zero with a clear `npuc: error:` (a legitimately unsupported case)
  crash      a signal, an assertion, "internal error", or an exit with no `npuc: error:` line
  hang       a command ran past its time limit
  run-error  a package that compiled failed to run, or produced no output the reference has
  mismatch   an output differs beyond the tolerance (or in shape, or in NaN pattern)
  ref-error  `npuc ref` itself refused the graph (a clear error): nothing to compare with
  int8-drift an int8 target's output within the drift band (see close()): recorded
  fp16-range an fp16 target's output differs where the reference exceeds fp16's range: recorded
FAILURES are the classes the tester fails on.

Tolerances reuse the project's: tests/ops/check_ops.py's 1e-4 of the output's range when
everything ran on the CPU in fp32, 2e-2 of the range when an fp16 NPU group ran; for int8
targets where an NPU group ran, 2e-2 of the range or tests/npu/Int8Test.cpp's criterion
against the fp32 reference, cosine similarity >= 0.99; a cosine in [0.9, 0.99) is recorded as
int8-drift (see close()), below 0.9 it is a mismatch. Int8 graphs are calibrated on their test
inputs (calibration_sample())."""
import json
import os
import re
import shutil
import subprocess

import numpy as np

FAILURES = ("crash", "hang", "run-error", "mismatch")
PRESETS = ["npu-base", "npu-int8", "npu-large", "npu-32x32", "npu-tiny", "npu-rtl", "vta-like",
           "npu-transformer"]
TARGETS = PRESETS + ["cpu"]
FP16_MAX = 65504.0


class Result:
    def __init__(self, cls, detail="", key=""):
        self.cls = cls
        self.detail = detail
        # What identifies this failure for the minimiser: the class plus, for a crash, the
        # assertion's location or the signal, so that minimising keeps the same bug.
        self.key = key or cls

    def failed(self):
        return self.cls in FAILURES

    def __repr__(self):
        return f"{self.cls}: {self.detail}"


def operand_dtype(root, target):
    if target == "cpu":
        return "fp32"
    with open(os.path.join(root, "configs", target + ".yaml")) as f:
        m = re.search(r"^\s*operand_dtype:\s*(\w+)", f.read(), re.M)
    return m.group(1) if m else "fp16"


def execute(cmd, timeout):
    """(returncode or 'timeout', combined output)."""
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return "timeout", ""
    return r.returncode, (r.stdout + r.stderr)


def crash_key(rc, out):
    """A crash's identity: the assertion's file:line, else the signal or the message."""
    m = re.search(r"([\w/]+\.(?:cpp|h)):(\d+)", out)
    if m:
        return f"crash@{os.path.basename(m.group(1))}:{m.group(2)}"
    m = re.search(r"internal error: (.{0,60})", out)
    if m:
        return "crash:" + re.sub(r"\d+", "N", m.group(1))
    return f"crash:rc{rc}"


def classify_failure(step, rc, out):
    """Classifies a command that did not succeed; None when it did."""
    if rc == "timeout":
        return Result("hang", f"{step} timed out", f"hang:{step}")
    if rc == 0:
        return None
    first = next((l for l in out.splitlines() if "error" in l or "Assert" in l), out[-300:])
    if rc < 0 or "internal error" in out or "assert" in out.lower() or "npuc: error:" not in out:
        return Result("crash", f"{step} rc={rc}: {first.strip()[:300]}", crash_key(rc, out))
    return None


def inputs_of(case):
    return [f[3:-4] for f in sorted(os.listdir(case)) if f.startswith("in_") and f.endswith(".npy")]


def input_args(case):
    args = []
    for n in inputs_of(case):
        args += ["--input", f"{n}={os.path.join(case, 'in_' + n + '.npy')}"]
    return args


def run_ref(npuc, case, work, timeout):
    """Runs `npuc ref` into work/ref; None on success, else the Result."""
    out_dir = os.path.join(work, "ref")
    shutil.rmtree(out_dir, ignore_errors=True)
    rc, out = execute([npuc, "ref", os.path.join(case, "model.onnx"), *input_args(case),
                       "--output-dir", out_dir], timeout)
    bad = classify_failure("ref", rc, out)
    if bad:
        return bad
    if rc != 0:
        return Result("ref-error", out.strip().splitlines()[-1][:300] if out.strip() else "")
    return None


def target_path(root, target):
    return "cpu" if target == "cpu" else os.path.join(root, "configs", target + ".yaml")


def sanitize(name):
    """npuc's file name for a value (support/File.cpp sanitizeName)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name) or "_"


def calibration_sample(case):
    """The `--calibrate` argument that calibrates on the case's own inputs: the input file of a
    one-input graph, else case/calibrate/, one sample as a directory holding a file per input
    named after it (docs/QUANTISATION.md), written here afresh (never a stale copy). On npuc's
    default draw instead, activations saturate where the test's inputs exceed what it reached."""
    ins = inputs_of(case)
    if len(ins) == 1:
        return os.path.join(case, "in_" + ins[0] + ".npy")
    sample = os.path.join(case, "calibrate")
    shutil.rmtree(sample, ignore_errors=True)
    os.makedirs(sample)
    for n in ins:
        shutil.copyfile(os.path.join(case, "in_" + n + ".npy"),
                        os.path.join(sample, sanitize(n) + ".npy"))
    return sample


def commands(npuc, root, case, target, work):
    """The compile and run command lines (also what a finding's repro.sh records); for an int8
    target, writes the calibration sample they name."""
    pkg = os.path.join(work, target + ".npub")
    comp = [npuc, "compile", os.path.join(case, "model.onnx"), "--target",
            target_path(root, target), "-o", pkg]
    if operand_dtype(root, target) == "int8" and inputs_of(case):
        # Calibrate on the test inputs themselves: the tolerance then measures the int8 error,
        # not a calibration that saturates (the default is a different standard-normal draw).
        comp += ["--calibrate", calibration_sample(case)]
    run = [npuc, "run", pkg, *input_args(case), "--output-dir", os.path.join(work, target),
           "--report", os.path.join(work, target + ".json")]
    return comp, run


def check_target(npuc, root, case, target, work, timeout):
    """Compiles, runs and compares one target (the reference is in work/ref)."""
    comp, run = commands(npuc, root, case, target, work)
    rc, out = execute(comp, timeout)
    bad = classify_failure("compile", rc, out)
    if bad:
        return bad
    if rc != 0:
        msg = next((l for l in out.splitlines() if "npuc: error:" in l), "")
        return Result("refused", msg[:300])
    shutil.rmtree(os.path.join(work, target), ignore_errors=True)
    rc, out = execute(run, timeout)
    bad = classify_failure("run", rc, out)
    if bad:
        return bad
    if rc != 0:
        return Result("run-error", out.strip().splitlines()[-1][:300], "run-error")
    try:
        with open(os.path.join(work, target + ".json")) as f:
            ops = json.load(f).get("ops", [])
    except (OSError, ValueError) as e:
        return Result("run-error", f"report unreadable: {e}", "run-error")
    on_npu = any(op.get("placement") == "npu" for op in ops)
    dtype = operand_dtype(root, target) if on_npu else "fp32"
    return compare(os.path.join(work, "ref"), os.path.join(work, target), dtype)


def close(x, y, dtype):
    """(verdict, message) for one output, x the target's and y the reference's; the verdict
    is "pass", "mismatch", "fp16-range" or, for int8, "int8-drift"."""
    if x.shape != y.shape:
        return "mismatch", f"shape {x.shape} vs {y.shape}"
    if not np.array_equal(np.isnan(x), np.isnan(y)):
        return "mismatch", (f"NaN pattern differs ({int(np.isnan(x).sum())} vs "
                            f"{int(np.isnan(y).sum())})")
    finite = ~np.isnan(y)
    x64, y64 = x[finite].astype(np.float64), y[finite].astype(np.float64)
    if x64.size == 0:
        return "pass", "empty"
    scale = max(1.0, float(np.max(np.abs(y64))))
    with np.errstate(invalid="ignore"):  # equal infinities differ by nothing, not by NaN
        err = float(np.max(np.where(x64 == y64, 0.0, np.abs(x64 - y64))))
    tol = {"fp32": 1e-4, "fp16": 2e-2}.get(dtype, 2e-2)
    msg = f"max abs err {err:.3g} (scale {scale:.3g}, {dtype})"
    if err <= tol * scale:
        return "pass", msg
    if dtype == "fp16" and float(np.max(np.abs(y64))) > FP16_MAX:
        # Beyond fp16's range the NPU's storage saturates to inf: documented, not a bug.
        return "fp16-range", msg
    if dtype != "int8":
        return "mismatch", msg
    cos = float(x64 @ y64 / (np.linalg.norm(x64) * np.linalg.norm(y64) + 1e-30))
    msg += f", cosine {cos:.5f}"
    if cos >= 0.99:
        return "pass", msg
    # Int8Test's 0.99 bounds one quantised layer calibrated on its input; a random graph chains
    # several requantisations. Below 0.99 is recorded; below 0.9 (the output's direction lost)
    # is a mismatch.
    return ("int8-drift" if cos >= 0.9 else "mismatch"), msg


def compare(ref_dir, out_dir, dtype):
    msgs = []
    verdicts = set()
    for f in sorted(os.listdir(ref_dir)):
        p = os.path.join(out_dir, f)
        if not os.path.exists(p):
            return Result("run-error", f"no output {f}", "run-error")
        v, m = close(np.load(p), np.load(os.path.join(ref_dir, f)), dtype)
        verdicts.add(v)
        msgs.append(f"{f[:-4]}: {m}")
    cls = next(c for c in ("mismatch", "fp16-range", "int8-drift", "pass")
               if c in verdicts or c == "pass")
    return Result(cls, "; ".join(msgs))
