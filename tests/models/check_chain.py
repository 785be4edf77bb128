#!/usr/bin/env python3
"""check_chain.py - a long chain of ReLUs (bench/scale/make_chain.py) compiled for an NPU target,
run on the simulator and by `npuc ref`. A chain of N ReLUs computes max(x, 0), so both are
checked against numpy: `ref` exactly (fp32), the NPU within one fp16 rounding of each element
(its tensors are stored in fp16, and ReLU is exact in any format). This is the compile-time
scaling test of issue 18 in correctness form: thousands of nodes, tens of fused groups, one
segment with its residency and verifier over every step. Its time is not asserted (no timed
tests); docs/PERFORMANCE.md records how compile time grows with N."""
import argparse
import os
import subprocess
import sys

import numpy as np


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        sys.exit(f"FAIL: {' '.join(cmd)} exited with {r.returncode}:\n{r.stderr[-4000:]}")
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--npuc", required=True)
    ap.add_argument("--make-chain", required=True, help="bench/scale/make_chain.py")
    ap.add_argument("--target", required=True)
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--workdir", required=True)
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    model = os.path.join(a.workdir, f"relu{a.n}.onnx")
    inp = os.path.join(a.workdir, "x.npy")
    pkg = os.path.join(a.workdir, "chain.npub")
    out, ref = os.path.join(a.workdir, "npu"), os.path.join(a.workdir, "ref")
    run([sys.executable, a.make_chain, "relu", str(a.n), model, "--input", inp])
    compiled = run([a.npuc, "compile", model, "--target", a.target, "-o", pkg]).stdout
    print(compiled.strip())
    run([a.npuc, "run", pkg, "--input", f"x={inp}", "--output-dir", out])
    run([a.npuc, "ref", model, "--input", f"x={inp}", "--output-dir", ref])
    x = np.load(inp)
    want = np.maximum(x, 0)
    got_ref = np.load(os.path.join(ref, "y.npy"))
    got_npu = np.load(os.path.join(out, "y.npy"))
    failures = []
    if not np.array_equal(got_ref, want):
        failures.append(f"npuc ref differs from max(x, 0) by {np.abs(got_ref - want).max()}")
    # One rounding to fp16 (11 significant bits) of each element, nothing more.
    bound = np.abs(want) * 2.0**-11
    err = np.abs(got_npu.astype(np.float64) - want)
    if got_npu.shape != want.shape or not np.all(err <= bound):
        failures.append(f"the NPU output differs from max(x, 0) beyond one fp16 rounding "
                        f"(max abs err {err.max()})")
    if np.count_nonzero(want) == 0 or np.count_nonzero(want) == want.size:
        failures.append("the input has no values of both signs: ReLU is not exercised")
    print(f"{a.n} ReLUs: ref exact, NPU max abs err {err.max():.3g}")
    if failures:
        sys.exit("FAIL: " + "; ".join(failures))
    print("PASS")


if __name__ == "__main__":
    main()
