#!/usr/bin/env python3
"""conformance.py - ONNX's own backend tests (Debian's libonnx-testdata) through npuc.

Each case is a directory with model.onnx and test_data_set_N/{input_K.pb, output_K.pb}
(TensorProto; a few are SequenceProto/OptionalProto). For every case and target this runs

  ref           npuc ref MODEL --input ... --output-dir OUT
  cpu           npuc compile MODEL --target cpu -o PKG; npuc run PKG --input ... --output-dir OUT
  <preset>.yaml the same with --target <preset>.yaml (an NPU preset)

and compares every output with the expected one, with ONNX's tolerance (|x - y| <= atol + rtol|y|,
rtol 1e-3, atol 1e-7, as onnx.backend.test's runner) on fp32 paths, and the differential tester's
fp16 rule (max |x - y| <= 2e-2 max(1, max |y|)) on fp16 NPU presets. Integer and boolean outputs
must match exactly, and every output's dtype must be the declared one.

Each (case, target) gets one status: pass, or a failure class with a one-line reason:
  unsupported  npuc refused the model with a user error (operator, attribute, dtype, opset...)
  mismatch     it ran, but an output differs (values, shape, dtype, NaN pattern)
  crash        a signal or an internal error (a compiler bug, never acceptable)
  timeout      a command ran past --timeout seconds (never acceptable)
  skipped      the case needs what no npuc path takes as input (a sequence or optional value)

With --expect DIR (its expected-<suite>.txt), the run is a regression test (ctest label `conformance`): it fails when a
case the file lists as passing fails, when a case it lists as failing passes (update the file:
the list must say the truth), and on any crash or timeout. --update rewrites those lists from this run;
--docs rewrites the failing-case list in docs/OPERATORS.md between its markers.

Inputs that set an output's shape (Reshape's shape, Expand's shape, Range's operands, ...) must be
constants for a static-shape compiler: when npuc offers `--bind`, they are bound as constants from
the case's own data (as TVM's test harness freezes them), and the report says so. So are the
inputs a refusal names with `pin it with --bind NAME=FILE.npy` (an operand npuc reads at compile
time, such as CumSum's axis, or a graph input a shape operand is computed from): the target is
rerun with them bound, and its reason (in --json, also for a pass) ends with "(bound: ...)".
Loop's trip count M (input 0) counts as a shape operand: npuc unrolls loops at compile time, and
the count decides how many iterations its scan outputs stack.
"""
import argparse
import concurrent.futures as cf
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import numpy_helper

RTOL, ATOL = 1e-3, 1e-7
FP16_TOL = 2e-2
FAILURES = ("unsupported", "mismatch", "crash", "timeout", "skipped")

# (op type, input index) pairs whose values decide an output's shape: bound as constants.
SHAPE_OPERANDS = {
    "Reshape": {1}, "Expand": {1}, "Tile": {1}, "Range": {0, 1, 2}, "ConstantOfShape": {0},
    "Slice": {1, 2, 3, 4}, "Resize": {1, 2, 3}, "Upsample": {1}, "Squeeze": {1},
    "Unsqueeze": {1}, "Split": {1}, "TopK": {1}, "OneHot": {1}, "Pad": {1, 3},
    "ReduceSum": {1}, "ReduceMean": {1}, "ReduceMax": {1}, "ReduceMin": {1}, "ReduceProd": {1},
    "ReduceL1": {1}, "ReduceL2": {1}, "ReduceLogSum": {1}, "ReduceLogSumExp": {1},
    "ReduceSumSquare": {1}, "HannWindow": {0}, "HammingWindow": {0}, "BlackmanWindow": {0},
    "DFT": {1}, "STFT": {1, 3}, "MelWeightMatrix": {0, 1, 2}, "CenterCropPad": {1},
    "Loop": {0},
}


def graph_inputs(model):
    inits = {t.name for t in model.graph.initializer}
    return [i for i in model.graph.input if i.name not in inits]


def shape_operand_inputs(model, names):
    """Graph inputs that some node reads as a shape-deciding operand."""
    bound = set()
    for n in model.graph.node:
        for k in SHAPE_OPERANDS.get(n.op_type, ()):
            if k < len(n.input) and n.input[k] in names:
                bound.add(n.input[k])
    return bound


def sanitize(name):
    """npuc's file name for an output (tools/cli/Commands.cpp sanitizeName)."""
    out = re.sub(r"[^A-Za-z0-9_.\-]", "_", name)
    return out or "_"


def load_case(case_dir):
    """(model, [(name, array)], [(name, array)]) of the first data set, or a skip reason."""
    model = onnx.load(os.path.join(case_dir, "model.onnx"))
    sets = sorted(d for d in os.listdir(case_dir) if d.startswith("test_data_set_"))
    if not sets:
        return model, None, None, "no test data set"
    data = os.path.join(case_dir, sets[0])
    ins, outs = [], []
    for kind, values, dest in (("input", graph_inputs(model), ins),
                               ("output", list(model.graph.output), outs)):
        for k, v in enumerate(values):
            path = os.path.join(data, f"{kind}_{k}.pb")
            if not os.path.exists(path):
                continue  # an omitted optional input
            if not v.type.HasField("tensor_type"):
                return model, None, None, f"{kind} '{v.name}' is a {v.type.WhichOneof('value')}"
            t = onnx.TensorProto()
            with open(path, "rb") as f:
                t.ParseFromString(f.read())
            dest.append((v.name, numpy_helper.to_array(t)))
    return model, ins, outs, None


class Npuc:
    def __init__(self, exe, timeout):
        self.exe, self.timeout = exe, timeout
        helptext = subprocess.run([exe, "ref", "--help"], capture_output=True, text=True).stdout
        self.has_bind = "--bind" in helptext

    def run(self, args, cwd):
        """(status, message): status None on success."""
        try:
            p = subprocess.run([self.exe] + args, capture_output=True, text=True, cwd=cwd,
                               timeout=self.timeout)
        except subprocess.TimeoutExpired:
            return "timeout", f"npuc {args[0]} ran past {self.timeout} s"
        if p.returncode == 0:
            return None, ""
        err = (p.stderr or p.stdout).strip().splitlines()
        first = next((line for line in err if "error" in line), err[0] if err else "")
        first = re.sub(r"\S*/(model\.onnx|in_[^ :]*\.npy|[^ /:]*\.npub)", r"\1",
                       first.replace(cwd + "/", "")).strip()
        if p.returncode < 0 or "internal error" in (p.stderr or ""):
            return "crash", first or f"signal {-p.returncode}"
        return "unsupported", re.sub(r"^(npuc: )?error: ", "", first)


def compare(got, want, fp16):
    """None when `got` matches `want`, else why not."""
    if got.dtype != want.dtype:
        return f"dtype {got.dtype}, expected {want.dtype}"
    if got.shape != want.shape:
        return f"shape {list(got.shape)}, expected {list(want.shape)}"
    if want.dtype.kind not in "fc":
        bad = int(np.count_nonzero(got != want))
        return f"{bad} of {want.size} elements differ" if bad else None
    g, w = got.astype(np.float64), want.astype(np.float64)
    if not np.array_equal(np.isnan(g), np.isnan(w)):
        return "NaN pattern differs"
    fin = ~np.isnan(w)
    g, w = g[fin], w[fin]
    if g.size == 0:
        return None
    with np.errstate(invalid="ignore"):
        diff = np.where(g == w, 0.0, np.abs(g - w))
    if fp16:
        scale = max(1.0, float(np.max(np.abs(np.where(np.isinf(w), 0, w)))))
        ok = np.all(diff <= FP16_TOL * scale)
    else:
        ok = np.all(diff <= ATOL + RTOL * np.abs(w))
    if ok:
        return None
    return f"max abs err {float(np.max(diff)):.3g}"


def run_case(npuc, case_dir, targets, workroot):
    """{target: (status, reason)} for one case."""
    name = os.path.basename(case_dir)
    try:
        model, ins, outs, skip = load_case(case_dir)
    except Exception as e:  # an unreadable case is the data's problem, reported as a skip
        return {t: ("skipped", f"cannot load the case: {e}") for t in targets}
    if skip:
        return {t: ("skipped", skip) for t in targets}
    work = tempfile.mkdtemp(prefix=name + ".", dir=workroot)
    try:
        first = shape_operand_inputs(model, {n for n, _ in ins}) if npuc.has_bind else set()
        model_path = os.path.join(case_dir, "model.onnx")
        res = {}
        for t in targets:
            bind = set(first)
            while True:
                args = input_args(ins, bind, work)
                st, why = run_target(npuc, t, model_path, args, work, outs)
                more = pinned_inputs(why, {n for n, _ in ins} - bind) if st == "unsupported" else set()
                if not more:
                    break
                bind |= more
            note = f" (bound: {','.join(sorted(bind))})" if bind else ""
            res[t] = (st, why + note)
        return res
    finally:
        shutil.rmtree(work, ignore_errors=True)


def input_args(ins, bind, work):
    """--input/--bind NAME=FILE for every case input (the files are written once)."""
    args = []
    for n, arr in ins:
        f = os.path.join(work, f"in_{sanitize(n)}.npy")
        if not os.path.exists(f):
            np.save(f, arr)
        args += ["--bind" if n in bind else "--input", f"{n}={f}"]
    return args


def pinned_inputs(why, unbound):
    """The graph inputs an `unsupported` message asks to pin (`--bind NAME=FILE.npy`: an operand
    npuc reads at compile time, such as CumSum's axis), among those not bound yet."""
    return {n for n in re.findall(r"--bind (\S+?)=FILE\.npy", why) if n in unbound}


def run_target(npuc, target, model_path, args, work, outs):
    tname = target_name(target)
    outdir = os.path.join(work, "out_" + tname)
    shutil.rmtree(outdir, ignore_errors=True)  # a rerun with more operands bound starts afresh
    os.makedirs(outdir)
    run_args = [a for a in args]
    if target == "ref":
        st, why = npuc.run(["ref", model_path] + run_args + ["--output-dir", outdir], work)
    else:
        pkg = os.path.join(work, tname + ".npub")
        binds = [a for i, a in enumerate(args) if i % 2 == 1 and args[i - 1] == "--bind"]
        compile_args = ["compile", model_path, "--target", target, "-o", pkg]
        for b in binds:
            compile_args += ["--bind", b]
        st, why = npuc.run(compile_args, work)
        if st is None:
            inputs = [a for i, a in enumerate(args) if i % 2 == 1 and args[i - 1] == "--input"]
            rargs = ["run", pkg, "--output-dir", outdir]
            for a in inputs:
                rargs += ["--input", a]
            st, why = npuc.run(rargs, work)
    if st is not None:
        return st, why
    fp16 = target not in ("ref", "cpu")
    for n, want in outs:
        path = os.path.join(outdir, sanitize(n) + ".npy")
        if not os.path.exists(path):
            return "mismatch", f"output '{n}' was not written"
        why = compare(np.load(path), want, fp16)
        if why:
            return "mismatch", f"output '{n}': {why}"
    return "pass", ""


def target_name(t):
    return t if t in ("ref", "cpu") else os.path.splitext(os.path.basename(t))[0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--npuc", required=True)
    ap.add_argument("--data", default="/usr/share/libonnx-testdata/data")
    ap.add_argument("--suite", action="append",
                    help="node, pytorch-converted, pytorch-operator, simple (default: node)")
    ap.add_argument("--target", action="append", help="ref, cpu or a preset YAML")
    ap.add_argument("--filter", default="", help="regex on case names")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--json", help="write every result here (JSON lines)")
    ap.add_argument("--expect", metavar="DIR",
                    help="the regression lists: DIR/expected-<suite>.txt")
    ap.add_argument("--update", action="store_true",
                    help="rewrite the --expect lists of this run's suites from its results")
    ap.add_argument("--docs", help="rewrite the failing-case list in this markdown file")
    ap.add_argument("--from-json", nargs="+", metavar="FILE",
                    help="report (--expect/--update/--docs) on earlier --json files: run nothing")
    a = ap.parse_args()
    if a.from_json:
        return report_from_json(a)
    suites = a.suite or ["node"]
    targets = [t if t in ("ref", "cpu") else os.path.abspath(t) for t in a.target or ["ref"]]
    if not os.path.isdir(a.data):
        print(f"conformance: {a.data} is missing (Debian's libonnx-testdata): skipped")
        return 77
    cases = []
    for s in suites:
        root = os.path.join(a.data, s)
        for c in sorted(os.listdir(root)):
            if re.search(a.filter, c):
                cases.append((s, os.path.join(root, c)))
    npuc = Npuc(os.path.abspath(a.npuc), a.timeout)
    workroot = tempfile.mkdtemp(prefix="npuc-conformance.")
    results = {}
    try:
        with cf.ThreadPoolExecutor(max_workers=a.jobs) as ex:
            futs = {ex.submit(run_case, npuc, d, targets, workroot): (s, d) for s, d in cases}
            for f in cf.as_completed(futs):
                s, d = futs[f]
                for t, (st, why) in f.result().items():
                    results[(s, os.path.basename(d), target_name(t))] = (st, why)
    finally:
        shutil.rmtree(workroot, ignore_errors=True)
    return report(a, suites, [target_name(t) for t in targets], results)


def report_from_json(a):
    results, suites, tnames = {}, [], []
    for path in a.from_json:
        with open(path) as f:
            for line in f:
                r = json.loads(line)
                results[(r["suite"], r["case"], r["target"])] = (r["status"], r["reason"])
                suites += [r["suite"]] if r["suite"] not in suites else []
                tnames += [r["target"]] if r["target"] not in tnames else []
    a.json = None
    return report(a, suites, tnames, results)


def report(a, suites, tnames, results):
    if a.json:
        with open(a.json, "w") as f:
            for (s, c, t), (st, why) in sorted(results.items()):
                f.write(json.dumps(dict(suite=s, case=c, target=t, status=st, reason=why)) + "\n")
    print(summary_table(suites, tnames, results))
    bad = [(k, v) for k, v in sorted(results.items()) if v[0] in ("crash", "timeout")]
    for (s, c, t), (st, why) in bad:
        print(f"{st.upper()}: {s}/{c} on {t}: {why}")
    rc = 1 if bad else 0
    if a.expect:
        if a.update:
            write_expect(a.expect, results)
        else:
            rc |= check_expect(a.expect, results)
    if a.docs:
        write_docs(a.docs, suites, tnames, results)
    return rc


def summary_table(suites, tnames, results):
    lines = ["| suite | target | cases | pass | " + " | ".join(FAILURES) + " |",
             "|---|---|---|---|" + "---|" * len(FAILURES)]
    for s in suites:
        for t in tnames:
            sts = [st for (ss, _, tt), (st, _) in results.items() if ss == s and tt == t]
            if not sts:
                continue
            n_pass = sts.count("pass")
            cells = [str(sts.count(f)) for f in FAILURES]
            pct = 100.0 * n_pass / len(sts)
            lines.append(f"| {s} | {t} | {len(sts)} | {n_pass} ({pct:.1f}%) | "
                         + " | ".join(cells) + " |")
    return "\n".join(lines)


def expect_file(expect_dir, suite):
    return os.path.join(expect_dir, f"expected-{suite}.txt")


def read_expect(expect_dir, suite):
    """{(suite/case, target): status} of expected-<suite>.txt ({} when there is none)."""
    want = {}
    if os.path.exists(expect_file(expect_dir, suite)):
        with open(expect_file(expect_dir, suite)) as f:
            for line in f:
                if line.strip() and not line.startswith("#"):
                    case, t, st = line.split()
                    want[(case, t)] = st
    return want


def write_expect(expect_dir, results):
    """Updates expected-<suite>.txt with this run's statuses: the entries of the cases and
    targets this run did not cover (--filter, one --target) stay as they were."""
    for suite in sorted({s for s, _, _ in results}):
        want = read_expect(expect_dir, suite)
        for (s, c, t), (st, _) in results.items():
            if s == suite:
                want[(f"{s}/{c}", t)] = st
        with open(expect_file(expect_dir, suite), "w") as f:
            f.write("# suite/case target status -- written by conformance.py --update; a case "
                    "that\n# changes status fails the `conformance` ctest label until this is "
                    "rewritten.\n")
            for (case, t), st in sorted(want.items()):
                f.write(f"{case} {t} {st}\n")


def check_expect(expect_dir, results):
    want = {}
    for suite in sorted({s for s, _, _ in results}):
        want.update(read_expect(expect_dir, suite))
    rc = 0
    for (s, c, t), (st, why) in sorted(results.items()):
        exp = want.get((f"{s}/{c}", t))
        if exp is None:
            print(f"NEW: {s}/{c} on {t} is not in {expect_file(expect_dir, s)}: {st}")
            rc = 1
        elif exp == "pass" and st != "pass":
            print(f"REGRESSION: {s}/{c} on {t}: {st}: {why}")
            rc = 1
        elif exp != "pass" and st == "pass":
            print(f"UNEXPECTED PASS: {s}/{c} on {t} (expected {exp}): rerun with --update")
            rc = 1
    return rc


BEGIN, END = "<!-- conformance:begin -->", "<!-- conformance:end -->"


def write_docs(path, suites, tnames, results):
    """The summary and one line per case that fails anywhere: the reason of each target."""
    lines = [BEGIN, "", summary_table(suites, tnames, results), ""]
    by_case = {}
    for (s, c, t), (st, why) in sorted(results.items()):
        if st != "pass":
            by_case.setdefault((s, c), []).append((t, st, why))
    bound = sum(1 for st, why in results.values() if st == "pass" and "(bound: " in why)
    lines += [f"{bound} of the passing (case, target) pairs ran with operands bound from the "
              "case's data (`--json` names them).", ""]
    lines += ["| case | fails on | status: reason |", "|---|---|---|"]
    for (s, c), fails in sorted(by_case.items()):
        reasons = {}
        for t, st, why in fails:
            reasons.setdefault(f"{st}: {why}", []).append(t)
        cell = "<br>".join(f"{'/'.join(ts)}: {r}" if len(reasons) > 1 else r
                           for r, ts in reasons.items())
        cell = cell.replace("|", "\\|")
        lines.append(f"| {s}/{c} | {', '.join(t for t, _, _ in fails)} | {cell} |")
    lines += ["", END]
    with open(path) as f:
        text = f.read()
    if BEGIN in text and END in text:
        text = text[:text.index(BEGIN)] + "\n".join(lines) + text[text.index(END) + len(END):]
    else:
        text = text.rstrip("\n") + "\n\n" + "\n".join(lines) + "\n"
    with open(path, "w") as f:
        f.write(text)


if __name__ == "__main__":
    sys.exit(main())
