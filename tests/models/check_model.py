#!/usr/bin/env python3
"""check_model.py - compiles a model with npuc, runs it on the simulator, runs `npuc ref`, and
checks the outputs agree: cosine similarity >= 0.999 and the same top-1 class (the criteria the
project set for whole classifiers, where fp16 storage makes element-wise bounds too loose to be
useful), plus the report's own consistency and the share of MACs that ran on the NPU. Prints the
wall time of each step (the compile time is a figure docs/PERFORMANCE.md records) and the
placement summary from `npuc inspect` (groups per device, each CPU reason with its count)."""
import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time
from collections import Counter

import numpy as np


def run(cmd, quiet=False):
    print("+", " ".join(cmd), flush=True)
    start, cpu0 = time.monotonic(), resource.getrusage(resource.RUSAGE_CHILDREN)
    r = subprocess.run(cmd, capture_output=True, text=True)
    cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime
    if not quiet or r.returncode != 0:
        print(r.stdout[-4000:], r.stderr[-4000:], sep="\n", flush=True)
    if r.returncode != 0:
        sys.exit(f"FAIL: {cmd[1]} exited with {r.returncode}")
    # CPU time as well: on a shared machine it is the steadier figure.
    print(f"{cmd[1]}: {time.monotonic() - start:.2f} s wall, {cpu:.2f} s CPU", flush=True)
    return r


def placement_summary(npuc, pkg):
    """Groups per device and the CPU groups' reasons, from `npuc inspect`'s text."""
    text = run([npuc, "inspect", pkg], quiet=True).stdout
    devices = Counter(re.findall(r"^  group \d+ '.*': .* on (\w+)$", text, re.M))
    reasons = Counter(re.sub(r"^.*?\): ", "", r)
                      for r in re.findall(r"^    reason: (.*)$", text, re.M))
    print("placement: " + ", ".join(f"{n} groups on {d}" for d, n in sorted(devices.items())))
    for reason, n in reasons.most_common():
        print(f"  {n:4d} x cpu: {reason}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--npuc", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--input", required=True, action="append",
                    help="FILE.npy for the input named by --input-name, or NAME=FILE.npy "
                         "(repeatable: a model with several inputs)")
    ap.add_argument("--input-name", default="input")
    ap.add_argument("--target", required=True)
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--min-npu-mac-share", type=float, default=0.5)
    ap.add_argument("--expected", action="append", default=[],
                    help="torch's output for the input, FILE.npy for the first output (by name) "
                         "or OUTPUT=FILE.npy (repeatable): checks `npuc ref` itself")
    ap.add_argument("--top1", action="append",
                    help="an output whose rows (last axis) must have the same top-1 class "
                         "(repeatable; default: every output)")
    ap.add_argument("--all-npu", action="store_true",
                    help="every group must run on the NPU, in one segment")
    a = ap.parse_args()
    os.makedirs(a.workdir, exist_ok=True)
    pkg = os.path.join(a.workdir, "model.npub")
    out, ref = os.path.join(a.workdir, "npu"), os.path.join(a.workdir, "ref")
    report = os.path.join(a.workdir, "report.json")
    ins = []
    for i in a.input:
        ins += ["--input", i if "=" in i else f"{a.input_name}={i}"]
    run([a.npuc, "compile", a.model, "--target", a.target, "-o", pkg])
    run([a.npuc, "disasm", pkg], quiet=True)  # every package disassembles
    run([a.npuc, "run", pkg, *ins, "--output-dir", out, "--report", report])
    run([a.npuc, "ref", a.model, *ins, "--output-dir", ref])
    placement_summary(a.npuc, pkg)
    failures = []
    names = sorted(n[:-len(".npy")] for n in os.listdir(ref))
    for name in names:
        x = np.load(os.path.join(out, name + ".npy")).astype(np.float64)
        y = np.load(os.path.join(ref, name + ".npy")).astype(np.float64)
        cos = float(x.ravel() @ y.ravel() / (np.linalg.norm(x) * np.linalg.norm(y)))
        print(f"{name}: cosine {cos:.7f}, max abs err {np.abs(x - y).max():.3g}")
        if not np.any(y):
            failures.append(f"{name}: the reference output is all zeros, nothing to compare")
        if not cos >= 0.999:  # also catches NaN
            failures.append(f"{name}: cosine {cos} < 0.999")
        if a.top1 is None or name in a.top1:
            top_x, top_y = x.argmax(-1).ravel(), y.argmax(-1).ravel()
            differ = int((top_x != top_y).sum())
            print(f"{name}: top-1 {top_x[:4]} vs {top_y[:4]}, {differ} of {top_y.size} rows differ")
            if differ:
                failures.append(f"{name}: top-1 differs in {differ} of {top_y.size} rows")
    for e in a.expected:
        # The reference executor against torch (an independent implementation): both are fp32
        # with different summation orders, so agreement to 1e-4 of the output range is expected.
        name, path = e.split("=", 1) if "=" in e else (names[0], e)
        if name not in names:
            sys.exit(f"FAIL: --expected {e}: the model has no output '{name}' ({names})")
        y = np.load(os.path.join(ref, name + ".npy")).ravel()
        t = np.load(path).ravel()
        if np.ptp(t) == 0:
            failures.append(f"{name}: torch's output is constant: the model's weights make it "
                            "useless")
        err = float(np.abs(y - t).max())
        print(f"{name}: npuc ref vs torch: max abs err {err:.3g}")
        if err > 1e-4 * max(1.0, float(np.abs(t).max())):
            failures.append(f"{name}: npuc ref differs from torch by {err}")
    rep = json.load(open(report))
    if a.all_npu:
        cpu = [op["name"] for op in rep["ops"] if op["placement"] != "npu"]
        print(f"segments {len(rep['segments'])}, groups on the CPU {len(cpu)}")
        if cpu or len(rep["segments"]) != 1:
            failures.append(f"--all-npu: {len(rep['segments'])} segments, CPU groups {cpu[:5]}")
    util = rep["macs"] / (rep["peak_macs_per_cycle"] * rep["total_cycles"])
    if abs(util - rep["mac_utilization"]) > 1e-9:
        failures.append(f"mac_utilization {rep['mac_utilization']} != macs/(peak*cycles) {util}")
    all_macs = sum(op["macs"] for op in rep["ops"])
    npu_macs = sum(op["macs"] for op in rep["ops"] if op["placement"] == "npu")
    # The simulator counts tensor-unit MACs (a depthwise conv on the vector unit has none).
    tensor_macs = sum(op["tensor_macs"] for op in rep["ops"] if op["placement"] == "npu")
    if rep["macs"] != tensor_macs:
        failures.append(f"simulated MACs {rep['macs']} != compiled tensor-unit MACs {tensor_macs}")
    share = npu_macs / all_macs if all_macs else 0
    print(f"NPU MAC share {share:.4f}, utilisation {util:.4f}, cycles {rep['total_cycles']}")
    if share < a.min_npu_mac_share:
        failures.append(f"only {share:.3f} of the MACs ran on the NPU")
    if failures:
        sys.exit("FAIL: " + "; ".join(failures))
    print("PASS")


if __name__ == "__main__":
    main()
