#!/usr/bin/env python3
"""difftest.py - the random-graph differential tester (docs/DIFFTEST.md).

For each seed: gen_graph.py builds a graph, `npuc ref` runs it, and every target (the bundled
presets of configs/ and `--target cpu`) compiles it, runs it and is compared with the reference
(check.py classifies). Prints one line per seed, a summary per target and class, and writes
one JSON line per (seed, target) to --results. A failure (crash, hang, run-error, mismatch) is
minimised with --minimise into --findings/seed<S>-<target>/ (minimise.py). Exits 1 when any
(seed, target) failed, unless it is listed in --expect-fail (a known finding, named there).

    difftest.py --npuc BUILD/tools/npuc --seeds 0:100 [--targets npu-base,cpu] [--jobs 2]
                [--workdir DIR] [--results FILE.jsonl] [--minimise --findings DIR]
                [--skip SEED:TARGET ...]
"""
import argparse
import collections
import json
import multiprocessing
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check  # noqa: E402
import gen_graph  # noqa: E402

ROOT = os.environ.get("NPUC_ROOT") or os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def parse_seeds(text):
    seeds = []
    for part in text.split(","):
        if ":" in part:
            a, b = part.split(":")
            seeds += list(range(int(a), int(b)))
        else:
            seeds.append(int(part))
    return seeds


def one_seed(args):
    """All targets of one seed: [(target, Result)], plus the graph's node count."""
    a, seed = args
    work = os.path.join(a.workdir, f"seed{seed}")
    case = os.path.join(work, "case")
    shutil.rmtree(work, ignore_errors=True)
    spec, _ = gen_graph.generate(seed)
    gen_graph.write_case(spec, case)
    res = []
    bad = check.run_ref(a.npuc, case, work, a.timeout)
    if bad:
        res = [("ref", bad)]
    else:
        for t in a.targets:
            if f"{seed}:{t}" in a.skip:
                res.append((t, check.Result("skipped", "--skip")))
                continue
            res.append((t, check.check_target(a.npuc, ROOT, case, t, work, a.timeout)))
    if not any(r.failed() for _, r in res) and not a.keep:
        shutil.rmtree(work, ignore_errors=True)
    return seed, len(spec.nodes), res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--npuc", required=True)
    ap.add_argument("--seeds", required=True, help="A:B (half-open), or a comma list of them")
    ap.add_argument("--targets", default=",".join(check.TARGETS))
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--workdir", default="difftest-work")
    ap.add_argument("--results", help="append one JSON line per (seed, target) here")
    ap.add_argument("--timeout", type=int, default=300, help="seconds per npuc command (hang)")
    ap.add_argument("--skip", nargs="*", default=[], help="SEED:TARGET pairs not run")
    ap.add_argument("--expect-fail", nargs="*", default=[],
                    help="SEED:TARGET pairs whose failure is a known finding (still reported)")
    ap.add_argument("--keep", action="store_true", help="keep passing seeds' work directories")
    ap.add_argument("--minimise", action="store_true", help="minimise every failure")
    ap.add_argument("--findings", default="difftest-findings")
    a = ap.parse_args()
    a.npuc = os.path.abspath(a.npuc)
    a.targets = a.targets.split(",")
    a.skip = set(a.skip)
    for t in a.targets:
        if t not in check.TARGETS:
            sys.exit(f"difftest.py: unknown target '{t}' (known: {', '.join(check.TARGETS)})")
    os.makedirs(a.workdir, exist_ok=True)
    seeds = parse_seeds(a.seeds)
    counts = collections.defaultdict(collections.Counter)
    failures, unexpected = [], []
    start = time.monotonic()
    out = open(a.results, "a") if a.results else None
    with multiprocessing.Pool(a.jobs) as pool:
        for seed, nodes, res in pool.imap_unordered(one_seed, [(a, s) for s in seeds]):
            line = " ".join(f"{t}={r.cls}" for t, r in res)
            print(f"seed {seed} ({nodes} nodes): {line}", flush=True)
            for t, r in res:
                counts[t][r.cls] += 1
                if out:
                    out.write(json.dumps(dict(seed=seed, nodes=nodes, target=t, cls=r.cls,
                                              key=r.key, detail=r.detail)) + "\n")
                if r.failed() or (t == "ref" and r.cls != "pass"):
                    print(f"  {t}: {r}", flush=True)
                if r.failed():
                    failures.append((seed, t, r))
                    if f"{seed}:{t}" not in a.expect_fail:
                        unexpected.append(f"{seed}:{t}")
            if out:
                out.flush()
    elapsed = time.monotonic() - start
    classes = sorted({c for cnt in counts.values() for c in cnt})
    print(f"\n{len(seeds)} graphs, {elapsed:.0f} s")
    print("target      " + "".join(f"{c:>10}" for c in classes))
    for t in sorted(counts):
        print(f"{t:12}" + "".join(f"{counts[t][c]:>10}" for c in classes))
    if a.minimise and failures:
        import minimise
        for seed, t, r in failures:
            d = os.path.join(a.findings, f"seed{seed}-{t}")
            print(f"minimising seed {seed} on {t} ({r.key}) -> {d}", flush=True)
            minimise.minimise(a.npuc, ROOT, seed, t, r, d, a.timeout)
    if unexpected:
        sys.exit(f"FAIL: {len(unexpected)} failing (seed, target) pairs: {' '.join(unexpected)}")
    print(f"PASS: no crash, hang or mismatch in {len(seeds)} graphs"
          + (f" ({len(failures)} known failures)" if failures else ""))


if __name__ == "__main__":
    main()
