#!/usr/bin/env python3
"""minimise.py - shrinks a failing difftest graph while the failure persists (docs/DIFFTEST.md).

A candidate is a set of edits to the seed's generated graph, so that every candidate is rebuilt
from the generator and stays a valid graph:
  * dims: {draw index: value} replaces the generator's extent draws (gen_graph.Gen.dim);
  * nodes: generator node ids to delete. A deleted node's outputs that other nodes read become
    graph inputs (random standard-normal data), and values whose only reader was deleted become
    graph outputs, so that everything left stays live;
  * outputs: graph outputs to drop, with the nodes only they kept alive.
Passes, repeated until none shrinks the graph: delta debugging (Zeller's ddmin) over the nodes,
then over the outputs, then each extent draw towards 1. The failure "persists" when the same
target fails with the same key (check.Result.key: the class, and for a crash the assertion's
file:line or the signal). The result goes to OUTDIR: model.onnx, in_*.npy, graph.txt (readable),
repro.sh (the failing commands) and finding.json.

    minimise.py --npuc BUILD/tools/npuc --seed S --target T [--out DIR]
"""
import argparse
import json
import os
import shlex
import shutil
import sys
import tempfile
import time
import zlib

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check  # noqa: E402
import gen_graph  # noqa: E402


def materialise(seed, edits):
    """The graph of `seed` with the edits applied (see the module comment)."""
    spec, dims = gen_graph.generate(seed, edits["dims"])
    drop = set(edits["nodes"])
    gone = {o for n in spec.nodes if n["id"] in drop for o in n["outputs"]}
    kept = [n for n in spec.nodes if n["id"] not in drop]
    read_before = {i for n in spec.nodes for i in n["inputs"]}
    read_after = {i for n in kept for i in n["inputs"]}
    for v in sorted(gone & read_after):  # re-exposed as inputs
        spec.inputs.append(v)
        rng = np.random.default_rng([seed, 6, zlib.crc32(v.encode())])
        spec.data[v] = rng.standard_normal(size=spec.shapes[v]).astype(np.float32)
    produced = [o for n in kept for o in n["outputs"]]
    orphans = [o for o in produced if o in read_before and o not in read_after]
    spec.nodes = kept
    spec.outputs = [o for o in spec.outputs if o not in gone] + \
        [o for o in orphans if o not in spec.outputs]
    spec.outputs = [o for o in spec.outputs if o not in set(edits["outputs"])]
    prune(spec)
    return spec, dims


def prune(spec):
    """Drops nodes no output needs, then unused inputs and constants."""
    live = set(spec.outputs)
    keep = []
    for n in reversed(spec.nodes):
        if any(o in live for o in n["outputs"]):
            keep.append(n)
            live.update(n["inputs"])
    spec.nodes = keep[::-1]
    spec.inputs = [i for i in spec.inputs if i in live]
    spec.inits = {k: v for k, v in spec.inits.items() if k in live}


class Minimiser:
    def __init__(self, npuc, root, seed, target, want, timeout, budget_s, verbose=False):
        self.npuc, self.root, self.seed, self.target = npuc, root, seed, target
        self.want = want.key
        self.timeout = timeout
        self.deadline = time.monotonic() + budget_s
        self.tests = 0
        self.seen = {}  # graph text -> whether it failed the same way
        self.verbose = verbose
        self.tmp = tempfile.mkdtemp(prefix="difftest-min-")

    def fails(self, edits):
        """Whether the edited graph still fails the same way."""
        if time.monotonic() > self.deadline:
            return False
        spec, _ = materialise(self.seed, edits)
        if not spec.outputs or not spec.nodes:
            return False
        # Edits that change nothing (a draw no remaining node uses) give a graph already tested.
        text = spec.text() + "".join(f"{n}{spec.data[n].shape}" for n in spec.inputs)
        if text not in self.seen:
            self.seen[text] = self.test(spec)
        return self.seen[text]

    def test(self, spec):
        self.tests += 1
        case = os.path.join(self.tmp, "case")
        shutil.rmtree(case, ignore_errors=True)
        try:
            gen_graph.write_case(spec, case)
        except Exception:  # an edit that leaves an invalid graph (checker): not a candidate
            return False
        bad = check.run_ref(self.npuc, case, self.tmp, self.timeout)
        if bad:
            return False
        r = check.check_target(self.npuc, self.root, case, self.target, self.tmp, self.timeout)
        if self.verbose:
            print(f"    test {self.tests}: {len(spec.nodes)} nodes: {r.cls} {r.key}", flush=True)
        return r.failed() and r.key == self.want

    def ddmin(self, edits, field, items):
        """Zeller's ddmin over `items` added to edits[field]: the largest removal found."""
        n = 2
        while len(items) >= 2 or (len(items) == 1 and n <= 2):
            chunk = max(1, len(items) // n)
            parts = [items[i:i + chunk] for i in range(0, len(items), chunk)]
            reduced = False
            for p in parts:  # try removing one part (keeping its complement)
                trial = dict(edits, **{field: edits[field] + p})
                if self.fails(trial):
                    edits = trial
                    items = [i for i in items if i not in p]
                    n = max(n - 1, 2)
                    reduced = True
                    break
            if not reduced:
                if n >= len(items):
                    break
                n = min(len(items), 2 * n)
        return edits

    def shrink_dims(self, edits):
        _, dims = materialise(self.seed, edits)
        for k, v in enumerate(dims):
            for c in sorted({1, 2, 3, v // 2, v - 1}):
                if 1 <= c < v:
                    trial = dict(edits, dims={**edits["dims"], k: c})
                    if self.fails(trial):
                        edits = trial
                        break
        return edits

    def run(self):
        edits = {"dims": {}, "nodes": [], "outputs": []}
        while True:
            before = size(materialise(self.seed, edits)[0])
            spec, _ = materialise(self.seed, edits)
            edits = self.ddmin(edits, "nodes", [n["id"] for n in spec.nodes])
            spec, _ = materialise(self.seed, edits)
            if len(spec.outputs) > 1:
                edits = self.ddmin(edits, "outputs", list(spec.outputs))
            edits = self.shrink_dims(edits)
            if size(materialise(self.seed, edits)[0]) >= before or \
                    time.monotonic() > self.deadline:
                return edits


def size(spec):
    """(nodes, elements of the live values): what a pass must reduce to continue."""
    live = set(spec.inputs) | {o for n in spec.nodes for o in n["outputs"]}
    return len(spec.nodes), sum(int(np.prod(spec.shapes[v])) for v in live)


def write_finding(npuc, root, seed, target, result, edits, outdir, tests):
    # Absolute before the commands are built: repro.sh cds into outdir and names its files
    # relative to it (a relative --findings once left the prefix in, so repro.sh found nothing).
    root, outdir = os.path.abspath(root), os.path.abspath(outdir)
    spec, _ = materialise(seed, edits)
    shutil.rmtree(outdir, ignore_errors=True)
    gen_graph.write_case(spec, outdir)
    comp, run = check.commands(npuc, root, outdir, target, os.path.join(outdir, "out"))
    ref = [npuc, "ref", os.path.join(outdir, "model.onnx"), *check.input_args(outdir),
           "--output-dir", os.path.join(outdir, "out", "ref")]
    here = outdir
    lines = ["#!/bin/sh", f"# difftest seed {seed}, target {target}: {result.cls} ({result.key})",
             f"# {result.detail}",
             "# NPUC: the npuc binary, NPUC_ROOT: the repository (its configs/)",
             "set -e", f"NPUC=${{NPUC:-{npuc}}}", f"NPUC_ROOT=${{NPUC_ROOT:-{root}}}",
             'cd "$(dirname "$0")"', "mkdir -p out"]
    for cmd in (ref, comp, run):
        words = [w.replace(here + "/", "") for w in cmd[1:]]
        words = [f'"$NPUC_ROOT/{w[len(root) + 1:]}"' if w.startswith(root + "/") else
                 shlex.quote(w) for w in words]
        lines.append(" ".join(['"$NPUC"'] + words))
    if result.cls == "mismatch":
        lines.append("# then compare out/ref/*.npy with out/%s/*.npy (tests/difftest/check.py)"
                     % target)
    with open(os.path.join(outdir, "repro.sh"), "w") as f:
        f.write("\n".join(lines) + "\n")
    os.chmod(os.path.join(outdir, "repro.sh"), 0o755)
    with open(os.path.join(outdir, "finding.json"), "w") as f:
        json.dump(dict(seed=seed, target=target, cls=result.cls, key=result.key,
                       detail=result.detail, edits={k: (v if k != "dims" else
                                                        {str(a): b for a, b in v.items()})
                                                    for k, v in edits.items()},
                       nodes=len(spec.nodes), tests=tests), f, indent=1)


def minimise(npuc, root, seed, target, result, outdir, timeout, budget_s=900, verbose=False):
    m = Minimiser(npuc, root, seed, target, result, timeout, budget_s, verbose)
    edits = m.run()
    write_finding(npuc, root, seed, target, result, edits, outdir, m.tests)
    shutil.rmtree(m.tmp, ignore_errors=True)
    spec, _ = materialise(seed, edits)
    print(f"  minimised to {len(spec.nodes)} nodes in {m.tests} tests -> {outdir}", flush=True)
    return edits


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--npuc", required=True)
    ap.add_argument("--seed", type=int, required=True)
    ap.add_argument("--target", required=True, choices=check.TARGETS)
    ap.add_argument("--out", help="default: difftest-findings/seed<S>-<target>")
    ap.add_argument("--timeout", type=int, default=300)
    ap.add_argument("--budget", type=int, default=900, help="seconds of minimisation at most")
    ap.add_argument("-v", "--verbose", action="store_true", help="print every test")
    a = ap.parse_args()
    root = os.environ.get("NPUC_ROOT") or os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))
    npuc = os.path.abspath(a.npuc)
    work = tempfile.mkdtemp(prefix="difftest-")
    case = os.path.join(work, "case")
    spec, _ = gen_graph.generate(a.seed)
    gen_graph.write_case(spec, case)
    r = check.run_ref(npuc, case, work, a.timeout) or \
        check.check_target(npuc, root, case, a.target, work, a.timeout)
    shutil.rmtree(work, ignore_errors=True)
    if not r.failed():
        sys.exit(f"seed {a.seed} on {a.target} does not fail ({r}): nothing to minimise")
    print(f"seed {a.seed} on {a.target}: {r}")
    minimise(npuc, root, a.seed, a.target, r, a.out or f"difftest-findings/seed{a.seed}-{a.target}",
             a.timeout, a.budget, a.verbose)


if __name__ == "__main__":
    main()
