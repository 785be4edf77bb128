#!/usr/bin/env python3
"""check_ops.py - the single-operator suite: for every case make_ops.py generated (optionally
only one family), compiles the model with `npuc compile`, runs it (`npuc run`: NPU groups on the
simulator, the rest through the CPU fallback's JIT), runs `npuc ref`, and checks
  * npuc run vs npuc ref: 1e-4 of the output's range for CPU-only models, 2e-2 when a group ran
    on the NPU (fp16 storage);
  * npuc ref vs the generator's independent oracle (numpy/torch/hand values): 1e-4 of the range;
  * where the case names a placement, that every group of the model ran there (report "ops");
  * where it names tensor_ops, that every group holding one of them ran on the NPU's tensor
    unit (placement npu, tensor_macs > 0);
  * that every group holding a Conv, ConvTranspose, Gemm or MatMul reports its MACs, wherever it
    ran (a loop nest on the vector unit, the CPU).
Prints one line per case and exits non-zero listing the failures."""
import argparse
import json
import os
import subprocess
import sys

import numpy as np


def run(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"{os.path.basename(cmd[0])} {cmd[1]} failed ({r.returncode}):\n"
                           f"{r.stdout[-2000:]}{r.stderr[-2000:]}")
    return r.stdout


def close(x, y, tol):
    if x.shape != y.shape and x.size == y.size:
        x = x.reshape(y.shape)
    if x.shape != y.shape:
        return False, f"shape {x.shape} vs {y.shape}"
    # NaN and infinities (a masked attention score) must match exactly; the finite elements set
    # the scale and are compared within it.
    finite = np.isfinite(y)
    scale = max(1.0, float(np.abs(y[finite]).max()) if finite.any() else 1.0)
    same_special = np.array_equal(np.isnan(x), np.isnan(y)) and np.array_equal(
        x[np.isinf(y)], y[np.isinf(y)])
    err = float(np.abs(x[finite].astype(np.float64) - y[finite]).max()) if finite.any() else 0.0
    if np.isnan(err):
        err = float("inf")
    return same_special and err <= tol * scale, f"max abs err {err:.3g} (scale {scale:.3g})"


def check(a, c):
    d = os.path.join(a.dir, c["name"])
    work = os.path.join(a.workdir, c["name"])
    os.makedirs(work, exist_ok=True)
    pkg = os.path.join(work, "model.npub")
    ins = []
    for nm in c["inputs"]:
        ins += ["--input", f"{nm}={os.path.join(d, 'in_' + nm + '.npy')}"]
    model = os.path.join(d, "model.onnx")
    run([a.npuc, "compile", model, "--target", a.target, "-o", pkg])
    report = os.path.join(work, "report.json")
    run([a.npuc, "run", pkg, *ins, "--output-dir", os.path.join(work, "run"), "--report", report])
    run([a.npuc, "ref", model, *ins, "--output-dir", os.path.join(work, "ref")])
    rep = json.load(open(report))
    npu = any(op.get("placement") == "npu" for op in rep.get("ops", []))
    msgs = []
    ok = True
    want = c.get("placement")
    if want:
        where = [op.get("placement") for op in rep.get("ops", [])]
        if not where or any(p != want for p in where):
            ok = False
            msgs.append(f"expected every group on the {want}, got {where}")
    for op in c.get("tensor_ops", []):
        groups = [g for g in rep.get("ops", []) if op in g.get("ops", [])]
        off = [g["name"] for g in groups
               if g.get("placement") != "npu" or not g.get("tensor_macs")]
        if not groups or off:
            ok = False
            msgs.append(f"every {op} must run on the tensor unit: "
                        + (f"not {', '.join(off)}" if off else "no group holds one"))
    mac_ops = {"Conv", "ConvTranspose", "Gemm", "MatMul"}
    silent = [g["name"] for g in rep.get("ops", [])
              if mac_ops & set(g.get("ops", [])) and not g.get("macs")]
    if silent:
        ok = False
        msgs.append(f"groups with a matrix product or convolution report no MACs: {silent}")
    outs = sorted(os.listdir(os.path.join(work, "ref")))
    oracles = sorted(f[4:] for f in os.listdir(d) if f.startswith("exp_"))
    # Every output is written under the name the model declares, also one that is a graph input
    # passed through (Identity, Dropout, an empty-axes no-op reduction: Graph::outputNames).
    pair = {o: o for o in oracles if o in outs}
    for o in oracles:
        if o not in pair:
            ok = False
            msgs.append(f"oracle exp_{o} matches no output (outputs: {', '.join(outs)})")
    checked = {v: k for k, v in pair.items()}
    for f in outs:
        y = np.load(os.path.join(work, "ref", f))
        x = np.load(os.path.join(work, "run", f))
        exp = np.load(os.path.join(d, "exp_" + checked[f])) if f in checked else None
        if exp is not None and exp.dtype.kind in "iub":
            # An exact case (make_ops.py): integer and bool results match bit for bit, and
            # both npuc commands write the model's declared type.
            for who, got in (("run", x), ("ref", y)):
                good = got.dtype == exp.dtype and np.array_equal(got.reshape(exp.shape), exp)
                ok &= good
                msgs.append(f"{f}: {who} {got.dtype} vs oracle {exp.dtype}: "
                            f"{'equal' if good else 'differ'}")
            continue
        good, m = close(x, y, 2e-2 if npu else 1e-4)
        ok &= good
        msgs.append(f"{f}: run vs ref {m}")
        if exp is not None:
            good, m = close(y, exp.astype(np.float64), 1e-4)
            ok &= good
            msgs.append(f"ref vs oracle {m}")
    return ok, ("npu" if npu else "cpu") + "; " + "; ".join(msgs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--npuc", required=True)
    ap.add_argument("--dir", required=True, help="make_ops.py's output directory")
    ap.add_argument("--target", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--family", help="only this family of cases")
    a = ap.parse_args()
    cases = json.load(open(os.path.join(a.dir, "cases.json")))
    if a.family:
        cases = [c for c in cases if c["family"] == a.family]
    if not cases:
        sys.exit(f"FAIL: no cases (family {a.family})")
    failures = []
    for c in cases:
        try:
            ok, msg = check(a, c)
        except RuntimeError as e:
            ok, msg = False, str(e)
        print(f"{'PASS' if ok else 'FAIL'} {c['name']} ({c['op']}): {msg}", flush=True)
        if not ok:
            failures.append(c["name"])
    if failures:
        sys.exit(f"FAIL: {len(failures)} of {len(cases)} cases: {' '.join(failures)}")
    print(f"PASS: {len(cases)} cases")


if __name__ == "__main__":
    main()
